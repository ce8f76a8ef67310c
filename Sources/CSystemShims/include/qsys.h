#ifndef QUARANTINE_QSYS_H
#define QUARANTINE_QSYS_H
#include <stddef.h>
#include <sys/types.h>
/// Caps glibc's number of malloc arenas (mallopt M_ARENA_MAX); returns 1 on success.
int qsys_limit_malloc_arenas(int count);
/// Returns the free memory at the top of malloc's heaps to the kernel (malloc_trim(0)); 1 when some was.
/* mallopt(M_MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD); 1 when both were taken. */
int qsys_set_malloc_thresholds(size_t mmap_threshold, size_t trim_threshold);
int qsys_release_free_memory(void);
/// renameat2(..., RENAME_NOREPLACE): fails with EEXIST instead of replacing anything.
int qsys_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
/// Extended attributes of an open file (flistxattr, fgetxattr, fsetxattr).
ssize_t qsys_flistxattr(int fd, char *list, size_t size);
ssize_t qsys_fgetxattr(int fd, const char *name, void *value, size_t size);
int qsys_fsetxattr(int fd, const char *name, const void *value, size_t size);
/// Lowers the calling thread only: nice `nice` (setpriority on its tid) and the idle I/O class
/// (ioprio_set). Returns 0 when both worked, else -1 with errno of the first failure.
int qsys_lower_thread_priority(int nice);
/// The calling thread's nice value and I/O priority class (3 = idle), for checks.
int qsys_thread_io_class(void);
/// CPU time the calling thread has used, nanoseconds (CLOCK_THREAD_CPUTIME_ID).
unsigned long long qsys_thread_cpu_ns(void);
/// Names the calling thread (what ps, top and /proc/<pid>/task/<tid>/comm show; 15 bytes kept).
void qsys_set_thread_name(const char *name);
/// The calling thread's name (at most 15 bytes) into `buffer`, NUL-terminated; 0, or -1.
int qsys_thread_name(char *buffer, int size);
/// sendmsg of `length` bytes with `count` descriptors as SCM_RIGHTS (none when count is 0),
/// MSG_NOSIGNAL. Returns the bytes sent, or -1 with errno.
ssize_t qsys_send_with_descriptors(int socket, const void *bytes, size_t length, const int *descriptors, int count);
/// recvmsg with room for `max_count` descriptors (MSG_CMSG_CLOEXEC). Returns the bytes received
/// (0 at end of stream) or -1 with errno; `*count` descriptors are stored in `descriptors`.
/// `*truncated` is set when the message or its descriptors did not fit (the descriptors that
/// arrived are still returned, for the caller to close).
ssize_t qsys_receive_with_descriptors(int socket, void *bytes, size_t length, int *descriptors, int max_count, int *count, int *truncated);
/// The peer's process, user and group of a connected Unix socket (SO_PEERCRED).
int qsys_peer_credentials(int socket, int *pid, unsigned *uid, unsigned *gid);
/// accept4(..., SOCK_CLOEXEC), retried on EINTR.
int qsys_accept_cloexec(int socket);
/// Confines the calling process, for good, as the analysis worker: dies with its parent, keeps
/// only descriptors 0-3, no capabilities, no_new_privs, no core files, and a seccomp filter (all
/// threads) that refuses file-system changes, opening for write, sockets, exec, signals and
/// tracing aimed at other processes, set*id, and anything off its allow-list (the full list is above the definition in
/// qsys_sandbox.c). Returns 0, or -1 with errno set and a short reason ("seccomp: Invalid
/// argument") in `reason`; after a failure the process may be partly confined and must exit.
int qsys_enter_analysis_sandbox(char *reason, size_t reason_size);
/// The same, keeping descriptors 0 to `highest_kept` (at least 3) open instead of 0 to 3 (the
/// worker's runtime folder, passed as descriptor 4 and closed by it once the models are loaded).
int qsys_enter_analysis_sandbox_keeping(int highest_kept, char *reason, size_t reason_size);
/// The analysis worker takes its own user: no supplementary groups, real, effective and saved
/// group `gid`, real and effective user `uid`, saved user `saved_uid` (the service's, so it can
/// still SIGKILL the worker; the seccomp filter entered afterwards refuses every set*uid call).
/// Needs CAP_SETUID and CAP_SETGID. Returns 0, or -1 with errno and a reason.
int qsys_become_worker_identity(unsigned uid, unsigned gid, unsigned saved_uid, char *reason, size_t reason_size);
/// The Landlock ABI the kernel offers (1, 2, ...), or -1 with errno (ENOSYS: no Landlock in this
/// kernel; EOPNOTSUPP: disabled at boot).
int qsys_landlock_abi(void);
/// Takes away all file-system access, for good, from every thread of the process (Landlock:
/// every right of the kernel's ABI handled, none allowed; TCP bind/connect on ABI 4+, abstract
/// sockets and signals scoped on ABI 6+). Other threads are made to restrict themselves through
/// signal `signal_number` (see qsys_sandbox.c). Returns the ABI used; 0 when the kernel has no
/// Landlock (`reason` says why); -1 on failure, after which the caller must not analyse.
int qsys_landlock_seal(int signal_number, char *reason, size_t reason_size);
/// The same, except that files and folders beneath each of `readable` (NULL-terminated; a
/// folder that does not exist is skipped) may still be read, nothing more.
int qsys_landlock_seal_reading(int signal_number, const char *const *readable, char *reason, size_t reason_size);
/// getresuid: the real, effective and saved user ids. Returns 0, or -1 with errno.
int qsys_user_ids(unsigned *real, unsigned *effective, unsigned *saved);
/// memfd_create(name, MFD_CLOEXEC): a descriptor, or -1 with errno.
int qsys_memfd(const char *name);
/// pipe2(ends, O_CLOEXEC): both ends close-on-exec from the start (no other thread's spawn
/// inherits them). Returns 0, or -1 with errno.
int qsys_pipe_cloexec(int ends[2]);
#endif
