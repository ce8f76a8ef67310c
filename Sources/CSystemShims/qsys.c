#define _GNU_SOURCE
#include "qsys.h"
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <errno.h>
#include <sys/prctl.h>

int qsys_limit_malloc_arenas(int count) {
#ifdef M_ARENA_MAX
    return mallopt(M_ARENA_MAX, count);
#else
    (void)count;
    return 0;
#endif
}

int qsys_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    return renameat2(olddirfd, oldpath, newdirfd, newpath, RENAME_NOREPLACE);
}

ssize_t qsys_flistxattr(int fd, char *list, size_t size) { return flistxattr(fd, list, size); }
ssize_t qsys_fgetxattr(int fd, const char *name, void *value, size_t size) { return fgetxattr(fd, name, value, size); }
int qsys_fsetxattr(int fd, const char *name, const void *value, size_t size) { return fsetxattr(fd, name, value, size, 0); }

/* ioprio_set has no glibc wrapper; these are the kernel's constants (linux/ioprio.h). */
#define QSYS_IOPRIO_WHO_PROCESS 1
#define QSYS_IOPRIO_CLASS_SHIFT 13
#define QSYS_IOPRIO_CLASS_IDLE 3

int qsys_lower_thread_priority(int nice) {
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int result = 0, saved = 0;
    if (setpriority(PRIO_PROCESS, (id_t)tid, nice) != 0) { result = -1; saved = errno; }
    if (syscall(SYS_ioprio_set, QSYS_IOPRIO_WHO_PROCESS, tid, QSYS_IOPRIO_CLASS_IDLE << QSYS_IOPRIO_CLASS_SHIFT) != 0 && result == 0) {
        result = -1; saved = errno;
    }
    if (result != 0) errno = saved;
    return result;
}

int qsys_thread_io_class(void) {
    pid_t tid = (pid_t)syscall(SYS_gettid);
    long value = syscall(SYS_ioprio_get, QSYS_IOPRIO_WHO_PROCESS, tid);
    return value < 0 ? -1 : (int)(value >> QSYS_IOPRIO_CLASS_SHIFT);
}

void qsys_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
