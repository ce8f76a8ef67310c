#include "qlazy_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int qlazy_open_all(const char *const names[], void *handles[], int count, char *error, size_t size) {
    for (int i = 0; i < count; i++) {
        handles[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            const char *why = dlerror();
            snprintf(error, size, "%s cannot be opened: %s", names[i], why ? why : "unknown error");
            return 0;
        }
    }
    return 1;
}

void *qlazy_symbol(void *handle, const char *name, char *error, size_t size) {
    void *found = dlsym(handle, name);
    if (!found) {
        const char *why = dlerror();
        snprintf(error, size, "%s is missing from its library: %s", name, why ? why : "unknown error");
    }
    return found;
}

void qlazy_missing(const char *function, const char *error) {
    char line[768];
    int n = snprintf(line, sizeof line, "quarantine: cannot call %s: %s (reinstall the package that provides it)\n", function, error);
    if (n > 0) { ssize_t ignored = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1); (void)ignored; }
    abort();
}
