#ifndef QTOML_GUARD_H
#define QTOML_GUARD_H
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Parses `text` with TOMLKit's toml++ and says whether toml++ survived it. toml++ 3 checks some
/// of its own invariants with assert() where a malformed document breaks them, which aborts the
/// process (release builds too: nothing defines NDEBUG). During this call an assertion failure
/// on this thread is turned into a C++ exception and caught here: returns false and sets
/// `*assertion` to the failed expression (free() it). True: the text parsed, or toml++ reported
/// an ordinary parse error (the caller parses it again through TOMLKit for the tree or the
/// message). The parsed table, if any, is not freed (TOMLKit has no way to): once per text.
bool qtoml_survives(const char *text, char **assertion);

#ifdef __cplusplus
}
#endif
#endif
