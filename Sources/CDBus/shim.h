#ifndef QUARANTINE_CDBUS_SHIM_H
#define QUARANTINE_CDBUS_SHIM_H
#include <dbus/dbus.h>

/* libdbus spells its type codes and timeouts as cast macros, e.g.
 * `((int) 's')`, which Swift cannot import: these return the same values. */
static inline int qdbus_type_invalid(void)    { return DBUS_TYPE_INVALID; }
static inline int qdbus_type_byte(void)       { return DBUS_TYPE_BYTE; }
static inline int qdbus_type_boolean(void)    { return DBUS_TYPE_BOOLEAN; }
static inline int qdbus_type_int32(void)      { return DBUS_TYPE_INT32; }
static inline int qdbus_type_uint32(void)     { return DBUS_TYPE_UINT32; }
static inline int qdbus_type_string(void)     { return DBUS_TYPE_STRING; }
static inline int qdbus_type_array(void)      { return DBUS_TYPE_ARRAY; }
static inline int qdbus_type_variant(void)    { return DBUS_TYPE_VARIANT; }
static inline int qdbus_type_dict_entry(void) { return DBUS_TYPE_DICT_ENTRY; }
static inline int qdbus_type_int64(void)      { return DBUS_TYPE_INT64; }
static inline int qdbus_type_uint64(void)     { return DBUS_TYPE_UINT64; }
static inline int qdbus_type_double(void)     { return DBUS_TYPE_DOUBLE; }
static inline int qdbus_type_object_path(void) { return DBUS_TYPE_OBJECT_PATH; }
static inline int qdbus_type_struct(void)     { return DBUS_TYPE_STRUCT; }
static inline int qdbus_type_unix_fd(void)    { return DBUS_TYPE_UNIX_FD; }
static inline int qdbus_timeout_infinite(void) { return DBUS_TIMEOUT_INFINITE; }

/* Message types (dbus_message_get_type), also cast macros. */
static inline int qdbus_message_method_call(void) { return DBUS_MESSAGE_TYPE_METHOD_CALL; }
static inline int qdbus_message_signal(void)      { return DBUS_MESSAGE_TYPE_SIGNAL; }

/* A DBusError lives on the caller's stack; these keep Swift from having to
 * spell its bit fields. */
static inline const char *qdbus_error_name(const DBusError *e)    { return e->name; }
static inline const char *qdbus_error_message(const DBusError *e) { return e->message; }

#endif
