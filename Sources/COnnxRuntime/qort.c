#include "qort.h"
#include <dlfcn.h>
#include <stdio.h>

typedef struct {
    const QOrtApi *(*get_api)(uint32_t version);
    const char *(*get_version_string)(void);
} QOrtApiBase;

const QOrtApi *qort_load(const char *path, uint32_t api_version, char *error, size_t error_size,
                         const char **version_out) {
    if (error_size) error[0] = 0;
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        snprintf(error, error_size, "dlopen failed: %s", why ? why : "unknown error");
        return NULL;
    }
    const QOrtApiBase *(*get_base)(void) = (const QOrtApiBase *(*)(void))dlsym(handle, "OrtGetApiBase");
    if (!get_base) {
        snprintf(error, error_size, "%s does not export OrtGetApiBase: not an ONNX Runtime library", path);
        dlclose(handle);
        return NULL;
    }
    const QOrtApiBase *base = get_base();
    const QOrtApi *api = base ? base->get_api(api_version) : NULL;
    if (!api) {
        snprintf(error, error_size, "%s does not provide API table version %u", path, api_version);
        dlclose(handle);
        return NULL;
    }
    if (version_out) *version_out = base->get_version_string();
    return api; /* the handle stays open for the life of the process, on purpose */
}
