/*
 * posix_spawn's GNU extensions, for programs started detached (DetachedProgram): they keep no
 * descriptor of the process that starts them.
 */
#define _GNU_SOURCE
#include "qsys_spawn.h"

int qsys_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
