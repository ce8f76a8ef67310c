// The build's git commit, for `quarantine --version`.
//
// scripts/embed-version.sh (run by every make target that builds) writes the commit into
// qbuild_commit.h beside this file; that header is never committed (.gitignore), so a commit can
// never carry a stale or dirty value, and a plain `swift build` without it still compiles and
// says "unknown". A C file rather than a generated Swift file: SwiftPM needs every Swift source
// to exist when it plans the build, while a C header may be absent (__has_include). The script
// touches this file whenever the header's text changes, so only this file is recompiled.
#include "qbuild_info.h"

#if __has_include("qbuild_commit.h")
#include "qbuild_commit.h"
#endif

#ifndef QBUILD_COMMIT
#define QBUILD_COMMIT "unknown"
#endif

const char *qbuild_commit(void) { return QBUILD_COMMIT; }
