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
#include <sys/socket.h>
#include <sys/un.h>
#include <string.h>
#include <time.h>

int qsys_limit_malloc_arenas(int count) {
#ifdef M_ARENA_MAX
    return mallopt(M_ARENA_MAX, count);
#else
    (void)count;
    return 0;
#endif
}

int qsys_set_malloc_thresholds(size_t mmap_threshold, size_t trim_threshold) {
    int mmap_set = mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold);
    int trim_set = mallopt(M_TRIM_THRESHOLD, (int)trim_threshold);
    return mmap_set && trim_set;
}

int qsys_release_free_memory(void) { return malloc_trim(0); }

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
    /* Who 0 is the calling thread for both on Linux (never its thread id: the analysis worker's
     * seccomp filter refuses any other who, since a thread id cannot be told from a sibling's pid). */
    int result = 0, saved = 0;
    if (setpriority(PRIO_PROCESS, 0, nice) != 0) { result = -1; saved = errno; }
    if (syscall(SYS_ioprio_set, QSYS_IOPRIO_WHO_PROCESS, 0, QSYS_IOPRIO_CLASS_IDLE << QSYS_IOPRIO_CLASS_SHIFT) != 0 && result == 0) {
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

int qsys_thread_name(char *buffer, int size) {
    char name[17] = { 0 };
    if (size <= 0 || prctl(PR_GET_NAME, name, 0, 0, 0) != 0) return -1;
    snprintf(buffer, (size_t)size, "%s", name);
    return 0;
}

ssize_t qsys_send_with_descriptors(int socket, const void *bytes, size_t length, const int *descriptors, int count) {
    struct iovec io = { .iov_base = (void *)bytes, .iov_len = length };
    struct msghdr message = { .msg_iov = &io, .msg_iovlen = 1 };
    char control[CMSG_SPACE(sizeof(int) * 16)];
    if (count > 16) { errno = EINVAL; return -1; }
    if (count > 0) {
        memset(control, 0, sizeof control);
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * count);
    }
    ssize_t sent;
    do { sent = sendmsg(socket, &message, MSG_NOSIGNAL); } while (sent < 0 && errno == EINTR);
    return sent;
}

ssize_t qsys_receive_with_descriptors(int socket, void *bytes, size_t length, int *descriptors, int max_count, int *count, int *truncated) {
    struct iovec io = { .iov_base = bytes, .iov_len = length };
    char control[CMSG_SPACE(sizeof(int) * 16)];
    struct msghdr message = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
    *count = 0;
    *truncated = 0;
    ssize_t received;
    do { received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC); } while (received < 0 && errno == EINTR);
    if (received < 0) return -1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int arrived = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *fds = (int *)CMSG_DATA(header);
        for (int i = 0; i < arrived; i++) {
            if (*count < max_count) descriptors[(*count)++] = fds[i];
            else { close(fds[i]); *truncated = 1; }
        }
    }
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) *truncated = 1;
    return received;
}

int qsys_peer_credentials(int socket, int *pid, unsigned *uid, unsigned *gid) {
    struct ucred credentials;
    socklen_t size = sizeof credentials;
    if (getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int qsys_accept_cloexec(int socket) {
    int fd;
    do { fd = accept4(socket, NULL, NULL, SOCK_CLOEXEC); } while (fd < 0 && errno == EINTR);
    return fd;
}

unsigned long long qsys_thread_cpu_ns(void) {
    struct timespec now;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
    return (unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec;
}
