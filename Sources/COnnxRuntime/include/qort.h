// The subset of ONNX Runtime's C API that quarantine uses, declared from the published
// ABI facts (slot numbers of the frozen version-1 function table). The library itself is
// opened with dlopen at run time; nothing links against it.
#ifndef QUARANTINE_QORT_H
#define QUARANTINE_QORT_H
#include <stddef.h>
#include <stdint.h>

// MARK: - Opaque handles
typedef struct QOrtStatus QOrtStatus;
typedef struct QOrtEnv QOrtEnv;
typedef struct QOrtSession QOrtSession;
typedef struct QOrtSessionOptions QOrtSessionOptions;
typedef struct QOrtValue QOrtValue;
typedef struct QOrtMemoryInfo QOrtMemoryInfo;
typedef struct QOrtTypeInfo QOrtTypeInfo;
typedef struct QOrtTensorInfo QOrtTensorInfo;
typedef struct QOrtRunOptions QOrtRunOptions;
typedef struct QOrtAllocator QOrtAllocator;

/// The function table: an array of function pointers, indexed by slot.
typedef struct QOrtApi { const void *slots[1]; } QOrtApi;

// MARK: - Enum values used
enum {
    QORT_FLOAT = 1, QORT_UINT8 = 2, QORT_INT64 = 7,
    QORT_LOG_VERBOSE = 0, QORT_LOG_INFO = 1, QORT_LOG_WARNING = 2, QORT_LOG_ERROR = 3, QORT_LOG_FATAL = 4,
    QORT_ARENA_ALLOCATOR = 1, QORT_MEM_DEFAULT = 0,
    QORT_OPT_DISABLE_ALL = 0, QORT_OPT_BASIC = 1, QORT_OPT_EXTENDED = 2, QORT_OPT_ALL = 99,
    QORT_EXEC_SEQUENTIAL = 0, QORT_EXEC_PARALLEL = 1,
};

// MARK: - Loading
/// dlopen()s `path`, resolves OrtGetApiBase and asks it for table `api_version`.
/// On failure returns NULL and writes a message into `error` (always NUL-terminated).
const QOrtApi *qort_load(const char *path, uint32_t api_version, char *error, size_t error_size,
                         const char **version_out);

// MARK: - Slots (one inline caller per slot; the slot number is the only fact used)
#define QORT_SLOT(api, n, type) ((type)((api)->slots[n]))

static inline const char *qort_error_message(const QOrtApi *a, const QOrtStatus *s) {
    return QORT_SLOT(a, 2, const char *(*)(const QOrtStatus *))(s);
}
static inline QOrtStatus *qort_create_env(const QOrtApi *a, int level, const char *logid, QOrtEnv **out) {
    return QORT_SLOT(a, 3, QOrtStatus *(*)(int, const char *, QOrtEnv **))(level, logid, out);
}
/* Slot 6: DisableTelemetryEvents(const OrtEnv*). */
static inline QOrtStatus *qort_disable_telemetry(const QOrtApi *a, const QOrtEnv *env) {
    return QORT_SLOT(a, 6, QOrtStatus *(*)(const QOrtEnv *))(env);
}
static inline QOrtStatus *qort_create_session(const QOrtApi *a, const QOrtEnv *env, const char *path,
                                              const QOrtSessionOptions *o, QOrtSession **out) {
    return QORT_SLOT(a, 7, QOrtStatus *(*)(const QOrtEnv *, const char *, const QOrtSessionOptions *, QOrtSession **))(env, path, o, out);
}
static inline QOrtStatus *qort_create_session_from_array(const QOrtApi *a, const QOrtEnv *env, const void *data, size_t length,
                                                         const QOrtSessionOptions *o, QOrtSession **out) {
    return QORT_SLOT(a, 8, QOrtStatus *(*)(const QOrtEnv *, const void *, size_t, const QOrtSessionOptions *, QOrtSession **))(env, data, length, o, out);
}
static inline QOrtStatus *qort_run(const QOrtApi *a, QOrtSession *s, const QOrtRunOptions *ro,
                                   const char *const *in_names, const QOrtValue *const *inputs, size_t n_in,
                                   const char *const *out_names, size_t n_out, QOrtValue **outputs) {
    return QORT_SLOT(a, 9, QOrtStatus *(*)(QOrtSession *, const QOrtRunOptions *, const char *const *, const QOrtValue *const *, size_t,
                                           const char *const *, size_t, QOrtValue **))(s, ro, in_names, inputs, n_in, out_names, n_out, outputs);
}
static inline QOrtStatus *qort_create_session_options(const QOrtApi *a, QOrtSessionOptions **out) {
    return QORT_SLOT(a, 10, QOrtStatus *(*)(QOrtSessionOptions **))(out);
}
/* Slot 11: SetOptimizedModelFilePath(options, const char *path): the session writes its optimised graph there. */
static inline QOrtStatus *qort_set_optimized_model_path(const QOrtApi *a, QOrtSessionOptions *o, const char *path) {
    return QORT_SLOT(a, 11, QOrtStatus *(*)(QOrtSessionOptions *, const char *))(o, path);
}
static inline QOrtStatus *qort_set_execution_mode(const QOrtApi *a, QOrtSessionOptions *o, int mode) {
    return QORT_SLOT(a, 13, QOrtStatus *(*)(QOrtSessionOptions *, int))(o, mode);
}
static inline QOrtStatus *qort_enable_cpu_mem_arena(const QOrtApi *a, QOrtSessionOptions *o) {
    return QORT_SLOT(a, 18, QOrtStatus *(*)(QOrtSessionOptions *))(o);
}
static inline QOrtStatus *qort_disable_cpu_mem_arena(const QOrtApi *a, QOrtSessionOptions *o) {
    return QORT_SLOT(a, 19, QOrtStatus *(*)(QOrtSessionOptions *))(o);
}
static inline QOrtStatus *qort_set_graph_optimization_level(const QOrtApi *a, QOrtSessionOptions *o, int level) {
    return QORT_SLOT(a, 23, QOrtStatus *(*)(QOrtSessionOptions *, int))(o, level);
}
static inline QOrtStatus *qort_set_intra_op_threads(const QOrtApi *a, QOrtSessionOptions *o, int n) {
    return QORT_SLOT(a, 24, QOrtStatus *(*)(QOrtSessionOptions *, int))(o, n);
}
static inline QOrtStatus *qort_set_inter_op_threads(const QOrtApi *a, QOrtSessionOptions *o, int n) {
    return QORT_SLOT(a, 25, QOrtStatus *(*)(QOrtSessionOptions *, int))(o, n);
}
static inline QOrtStatus *qort_session_input_count(const QOrtApi *a, const QOrtSession *s, size_t *out) {
    return QORT_SLOT(a, 30, QOrtStatus *(*)(const QOrtSession *, size_t *))(s, out);
}
static inline QOrtStatus *qort_session_output_count(const QOrtApi *a, const QOrtSession *s, size_t *out) {
    return QORT_SLOT(a, 31, QOrtStatus *(*)(const QOrtSession *, size_t *))(s, out);
}
static inline QOrtStatus *qort_session_input_type_info(const QOrtApi *a, const QOrtSession *s, size_t i, QOrtTypeInfo **out) {
    return QORT_SLOT(a, 33, QOrtStatus *(*)(const QOrtSession *, size_t, QOrtTypeInfo **))(s, i, out);
}
static inline QOrtStatus *qort_session_output_type_info(const QOrtApi *a, const QOrtSession *s, size_t i, QOrtTypeInfo **out) {
    return QORT_SLOT(a, 34, QOrtStatus *(*)(const QOrtSession *, size_t, QOrtTypeInfo **))(s, i, out);
}
static inline QOrtStatus *qort_session_input_name(const QOrtApi *a, const QOrtSession *s, size_t i, QOrtAllocator *al, char **out) {
    return QORT_SLOT(a, 36, QOrtStatus *(*)(const QOrtSession *, size_t, QOrtAllocator *, char **))(s, i, al, out);
}
static inline QOrtStatus *qort_session_output_name(const QOrtApi *a, const QOrtSession *s, size_t i, QOrtAllocator *al, char **out) {
    return QORT_SLOT(a, 37, QOrtStatus *(*)(const QOrtSession *, size_t, QOrtAllocator *, char **))(s, i, al, out);
}
static inline QOrtStatus *qort_create_run_options(const QOrtApi *a, QOrtRunOptions **out) {
    return QORT_SLOT(a, 39, QOrtStatus *(*)(QOrtRunOptions **))(out);
}
static inline QOrtStatus *qort_run_options_set_terminate(const QOrtApi *a, QOrtRunOptions *ro) {
    return QORT_SLOT(a, 46, QOrtStatus *(*)(QOrtRunOptions *))(ro);
}
static inline QOrtStatus *qort_create_tensor_with_data(const QOrtApi *a, const QOrtMemoryInfo *mi, void *data, size_t bytes,
                                                       const int64_t *shape, size_t rank, int type, QOrtValue **out) {
    return QORT_SLOT(a, 49, QOrtStatus *(*)(const QOrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int, QOrtValue **))(mi, data, bytes, shape, rank, type, out);
}
static inline QOrtStatus *qort_tensor_mutable_data(const QOrtApi *a, QOrtValue *v, void **out) {
    return QORT_SLOT(a, 51, QOrtStatus *(*)(QOrtValue *, void **))(v, out);
}
static inline QOrtStatus *qort_cast_type_info_to_tensor_info(const QOrtApi *a, const QOrtTypeInfo *t, const QOrtTensorInfo **out) {
    return QORT_SLOT(a, 55, QOrtStatus *(*)(const QOrtTypeInfo *, const QOrtTensorInfo **))(t, out);
}
static inline QOrtStatus *qort_tensor_element_type(const QOrtApi *a, const QOrtTensorInfo *t, int *out) {
    return QORT_SLOT(a, 60, QOrtStatus *(*)(const QOrtTensorInfo *, int *))(t, out);
}
static inline QOrtStatus *qort_dimensions_count(const QOrtApi *a, const QOrtTensorInfo *t, size_t *out) {
    return QORT_SLOT(a, 61, QOrtStatus *(*)(const QOrtTensorInfo *, size_t *))(t, out);
}
static inline QOrtStatus *qort_dimensions(const QOrtApi *a, const QOrtTensorInfo *t, int64_t *values, size_t count) {
    return QORT_SLOT(a, 62, QOrtStatus *(*)(const QOrtTensorInfo *, int64_t *, size_t))(t, values, count);
}
static inline QOrtStatus *qort_tensor_type_and_shape(const QOrtApi *a, const QOrtValue *v, QOrtTensorInfo **out) {
    return QORT_SLOT(a, 65, QOrtStatus *(*)(const QOrtValue *, QOrtTensorInfo **))(v, out);
}
static inline QOrtStatus *qort_create_cpu_memory_info(const QOrtApi *a, int allocator_type, int mem_type, QOrtMemoryInfo **out) {
    return QORT_SLOT(a, 69, QOrtStatus *(*)(int, int, QOrtMemoryInfo **))(allocator_type, mem_type, out);
}
static inline QOrtStatus *qort_allocator_free(const QOrtApi *a, QOrtAllocator *al, void *p) {
    return QORT_SLOT(a, 76, QOrtStatus *(*)(QOrtAllocator *, void *))(al, p);
}
static inline QOrtStatus *qort_default_allocator(const QOrtApi *a, QOrtAllocator **out) {
    return QORT_SLOT(a, 78, QOrtStatus *(*)(QOrtAllocator **))(out);
}
static inline void qort_release_env(const QOrtApi *a, QOrtEnv *p) { QORT_SLOT(a, 92, void (*)(QOrtEnv *))(p); }
static inline void qort_release_status(const QOrtApi *a, QOrtStatus *p) { QORT_SLOT(a, 93, void (*)(QOrtStatus *))(p); }
static inline void qort_release_memory_info(const QOrtApi *a, QOrtMemoryInfo *p) { QORT_SLOT(a, 94, void (*)(QOrtMemoryInfo *))(p); }
static inline void qort_release_session(const QOrtApi *a, QOrtSession *p) { QORT_SLOT(a, 95, void (*)(QOrtSession *))(p); }
static inline void qort_release_value(const QOrtApi *a, QOrtValue *p) { QORT_SLOT(a, 96, void (*)(QOrtValue *))(p); }
static inline void qort_release_run_options(const QOrtApi *a, QOrtRunOptions *p) { QORT_SLOT(a, 97, void (*)(QOrtRunOptions *))(p); }
static inline void qort_release_type_info(const QOrtApi *a, QOrtTypeInfo *p) { QORT_SLOT(a, 98, void (*)(QOrtTypeInfo *))(p); }
static inline void qort_release_tensor_info(const QOrtApi *a, QOrtTensorInfo *p) { QORT_SLOT(a, 99, void (*)(QOrtTensorInfo *))(p); }
static inline void qort_release_session_options(const QOrtApi *a, QOrtSessionOptions *p) { QORT_SLOT(a, 100, void (*)(QOrtSessionOptions *))(p); }
// MARK: - Slots after version 1 (the table only grows, so these hold in every later version).
/// The table version quarantine asks for: 14 (ONNX Runtime 1.14) is the first to carry slot 238.
enum { QORT_API_VERSION_USED = 14 };
/* Slot 130: AddSessionConfigEntry(options, const char *key, const char *value) (status). */
static inline QOrtStatus *qort_add_session_config_entry(const QOrtApi *a, QOrtSessionOptions *o, const char *key, const char *value) {
    return QORT_SLOT(a, 130, QOrtStatus *(*)(QOrtSessionOptions *, const char *, const char *))(o, key, value);
}
/* Slot 238: GetSessionConfigEntry(options, const char *key, char *value, size_t *size) (status): with a
   buffer too small (or NULL) it fails and writes the size needed, terminator included. */
static inline QOrtStatus *qort_get_session_config_entry(const QOrtApi *a, const QOrtSessionOptions *o, const char *key, char *value, size_t *size) {
    return QORT_SLOT(a, 238, QOrtStatus *(*)(const QOrtSessionOptions *, const char *, char *, size_t *))(o, key, value, size);
}
#endif
