#include "qsys.h"
#include <malloc.h>

int qsys_limit_malloc_arenas(int count) {
#ifdef M_ARENA_MAX
    return mallopt(M_ARENA_MAX, count);
#else
    (void)count;
    return 0;
#endif
}
