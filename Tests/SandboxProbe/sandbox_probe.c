/* Test-only: runs qsys_enter_analysis_sandbox in a forked child and tries, there, what the
 * sandbox must refuse and what it must still allow. The sandbox is permanent for a process, so it
 * is never entered in the test runner itself. The child makes system calls and writes lines; it
 * runs no Swift code (the runner is multithreaded, and after fork only the forking thread
 * exists). */
#define _GNU_SOURCE
#include "sandbox_probe.h"
#include "qsys.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>

/* FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (linux/fs.h clashes with sys/mount.h). */
#define PROBE_FS_IOC_GETFLAGS _IOR('f', 1, long)
#define PROBE_FS_IOC_SETFLAGS _IOW('f', 2, long)
#define PROBE_NR_FILE_SETATTR 469
#define PROBE_NR_FCHMODAT2 452

/* MARK: - The child's side */

static void put(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *format, ...) {
    char line[512];
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(line, sizeof line - 1, format, arguments);
    va_end(arguments);
    if (length < 0) return;
    if (length > (int)sizeof line - 2) length = (int)sizeof line - 2;
    line[length++] = '\n';
    for (ssize_t done = 0; done < length;) {
        ssize_t written = write(2, line + done, (size_t)(length - done));
        if (written <= 0) break;
        done += written;
    }
}

static const char *errno_name(int err) {
    const char *name = strerrorname_np(err);
    return name ? name : "E?";
}

/* "name OK" for a result >= 0, else "name ERRNO". */
static void outcome(const char *name, long result, int err) {
    if (result >= 0) put("%s OK", name);
    else put("%s %s", name, errno_name(err));
}

#define PROBE(name, call) do { errno = 0; long result_ = (long)(call); outcome(name, result_, errno); } while (0)
/* For calls that return a descriptor: closed again when one came back. */
#define PROBE_FD(name, call) do { errno = 0; long result_ = (long)(call); int err_ = errno; \
    if (result_ >= 0) close((int)result_); outcome(name, result_, err_); } while (0)

/* The value after `key` in /proc/self/status, or "?". */
static void status_line(const char *prefix, const char *key) {
    char text[8192];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t length = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
    if (fd >= 0) close(fd);
    if (length <= 0) { put("%s-%s ?", prefix, key); return; }
    text[length] = 0;
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\n%s:", key);
    const char *line = strstr(text, pattern);
    if (!line) { put("%s-%s ?", prefix, key); return; }
    line += strlen(pattern);
    while (*line == ' ' || *line == '\t') line++;
    int end = 0;
    while (line[end] && line[end] != '\n') end++;
    put("%s-%s %.*s", prefix, key, end, line);
}

static void *thread_body(void *unused) {
    (void)unused;
    errno = 0;
    long result = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int err = errno;
    if (result >= 0) close((int)result);
    outcome("thread-socket", result, err);
    return (void *)1;
}

/* A process made with the raw clone call (or clone3) ends at once; its parent reaps it. */
static long raw_clone_result(long result) {
    if (result == 0) _exit(0);
    if (result > 0) waitpid((pid_t)result, NULL, __WALL);
    return result;
}

static void enter_sandbox(void) {
    char reason[256];
    if (qsys_enter_analysis_sandbox(reason, sizeof reason) == 0) put("enter OK");
    else put("enter %s %s", errno_name(errno), reason);
}

static void probe_everything(const char *directory, int sandboxed) {
    char existing[PATH_MAX], fresh[PATH_MAX], folder[PATH_MAX], newfolder[PATH_MAX], renamed[PATH_MAX],
         hardlink[PATH_MAX], softlink[PATH_MAX], fifo[PATH_MAX];
    snprintf(existing, sizeof existing, "%s/existing", directory);
    snprintf(fresh, sizeof fresh, "%s/fresh", directory);
    snprintf(folder, sizeof folder, "%s/folder", directory);
    snprintf(newfolder, sizeof newfolder, "%s/newfolder", directory);
    snprintf(renamed, sizeof renamed, "%s/renamed", directory);
    snprintf(hardlink, sizeof hardlink, "%s/hardlink", directory);
    snprintf(softlink, sizeof softlink, "%s/softlink", directory);
    snprintf(fifo, sizeof fifo, "%s/fifo", directory);
    pid_t parent = getppid();

    status_line("before", "CapEff");
    if (sandboxed) enter_sandbox();

    /* What the process holds now. */
    const char *keys[] = { "CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd", "NoNewPrivs", "Seccomp" };
    for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++) status_line("status", keys[i]);
    int deathsig = -1;
    prctl(PR_GET_PDEATHSIG, &deathsig, 0, 0, 0);
    put("pdeathsig %d", deathsig);
    struct rlimit core;
    if (getrlimit(RLIMIT_CORE, &core) == 0) put("rlimit-core %llu %llu", (unsigned long long)core.rlim_cur, (unsigned long long)core.rlim_max);
    PROBE("fd-20", fcntl(20, F_GETFD));
    PROBE("fd-3", fcntl(3, F_GETFD));

    /* Reading still works. */
    int reader = open(existing, O_RDONLY | O_CLOEXEC);
    outcome("open-read", reader, errno);
    char content[64] = { 0 };
    if (reader >= 0 && read(reader, content, sizeof content - 1) >= 0) put("read-content %s", content);

    /* Opening for writing, creating or truncating. */
    PROBE_FD("open-write", open(existing, O_WRONLY | O_CLOEXEC));
    PROBE_FD("open-rdwr", open(existing, O_RDWR | O_CLOEXEC));
    PROBE_FD("open-append", open(existing, O_RDONLY | O_APPEND | O_CLOEXEC));
    PROBE_FD("open-trunc", open(existing, O_RDONLY | O_TRUNC | O_CLOEXEC));
    PROBE_FD("open-creat", open(fresh, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    PROBE_FD("open-creat-rdonly", open(fresh, O_RDONLY | O_CREAT | O_CLOEXEC, 0644));
    PROBE_FD("open-tmpfile", open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
#ifdef SYS_open
    PROBE_FD("open-syscall-write", syscall(SYS_open, existing, O_WRONLY | O_CLOEXEC));
#endif
#ifdef SYS_creat
    PROBE_FD("creat", syscall(SYS_creat, fresh, 0644));
#endif
    struct open_how how = { .flags = O_RDONLY | O_CLOEXEC };
    PROBE_FD("openat2", syscall(SYS_openat2, AT_FDCWD, existing, &how, sizeof how));

    /* Changing the file system. */
    PROBE("unlink", unlink(existing));
    PROBE("unlinkat", unlinkat(AT_FDCWD, existing, 0));
    PROBE("rename", rename(existing, renamed));
    PROBE("renameat2", renameat2(AT_FDCWD, existing, AT_FDCWD, renamed, RENAME_NOREPLACE));
    PROBE("mkdir", mkdir(newfolder, 0755));
    PROBE("rmdir", rmdir(folder));
    PROBE("chmod", chmod(existing, 0600));
    PROBE("fchmod", reader >= 0 ? fchmod(reader, 0600) : -1);
    PROBE("fchmodat2", syscall(PROBE_NR_FCHMODAT2, AT_FDCWD, existing, 0600, 0));
    PROBE("chown", chown(existing, getuid(), getgid()));
    PROBE("truncate", truncate(existing, 0));
    PROBE("link", link(existing, hardlink));
    PROBE("symlink", symlink(existing, softlink));
    PROBE("utimensat", utimensat(AT_FDCWD, existing, NULL, 0));
    PROBE("setxattr", setxattr(existing, "user.probe", "x", 1, 0));
    PROBE("mknod", mknod(fifo, S_IFIFO | 0600, 0));
    PROBE("file-setattr", syscall(PROBE_NR_FILE_SETATTR, AT_FDCWD, existing, NULL, 0, 0));
    PROBE("mount", mount("none", directory, "qsys-no-such-fs", 0, NULL));
    long flags = 0;
    PROBE("ioctl-getflags", reader >= 0 ? ioctl(reader, PROBE_FS_IOC_GETFLAGS, &flags) : -1);
    PROBE("ioctl-setflags", reader >= 0 ? ioctl(reader, PROBE_FS_IOC_SETFLAGS, &flags) : -1);
    char letter = 'x';
    PROBE("ioctl-tiocsti", reader >= 0 ? ioctl(reader, TIOCSTI, &letter) : -1);
    int waiting = 0;
    PROBE("ioctl-fionread", reader >= 0 ? ioctl(reader, FIONREAD, &waiting) : -1);

    /* The network and new sockets. */
    PROBE_FD("socket-inet", socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    PROBE_FD("socket-inet6", socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    PROBE_FD("socket-unix", socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    int ends[2] = { -1, -1 };
    errno = 0;
    long paired = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends);
    outcome("socketpair", paired, errno);
    if (paired == 0) { close(ends[0]); close(ends[1]); }

    /* Signals: to itself only. */
    PROBE("kill-parent", kill(parent, 0));
    PROBE("kill-self", kill(getpid(), 0));
    PROBE("kill-group", kill(0, 0));
    PROBE("kill-everyone", kill(-1, 0));
    PROBE("tgkill-self", syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), 0));
    PROBE("tkill-self", syscall(SYS_tkill, (pid_t)syscall(SYS_gettid), 0));
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    PROBE("sigqueue-parent", syscall(SYS_rt_sigqueueinfo, parent, 0, &info));
    PROBE("fcntl-setown", fcntl(3, F_SETOWN, parent));

    /* Other processes' memory and descriptors. */
    static long marker = 42;
    long copy = 0;
    struct iovec local = { .iov_base = &copy, .iov_len = sizeof copy }, remote = { .iov_base = &marker, .iov_len = sizeof marker };
    PROBE("process-vm-readv", process_vm_readv(parent, &local, 1, &remote, 1, 0));
    PROBE("ptrace-peek", syscall(SYS_ptrace, PTRACE_PEEKDATA, parent, &marker, &copy));
    PROBE_FD("pidfd-open", syscall(SYS_pidfd_open, parent, 0));
    /* Limits, priorities, CPUs and locks: only for itself, and limits only read. */
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    PROBE("prlimit-get", prlimit(0, RLIMIT_NOFILE, NULL, &files));
    PROBE("prlimit-set-self", prlimit(0, RLIMIT_NOFILE, &files, NULL));
    struct rlimit parent_files;
    prlimit(parent, RLIMIT_NOFILE, NULL, &parent_files);
    PROBE("prlimit-set-parent", prlimit(parent, RLIMIT_NOFILE, &parent_files, NULL));
    PROBE("setrlimit", setrlimit(RLIMIT_NOFILE, &files));
    errno = 0;
    int parent_nice = getpriority(PRIO_PROCESS, (id_t)parent);
    PROBE("setpriority-parent", setpriority(PRIO_PROCESS, (id_t)parent, parent_nice));
    int own_nice = getpriority(PRIO_PROCESS, 0);
    PROBE("setpriority-self", setpriority(PRIO_PROCESS, 0, own_nice));
    PROBE("setpriority-tid", setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), own_nice));
    long parent_io = syscall(SYS_ioprio_get, 1, parent);
    PROBE("ioprio-set-parent", syscall(SYS_ioprio_set, 1, parent, parent_io < 0 ? 0 : parent_io));
    long own_io = syscall(SYS_ioprio_get, 1, 0);
    PROBE("ioprio-set-self", syscall(SYS_ioprio_set, 1, 0, own_io < 0 ? 0 : own_io));
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    sched_getaffinity(parent, sizeof cpus, &cpus);
    PROBE("sched-setaffinity-parent", sched_setaffinity(parent, sizeof cpus, &cpus));
    sched_getaffinity(0, sizeof cpus, &cpus);
    PROBE("sched-setaffinity-self", sched_setaffinity(0, sizeof cpus, &cpus));
    PROBE("flock", reader >= 0 ? flock(reader, LOCK_SH | LOCK_NB) : -1);
    struct flock lock = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
    PROBE("fcntl-setlk", reader >= 0 ? fcntl(reader, F_SETLK, &lock) : -1);
    PROBE("fcntl-ofd-setlk", reader >= 0 ? fcntl(reader, F_OFD_SETLK, &lock) : -1);
    /* Not on the allow-list (harmless, but nothing the worker does): refused by default. */
    PROBE("chdir", chdir(directory));
    PROBE("personality", syscall(SYS_personality, 0xffffffffUL));
    PROBE("shmat", (long)(intptr_t)shmat(-1, NULL, 0) == -1 ? -1 : 0);
    PROBE_FD("mq-open", syscall(SYS_mq_open, "qsys-probe-no-such-queue", O_RDONLY, 0, NULL));

    /* Kernel facilities. */
    PROBE("bpf", syscall(SYS_bpf, 0, NULL, 0));
    PROBE("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session keyring */, 0));
    PROBE_FD("perf-event-open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
    PROBE_FD("io-uring-setup", syscall(SYS_io_uring_setup, 1, NULL));
    PROBE_FD("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
    PROBE("unknown-call", syscall(475));

    /* What the worker needs: a memfd written and sized, sent over descriptor 3. */
    errno = 0;
    int memory = memfd_create("preview", MFD_CLOEXEC);
    outcome("memfd-create", memory, errno);
    const char preview[] = "decoded preview";
    PROBE("memfd-write", memory >= 0 ? write(memory, preview, sizeof preview - 1) : -1);
    PROBE("memfd-ftruncate", memory >= 0 ? ftruncate(memory, (off_t)(sizeof preview - 1)) : -1);
    PROBE("sendmsg-fd3", qsys_send_with_descriptors(3, "preview", 7, &memory, memory >= 0 ? 1 : 0));
    if (memory >= 0) close(memory);
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    PROBE("mmap", page == MAP_FAILED ? -1 : 0);
    PROBE("mprotect", page == MAP_FAILED ? -1 : mprotect(page, 4096, PROT_READ));

    /* Threads: started after entering, and under the filter too. */
    pthread_t thread;
    int started = pthread_create(&thread, NULL, thread_body, NULL);
    void *returned = NULL;
    if (started == 0) pthread_join(thread, &returned);
    outcome("thread", started == 0 && returned == (void *)1 ? 0 : -1, started);

    /* New processes: plain clone allowed; with namespace flags, or clone3, not. */
    PROBE("clone-fork", raw_clone_result(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)));
    PROBE("clone-newuser", raw_clone_result(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)));
    struct clone_args arguments;
    memset(&arguments, 0, sizeof arguments);
    arguments.exit_signal = SIGCHLD;
    PROBE("clone3", raw_clone_result(syscall(SYS_clone3, &arguments, sizeof arguments)));
    PROBE("setgroups", syscall(SYS_setgroups, 0, NULL));
    PROBE("setuid", syscall(SYS_setuid, getuid()));
    PROBE("unshare-user", unshare(CLONE_NEWUSER));

    if (reader >= 0) close(reader);
    char *const argv[] = { "/bin/true", NULL };
    char *const envp[] = { NULL };
    PROBE("execve", execve("/bin/true", argv, envp));
    put("end OK");
}

/* MARK: - Landlock */

static int ll_go[2], ll_done[2];
static const char *ll_path;

/* Started before the seal: waits, then tries to open the file (it must be refused too). */
static void *ll_early_thread(void *unused) {
    (void)unused;
    char byte;
    while (read(ll_go[0], &byte, 1) < 0 && errno == EINTR) {}
    errno = 0;
    long fd = open(ll_path, O_RDONLY | O_CLOEXEC);
    int err = errno;
    if (fd >= 0) close((int)fd);
    outcome("ll-early-thread-open", fd, err);
    return NULL;
}

static void *ll_late_thread(void *unused) {
    (void)unused;
    errno = 0;
    long fd = open(ll_path, O_RDONLY | O_CLOEXEC);
    int err = errno;
    if (fd >= 0) close((int)fd);
    outcome("ll-late-thread-open", fd, err);
    return NULL;
}

static void probe_landlock(const char *directory, int seal) {
    char existing[PATH_MAX];
    snprintf(existing, sizeof existing, "%s/existing", directory);
    ll_path = existing;
    /* The sandbox closes descriptors above 3: what the probe needs is made after it. */
    enter_sandbox();
    if (pipe(ll_go) != 0 || pipe(ll_done) != 0) { put("ll-pipe %s", errno_name(errno)); return; }
    int before = open(existing, O_RDONLY | O_CLOEXEC);
    /* A thread started before the seal, blocked in a read meanwhile: it must take the domain too. */
    pthread_t early, late;
    pthread_create(&early, NULL, ll_early_thread, NULL);
    if (seal) {
        char reason[256];
        int abi = qsys_landlock_seal(0, reason, sizeof reason);
        if (abi > 0) put("ll-seal OK");
        else put("ll-seal %s %s", abi == 0 ? "UNAVAILABLE" : errno_name(errno), reason);
        put("ll-abi %d", qsys_landlock_abi());
    }
    PROBE_FD("ll-open-read", open(existing, O_RDONLY | O_CLOEXEC));
    PROBE_FD("ll-open-folder", open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    PROBE_FD("ll-open-proc-status", open("/proc/self/status", O_RDONLY | O_CLOEXEC));
    PROBE_FD("ll-open-etc-passwd", open("/etc/passwd", O_RDONLY | O_CLOEXEC));
    struct stat info;
    PROBE("ll-stat", stat(existing, &info));
    char byte = 0;
    PROBE("ll-opened-before-reads", before >= 0 ? pread(before, &byte, 1, 0) : -1);
    PROBE("ll-kill-self", kill(getpid(), 0));
    char one = 1;
    if (write(ll_go[1], &one, 1) != 1) put("ll-go %s", errno_name(errno));
    pthread_join(early, NULL);
    pthread_create(&late, NULL, ll_late_thread, NULL);
    pthread_join(late, NULL);
    put("end OK");
}

/* A filter like a unit's SystemCallFilter= without Landlock's calls: they fail with EPERM. */
static void refuse_landlock_like_a_unit(void) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 444, 0, 3),
        BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 446, 2, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = { .len = (unsigned short)(sizeof code / sizeof code[0]), .filter = code };
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) put("unit-filter %s", errno_name(errno));
}

static void run_child(int mode, const char *directory) {
    switch (mode) {
    case SANDBOX_PROBE_LANDLOCK_REFUSED: {
        refuse_landlock_like_a_unit();
        enter_sandbox();
        char reason[256];
        int abi = qsys_landlock_seal(0, reason, sizeof reason);
        put("ll-seal %s", abi > 0 ? "OK" : abi == 0 ? "UNAVAILABLE" : errno_name(errno));
        put("ll-reason %s", reason);
        PROBE_FD("ll-open-read", open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        put("end OK");
        break;
    }
    case SANDBOX_PROBE_LANDLOCK: probe_landlock(directory, 1); break;
    case SANDBOX_PROBE_LANDLOCK_CONTROL: probe_landlock(directory, 0); break;
    case SANDBOX_PROBE_ALL: probe_everything(directory, 1); break;
    case SANDBOX_PROBE_WITHOUT_SANDBOX: probe_everything(directory, 0); break;
    case SANDBOX_PROBE_X32_CALL:
        enter_sandbox();
#if defined(__x86_64__)
        errno = 0;
        long x32 = syscall(0x40000000L | SYS_getpid);
        put("x32-survived %ld %s", x32, errno_name(errno));
#endif
        break;
    case SANDBOX_PROBE_I386_CALL:
        enter_sandbox();
#if defined(__x86_64__)
        long i386;
        __asm__ volatile("int $0x80" : "=a"(i386) : "a"(20L /* i386 getpid */) : "memory", "r8", "r9", "r10", "r11");
        put("i386-survived %ld", i386);
#endif
        break;
    }
}

/* MARK: - The parent's side */

static void append(char *report, size_t report_size, size_t *used, const char *bytes, size_t length) {
    if (report_size == 0 || *used >= report_size - 1) return;
    if (length > report_size - 1 - *used) length = report_size - 1 - *used;
    memcpy(report + *used, bytes, length);
    *used += length;
    report[*used] = 0;
}

static long long now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int sandbox_probe_run(int mode, const char *directory, int timeout_seconds, char *report, size_t report_size) {
    size_t used = 0;
    if (report_size > 0) report[0] = 0;
    char existing[PATH_MAX];
    snprintf(existing, sizeof existing, "%s/existing", directory);
    int lines[2], pair[2];
    if (pipe2(lines, O_CLOEXEC) != 0) return -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) { close(lines[0]); close(lines[1]); return -1; }
    int spare = open(existing, O_RDONLY | O_CLOEXEC);

    pid_t child = fork();
    if (child == 0) {
        /* Out of the way first, so that no dup2 below overwrites another one's source. */
        int report_end = fcntl(lines[1], F_DUPFD_CLOEXEC, 100);
        int socket_end = fcntl(pair[1], F_DUPFD_CLOEXEC, 100);
        int spare_end = spare >= 0 ? fcntl(spare, F_DUPFD_CLOEXEC, 100) : -1;
        if (report_end < 0 || socket_end < 0) _exit(120);
        dup2(report_end, 2);
        dup2(socket_end, 3);
        if (spare_end >= 0) dup2(spare_end, 20); /* the sandbox must close it */
        run_child(mode, directory);
        _exit(0);
    }
    int saved = errno;
    close(lines[1]);
    close(pair[1]);
    if (spare >= 0) close(spare);
    if (child < 0) { close(lines[0]); close(pair[0]); errno = saved; return -1; }

    long long deadline = now_ms() + (long long)timeout_seconds * 1000;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            kill(child, SIGKILL);
            const char *line = "parent-timeout\n";
            append(report, report_size, &used, line, strlen(line));
            break;
        }
        struct pollfd waiting = { .fd = lines[0], .events = POLLIN };
        int ready = poll(&waiting, 1, (int)left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        char chunk[4096];
        ssize_t got = read(lines[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* every copy of the write end is closed: the child is done */
        append(report, report_size, &used, chunk, (size_t)got);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}

    /* What came over the socket: a message and a memfd. */
    struct pollfd incoming = { .fd = pair[0], .events = POLLIN };
    if (poll(&incoming, 1, 0) == 1 && (incoming.revents & POLLIN)) {
        char bytes[64] = { 0 };
        int fds[4], count = 0, truncated = 0;
        ssize_t got = qsys_receive_with_descriptors(pair[0], bytes, sizeof bytes - 1, fds, 4, &count, &truncated);
        char line[256];
        if (got > 0) {
            snprintf(line, sizeof line, "parent-message %.*s\n", (int)got, bytes);
            append(report, report_size, &used, line, strlen(line));
        }
        for (int i = 0; i < count; i++) {
            char text[64] = { 0 };
            ssize_t length = pread(fds[i], text, sizeof text - 1, 0);
            snprintf(line, sizeof line, "parent-memfd %.*s\n", (int)(length > 0 ? length : 0), text);
            append(report, report_size, &used, line, strlen(line));
            close(fds[i]);
        }
    }
    close(pair[0]);
    close(lines[0]);
    return status;
}

#include "qsys_crash.h"
#include <sys/wait.h>

int crash_journal_probe(int journal_fd, const char *path, int how) {
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        /* The test runner's own handlers (the Swift runtime's backtracer) are not this probe's:
         * the journal's handler hands the signal on to the default action. */
        int fatal[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE };
        for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
        /* Only this probe's files: the slots copied from the test process hold the files an
         * in-process agent of another test had in flight at the fork (seen at six tests at once). */
        for (int slot = 0; slot < QSYS_CRASH_SLOTS; slot++) qsys_crash_inflight_remove(slot);
        if (qsys_crash_journal_install(journal_fd) != 0) _exit(70);
        int gone = qsys_crash_inflight_add("/tmp/done-before-the-crash.png");
        if (qsys_crash_inflight_add(path) < 0) _exit(71);
        qsys_crash_inflight_remove(gone);
        if (how == 1) { volatile int *nowhere = NULL; *nowhere = 1; }
        if (how == 2) abort();
        if (how == 3) kill(getpid(), SIGKILL);
        _exit(72);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0) { if (errno != EINTR) return -1; }
    return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
}
