#!/usr/bin/env bash
# `make package-test`: the .deb in a clean Debian 12 root, where no source tree and no Swift exist,
# and `make install` into an empty prefix. Needs root (debootstrap, chroot, mounts).
#
#   packaging/package-test.sh [--deb FILE] [--binary PATH] [--keep]
#
#   --deb FILE     the package to test (default: the newest .build/deb/quarantine_*.deb)
#   --binary PATH  the program 'make install' installs (default .build/release/quarantine)
#   --keep         keep the root (printed) instead of deleting it
#
# Steps, each printed PASS or FAIL (exit 1 if any failed):
#   1. a minbase bookworm root: `debootstrap --variant=minbase bookworm` once, cached as
#      .build/package-test/bookworm-minbase.tar.gz (delete it to make a fresh one), extracted
#      into a temporary folder; /proc, /sys and /dev mounted for the chroot (unmounted on exit)
#   2. apt-get install ./quarantine_VERSION_ARCH.deb (the dependencies from the Debian mirror)
#   3. quarantine --version: the package's version and a commit
#   4. quarantine doctor: healthy (exit 0), runtime and models from /usr/lib and /usr/share
#   5. quarantine testcard /tmp/card.jpg && quarantine scan /tmp/card.jpg: exit 1, TEST_CARD
#   6. apt-get remove: the program gone, the conffile kept (Policy)
#   7. apt-get purge: dpkg knows nothing of it, and no file or folder named quarantine is left
#      outside the home folders and dpkg's and apt's own records
#   8. the same with systemd in the root: postinst creates the system user, its group and the
#      folders (twice: idempotent); purge removes a guardian's configuration, drop-in and state
#      and keeps the user (Debian keeps system users)
#   9. make install PREFIX=<empty dir> on this machine: doctor healthy with XDG_DATA_HOME on an
#      empty folder (so not 'make setup''s files), then make uninstall leaves the prefix empty
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DEB=""
BINARY="$ROOT/.build/release/quarantine"
KEEP=0
while (($#)); do
  case $1 in
    --deb) DEB=$(realpath "$2"); shift 2 ;;
    --binary) BINARY=$(realpath "$2"); shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "package-test.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

die() { printf 'package-test: error: %s\n' "$*" >&2; exit 2; }
[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot and mounts): sudo make package-test"
for tool in debootstrap chroot dpkg-deb; do command -v "$tool" >/dev/null || die "$tool is missing: apt-get install debootstrap"; done
[[ -n $DEB ]] || DEB=$(ls -t "$ROOT"/.build/deb/quarantine_*.deb 2>/dev/null | head -n1)
[[ -f $DEB ]] || die "no package: run 'make deb' first (or pass --deb FILE)"
VERSION=$(dpkg-deb -f "$DEB" Version)

MIRROR=http://deb.debian.org/debian
CACHE="$ROOT/.build/package-test"
TARBALL="$CACHE/bookworm-minbase.tar.gz"
R=$(mktemp -d /var/tmp/quarantine-root.XXXXXX)
PREFIX=$(mktemp -d /var/tmp/quarantine-prefix.XXXXXX)
EMPTY=$(mktemp -d /var/tmp/quarantine-empty.XXXXXX)
START=$(date +%s)
failed=0

cleanup() {
  # Whatever is mounted under the root (the steps run in subshells, so read the kernel's list),
  # deepest first; only then may its files go.
  local m
  for m in $(awk -v r="$R/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null; done
  if ((KEEP)); then echo "package-test: root kept in $R"; else rm -rf --one-file-system "$R"; fi
  rm -rf "$PREFIX" "$EMPTY"
}
trap cleanup EXIT

step() { # NAME, then the command; prints PASS/FAIL with the time and, on failure, the output
  local name=$1; shift
  local t0=$SECONDS out
  if out=$("$@" 2>&1); then
    printf 'PASS  %-60s %3ds\n' "$name" $((SECONDS - t0))
  else
    printf 'FAIL  %-60s %3ds\n' "$name" $((SECONDS - t0)); printf '%s\n' "$out" | tail -n 25 | sed 's/^/      | /'
    failed=1
  fi
}
# Paths that do not count: the home and /tmp (the test's own files), dpkg's and apt's records.
OUTSIDE_RECORDS="grep -v -e '^/root/' -e '^/tmp/' -e '^/var/lib/dpkg/' -e '^/var/cache/apt/' -e '^/var/log/'"
in_root() { chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive /bin/sh -c "$1"; }

# ---- 1. the root ------------------------------------------------------------------------
make_root() {
  mkdir -p "$CACHE"
  if [[ ! -f $TARBALL ]]; then
    local fresh; fresh=$(mktemp -d /var/tmp/quarantine-debootstrap.XXXXXX)
    debootstrap --variant=minbase bookworm "$fresh" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
      || { tail -n 5 "$CACHE/debootstrap.log"; rm -rf --one-file-system "$fresh"; return 1; }
    # The updates and security suites too, as on any installed Debian 12.
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb http://deb.debian.org/debian-security bookworm-security main\n' \
      "$MIRROR" "$MIRROR" > "$fresh/etc/apt/sources.list"
    rm -rf "$fresh"/var/cache/apt/archives/*.deb
    tar -C "$fresh" -czf "$TARBALL.part" . && mv "$TARBALL.part" "$TARBALL"
    rm -rf --one-file-system "$fresh"
  fi
  tar -C "$R" -xzf "$TARBALL"
  cp /etc/resolv.conf "$R/etc/resolv.conf"
  mount -t proc proc "$R/proc"
  mount -t sysfs sysfs "$R/sys"
  mount --rbind /dev "$R/dev" && mount --make-rslave "$R/dev"
  cp "$DEB" "$R/tmp/"
  # Every path named quarantine before the package: the purge check compares against it.
  in_root "find / -xdev -name '*quarantine*' 2>/dev/null | $OUTSIDE_RECORDS | sort" > "$R/tmp/before.txt"
  [[ -x $R/usr/bin/apt-get ]]
}
step "clean bookworm minbase root (cached: ${TARBALL#$ROOT/})" make_root
[[ $failed == 0 ]] || exit 1

# ---- 2-5. install, run ---------------------------------------------------------------------
step "apt-get install ./$(basename "$DEB")" \
  in_root "apt-get update -qq && cd /tmp && apt-get install -y -qq ./$(basename "$DEB")"
step "quarantine --version says $VERSION and a commit" \
  in_root "quarantine --version && quarantine --version | head -n1 | grep -E '^quarantine $VERSION \\(commit [0-9a-f]{12}(-dirty)?\\)'"
step "quarantine doctor: healthy, runtime and models from the package" \
  in_root "quarantine doctor > /tmp/doctor.txt; s=\$?; cat /tmp/doctor.txt; grep -q /usr/share/quarantine/models/320n.onnx /tmp/doctor.txt && exit \$s"
step "quarantine scan of the test card: exit 1, TEST_CARD" \
  in_root "quarantine testcard /tmp/card.jpg && { quarantine scan /tmp/card.jpg; s=\$?; echo \"exit \$s\"; [ \$s = 1 ]; } | tee /tmp/scan.txt && grep -q TEST_CARD /tmp/scan.txt && grep -qx 'exit 1' /tmp/scan.txt"
step "files in their places (units, sysusers, tmpfiles, completions, man, conffile)" \
  in_root 'for f in /usr/bin/quarantine /usr/lib/systemd/user/quarantine.service /usr/lib/systemd/system/quarantine-guardian@.service /usr/lib/systemd/system/quarantine-worker-launcher.service /usr/lib/sysusers.d/quarantine.conf /usr/lib/tmpfiles.d/quarantine.conf /usr/share/bash-completion/completions/quarantine /usr/share/zsh/vendor-completions/_quarantine /usr/share/fish/vendor_completions.d/quarantine.fish /usr/share/man/man1/quarantine.1.gz /etc/quarantine/config.toml /usr/share/doc/quarantine/copyright /usr/share/dbus-1/interfaces/io.github.quarantine.Analysis1.xml /usr/share/dbus-1/services/io.github.quarantine.Analysis1.service; do [ -f "$f" ] || { echo "missing $f"; exit 1; }; done; grep -qx "ExecStart=/usr/bin/quarantine agent" /usr/lib/systemd/user/quarantine.service && grep -qx "Exec=/usr/bin/quarantine agent" /usr/share/dbus-1/services/io.github.quarantine.Analysis1.service && dpkg-query -W -f="\${Conffiles}\n" quarantine | grep -q /etc/quarantine/config.toml'

# ---- 6-7. remove, purge -----------------------------------------------------------------------
step "apt-get remove: program gone, conffile kept" \
  in_root 'apt-get remove -y -qq quarantine && [ ! -e /usr/bin/quarantine ] && [ ! -e /usr/lib/quarantine ] && [ ! -e /usr/share/quarantine ] && [ -f /etc/quarantine/config.toml ] && dpkg -l quarantine | grep -q "^rc"'
step "apt-get purge: nothing left but the home folders" \
  in_root 'apt-get purge -y -qq quarantine && ! dpkg -L quarantine >/dev/null 2>&1 && [ ! -e /etc/quarantine ] && find / -xdev -name "*quarantine*" 2>/dev/null | '"$OUTSIDE_RECORDS"' | sort > /tmp/after.txt; diff /tmp/before.txt /tmp/after.txt'

# ---- 8. with systemd: the maintainer scripts' system user and folders --------------------------
# minbase has no systemd, so steps 2-7 met the postinst that skips systemd-sysusers; this one has it.
DEBNAME=$(basename "$DEB")
step "with systemd: postinst makes the user, group and folders, twice" \
  in_root "apt-get install -y -qq --no-install-recommends systemd >/dev/null && cd /tmp && apt-get install -y -qq ./$DEBNAME && apt-get install -y -qq --reinstall ./$DEBNAME && getent passwd quarantine && getent group quarantine-guardians && [ \"\$(stat -c %U:%a /var/lib/quarantine)\" = quarantine:700 ] && [ -d /run/quarantine ]"
step "with systemd: purge removes a guardian's configuration and state, keeps the user" \
  in_root 'install -d -o quarantine -m 0700 /var/lib/quarantine/alice && echo "mode = \"child\"" > /etc/quarantine/alice.toml && mkdir -p /etc/systemd/system/quarantine-guardian@alice.service.d && touch /etc/systemd/system/quarantine-guardian@alice.service.d/home.conf && apt-get purge -y -qq quarantine && [ ! -e /var/lib/quarantine ] && [ ! -e /etc/quarantine ] && [ ! -e /run/quarantine ] && [ ! -e /etc/systemd/system/quarantine-guardian@alice.service.d ] && getent passwd quarantine >/dev/null && find / -xdev -name "*quarantine*" 2>/dev/null | '"$OUTSIDE_RECORDS"' | sort > /tmp/after.txt; diff /tmp/before.txt /tmp/after.txt'

# ---- 9. make install into an empty prefix -------------------------------------------------------
install_test() {
  [[ -x $BINARY ]] || { echo "no $BINARY: run 'make deb' or 'make install' first"; return 1; }
  "$HERE/install.sh" install "$PREFIX" "$BINARY" || return 1
  # No QUARANTINE_DATA_DIR (it would be the only place searched), an empty XDG_DATA_HOME and a
  # fresh home: the program can only find the runtime and models through its own prefix.
  env -u QUARANTINE_DATA_DIR HOME="$EMPTY" XDG_DATA_HOME="$EMPTY/data" XDG_CONFIG_HOME="$EMPTY/config" XDG_CACHE_HOME="$EMPTY/cache" \
    "$PREFIX/bin/quarantine" doctor > "$EMPTY/doctor.txt"; local s=$?
  grep -q "$PREFIX/share/quarantine/models/320n.onnx" "$EMPTY/doctor.txt" || { cat "$EMPTY/doctor.txt"; echo "doctor did not use $PREFIX"; return 1; }
  ((s == 0)) || { cat "$EMPTY/doctor.txt"; return 1; }
  "$HERE/install.sh" uninstall "$PREFIX" || return 1
  local left; left=$(find "$PREFIX" -mindepth 1)
  [[ -z $left ]] || { echo "left behind:"; echo "$left"; return 1; }
}
step "make install PREFIX=<empty>: doctor finds its own prefix; uninstall empties it" install_test

printf '%s  package-test of %s in %ds\n' "$( ((failed)) && echo FAIL || echo PASS)" "$(basename "$DEB")" $(($(date +%s) - START))
exit $failed
