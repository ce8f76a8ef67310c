/*
 * The worker launcher's system calls (`quarantine worker-launcher`): start an analysis worker as
 * a user of its own, and SIGKILL it later without CAP_KILL.
 *
 * The launcher runs as the system user `quarantine` with CAP_SETUID and CAP_SETGID only. Its
 * worker takes the user quarantine-w<uid> for all three user ids (real, effective, saved): unlike a
 * worker that kept `quarantine` as its saved user id, it can never take `quarantine` back, and the
 * guardian service (also `quarantine`) cannot signal it. The launcher itself may not signal it
 * either (the kernel lets a process signal another whose real or saved user id is its own real or
 * effective one, or with CAP_KILL, which it lacks), so a kill is done by a child that takes the
 * worker's user first (CAP_SETUID), gives up every capability, and sends SIGKILL through the
 * worker's pidfd (never a recycled pid).
 *
 * Between fork and execve the child of a multi-threaded process may only make async-signal-safe
 * calls: everything there is a system call, on memory prepared before the fork.
 */
#define _GNU_SOURCE
#include "qsys_launch.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* The steps of the child, for the reason of a failure. */
enum { STEP_DESCRIPTORS = 1, STEP_SETGROUPS, STEP_SETRESGID, STEP_SETRESUID, STEP_CHECK_IDS, STEP_CAPABILITIES,
       STEP_PROCESS_GROUP, STEP_PARENT_DEATH, STEP_PARENT_GONE, STEP_EXEC };

static const char *step_name(int step) {
    switch (step) {
    case STEP_DESCRIPTORS: return "descriptors";
    case STEP_SETGROUPS: return "setgroups";
    case STEP_SETRESGID: return "setresgid";
    case STEP_SETRESUID: return "setresuid";
    case STEP_CHECK_IDS: return "the worker's user and groups did not change as asked";
    case STEP_CAPABILITIES: return "dropping capabilities";
    case STEP_PROCESS_GROUP: return "setpgid";
    case STEP_PARENT_DEATH: return "prctl(PR_SET_PDEATHSIG)";
    case STEP_PARENT_GONE: return "the launcher ended while the worker started";
    case STEP_EXEC: return "execve";
    default: return "?";
    }
}

static int fail(char *reason, size_t size, const char *what, int error) {
    if (reason && size > 0) snprintf(reason, size, "%s: %s", what, strerror(error));
    errno = error;
    return -1;
}

/* Every capability set of the calling (single-threaded) process emptied, the ambient set first. */
static int drop_capabilities(void) {
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return -1;
    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(data, 0, sizeof data);
    return (int)syscall(SYS_capset, &header, data);
}

static void child_fail(int status_fd, int step, int error) {
    int message[2] = { step, error };
    ssize_t ignored = write(status_fd, message, sizeof message);
    (void)ignored;
    _exit(127);
}

/* The child's side: descriptors, identity, capabilities, signals, exec. Never returns. */
static void child(const char *path, char *const argv[], char *const envp[], unsigned uid, unsigned gid,
                  int socket_fd, int runtime_fd, int error_fd, int status_fd, pid_t parent) {
    /* Out of the way of 0 to 4 first (any of them could sit there), then into place. */
    status_fd = fcntl(status_fd, F_DUPFD_CLOEXEC, 16);
    if (status_fd < 0) _exit(127);
    int high_socket = fcntl(socket_fd, F_DUPFD_CLOEXEC, 16);
    int high_error = fcntl(error_fd, F_DUPFD_CLOEXEC, 16);
    int high_runtime = runtime_fd >= 0 ? fcntl(runtime_fd, F_DUPFD_CLOEXEC, 16) : -1;
    if (high_socket < 0 || high_error < 0 || (runtime_fd >= 0 && high_runtime < 0)) child_fail(status_fd, STEP_DESCRIPTORS, errno);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) child_fail(status_fd, STEP_DESCRIPTORS, errno);
    if (dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 || dup2(high_error, 2) < 0 || dup2(high_socket, 3) < 0)
        child_fail(status_fd, STEP_DESCRIPTORS, errno);
    if (high_runtime >= 0) {
        if (dup2(high_runtime, 4) < 0) child_fail(status_fd, STEP_DESCRIPTORS, errno);
    } else {
        close(4);
    }
    /* Everything else the launcher holds (other guardians' connections, other workers' ends)
     * closes at execve; the status pipe too, which tells the parent the exec happened. */
    if (syscall(SYS_close_range, 5U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        for (int fd = 5; fd < 65536; fd++) if (fd != status_fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }

    if (syscall(SYS_setgroups, 0, NULL) != 0) child_fail(status_fd, STEP_SETGROUPS, errno);
    if (syscall(SYS_setresgid, gid, gid, gid) != 0) child_fail(status_fd, STEP_SETRESGID, errno);
    if (syscall(SYS_setresuid, uid, uid, uid) != 0) child_fail(status_fd, STEP_SETRESUID, errno);
    uid_t r, e, s;
    gid_t gr, ge, gs;
    if (syscall(SYS_getresuid, &r, &e, &s) != 0 || syscall(SYS_getresgid, &gr, &ge, &gs) != 0) child_fail(status_fd, STEP_CHECK_IDS, errno);
    if (r != uid || e != uid || s != uid || gr != gid || ge != gid || gs != gid || syscall(SYS_getgroups, 0, NULL) != 0)
        child_fail(status_fd, STEP_CHECK_IDS, EPERM);
    if (drop_capabilities() != 0) child_fail(status_fd, STEP_CAPABILITIES, errno);

    /* Default dispositions (a handler or SIG_IGN of the launcher's must not reach the worker),
     * nothing blocked. glibc refuses its two internal signals: those errors are ignored. */
    struct sigaction standard;
    memset(&standard, 0, sizeof standard);
    standard.sa_handler = SIG_DFL;
    for (int signal_number = 1; signal_number < NSIG; signal_number++) {
        if (signal_number != SIGKILL && signal_number != SIGSTOP) sigaction(signal_number, &standard, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    if (setpgid(0, 0) != 0) child_fail(status_fd, STEP_PROCESS_GROUP, errno);
    /* After the user change (which clears it). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_fail(status_fd, STEP_PARENT_DEATH, errno);
    if (getppid() != parent) child_fail(status_fd, STEP_PARENT_GONE, ESRCH);

    execve(path, argv, envp);
    child_fail(status_fd, STEP_EXEC, errno);
}

/* Forks a child that takes `uid` (all three ids), drops its capabilities and sends SIGKILL: to
 * `pidfd` (or `pid` when pidfd < 0), or with `everyone` to every process of that user. */
static int kill_from_child(unsigned uid, int pidfd, pid_t pid, int everyone) {
    if (uid == 0) { errno = EINVAL; return -1; }
    pid_t killer = fork();
    if (killer < 0) return -1;
    if (killer == 0) {
        if (syscall(SYS_setresuid, uid, uid, uid) != 0) _exit(errno & 0xff);
        if (drop_capabilities() != 0) _exit(errno & 0xff);
        long result;
        if (everyone) result = kill(-1, SIGKILL);
        else if (pidfd >= 0) result = syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        else result = kill(pid, SIGKILL);
        _exit(result == 0 ? 0 : (errno & 0xff));
    }
    int status = 0;
    while (waitpid(killer, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    if (!WIFEXITED(status)) { errno = EIO; return -1; }
    int code = WEXITSTATUS(status);
    if (code == 0) return 0;
    errno = code;
    return -1;
}

int qsys_kill_as_user(int pidfd, unsigned uid) { return kill_from_child(uid, pidfd, 0, 0); }

int qsys_kill_all_of_user(unsigned uid) { return kill_from_child(uid, -1, 0, 1); }

int qsys_pidfd_wait(int pidfd, int milliseconds) {
    struct pollfd poller = { .fd = pidfd, .events = POLLIN, .revents = 0 };
    int ready;
    do { ready = poll(&poller, 1, milliseconds); } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    return ready > 0 ? 1 : 0;
}

int qsys_launch_as_user(const char *path, char *const argv[], char *const envp[], unsigned uid, unsigned gid,
                        int socket_fd, int runtime_fd, int error_fd, int *pid_out, int *pidfd_out, char *reason, size_t reason_size) {
    if (reason && reason_size > 0) reason[0] = 0;
    if (uid == 0 || gid == 0) return fail(reason, reason_size, "the worker's user", EINVAL);
    int status[2];
    if (pipe2(status, O_CLOEXEC) != 0) return fail(reason, reason_size, "pipe2", errno);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int error = errno;
        close(status[0]);
        close(status[1]);
        return fail(reason, reason_size, "fork", error);
    }
    if (pid == 0) {
        close(status[0]);
        child(path, argv, envp, uid, gid, socket_fd, runtime_fd, error_fd, status[1], parent);
    }
    close(status[1]);
    int message[2] = { 0, 0 };
    ssize_t count;
    do { count = read(status[0], message, sizeof message); } while (count < 0 && errno == EINTR);
    close(status[0]);
    if (count != 0) {
        /* The child failed before or at execve (it exits 127). */
        int stat_value;
        while (waitpid(pid, &stat_value, 0) < 0 && errno == EINTR) {}
        if (count == (ssize_t)sizeof message) {
            char what[160];
            snprintf(what, sizeof what, "starting the worker as uid %u: %s", uid, step_name(message[0]));
            return fail(reason, reason_size, what, message[1]);
        }
        return fail(reason, reason_size, "starting the worker: the child's report was cut short", EIO);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        /* No pidfd (a kernel before 5.3): the child is stopped at once, by pid (not reaped yet,
         * so the pid cannot have been recycled). */
        int error = errno;
        kill_from_child(uid, -1, pid, 0);
        int stat_value;
        while (waitpid(pid, &stat_value, 0) < 0 && errno == EINTR) {}
        return fail(reason, reason_size, "pidfd_open", error);
    }
    *pid_out = pid;
    *pidfd_out = pidfd;
    return 0;
}
