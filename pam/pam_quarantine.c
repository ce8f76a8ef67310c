// pam_quarantine.so: no mount system calls in the sessions of the accounts a guardian protects.
// What it does and why: pam_quarantine.h. Built by pam/build.sh (cc), installed as pam_quarantine.so
// in libpam's module folder (/lib/MULTIARCH/security) by the package or 'quarantine guardian enable'.
#define _GNU_SOURCE
#include "pam_quarantine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#define PAM_SM_SESSION
#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <security/pam_modutil.h>

#define QPAM_EXPORT __attribute__((visibility("default")))

// MARK: - The filter

/// The x32 ABI's marker bit in a system call number (x86_64 processes may use it).
#define QPAM_X32_BIT 0x40000000u

/// The mount family's numbers common to every architecture (Linux 5.2 and later numbered them alike).
#define QPAM_COMMON_MOUNT_CALLS 428 /* open_tree */, 429 /* move_mount */, 430 /* fsopen */, 431 /* fsconfig */, \
                                432 /* fsmount */, 433 /* fspick */, 442 /* mount_setattr */

/// One architecture the filter knows, and its numbers for mount and pivot_root.
struct qpam_arch {
    uint32_t audit_arch;
    uint32_t mask; /* cleared from the number before comparing (x32 on x86_64) */
    uint32_t calls[9];
};

static const struct qpam_arch qpam_arches[] = {
#if defined(__x86_64__)
    {AUDIT_ARCH_X86_64, QPAM_X32_BIT, {165 /* mount */, 155 /* pivot_root */, QPAM_COMMON_MOUNT_CALLS}},
    {AUDIT_ARCH_I386, 0, {21 /* mount */, 217 /* pivot_root */, QPAM_COMMON_MOUNT_CALLS}},
#elif defined(__aarch64__)
    {AUDIT_ARCH_AARCH64, 0, {40 /* mount */, 41 /* pivot_root */, QPAM_COMMON_MOUNT_CALLS}},
    {AUDIT_ARCH_ARM, 0, {21 /* mount */, 218 /* pivot_root */, QPAM_COMMON_MOUNT_CALLS}},
#else
#error "pam_quarantine: add this architecture's numbers for mount and pivot_root"
#endif
};

#define QPAM_ARCH_COUNT (sizeof(qpam_arches) / sizeof(qpam_arches[0]))
#define QPAM_CALLS_PER_ARCH 9
/* Per architecture at most 24 instructions; then the kill. */
#define QPAM_MAX_INSNS (QPAM_ARCH_COUNT * 24 + 1)

/// mount() flags that only change how mounts propagate (what `unshare -m` does to its new
/// namespace's mounts): the kernel then makes no new mount (do_change_type), so they are allowed.
#define QPAM_PROPAGATION (MS_PRIVATE | MS_SLAVE | MS_SHARED | MS_UNBINDABLE)
#define QPAM_PROPAGATION_ONLY (QPAM_PROPAGATION | MS_REC | MS_SILENT)

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "pam_quarantine: the flags word is read as little-endian halves"
#endif
#define QPAM_FLAGS_LOW ((uint32_t)offsetof(struct seccomp_data, args[3]))
#define QPAM_FLAGS_HIGH ((uint32_t)offsetof(struct seccomp_data, args[3]) + 4)

/// A filter being written, with forward jumps patched once their target is known.
struct qpam_program {
    struct sock_filter insns[QPAM_MAX_INSNS];
    unsigned short length;
};

static unsigned short qpam_emit(struct qpam_program *p, struct sock_filter insn) {
    p->insns[p->length] = insn;
    return p->length++;
}

/// Points the true (or false) branch of the jump at `at` to the next instruction emitted.
static void qpam_land(struct qpam_program *p, unsigned short at, int true_branch) {
    unsigned char offset = (unsigned char)(p->length - at - 1);
    if (true_branch) p->insns[at].jt = offset; else p->insns[at].jf = offset;
}

/// Builds the filter: for a known architecture, EPERM for the mount family (mount itself
/// allowed only to change propagation) and everything else allowed; a system call from an
/// architecture it does not know ends the process.
static unsigned short qpam_build(struct qpam_program *p) {
    p->length = 0;
    for (size_t a = 0; a < QPAM_ARCH_COUNT; a++) {
        const struct qpam_arch *arch = &qpam_arches[a];
        unsigned short to_deny[QPAM_CALLS_PER_ARCH + 4], denies = 0;
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
        unsigned short other_arch = qpam_emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch->audit_arch, 0, 0));
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
        if (arch->mask) qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~arch->mask));
        unsigned short is_mount = qpam_emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch->calls[0], 0, 0));
        for (int c = 1; c < QPAM_CALLS_PER_ARCH; c++) {
            to_deny[denies++] = qpam_emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch->calls[c], 0, 0));
        }
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        // mount(): only a propagation change (no flag outside QPAM_PROPAGATION_ONLY, one of QPAM_PROPAGATION).
        qpam_land(p, is_mount, 1);
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, QPAM_FLAGS_HIGH));
        unsigned short high_clear = qpam_emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0));
        to_deny[denies++] = high_clear; /* its false branch */
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, QPAM_FLAGS_LOW));
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~(uint32_t)QPAM_PROPAGATION_ONLY));
        unsigned short only = qpam_emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0));
        to_deny[denies++] = only; /* its false branch */
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, QPAM_FLAGS_LOW));
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, QPAM_PROPAGATION));
        unsigned short none = qpam_emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0));
        to_deny[denies++] = none; /* its true branch */
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
        for (unsigned short d = 0; d < denies; d++) {
            unsigned short at = to_deny[d];
            int true_branch = !(at == high_clear || at == only);
            qpam_land(p, at, true_branch);
        }
        qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
        qpam_land(p, other_arch, 0);
    }
    qpam_emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    return p->length;
}

/// Installs the filter on every thread of this process, without no_new_privs (which needs
/// CAP_SYS_ADMIN: the session's process is still root). 0, or an errno.
static int qpam_install(void) {
    struct qpam_program program;
    struct sock_fprog prog = {.len = qpam_build(&program), .filter = program.insns};
    long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
    if (result == 0) return 0;
    if (result > 0) return EAGAIN; /* a thread of this process could not take it */
    return errno ? errno : EINVAL;
}

// MARK: - The list

enum qpam_listed { QPAM_LISTED, QPAM_NOT_LISTED, QPAM_UNREADABLE };

static enum qpam_listed qpam_parse(char *text, size_t length, const char *path, uid_t uid, char *why, size_t why_size);

/// Whether `uid` is in the list at `path`. The list must be a regular file owned by root and
/// writable by root alone, in a folder owned by root and writable by root alone; each line a
/// decimal uid, with `#` comments. Anything else makes it unreadable (`why` says how).
static enum qpam_listed qpam_read_list(const char *path, uid_t uid, char *why, size_t why_size) {
    char folder[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (path[0] != '/' || !slash || slash[1] == '\0' || (size_t)(slash - path) >= sizeof(folder)) {
        snprintf(why, why_size, "%s is not an absolute file name", path);
        return QPAM_UNREADABLE;
    }
    memcpy(folder, path, (size_t)(slash - path));
    folder[slash - path] = '\0';
    if (folder[0] == '\0') strcpy(folder, "/");

    int dir = open(folder, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (dir < 0 || fstat(dir, &st) != 0) {
        snprintf(why, why_size, "cannot open %s: %s", folder, strerror(errno));
        if (dir >= 0) close(dir);
        return QPAM_UNREADABLE;
    }
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(why, why_size, "%s is not root's alone (owner %u, mode %o)", folder, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        close(dir);
        return QPAM_UNREADABLE;
    }
    int fd = openat(dir, slash + 1, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int saved = errno;
    close(dir);
    if (fd < 0) {
        snprintf(why, why_size, "cannot open %s: %s", path, strerror(saved));
        return QPAM_UNREADABLE;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_size > 65536) {
        snprintf(why, why_size, "%s is not a regular file of root's alone, at most 64 KiB", path);
        close(fd);
        return QPAM_UNREADABLE;
    }
    /* On the heap: the caller may be a thread with a small stack. */
    const size_t capacity = 65537;
    char *text = malloc(capacity);
    if (!text) {
        snprintf(why, why_size, "no memory to read %s", path);
        close(fd);
        return QPAM_UNREADABLE;
    }
    size_t length = 0;
    for (;;) {
        ssize_t got = read(fd, text + length, capacity - 1 - length);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(why, why_size, "cannot read %s: %s", path, strerror(errno));
            close(fd);
            free(text);
            return QPAM_UNREADABLE;
        }
        if (got == 0) break;
        length += (size_t)got;
        if (length == capacity - 1) {
            snprintf(why, why_size, "%s is longer than 64 KiB", path);
            close(fd);
            free(text);
            return QPAM_UNREADABLE;
        }
    }
    close(fd);
    text[length] = '\0';
    enum qpam_listed found = qpam_parse(text, length, path, uid, why, why_size);
    free(text);
    return found;
}

/// Whether `uid` is among the list's lines (`text`, NUL-terminated, `length` bytes).
static enum qpam_listed qpam_parse(char *text, size_t length, const char *path, uid_t uid, char *why, size_t why_size) {
    if (memchr(text, '\0', length)) {
        snprintf(why, why_size, "%s holds a NUL byte", path);
        return QPAM_UNREADABLE;
    }

    enum qpam_listed found = QPAM_NOT_LISTED;
    int line_number = 0;
    for (char *line = text, *next; line && *line; line = next) {
        line_number++;
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        while (*line == ' ' || *line == '\t') line++;
        size_t end = strlen(line);
        while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t' || line[end - 1] == '\r')) line[--end] = '\0';
        if (end == 0) continue;
        unsigned long long value = 0;
        for (size_t i = 0; i < end; i++) {
            if (line[i] < '0' || line[i] > '9' || i >= 10) {
                snprintf(why, why_size, "%s line %d is not a uid", path, line_number);
                return QPAM_UNREADABLE;
            }
            value = value * 10 + (unsigned long long)(line[i] - '0');
        }
        if (value >= 0xFFFFFFFFull) {
            snprintf(why, why_size, "%s line %d is not a uid", path, line_number);
            return QPAM_UNREADABLE;
        }
        if ((uid_t)value == uid) found = QPAM_LISTED;
    }
    return found;
}

/// Whether the account has a guardian configuration, FOLDER-of-the-list/NAME.toml (what says it
/// is protected when the list cannot be read). Anything but "no such file" counts as yes.
static int qpam_has_configuration(const char *list, const char *name) {
    if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return 1;
    char path[PATH_MAX];
    const char *slash = strrchr(list, '/');
    if (!slash) return 1;
    int length = snprintf(path, sizeof(path), "%.*s/%s.toml", (int)(slash - list), list, name);
    if (length < 0 || (size_t)length >= sizeof(path)) return 1;
    struct stat st;
    if (lstat(path, &st) == 0) return 1;
    return errno == ENOENT || errno == ENOTDIR ? 0 : 1;
}

// MARK: - The PAM entry points

QPAM_EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    const char *list = QPAM_DEFAULT_LIST;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "list=", 5) == 0 && argv[i][5] == '/') list = argv[i] + 5;
        else pam_syslog(pamh, LOG_WARNING, "unknown option %s (ignored)", argv[i]);
    }
    const char *user = NULL;
    if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || !user || !user[0]) {
        pam_syslog(pamh, LOG_ERR, "no user name: session refused");
        return PAM_SESSION_ERR;
    }
    struct passwd *account = pam_modutil_getpwnam(pamh, user);
    if (!account) {
        pam_syslog(pamh, LOG_ERR, "no account %s: session refused", user);
        return PAM_USER_UNKNOWN;
    }
    uid_t uid = account->pw_uid;

    char why[PATH_MAX + 128] = "";
    enum qpam_listed listed = qpam_read_list(list, uid, why, sizeof(why));
    if (listed == QPAM_NOT_LISTED) return PAM_IGNORE;
    if (listed == QPAM_UNREADABLE) {
        if (!qpam_has_configuration(list, user)) {
            pam_syslog(pamh, LOG_ERR, "%s; %s (uid %u) has no guardian configuration, so the session goes on without the filter", why, user, (unsigned)uid);
            return PAM_IGNORE;
        }
        pam_syslog(pamh, LOG_ERR, "%s: %s (uid %u) has a guardian configuration, so the session is refused", why, user, (unsigned)uid);
        if (!(flags & PAM_SILENT)) pam_error(pamh, "This account is protected by a guardian, and its protection cannot be checked (%s): the session is refused. A guardian can run 'quarantine doctor'.", why);
        return PAM_SESSION_ERR;
    }
    int error = qpam_install();
    if (error) {
        pam_syslog(pamh, LOG_ERR, "cannot deny mount system calls to %s (uid %u): %s: session refused", user, (unsigned)uid, strerror(error));
        if (!(flags & PAM_SILENT)) pam_error(pamh, "This account is protected by a guardian, and its protection cannot be set up (%s): the session is refused.", strerror(error));
        return PAM_SESSION_ERR;
    }
    pam_syslog(pamh, LOG_INFO, "mount system calls denied in this session of %s (uid %u)", user, (unsigned)uid);
    return PAM_SUCCESS;
}

QPAM_EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    (void)pamh; (void)flags; (void)argc; (void)argv;
    return PAM_IGNORE;
}
