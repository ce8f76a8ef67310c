#ifndef QUARANTINE_QSYS_SPAWN_H
#define QUARANTINE_QSYS_SPAWN_H
#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34 and later; a GNU extension that does not
/// import into Swift): the spawned program gets no descriptor numbered `from` or above, whether
/// or not it is close-on-exec. Returns 0 or an error number.
int qsys_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from);
#endif
