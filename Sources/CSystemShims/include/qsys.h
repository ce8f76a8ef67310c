#ifndef QUARANTINE_QSYS_H
#define QUARANTINE_QSYS_H
#include <stddef.h>
#include <sys/types.h>
/// Caps glibc's number of malloc arenas (mallopt M_ARENA_MAX); returns 1 on success.
int qsys_limit_malloc_arenas(int count);
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
/// Names the calling thread (what ps, top and /proc/<pid>/task/<tid>/comm show; 15 bytes kept).
void qsys_set_thread_name(const char *name);
#endif
