#ifndef QBUILD_INFO_H
#define QBUILD_INFO_H

/// The git commit this program was built from ("abc123def456", "abc123def456-dirty" when the
/// tree had uncommitted changes), or "unknown" when it was built without scripts/embed-version.sh.
const char *qbuild_commit(void);

#endif
