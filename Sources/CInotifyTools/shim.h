#ifndef QIT_SHIM_H
#define QIT_SHIM_H

#include <inotifytools/inotifytools.h>
#include <inotifytools/inotify.h>

/// The name that follows an inotify event (a flexible array member, which Swift does not import).
/// Empty when the event is about the watched directory itself.
static inline const char *qit_event_name(const struct inotify_event *event) {
    return event->len > 0 ? event->name : "";
}

#endif
