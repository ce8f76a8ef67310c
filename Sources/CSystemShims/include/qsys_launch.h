#ifndef QUARANTINE_QSYS_LAUNCH_H
#define QUARANTINE_QSYS_LAUNCH_H
#include <stddef.h>
#include <sys/types.h>

/// Starts `path` with `argv` and `envp` as the user `uid` and group `gid` (real, effective and saved;
/// no supplementary groups; no capabilities left, ambient or otherwise), for the worker launcher
/// (`quarantine worker-launcher`, which holds CAP_SETUID and CAP_SETGID). In the child, between
/// fork and execve, only system calls: `socket_fd` becomes descriptor 3, `runtime_fd` (or -1)
/// descriptor 4, `error_fd` descriptor 2, /dev/null 0 and 1, every other descriptor is closed,
/// signal dispositions are defaults and the mask empty, its own process group, and
/// PR_SET_PDEATHSIG SIGKILL (which the kernel delivers only while the launcher may signal it).
/// Returns 0 with `*pid` and `*pidfd` (a pidfd, close-on-exec) set; or -1 with errno and "step:
/// error" in `reason` (the child, if any, is reaped).
int qsys_launch_as_user(const char *path, char *const argv[], char *const envp[], unsigned uid, unsigned gid,
                        int socket_fd, int runtime_fd, int error_fd, int *pid, int *pidfd, char *reason, size_t reason_size);

/// SIGKILLs the process `pidfd` refers to, which runs as the user `uid` (all three user ids): from a
/// short-lived child that takes `uid` as its real, effective and saved user (needs CAP_SETUID),
/// drops every capability and calls pidfd_send_signal. No CAP_KILL is needed, and the caller's
/// own user never becomes able to signal the worker. Returns 0, or -1 with errno (ESRCH: it had
/// already ended).
int qsys_kill_as_user(int pidfd, unsigned uid);

/// SIGKILLs every process of the user `uid` (kill(-1) from a child that took `uid`, as in
/// qsys_kill_as_user): the workers a launcher that died left behind. `uid` 0 is refused (EINVAL).
/// Returns 0, or -1 with errno (ESRCH: there were none).
int qsys_kill_all_of_user(unsigned uid);

/// Waits up to `milliseconds` for `pidfd` to become readable (the process ended): 1 when it ended,
/// 0 on timeout, -1 with errno.
int qsys_pidfd_wait(int pidfd, int milliseconds);
#endif
