#define _GNU_SOURCE
#include "qsys.h"
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/xattr.h>

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
