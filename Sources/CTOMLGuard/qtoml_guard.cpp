// Turns toml++'s assertion failures into a refusal of the document (see qtoml_guard.h).
#include "qtoml_guard.h"
#include <CTOML/CTOML.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <errno.h>
#include <setjmp.h>

namespace {
/// Set while qtoml_survives runs on this thread: only then does an assertion return there.
thread_local bool guarding = false;
thread_local sigjmp_buf escape;
thread_local char *failedExpression = nullptr;
}

/// glibc's assert() calls this. While qtoml_survives runs on this thread, it jumps back there.
/// glibc declares it noexcept, so a C++ exception cannot carry us out (std::terminate: tried);
/// the jump skips toml++'s destructors, leaking the half-built document: bounded, once per
/// refused text (the caller keeps its verdict). Every other assertion in the process keeps
/// glibc's behaviour: the same message on standard error, then abort().
extern "C" [[noreturn]] void __assert_fail(const char *expression, const char *file, unsigned int line, const char *function) noexcept {
    if (guarding) {
        guarding = false;
        failedExpression = strdup(expression);
        siglongjmp(escape, 1);
    }
    std::fprintf(stderr, "%s: %s:%u: %s: Assertion `%s' failed.\n", program_invocation_short_name, file, line, function, expression);
    std::fflush(stderr);
    std::abort();
}

extern "C" bool qtoml_survives(const char *text, char **assertion) {
    *assertion = nullptr;
    static thread_local CTOMLParseError error;
    std::memset(&error, 0, sizeof error);
    if (sigsetjmp(escape, 0) != 0) {
        *assertion = failedExpression;
        failedExpression = nullptr;
        return false;
    }
    guarding = true;
    try {
        (void)tableCreateFromString(text, &error);
    } catch (...) {
        guarding = false;
        *assertion = strdup("an unexpected exception");
        return false;
    }
    guarding = false;
    if (error.description) std::free(const_cast<char *>(error.description));
    return true;
}
