#!/bin/sh
# Builds pam_quarantine.so (pam/pam_quarantine.c) with cc: a plain C shared object that needs
# libpam and libc alone. (A SwiftPM dynamic library would link the Swift runtime, and libpam loads
# this module into login, su, sshd, cron... for every account.) Needs libpam0g-dev.
#
#   pam/build.sh OUTPUT        e.g. pam/build.sh .build/release/pam_quarantine.so
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# = 1 ] || { echo "usage: $0 OUTPUT" >&2; exit 2; }
[ -f /usr/include/security/pam_modules.h ] || { echo "pam/build.sh: libpam0g-dev is missing (apt-get install libpam0g-dev)" >&2; exit 1; }
mkdir -p "$(dirname "$1")"
${CC:-cc} -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
    -Wl,-z,relro,-z,now,-z,noexecstack,--as-needed -o "$1.new" "$here/pam_quarantine.c" -lpam
mv -f "$1.new" "$1"
