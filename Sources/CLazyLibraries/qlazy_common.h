/* Shared by the generated qlazy_<group>.c files (scripts/lazy-libraries.py). */
#ifndef QUARANTINE_QLAZY_COMMON_H
#define QUARANTINE_QLAZY_COMMON_H
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include "qlazy.h"

#define QLAZY_STR2(x) #x
#define QLAZY_STR(x) QLAZY_STR2(x)

/* Opens each library of a group (RTLD_NOW | RTLD_LOCAL), in order; false with `error` set
   (naming the library and dlerror's words) when one cannot be opened. */
__attribute__((visibility("hidden"))) int qlazy_open_all(const char *const names[], void *handles[], int count, char *error, size_t size);
/* `name` from `handle`; NULL with `error` set when it is not there. */
__attribute__((visibility("hidden"))) void *qlazy_symbol(void *handle, const char *name, char *error, size_t size);
/* A function of a library that could not be opened was called: said on stderr, then abort(). */
__attribute__((visibility("hidden"), noreturn)) void qlazy_missing(const char *function, const char *error);
#endif
