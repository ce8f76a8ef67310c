#define _GNU_SOURCE
#include "qsys_handles.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int qsys_handle_of(int fd, void *bytes, size_t size, int *type, size_t *length) {
    if (size > MAX_HANDLE_SZ) size = MAX_HANDLE_SZ;
    struct file_handle *handle = malloc(sizeof(struct file_handle) + MAX_HANDLE_SZ);
    if (!handle) { errno = ENOMEM; return -1; }
    handle->handle_bytes = MAX_HANDLE_SZ;
    int mount_id = 0;
    if (name_to_handle_at(fd, "", handle, &mount_id, AT_EMPTY_PATH) != 0) {
        int code = errno;
        free(handle);
        errno = code;
        return -1;
    }
    if (handle->handle_bytes > size) { free(handle); errno = EOVERFLOW; return -1; }
    memcpy(bytes, handle->f_handle, handle->handle_bytes);
    *type = handle->handle_type;
    *length = handle->handle_bytes;
    free(handle);
    return 0;
}

int qsys_open_by_handle(int mount_fd, const void *bytes, size_t length, int type, int flags) {
    if (length > MAX_HANDLE_SZ) { errno = EINVAL; return -1; }
    struct file_handle *handle = malloc(sizeof(struct file_handle) + MAX_HANDLE_SZ);
    if (!handle) { errno = ENOMEM; return -1; }
    handle->handle_bytes = (unsigned int)length;
    handle->handle_type = type;
    memcpy(handle->f_handle, bytes, length);
    int fd = open_by_handle_at(mount_fd, handle, flags);
    int code = errno;
    if (fd < 0 && code == EBADF) {
        // An O_PATH descriptor does not name a mount here: the same folder, opened for reading.
        int readable = openat(mount_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (readable >= 0) {
            fd = open_by_handle_at(readable, handle, flags);
            code = errno;
            close(readable);
        }
    }
    free(handle);
    errno = code;
    return fd;
}
