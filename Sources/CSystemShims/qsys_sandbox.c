/* The analysis worker's sandbox: qsys_enter_analysis_sandbox. See the comment above it. */
#define _GNU_SOURCE
#include "qsys.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdatomic.h>
#include <time.h>
#include <grp.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define QSYS_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define QSYS_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "qsys_enter_analysis_sandbox knows the system calls of x86_64 and aarch64 only"
#endif

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the seccomp filter reads the low half of 64-bit arguments at their first 4 bytes"
#endif

/* System calls that older kernel headers lack (Debian 12's are 6.1's). From 424 on, every
 * architecture shares one numbering (x86_64's and asm-generic's tables agree). */
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#define QSYS_NR_FCHMODAT2 452      /* 6.6: chmod with flags */
#define QSYS_NR_SETXATTRAT 463     /* 6.13 */
#define QSYS_NR_REMOVEXATTRAT 466  /* 6.13 */
#define QSYS_NR_OPEN_TREE_ATTR 467 /* 6.15 */
#define QSYS_NR_FILE_SETATTR 469   /* 6.17: inode flags and project id */
/* The first number no kernel this was written against had (listns came in 6.19 as 470). Numbers
 * from here up fail with ENOSYS: a deny-list cannot know what a future call does, and C
 * libraries fall back when a new call is missing. */
#define QSYS_NR_FIRST_UNKNOWN 470

#define QSYS_X32_SYSCALL_BIT 0x40000000u

/* Open flags that ask for write access or a change (the same values on both architectures). */
#define QSYS_OPEN_WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)
/* clone flags that make new namespaces (CLONE_NEWNS ... CLONE_NEWNET). */
#define QSYS_CLONE_NAMESPACE_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
                                    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

/* MARK: - Building the filter */

#define QSYS_FILTER_CAPACITY 1024
#define QSYS_RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define QSYS_ARG_LOW(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))

struct qsys_filter {
    struct sock_filter code[QSYS_FILTER_CAPACITY];
    unsigned length;
    int overflow;
};

static void qsys_emit(struct qsys_filter *f, uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
    if (f->length >= QSYS_FILTER_CAPACITY) { f->overflow = 1; return; }
    f->code[f->length++] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
}

static void qsys_return(struct qsys_filter *f, uint32_t action) { qsys_emit(f, BPF_RET | BPF_K, action, 0, 0); }
static void qsys_load_nr(struct qsys_filter *f) { qsys_emit(f, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0); }
static void qsys_load_arg(struct qsys_filter *f, int i) { qsys_emit(f, BPF_LD | BPF_W | BPF_ABS, QSYS_ARG_LOW(i), 0, 0); }

/* Each rule starts with the system call number in the accumulator and either returns or falls
 * through to the next rule with the number still there. */

/* `nr` fails with `err`. */
static void qsys_deny(struct qsys_filter *f, long nr, int err) {
    qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1);
    qsys_return(f, QSYS_RET_ERRNO(err));
}

/* `nr` fails with `err` when its argument `arg` (low 32 bits) has any bit of `mask`. */
static void qsys_deny_when_any_bit(struct qsys_filter *f, long nr, int arg, uint32_t mask, int err) {
    qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 4);
    qsys_load_arg(f, arg);
    qsys_emit(f, BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1);
    qsys_return(f, QSYS_RET_ERRNO(err));
    qsys_return(f, SECCOMP_RET_ALLOW);
}

/* `nr` fails with `err` unless its argument `arg` (low 32 bits) is `value`. */
static void qsys_deny_unless_equal(struct qsys_filter *f, long nr, int arg, uint32_t value, int err) {
    qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 4);
    qsys_load_arg(f, arg);
    qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1);
    qsys_return(f, SECCOMP_RET_ALLOW);
    qsys_return(f, QSYS_RET_ERRNO(err));
}

/* `nr` fails with `err` when its argument `arg` (low 32 bits), masked with `mask`, is one of
 * `values` (at most 64). */
static void qsys_deny_when_one_of(struct qsys_filter *f, long nr, int arg, uint32_t mask,
                                  const uint32_t *values, unsigned count, int err) {
    unsigned masked = mask != 0xffffffffu;
    qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, (uint8_t)(count + 3 + masked));
    qsys_load_arg(f, arg);
    if (masked) qsys_emit(f, BPF_ALU | BPF_AND | BPF_K, mask, 0, 0);
    for (unsigned i = 0; i < count; i++) qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, values[i], (uint8_t)(count - i), 0);
    qsys_return(f, SECCOMP_RET_ALLOW);
    qsys_return(f, QSYS_RET_ERRNO(err));
}

/* `nr` is allowed only when each argument `args[i]` (all 64 bits) is `values[i]` (at most 3);
 * otherwise it fails with `err`. An argument whose upper half is not zero never matches, so
 * garbage in the upper half of an `int` argument is refused, never let through. */
static void qsys_allow_only_when(struct qsys_filter *f, long nr, const int *args, const uint32_t *values, unsigned count, int err) {
    uint8_t deny = (uint8_t)(4 * count + 1);
    qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, (uint8_t)(4 * count + 2));
    for (unsigned i = 0; i < count; i++) {
        qsys_load_arg(f, args[i]);
        qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, values[i], 0, (uint8_t)(deny - (4 * i + 2)));
        qsys_emit(f, BPF_LD | BPF_W | BPF_ABS, QSYS_ARG_LOW(args[i]) + 4, 0, 0);
        qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, (uint8_t)(deny - (4 * i + 4)));
    }
    qsys_return(f, SECCOMP_RET_ALLOW);
    qsys_return(f, QSYS_RET_ERRNO(err));
}

#define QSYS_COUNT(array) ((unsigned)(sizeof(array) / sizeof((array)[0])))

/* System calls that fail with EPERM whatever their arguments. */
static const long qsys_denied_calls[] = {
    /* File-system changes. */
    __NR_unlinkat, __NR_renameat2, __NR_mkdirat, __NR_linkat, __NR_symlinkat,
    __NR_fchmod, __NR_fchmodat, QSYS_NR_FCHMODAT2, __NR_fchown, __NR_fchownat, __NR_truncate,
    __NR_utimensat, __NR_setxattr, __NR_lsetxattr, __NR_fsetxattr, QSYS_NR_SETXATTRAT,
    __NR_removexattr, __NR_lremovexattr, __NR_fremovexattr, QSYS_NR_REMOVEXATTRAT,
    QSYS_NR_FILE_SETATTR, __NR_mknodat, __NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot,
    __NR_swapon, __NR_swapoff, __NR_acct, __NR_quotactl, __NR_quotactl_fd,
    __NR_open_tree, QSYS_NR_OPEN_TREE_ATTR, __NR_move_mount, __NR_fsopen, __NR_fsconfig,
    __NR_fsmount, __NR_fspick, __NR_mount_setattr,
    __NR_open_by_handle_at, __NR_name_to_handle_at,
#ifdef __NR_unlink
    __NR_unlink,
#endif
#ifdef __NR_rename
    __NR_rename,
#endif
#ifdef __NR_renameat
    __NR_renameat,
#endif
#ifdef __NR_mkdir
    __NR_mkdir,
#endif
#ifdef __NR_rmdir
    __NR_rmdir,
#endif
#ifdef __NR_link
    __NR_link,
#endif
#ifdef __NR_symlink
    __NR_symlink,
#endif
#ifdef __NR_chmod
    __NR_chmod,
#endif
#ifdef __NR_chown
    __NR_chown,
#endif
#ifdef __NR_lchown
    __NR_lchown,
#endif
#ifdef __NR_utime
    __NR_utime,
#endif
#ifdef __NR_utimes
    __NR_utimes,
#endif
#ifdef __NR_futimesat
    __NR_futimesat,
#endif
#ifdef __NR_mknod
    __NR_mknod,
#endif
#ifdef __NR_creat
    __NR_creat,
#endif
    /* The network, and new sockets of any kind: the worker talks through descriptor 3 only. */
    __NR_socket, __NR_socketpair, __NR_connect, __NR_bind, __NR_listen, __NR_accept, __NR_accept4,
    /* Other processes: tracing, reading or writing their memory, programs, pidfds. */
    __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev, __NR_kcmp,
    __NR_pidfd_open, __NR_pidfd_send_signal, __NR_pidfd_getfd, __NR_process_madvise,
    __NR_process_mrelease, __NR_execve, __NR_execveat, __NR_tkill,
#ifdef __NR_fork
    __NR_fork,
#endif
#ifdef __NR_vfork
    __NR_vfork,
#endif
    /* System V and POSIX message queues, shared memory and semaphores reach other processes. */
    __NR_shmget, __NR_shmat, __NR_shmctl, __NR_msgget, __NR_msgsnd, __NR_msgrcv, __NR_msgctl,
    __NR_semget, __NR_semop, __NR_semtimedop, __NR_semctl, __NR_mq_open, __NR_mq_unlink,
    /* Identities. */
    __NR_setuid, __NR_setgid, __NR_setreuid, __NR_setregid, __NR_setresuid, __NR_setresgid,
    __NR_setgroups, __NR_setfsuid, __NR_setfsgid,
    /* Kernel facilities a decoder never needs and attacks often use. */
    __NR_keyctl, __NR_add_key, __NR_request_key, __NR_bpf, __NR_perf_event_open, __NR_userfaultfd,
    __NR_unshare, __NR_setns, __NR_init_module, __NR_finit_module, __NR_delete_module,
    __NR_kexec_load, __NR_kexec_file_load, __NR_reboot,
    __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
    /* Resource limits (RLIMIT_CORE is set before the filter) and locks: another process of the
     * same user (a sibling worker) could otherwise be given a lower limit, or a file lock could
     * stall whoever waits for it. prlimit64 is allowed only to read (below). */
    __NR_setrlimit, __NR_flock, __NR_migrate_pages,
#ifdef __NR_fanotify_init
    __NR_fanotify_init,
#endif
};

/* Allowed without argument checks (see the allow-list in qsys_build_filter). At most 254. */
static const long qsys_allowed_calls[] = {
    /* Descriptors it holds: reading, its memfds and pipes, its socket. */
    __NR_read, __NR_write, __NR_readv, __NR_writev, __NR_pread64, __NR_pwrite64, __NR_preadv, __NR_preadv2,
    __NR_lseek, __NR_close, __NR_close_range, __NR_dup, __NR_dup3, __NR_fstat, __NR_newfstatat, __NR_statx,
    __NR_fstatfs, __NR_statfs, __NR_faccessat, 439 /* faccessat2 */, __NR_readlinkat, __NR_getdents64, __NR_getcwd,
    __NR_fadvise64, __NR_memfd_create, __NR_ftruncate, __NR_fsync, __NR_fdatasync,
    __NR_sendmsg, __NR_recvmsg, __NR_sendto, __NR_recvfrom, __NR_getpeername, __NR_getsockname, __NR_getsockopt,
    __NR_shutdown, __NR_pipe2, __NR_eventfd2, __NR_epoll_create1, __NR_epoll_ctl, __NR_epoll_pwait, 441 /* epoll_pwait2 */,
    __NR_ppoll, __NR_pselect6, __NR_timerfd_create, __NR_timerfd_settime, __NR_timerfd_gettime,
    /* Its own memory. */
    __NR_mmap, __NR_munmap, __NR_mprotect, __NR_madvise, __NR_mremap, __NR_brk, __NR_mlock, __NR_munlock,
    __NR_mincore, __NR_msync, __NR_get_mempolicy, __NR_set_mempolicy, __NR_membarrier,
    /* Its threads, time and signals. */
    __NR_futex, 449 /* futex_waitv */, __NR_set_robust_list, __NR_rseq, __NR_set_tid_address, __NR_nanosleep,
    __NR_clock_nanosleep, __NR_clock_gettime, __NR_clock_getres, __NR_gettimeofday, __NR_sched_yield,
    __NR_sched_getaffinity, __NR_sched_getparam, __NR_sched_getscheduler, __NR_sched_get_priority_max,
    __NR_sched_get_priority_min, __NR_getpriority, __NR_ioprio_get, __NR_getrusage, __NR_times, __NR_sysinfo,
    __NR_uname, __NR_getrandom, __NR_getcpu, __NR_sigaltstack, __NR_rt_sigaction, __NR_rt_sigprocmask,
    __NR_rt_sigreturn, __NR_rt_sigsuspend, __NR_rt_sigtimedwait, __NR_rt_sigpending,
    __NR_timer_create, __NR_timer_settime, __NR_timer_gettime, __NR_timer_getoverrun, __NR_timer_delete,
    __NR_setitimer, __NR_getitimer, __NR_exit, __NR_exit_group, __NR_restart_syscall, __NR_wait4, __NR_waitid,
    /* Who it is (and its capabilities, which it can only lower), and its own sandbox. */
    __NR_getpid, __NR_gettid, __NR_getppid, __NR_getuid, __NR_geteuid, __NR_getgid, __NR_getegid,
    __NR_getresuid, __NR_getresgid, __NR_getgroups, __NR_getpgid, __NR_getsid, __NR_umask, __NR_prctl,
    __NR_capget, 444 /* landlock_create_ruleset */, 445 /* landlock_add_rule */,
    446 /* landlock_restrict_self */,
#ifdef __NR_arch_prctl
    __NR_arch_prctl,
#endif
#ifdef __NR_dup2
    __NR_dup2,
#endif
#ifdef __NR_stat
    __NR_stat,
#endif
#ifdef __NR_lstat
    __NR_lstat,
#endif
#ifdef __NR_access
    __NR_access,
#endif
#ifdef __NR_readlink
    __NR_readlink,
#endif
#ifdef __NR_poll
    __NR_poll,
#endif
#ifdef __NR_select
    __NR_select,
#endif
#ifdef __NR_pipe
    __NR_pipe,
#endif
#ifdef __NR_epoll_wait
    __NR_epoll_wait,
#endif
#ifdef __NR_epoll_create
    __NR_epoll_create,
#endif
#ifdef __NR_eventfd
    __NR_eventfd,
#endif
#ifdef __NR_getrlimit
    __NR_getrlimit,
#endif
#ifdef __NR_time
    __NR_time,
#endif
#ifdef __NR_getpgrp
    __NR_getpgrp,
#endif
#ifdef __NR_alarm
    __NR_alarm,
#endif
#ifdef __NR_pause
    __NR_pause,
#endif
};

/* ioctl requests that change a file through a descriptor opened read-only, inject input into a
 * terminal, or route SIGIO to another process. */
static const uint32_t qsys_denied_ioctls[] = {
    0x5412, /* TIOCSTI */
    0x541C, /* TIOCLINUX */
    0x8901, /* FIOSETOWN */
    0x8902, /* SIOCSPGRP */
};
/* ioctl types (bits 8-15) whose requests manage files and file systems: FS_IOC_* and ext4 ('f':
 * flags, verity, encryption policies), FS_IOC_GETVERSION/SETVERSION ('v'), XFS and fsxattr
 * ('X'), Btrfs and FICLONE (0x94, snapshots), F2FS (0xf5). */
static const uint32_t qsys_denied_ioctl_types[] = { 'f' << 8, 'v' << 8, 'X' << 8, 0x94 << 8, 0xf5 << 8 };
/* fcntl commands that route SIGIO/SIGURG to another process (F_SETOWN, F_SETOWN_EX), take a
 * lock that others would wait for (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW), a lease, or
 * watch a folder (F_NOTIFY). */
static const uint32_t qsys_denied_fcntls[] = { F_SETOWN, F_SETOWN_EX, 6 /* F_SETLK */, 7 /* F_SETLKW */,
                                               37 /* F_OFD_SETLK */, 38 /* F_OFD_SETLKW */, 1024 /* F_SETLEASE */, 1026 /* F_NOTIFY */ };
/* Calls that may change only the calling thread: (which, who) = (PRIO_PROCESS, 0) for
 * setpriority, (IOPRIO_WHO_PROCESS, 0) for ioprio_set, pid 0 for the sched_set* calls. A thread
 * id or another pid would reach a sibling worker of the same user: refused. */
static const int qsys_first_two[] = { 0, 1 };
static const int qsys_first[] = { 0 };
static const int qsys_third[] = { 2 };
static const uint32_t qsys_process_self[] = { 0, 0 };      /* PRIO_PROCESS, 0 */
static const uint32_t qsys_io_process_self[] = { 1, 0 };   /* IOPRIO_WHO_PROCESS, 0 */
static const uint32_t qsys_zero[] = { 0 };

static void qsys_build_filter(struct qsys_filter *f, pid_t self) {
    /* Another calling convention (i386 via int 0x80 on x86_64) has other numbers: kill. */
    qsys_emit(f, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), 0, 0);
    qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, QSYS_AUDIT_ARCH, 1, 0);
    qsys_return(f, SECCOMP_RET_KILL_PROCESS);
    qsys_load_nr(f);
#if defined(__x86_64__)
    /* x32 calls share the x86_64 audit arch and number the same calls differently: kill. */
    qsys_emit(f, BPF_JMP | BPF_JGE | BPF_K, QSYS_X32_SYSCALL_BIT, 0, 1);
    qsys_return(f, SECCOMP_RET_KILL_PROCESS);
#endif
    qsys_emit(f, BPF_JMP | BPF_JGE | BPF_K, QSYS_NR_FIRST_UNKNOWN, 0, 1);
    qsys_return(f, QSYS_RET_ERRNO(ENOSYS));

    for (unsigned i = 0; i < QSYS_COUNT(qsys_denied_calls); i++) qsys_deny(f, qsys_denied_calls[i], EPERM);
    /* openat2 hides its flags in a struct: ENOSYS makes glibc fall back to openat, checked here.
     * clone3 likewise (glibc's pthread_create falls back to clone, whose flags are checked). */
    qsys_deny(f, __NR_openat2, ENOSYS);
    qsys_deny(f, __NR_clone3, ENOSYS);

    qsys_deny_when_any_bit(f, __NR_openat, 2, QSYS_OPEN_WRITE_FLAGS, EPERM);
#ifdef __NR_open
    qsys_deny_when_any_bit(f, __NR_open, 1, QSYS_OPEN_WRITE_FLAGS, EPERM);
#endif
    qsys_deny_when_any_bit(f, __NR_clone, 0, QSYS_CLONE_NAMESPACE_FLAGS, EPERM);

    /* Signals to the worker itself only. */
    qsys_deny_unless_equal(f, __NR_kill, 0, (uint32_t)self, EPERM);
    qsys_deny_unless_equal(f, __NR_tgkill, 0, (uint32_t)self, EPERM);
    qsys_deny_unless_equal(f, __NR_rt_sigqueueinfo, 0, (uint32_t)self, EPERM);
    qsys_deny_unless_equal(f, __NR_rt_tgsigqueueinfo, 0, (uint32_t)self, EPERM);
    qsys_deny_when_one_of(f, __NR_fcntl, 1, 0xffffffffu, qsys_denied_fcntls, QSYS_COUNT(qsys_denied_fcntls), EPERM);
    qsys_allow_only_when(f, __NR_setpriority, qsys_first_two, qsys_process_self, 2, EPERM);
    qsys_allow_only_when(f, __NR_ioprio_set, qsys_first_two, qsys_io_process_self, 2, EPERM);
    qsys_allow_only_when(f, __NR_sched_setaffinity, qsys_first, qsys_zero, 1, EPERM);
    qsys_allow_only_when(f, __NR_sched_setscheduler, qsys_first, qsys_zero, 1, EPERM);
    qsys_allow_only_when(f, __NR_sched_setparam, qsys_first, qsys_zero, 1, EPERM);
    qsys_allow_only_when(f, __NR_sched_setattr, qsys_first, qsys_zero, 1, EPERM);
    qsys_allow_only_when(f, __NR_move_pages, qsys_first, qsys_zero, 1, EPERM);
    qsys_allow_only_when(f, __NR_get_robust_list, qsys_first, qsys_zero, 1, EPERM);
    /* prlimit64 only reads: a new limit (argument 2 not NULL) is refused, for itself too. */
    qsys_allow_only_when(f, __NR_prlimit64, qsys_third, qsys_zero, 1, EPERM);

    /* ioctl: JEQ ioctl,0,skip | LD arg1 | JEQ request_i -> ERRNO | AND 0xff00 | JEQ type_j -> ERRNO
     * | ALLOW | ERRNO. */
    {
        unsigned n = QSYS_COUNT(qsys_denied_ioctls), t = QSYS_COUNT(qsys_denied_ioctl_types);
        qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, (uint8_t)(1 + n + 1 + t + 2));
        qsys_load_arg(f, 1);
        for (unsigned i = 0; i < n; i++)
            qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, qsys_denied_ioctls[i], (uint8_t)((n - 1 - i) + 1 + t + 1), 0);
        qsys_emit(f, BPF_ALU | BPF_AND | BPF_K, 0xff00, 0, 0);
        for (unsigned j = 0; j < t; j++)
            qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, qsys_denied_ioctl_types[j], (uint8_t)((t - 1 - j) + 1), 0);
        qsys_return(f, SECCOMP_RET_ALLOW);
        qsys_return(f, QSYS_RET_ERRNO(EPERM));
    }

    /* The allow-list: what is left of the system calls the worker makes (traced with strace -f
     * over every format the worker decodes, both models and a video) and the ordinary calls of
     * the C library, the Swift runtime, libdispatch and Rust's std (librsvg) that a rarer path
     * may make. The calls with argument checks above have already been decided. Anything else
     * fails with EPERM. JEQ nr -> ALLOW (jt skips the rest of the list and the ERRNO). */
    {
        unsigned n = QSYS_COUNT(qsys_allowed_calls);
        for (unsigned i = 0; i < n; i++)
            qsys_emit(f, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)qsys_allowed_calls[i], (uint8_t)(n - 1 - i + 1), 0);
        qsys_return(f, QSYS_RET_ERRNO(EPERM));
        qsys_return(f, SECCOMP_RET_ALLOW);
    }
}

/* MARK: - Entering the sandbox */

/* "step: error text" into `reason`, errno `err`, -1. */
static int qsys_fail(char *reason, size_t reason_size, const char *step, int err) {
    if (reason && reason_size > 0) snprintf(reason, reason_size, "%s: %s", step, strerror(err));
    errno = err;
    return -1;
}

/* `text` as it is into `reason`, errno `err`, -1. */
static int qsys_fail_text(char *reason, size_t reason_size, const char *text, int err) {
    if (reason && reason_size > 0) snprintf(reason, reason_size, "%s", text);
    errno = err;
    return -1;
}

/* Closes every descriptor above `highest`: close_range, else each entry of /proc/self/fd, else
 * every number below the descriptor limit. */
static int qsys_close_descriptors_above(int highest) {
    if (syscall(__NR_close_range, (unsigned)highest + 1, ~0u, 0u) == 0) return 0;
    DIR *folder = opendir("/proc/self/fd");
    if (folder) {
        int own = dirfd(folder);
        struct dirent *entry;
        while ((entry = readdir(folder)) != NULL) {
            char *end;
            long fd = strtol(entry->d_name, &end, 10);
            if (*end == 0 && end != entry->d_name && fd > highest && fd != own) close((int)fd);
        }
        closedir(folder);
        return 0;
    }
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    rlim_t top = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > (1u << 20) ? (1u << 20) : limit.rlim_cur;
    for (rlim_t fd = (rlim_t)highest + 1; fd < top; fd++) close((int)fd);
    return 0;
}

/* The bits of the line `key` ("CapPrm:", ...) in a /proc status file, or -1 when it cannot be read. */
static long long qsys_status_bits(const char *path, const char *key) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[4096];
    ssize_t length = read(fd, text, sizeof text - 1);
    close(fd);
    if (length <= 0) return -1;
    text[length] = 0;
    const char *line = strstr(text, key);
    if (!line) return -1;
    return (long long)strtoull(line + strlen(key), NULL, 16);
}

/* Capabilities belong to each thread; capset changes the caller's only. Returns the id of another
 * thread that still holds some, 0 when none does, -1 when /proc/self/task cannot be read. */
static long qsys_thread_with_capabilities(void) {
    DIR *folder = opendir("/proc/self/task");
    if (!folder) return -1;
    long self = syscall(SYS_gettid), found = 0;
    struct dirent *entry;
    while (found == 0 && (entry = readdir(folder)) != NULL) {
        char *end;
        long tid = strtol(entry->d_name, &end, 10);
        if (*end != 0 || end == entry->d_name || tid == self) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
        if (qsys_status_bits(path, "CapPrm:") > 0 || qsys_status_bits(path, "CapEff:") > 0) found = tid;
    }
    closedir(folder);
    return found;
}

/*
 * qsys_enter_analysis_sandbox: takes away, for good, everything the analysis worker does not
 * need to decode pictures and videos and run ONNX models on descriptors it is handed. Called once
 * at the worker's start, before it reads a request. In order:
 *
 * 1. PR_SET_PDEATHSIG SIGKILL: the worker dies with the service that started it (strictly, with
 *    the thread that forked it), so it never outlives it holding descriptors.
 * 2. Every descriptor above 3 is closed (close_range, else /proc/self/fd, else a loop up to the
 *    descriptor limit): whatever was inherited by mistake (a database, a log, a listening socket)
 *    is gone. 0, 1, 2 and 3 (the socket to the service) stay.
 * 3. Capabilities: the bounding set is emptied first, while CAP_SETPCAP may still be held (EPERM
 *    is ignored: without that capability it cannot be done, and with no_new_privs and an empty
 *    permitted set it no longer matters); the ambient set is cleared; then capset (the raw system
 *    call with the kernel's v3 structures, no libcap) sets effective, permitted and inheritable to
 *    nothing. Capabilities are per thread: if the caller had any, every other thread is checked
 *    through /proc and a thread that still holds some is a failure (call this before starting
 *    threads). The user id stays what it was: run the worker as an ordinary user.
 * 4. PR_SET_NO_NEW_PRIVS: no execve could ever grant privilege again (set-user-id bits and file
 *    capabilities are ignored); also what lets an unprivileged process install a seccomp filter.
 * 5. RLIMIT_CORE 0: a crash leaves no core file with decoded pictures in it. RLIMIT_FSIZE and
 *    RLIMIT_NPROC are left alone: memfd writes count against FSIZE, threads against NPROC.
 * 6. A seccomp-BPF filter, installed with SECCOMP_FILTER_FLAG_TSYNC so that every thread already
 *    running gets it too (and no_new_privs with it); a thread that cannot be synchronised is a
 *    failure. The filter kills the process for a call made under another architecture's
 *    convention (i386 int 0x80, x32), answers ENOSYS for numbers newer than it knows, refuses
 *    (EPERM unless said otherwise) what is listed here, decides the calls with argument checks,
 *    and then allows only the calls of qsys_allowed_calls (what the worker was traced making
 *    over every format, both models and a video, and the ordinary calls of the C library, the
 *    Swift runtime, libdispatch and Rust's std); anything else fails with EPERM. Refused:
 *    - changing the file system: unlink, rename, mkdir, rmdir, link, symlink, chmod, chown,
 *      truncate (ftruncate stays, for memfds), utimes, xattrs, mknod, mount and friends, chroot,
 *      swap, acct, quotas, file handles; open/openat asking for O_WRONLY, O_RDWR, O_CREAT,
 *      O_TRUNC or O_APPEND; openat2 (ENOSYS: glibc falls back to openat); ioctl requests that
 *      change files through a read-only descriptor ('f', 'v', 'X', Btrfs, F2FS types);
 *    - the network and new sockets: socket, socketpair, connect, bind, listen, accept(4) (the
 *      worker only uses its inherited socket 3 with sendmsg/recvmsg);
 *    - other processes: ptrace, process_vm_readv/writev, kcmp, pidfds, execve(at), the fork and
 *      vfork calls, clone with namespace flags, clone3 (ENOSYS: glibc falls back to clone, whose
 *      flags a filter can see), System V IPC and POSIX message queues; kill, tgkill and
 *      rt_(tg)sigqueueinfo unless aimed at the worker's own pid (compared on the low 32 bits;
 *      known when the filter is built); tkill; F_SETOWN(_EX), FIOSETOWN and SIOCSPGRP (SIGIO to
 *      another process), TIOCSTI and TIOCLINUX (typing into a terminal). Plain clone stays
 *      allowed, for threads (glibc's fork() is a clone too: such a child inherits the filter
 *      and can do no more);
 *    - what a process may do to another of the same user (a sibling worker, or the service
 *      when they share a user): setpriority unless (PRIO_PROCESS, 0), ioprio_set unless
 *      (IOPRIO_WHO_PROCESS, 0), sched_setaffinity, sched_setscheduler, sched_setparam,
 *      sched_setattr, move_pages and get_robust_list unless pid 0 (0 is the calling thread:
 *      the worker lowers its threads' priority that way; a thread id cannot be told from a
 *      sibling's pid, so any other number is refused), prlimit64 with a new limit (reading
 *      stays; RLIMIT_CORE is set before the filter), setrlimit, migrate_pages;
 *    - locks and leases others would wait for: flock, fcntl F_SETLK, F_SETLKW, F_OFD_SETLK,
 *      F_OFD_SETLKW, F_SETLEASE, and F_NOTIFY; fanotify_init;
 *    - identities: set*uid, set*gid, setgroups;
 *    - keyrings, bpf, perf_event_open, userfaultfd, unshare, setns, modules, kexec, reboot,
 *      io_uring (which would bypass the filter).
 *    Allowed on purpose: memfd_create, write, ftruncate, sendmsg and recvmsg on descriptors the
 *    worker has, mmap and mprotect, clone for threads.
 *
 * Not covered: reading another same-user process's limits (prlimit64 without a new limit) or
 * scheduling (sched_getaffinity, getpriority): harmless reads. A parent that died before step 1
 * sends no signal: the worker can compare getppid() with the pid it expects. The worker's own
 * user (qsys_become_worker_identity) and Landlock (qsys_landlock_seal) are separate steps.
 *
 * Returns 0, or -1 with errno set and "step: error text" in `reason`. A failure can leave the
 * process partly confined: the caller must then exit, never serve requests.
 */
int qsys_enter_analysis_sandbox(char *reason, size_t reason_size) {
    return qsys_enter_analysis_sandbox_keeping(3, reason, reason_size);
}

int qsys_enter_analysis_sandbox_keeping(int highest_kept, char *reason, size_t reason_size) {
    if (reason && reason_size > 0) reason[0] = 0;
    if (highest_kept < 3) highest_kept = 3;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return qsys_fail(reason, reason_size, "prctl(PR_SET_PDEATHSIG)", errno);

    if (qsys_close_descriptors_above(highest_kept) != 0) return qsys_fail(reason, reason_size, "close descriptors", errno);

    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return qsys_fail(reason, reason_size, "capget", errno);
    int had_capabilities = 0;
    for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) had_capabilities |= data[i].permitted != 0 || data[i].effective != 0;
    /* 0..CAP_LAST_CAP and on: a newer kernel may know more than these headers; EINVAL ends it. */
    for (int cap = 0; cap < 64; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || errno == EPERM) continue;
        if (errno == EINVAL) break;
        return qsys_fail(reason, reason_size, "prctl(PR_CAPBSET_DROP)", errno);
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        return qsys_fail(reason, reason_size, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)", errno);
    header.version = _LINUX_CAPABILITY_VERSION_3;
    header.pid = 0;
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) != 0) return qsys_fail(reason, reason_size, "capset", errno);
    if (had_capabilities) {
        long tid = qsys_thread_with_capabilities();
        if (tid < 0) return qsys_fail_text(reason, reason_size, "capabilities: cannot read /proc/self/task to check the other threads", EPERM);
        if (tid > 0) {
            char text[128];
            snprintf(text, sizeof text, "capabilities: thread %ld still holds some (enter the sandbox before starting threads)", tid);
            return qsys_fail_text(reason, reason_size, text, EPERM);
        }
    }

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return qsys_fail(reason, reason_size, "prctl(PR_SET_NO_NEW_PRIVS)", errno);

    struct rlimit none = { 0, 0 };
    if (setrlimit(RLIMIT_CORE, &none) != 0) return qsys_fail(reason, reason_size, "setrlimit(RLIMIT_CORE)", errno);

    struct qsys_filter filter;
    memset(&filter, 0, sizeof filter);
    qsys_build_filter(&filter, getpid());
    if (filter.overflow) return qsys_fail_text(reason, reason_size, "seccomp: the filter is too long", E2BIG);
    struct sock_fprog program = { .len = (unsigned short)filter.length, .filter = filter.code };
    long result = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
    if (result < 0) return qsys_fail(reason, reason_size, "seccomp", errno);
    if (result > 0) {
        char text[96];
        snprintf(text, sizeof text, "seccomp: thread %ld could not be given the filter", result);
        return qsys_fail_text(reason, reason_size, text, EBUSY);
    }
    return 0;
}

/* MARK: - The worker's own identity */

/*
 * qsys_become_worker_identity: the analysis worker gives up the service's user for its own, before
 * it loads anything: no supplementary groups, real, effective and saved group `gid`, real and
 * effective user `uid`. The saved user id is left as `saved_uid` (the service's user) only so
 * that the service, without CAP_KILL, may still SIGKILL a worker that hangs (the kernel lets a
 * process signal one whose saved user id is its own); the seccomp filter entered next refuses
 * every set*uid call in every thread, so the worker can never take that id back, and file access
 * is decided by the effective (file-system) user id alone. Needs CAP_SETUID and CAP_SETGID (the
 * guardian service has them). Checked afterwards with getresuid/getresgid/getgroups.
 */
int qsys_become_worker_identity(unsigned uid, unsigned gid, unsigned saved_uid, char *reason, size_t reason_size) {
    if (reason && reason_size > 0) reason[0] = 0;
    if (setgroups(0, NULL) != 0) return qsys_fail(reason, reason_size, "setgroups", errno);
    if (setresgid(gid, gid, gid) != 0) return qsys_fail(reason, reason_size, "setresgid", errno);
    if (setresuid(uid, uid, saved_uid) != 0) return qsys_fail(reason, reason_size, "setresuid", errno);
    uid_t r, e, s;
    gid_t gr, ge, gs;
    if (getresuid(&r, &e, &s) != 0 || getresgid(&gr, &ge, &gs) != 0) return qsys_fail(reason, reason_size, "getresuid", errno);
    if (r != uid || e != uid || s != saved_uid || gr != gid || ge != gid || gs != gid || getgroups(0, NULL) != 0)
        return qsys_fail_text(reason, reason_size, "the worker's user and groups did not change as asked", EPERM);
    return 0;
}

/* MARK: - Landlock */

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif
#define QSYS_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)

/* The kernel's struct landlock_ruleset_attr as of ABI 6 (older kernels accept it with the fields
 * they do not know left zero). */
struct qsys_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

int qsys_landlock_abi(void) {
    long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, QSYS_LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? -1 : (int)abi;
}

/* Every file-system right the kernel's ABI knows: ABI 1 has 13 (execute ... make_sym), 2 adds
 * REFER, 3 TRUNCATE, 5 IOCTL_DEV. */
static uint64_t qsys_landlock_fs_rights(int abi) {
    if (abi >= 5) return (1ULL << 16) - 1;
    if (abi >= 3) return (1ULL << 15) - 1;
    if (abi >= 2) return (1ULL << 14) - 1;
    return (1ULL << 13) - 1;
}

/* The threads to restrict, each with its state: 0 signalled, 1 restricted, 2 gone, 3 failed. */
#define QSYS_LANDLOCK_SLOTS 1024
static struct { _Atomic long tid; _Atomic int state; _Atomic int error; } qsys_ll_slots[QSYS_LANDLOCK_SLOTS];
static _Atomic int qsys_ll_count;
static _Atomic int qsys_ll_ruleset = -1;

/* Runs in each thread that is signalled: the thread restricts itself (landlock_restrict_self is
 * per thread and a plain system call, safe in a handler). */
static void qsys_ll_handler(int sig, siginfo_t *info, void *context) {
    (void)sig; (void)info; (void)context;
    int saved = errno;
    long tid = syscall(SYS_gettid);
    long result = syscall(__NR_landlock_restrict_self, atomic_load(&qsys_ll_ruleset), 0);
    int error = result == 0 ? 0 : errno;
    int count = atomic_load(&qsys_ll_count);
    for (int i = 0; i < count; i++) {
        if (atomic_load(&qsys_ll_slots[i].tid) == tid) {
            atomic_store(&qsys_ll_slots[i].error, error);
            atomic_store(&qsys_ll_slots[i].state, result == 0 ? 1 : 3);
            break;
        }
    }
    errno = saved;
}

static int qsys_ll_known(long tid) {
    int count = atomic_load(&qsys_ll_count);
    for (int i = 0; i < count; i++) if (atomic_load(&qsys_ll_slots[i].tid) == tid) return 1;
    return 0;
}

static int qsys_ll_thread_exists(long tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld", tid);
    return access(path, F_OK) == 0;
}

/*
 * qsys_landlock_seal: the analysis worker, its models loaded and every decoder's lazily loaded
 * part loaded, gives up the file system for good: a Landlock ruleset that handles every
 * file-system right the kernel's ABI knows (and on ABI 4 and up TCP bind and connect, on ABI 6
 * and up the abstract-socket and signal scopes) and allows nothing. Descriptors already open
 * (its socket, the files the service passes) still work; no path can be opened, listed,
 * executed, created or changed, by any thread.
 *
 * landlock_restrict_self restricts the calling thread only (the kernel here has no flag to
 * restrict the others), and threads inherit their creator's domain. So every other thread is
 * made to restrict itself: each thread listed in /proc/self/task is sent signal `signal_number`
 * (a handler installed for the occasion calls landlock_restrict_self) and must confirm within a
 * second; /proc/self/task is listed again until a listing shows no thread not yet restricted
 * (a thread started meanwhile by one not yet restricted shows up in the next listing; one started
 * later by a restricted thread inherits its domain). The calling thread restricts itself last.
 * A thread that does not confirm (it blocks the signal) is a failure.
 *
 * `signal_number` 0 or less means SIGPROF: libdispatch's worker threads (Swift's cooperative
 * pool runs on them) block every signal but the synchronous ones and SIGPROF, and nothing in the
 * worker profiles itself (the handler is put back as it was afterwards).
 *
 * Returns the ABI used (>= 1); 0 when the kernel has no Landlock (reason: why, errno ENOSYS or
 * EOPNOTSUPP); -1 on failure (reason), after which the caller must not analyse anything.
 */
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#define QSYS_LANDLOCK_RULE_PATH_BENEATH 1
#define QSYS_LANDLOCK_READ_FILE (1ULL << 2)
#define QSYS_LANDLOCK_READ_DIR (1ULL << 3)

/* struct landlock_path_beneath_attr (packed in the kernel's header). */
struct qsys_landlock_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

int qsys_landlock_seal(int signal_number, char *reason, size_t reason_size) {
    return qsys_landlock_seal_reading(signal_number, NULL, reason, reason_size);
}

int qsys_landlock_seal_reading(int signal_number, const char *const *readable, char *reason, size_t reason_size) {
    if (reason && reason_size > 0) reason[0] = 0;
    if (signal_number <= 0) signal_number = SIGPROF;
    int abi = qsys_landlock_abi();
    if (abi < 0) {
        int err = errno;
        if (err == ENOSYS || err == EOPNOTSUPP || err == EPERM) {
            qsys_fail_text(reason, reason_size, err == ENOSYS ? "the kernel has no Landlock"
                           : err == EOPNOTSUPP ? "Landlock is disabled at boot (lsm=)"
                           : "a system call filter above the worker refuses Landlock's calls (a unit's SystemCallFilter=?)", err);
            return 0;
        }
        return qsys_fail(reason, reason_size, "landlock_create_ruleset(version)", err);
    }
    struct qsys_landlock_ruleset_attr attributes = { 0, 0, 0 };
    attributes.handled_access_fs = qsys_landlock_fs_rights(abi);
    if (abi >= 4) attributes.handled_access_net = 1 | 2;   /* BIND_TCP, CONNECT_TCP */
    if (abi >= 6) attributes.scoped = 1 | 2;               /* ABSTRACT_UNIX_SOCKET, SIGNAL */
    long ruleset = syscall(__NR_landlock_create_ruleset, &attributes, sizeof attributes, 0);
    if (ruleset < 0) return qsys_fail(reason, reason_size, "landlock_create_ruleset", errno);
    /* The one exception: folders whose files and subfolders may still be read (fonts, which
     * FreeType opens anew each time text is drawn). A folder that does not exist is skipped. */
    for (const char *const *path = readable; path && *path; path++) {
        int folder = open(*path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (folder < 0) continue;
        struct qsys_landlock_path_beneath_attr rule = { QSYS_LANDLOCK_READ_FILE | QSYS_LANDLOCK_READ_DIR, folder };
        long added = syscall(__NR_landlock_add_rule, ruleset, QSYS_LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
        int err = errno;
        close(folder);
        if (added != 0) {
            close((int)ruleset);
            char step[96];
            snprintf(step, sizeof step, "landlock_add_rule(%.60s)", *path);
            return qsys_fail(reason, reason_size, step, err);
        }
    }
    atomic_store(&qsys_ll_ruleset, (int)ruleset);
    atomic_store(&qsys_ll_count, 0);

    struct sigaction action, previous;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = qsys_ll_handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(signal_number, &action, &previous) != 0) {
        int err = errno;
        close((int)ruleset);
        return qsys_fail(reason, reason_size, "sigaction", err);
    }
    int failed = 0;
    char text[160] = "";
    long self = syscall(SYS_gettid);
    pid_t pid = getpid();
    for (int round = 0; round < 64 && !failed; round++) {
        DIR *folder = opendir("/proc/self/task");
        if (!folder) { failed = 1; snprintf(text, sizeof text, "cannot list /proc/self/task: %s", strerror(errno)); break; }
        int added = 0;
        struct dirent *entry;
        while ((entry = readdir(folder)) != NULL) {
            char *end;
            long tid = strtol(entry->d_name, &end, 10);
            if (*end != 0 || end == entry->d_name || tid == self || qsys_ll_known(tid)) continue;
            int slot = atomic_load(&qsys_ll_count);
            if (slot >= QSYS_LANDLOCK_SLOTS) { failed = 1; snprintf(text, sizeof text, "more than %d threads", QSYS_LANDLOCK_SLOTS); break; }
            atomic_store(&qsys_ll_slots[slot].tid, tid);
            atomic_store(&qsys_ll_slots[slot].state, 0);
            atomic_store(&qsys_ll_count, slot + 1);
            added++;
            if (syscall(SYS_tgkill, pid, tid, signal_number) != 0) {
                if (errno == ESRCH) atomic_store(&qsys_ll_slots[slot].state, 2);
                else { failed = 1; snprintf(text, sizeof text, "cannot signal thread %ld: %s", tid, strerror(errno)); break; }
            }
        }
        closedir(folder);
        if (failed || added == 0) break;
        /* Wait (up to a second) for every signalled thread to confirm. */
        for (int waited = 0; waited <= 1000; waited++) {
            int pending = 0, count = atomic_load(&qsys_ll_count);
            for (int i = 0; i < count; i++) if (atomic_load(&qsys_ll_slots[i].state) == 0) pending++;
            if (pending == 0) break;
            struct timespec pause = { 0, 1000000 };
            nanosleep(&pause, NULL);
        }
        int count = atomic_load(&qsys_ll_count);
        for (int i = 0; i < count && !failed; i++) {
            int state = atomic_load(&qsys_ll_slots[i].state);
            long tid = atomic_load(&qsys_ll_slots[i].tid);
            if (state == 0 && !qsys_ll_thread_exists(tid)) { atomic_store(&qsys_ll_slots[i].state, 2); continue; }
            if (state == 0) { failed = 1; snprintf(text, sizeof text, "thread %ld did not take the Landlock domain (does it block signal %d?)", tid, signal_number); }
            if (state == 3) { failed = 1; snprintf(text, sizeof text, "thread %ld: landlock_restrict_self: %s", tid, strerror(atomic_load(&qsys_ll_slots[i].error))); }
        }
    }
    if (!failed && syscall(__NR_landlock_restrict_self, ruleset, 0) != 0) {
        failed = 1;
        snprintf(text, sizeof text, "landlock_restrict_self: %s", strerror(errno));
    }
    sigaction(signal_number, &previous, NULL);
    close((int)ruleset);
    if (failed) return qsys_fail_text(reason, reason_size, text, EPERM);
    return abi;
}

/* MARK: - Small helpers for the worker */

int qsys_user_ids(unsigned *real, unsigned *effective, unsigned *saved) {
    uid_t r, e, s;
    if (getresuid(&r, &e, &s) != 0) return -1;
    *real = r; *effective = e; *saved = s;
    return 0;
}

int qsys_memfd(const char *name) {
    return (int)syscall(SYS_memfd_create, name, 1u /* MFD_CLOEXEC */);
}

int qsys_pipe_cloexec(int ends[2]) {
    return pipe2(ends, O_CLOEXEC);
}
