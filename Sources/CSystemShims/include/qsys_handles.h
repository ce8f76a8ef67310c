#pragma once
#include <stddef.h>

/// The file handle of the open file or folder `fd` (name_to_handle_at with AT_EMPTY_PATH): up
/// to `size` bytes into `bytes`, its type in `*type`, its length in `*length`. Returns 0, or -1
/// with errno set (EOPNOTSUPP where the filesystem has no handles, EOVERFLOW when `size` is short).
int qsys_handle_of(int fd, void *bytes, size_t size, int *type, size_t *length);

/// Opens the file or folder a handle names (open_by_handle_at; needs CAP_DAC_READ_SEARCH),
/// `mount_fd` being any folder on its filesystem (O_PATH too: it is reopened), with `flags` (O_PATH, O_DIRECTORY...).
/// Returns the descriptor, or -1 with errno set (ESTALE when it no longer exists, EPERM
/// without the capability).
int qsys_open_by_handle(int mount_fd, const void *bytes, size_t length, int type, int flags);
