#ifndef QIT_SHIM_H
#define QIT_SHIM_H

#include <inotifytools/inotifytools.h>
#include <inotifytools/inotify.h>
#include <sys/prctl.h>

/// The name that follows an inotify event (a flexible array member, which Swift does not import).
/// Empty when the event is about the watched directory itself.
static inline const char *qit_event_name(const struct inotify_event *event) {
    return event->len > 0 ? event->name : "";
}

/// Names the calling thread (shown by ps/top and in /proc/self/task/<tid>/comm; 15 bytes kept).
static inline void qit_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

#endif
