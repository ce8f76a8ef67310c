#ifndef QUARANTINE_QSYS_H
#define QUARANTINE_QSYS_H
/// Caps glibc's number of malloc arenas (mallopt M_ARENA_MAX); returns 1 on success.
int qsys_limit_malloc_arenas(int count);
#endif
