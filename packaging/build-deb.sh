#!/usr/bin/env bash
# Builds the Debian package quarantine_VERSION_ARCH.deb with dpkg-deb (no debhelper, no source
# package): what `make deb` runs, after `swift build -c release --static-swift-stdlib`.
#
#   packaging/build-deb.sh [--binary PATH] [--out DIR] [--keep]
#
#   --binary PATH  the release binary (default .build/release/quarantine); it must be linked
#                  with --static-swift-stdlib: a Debian root has no Swift runtime
#   --out DIR      where the .deb goes (default .build/deb)
#   --keep         keep the staged tree (printed) for a look
#
# What goes where (packaging/README has the reasons):
#   /usr/bin/quarantine                                  the program (stripped)
#   /usr/lib/quarantine/libonnxruntime.so.1.31.1         ONNX Runtime, loaded with dlopen
#   /usr/share/quarantine/models/{320n,open-nsfw}.onnx   the two models
#   /usr/lib/systemd/user/quarantine.service             the agent's user unit (ExecStart=/usr/bin/quarantine agent)
#   /usr/share/dbus-1/services/io.github.quarantine.Analysis1.service   starts it when an application asks (SystemdService=)
#   /usr/share/dbus-1/interfaces/io.github.quarantine.Analysis1.xml     the interface applications call (docs/dbus.md)
#   /usr/lib/systemd/system/quarantine-guardian@.service the guardian service (system unit template)
#   /usr/lib/systemd/system/quarantine-worker-launcher.service  starts the guardians' analysis workers
#   /lib/MULTIARCH/security/pam_quarantine.so            the PAM session module that 'guardian enable'
#                                                        adds to common-session (no mount system calls
#                                                        for protected accounts; pam/build.sh, beside BINARY)
#   /usr/lib/sysusers.d/quarantine.conf, /usr/lib/tmpfiles.d/quarantine.conf
#   /etc/quarantine/config.toml                          the defaults, a conffile, read under each user's file
#   /usr/share/man/man1/quarantine.1.gz, bash/zsh/fish completions, /usr/share/doc/quarantine/*
#
# The runtime and the models are taken from where `make setup` put them ($QUARANTINE_DATA_DIR,
# else ${XDG_DATA_HOME:-~/.local/share}/quarantine) and their sha256 checked against the pins
# (Sources/QuarantineBase/ModelCatalog.swift, read by scripts/pins.py) before packaging.
# The version is the program's (`static let version` in Sources/QuarantineCLI/Quarantine.swift,
# read by scripts/embed-version.sh --print) and must be what the binary says.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"

BINARY="$ROOT/.build/release/quarantine"
OUT="$ROOT/.build/deb"
KEEP=0
while (($#)); do
  case $1 in
    --binary) BINARY=$(realpath "$2"); shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-deb.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf 'build-deb: %s\n' "$*"; }
die() { printf 'build-deb: error: %s\n' "$*" >&2; exit 1; }

for tool in dpkg-deb dpkg-shlibdeps strip readelf; do
  command -v "$tool" >/dev/null || die "$tool is missing: apt-get install dpkg-dev binutils"
done
[[ -x $BINARY ]] || die "no release binary at $BINARY: run 'make deb' (or: swift build -c release --static-swift-stdlib --product quarantine)"

VERSION=$("$ROOT/scripts/embed-version.sh" --print)
ARCH=$(dpkg --print-architecture)
PACKAGE=quarantine
MAINTAINER=${DEB_MAINTAINER:-"quarantine maintainers <quarantine@maintainers.invalid>"}
# Reproducible: every date in the package is the last commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}

# ---- the binary: the right version, and nothing from /opt/swift --------------
first_line=$("$BINARY" --version | head -n1)
[[ $first_line == "quarantine $VERSION "* ]] \
  || die "$BINARY says '$first_line', but the source says version $VERSION: rebuild it ('make deb')"
if ldd "$BINARY" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|/opt/swift' >&2; then
  die "$BINARY links the Swift runtime dynamically (above), which no Debian root has: build it with 'swift build -c release --static-swift-stdlib --product quarantine'"
fi
if ldd "$BINARY" | grep 'not found' >&2; then die "$BINARY needs libraries this machine does not have (above)"; fi
if readelf -d "$BINARY" | grep -E 'RPATH|RUNPATH' >&2; then
  die "$BINARY carries a library search path (above): build it with --disable-local-rpath"
fi

# ---- the pinned runtime and models --------------------------------------------
DATA=${QUARANTINE_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/quarantine}
pins=$(python3 "$ROOT/scripts/pins.py") || die "cannot read the pins (scripts/pins.py)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/quarantine-deb.XXXXXX")
cleanup() { if ((KEEP)); then say "staged tree kept in $WORK/debian/$PACKAGE"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT
# Staged as debian/quarantine inside a scratch folder, where dpkg-shlibdeps expects a package's files.
STAGE="$WORK/debian/$PACKAGE"
DOC="$STAGE/usr/share/doc/$PACKAGE"
install -d -m 0755 "$STAGE/DEBIAN" "$STAGE/usr/bin" "$STAGE/usr/lib/$PACKAGE" "$STAGE/usr/share/$PACKAGE/models" \
  "$STAGE/usr/lib/systemd/user" "$STAGE/usr/lib/systemd/system" "$STAGE/usr/lib/sysusers.d" "$STAGE/usr/lib/tmpfiles.d" \
  "$STAGE/etc/$PACKAGE" "$STAGE/usr/share/man/man1" "$STAGE/usr/share/bash-completion/completions" \
  "$STAGE/usr/share/zsh/vendor-completions" "$STAGE/usr/share/fish/vendor_completions.d" "$DOC" "$STAGE/usr/share/lintian/overrides" \
  "$STAGE/usr/share/dbus-1/interfaces" "$STAGE/usr/share/dbus-1/services"

while read -r kind file sha _; do
  if [[ $kind == runtime ]]; then src="$DATA/lib/$file"; dest="$STAGE/usr/lib/$PACKAGE/$file"
  else src="$DATA/models/$file"; dest="$STAGE/usr/share/$PACKAGE/models/$file"; fi
  [[ -f $src ]] || die "$src is missing: run 'make setup' (it fetches the pinned runtime and models)"
  got=$(sha256sum "$src" | cut -d' ' -f1)
  [[ $got == "$sha" ]] || die "$src has sha256 $got, expected $sha: remove it and run 'make setup'"
  # Copied byte for byte (never stripped): the program checks these sha256 at every start.
  install -m 0644 "$src" "$dest"
  say "$file: sha256 verified"
done <<< "$pins"

# ---- the program ----------------------------------------------------------------
install -m 0755 "$BINARY" "$STAGE/usr/bin/quarantine"
# The symbol table and debugging information only (a tenth of the size); the dynamic symbols and
# Swift's metadata sections, which the runtime reads, stay.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$STAGE/usr/bin/quarantine"
"$STAGE/usr/bin/quarantine" --version >/dev/null || die "the stripped binary does not run"

# ---- the PAM module -----------------------------------------------------------------
# pam/build.sh's pam_quarantine.so beside the binary (make build-static puts it there), C only:
# libpam loads it into login, su, sshd..., so it carries no Swift runtime. Where libpam-modules
# puts pam_unix.so.
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
PAM_MODULE="$(dirname "$BINARY")/pam_quarantine.so"
[[ -f $PAM_MODULE ]] || die "no PAM module at $PAM_MODULE: run 'make deb' (or: pam/build.sh $PAM_MODULE)"
if readelf -d "$PAM_MODULE" | grep -E 'NEEDED.*(libswift|libFoundation|libdispatch)' >&2; then die "$PAM_MODULE links the Swift runtime (above)"; fi
install -d -m 0755 "$STAGE/lib/$MULTIARCH/security"
install -m 0644 "$PAM_MODULE" "$STAGE/lib/$MULTIARCH/security/pam_quarantine.so"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$STAGE/lib/$MULTIARCH/security/pam_quarantine.so"

# ---- systemd, sysusers, tmpfiles, configuration -----------------------------------
sed 's|@BINDIR@|/usr/bin|g' "$ROOT/packaging/systemd/quarantine.service.in" > "$STAGE/usr/lib/systemd/user/quarantine.service"
install -m 0644 "$ROOT/packaging/systemd/quarantine-guardian@.service" "$STAGE/usr/lib/systemd/system/"
install -m 0644 "$ROOT/packaging/systemd/quarantine-worker-launcher.service" "$STAGE/usr/lib/systemd/system/"
install -m 0644 "$ROOT/packaging/sysusers.d/quarantine.conf" "$STAGE/usr/lib/sysusers.d/quarantine.conf"
install -m 0644 "$ROOT/packaging/tmpfiles.d/quarantine.conf" "$STAGE/usr/lib/tmpfiles.d/quarantine.conf"
install -m 0644 "$ROOT/etc/quarantine/config.toml" "$STAGE/etc/$PACKAGE/config.toml"
# The analysis service for applications on the session bus (docs/dbus.md): its interface, and
# the service file that starts the agent (through the user unit) when an application asks.
install -m 0644 "$ROOT/packaging/dbus/io.github.quarantine.Analysis1.xml" "$STAGE/usr/share/dbus-1/interfaces/"
sed 's|@BINDIR@|/usr/bin|g' "$ROOT/packaging/dbus/io.github.quarantine.Analysis1.service.in" > "$STAGE/usr/share/dbus-1/services/io.github.quarantine.Analysis1.service"
chmod 0644 "$STAGE/usr/share/dbus-1/services/io.github.quarantine.Analysis1.service"
chmod 0644 "$STAGE/usr/lib/systemd/user/quarantine.service"

# ---- man page, completions ---------------------------------------------------------
# The generated page separates paragraphs with empty lines, which groff warns about (lintian's
# groff-message): .Pp is the mdoc way to say the same.
sed 's/^$/.Pp/' "$ROOT/packaging/man/quarantine.1" | gzip -9n > "$STAGE/usr/share/man/man1/quarantine.1.gz"
# bash sources completions, never runs them: no #! line (lintian's bash-completion-with-hashbang).
sed '1{/^#!/d}' "$ROOT/packaging/completions/quarantine.bash" > "$STAGE/usr/share/bash-completion/completions/quarantine"
install -m 0644 "$ROOT/packaging/completions/quarantine.zsh" "$STAGE/usr/share/zsh/vendor-completions/_quarantine"
install -m 0644 "$ROOT/packaging/completions/quarantine.fish" "$STAGE/usr/share/fish/vendor_completions.d/quarantine.fish"

# ---- documentation: copyright, changelog, README -------------------------------------
install -m 0644 "$HERE/debian/copyright" "$DOC/copyright"
gzip -9n < "$ROOT/README.md" > "$DOC/README.md.gz"
# ONNX Runtime's MIT licence asks for its notices: the ones its 1.31.1 wheel ships.
gzip -9n < "$HERE/debian/onnxruntime-ThirdPartyNotices.txt" > "$DOC/onnxruntime-ThirdPartyNotices.txt.gz"
# A native package (the version has no Debian revision): its changelog is changelog.gz (Policy 12.7).
date_rfc=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
sed -e "s|@VERSION@|$VERSION|g" -e "s|@MAINTAINER@|$MAINTAINER|g" -e "s|@DATE@|$date_rfc|g" "$HERE/debian/changelog.in" \
  | gzip -9n > "$DOC/changelog.gz"
install -m 0644 "$HERE/debian/lintian-overrides" "$STAGE/usr/share/lintian/overrides/$PACKAGE"

# ---- maintainer scripts, conffiles ----------------------------------------------------
for script in postinst prerm postrm; do install -m 0755 "$HERE/debian/$script" "$STAGE/DEBIAN/$script"; done
printf '/etc/%s/config.toml\n' "$PACKAGE" > "$STAGE/DEBIAN/conffiles"
chmod 0644 "$STAGE/DEBIAN/conffiles"

# ---- Depends: from what the program and the runtime link ------------------------------
# dpkg-shlibdeps maps each DT_NEEDED library to the package that ships it (a runtime package,
# e.g. libavformat59, never the -dev package the build used). libonnxruntime is dlopen'ed: it is
# not in the program's DT_NEEDED, so it is scanned as a file of its own.
# The media libraries the program opens at their first use (Sources/CLazyLibraries) are not in
# its DT_NEEDED either: a stand-in that links exactly them (named so, never installed) is scanned
# in its place, so they are depended on as if linked, with the versions dpkg-shlibdeps gives.
mkdir -p "$WORK/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$PACKAGE" "$PACKAGE" > "$WORK/debian/control"
echo 'int main(void) { return 0; }' > "$WORK/lazy-libraries-stand-in.c"
cc -o "$WORK/lazy-libraries-stand-in" "$WORK/lazy-libraries-stand-in.c" -Wl,--no-as-needed \
  -lavformat -lavcodec -lswscale -lavutil -lheif -ljxl -lcairo -lpoppler-glib -lrsvg-2 || die "cannot link the lazily opened media libraries' stand-in (their -dev packages: see README)"
(cd "$WORK" && dpkg-shlibdeps -O -e "debian/$PACKAGE/usr/bin/quarantine" -e lazy-libraries-stand-in -e "debian/$PACKAGE/lib/$MULTIARCH/security/pam_quarantine.so" -e "debian/$PACKAGE/usr/lib/$PACKAGE/$(basename "$STAGE"/usr/lib/$PACKAGE/libonnxruntime.so.*)" \
  2> "$WORK/shlibdeps.err") > "$WORK/substvars" || { cat "$WORK/shlibdeps.err" >&2; die "dpkg-shlibdeps failed (above)"; }
# (Its notes about libonnxruntime's needless links to libpthread, libdl and librt are upstream's.)
grep -v -e 'binaries to analyze should already be installed' -e 'libonnxruntime.so.* was not linked against' -e 'lazy-libraries-stand-in was not linked against' "$WORK/shlibdeps.err" >&2 || true
DEPENDS=$(sed -n 's/^shlibs:Depends=//p' "$WORK/substvars")
[[ -n $DEPENDS ]] || die "dpkg-shlibdeps found no dependencies"
if grep -q -- '-dev\b' <<< "$DEPENDS"; then die "a -dev package in Depends: $DEPENDS"; fi
# libavdevice is opened with dlopen by `quarantine stream` alone (cameras, virtual cameras), so
# dpkg-shlibdeps does not see it: recommended, named for the libavformat the program links.
AVDEVICE_PACKAGE="libavdevice$(pkg-config --modversion libavformat | cut -d. -f1)"

(cd "$STAGE" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$STAGE/DEBIAN/md5sums"
chmod 0644 "$STAGE/DEBIAN/md5sums" "$STAGE/usr/share/bash-completion/completions/quarantine"
INSTALLED_SIZE=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
cat > "$STAGE/DEBIAN/control" <<EOF
Package: $PACKAGE
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $INSTALLED_SIZE
Depends: $DEPENDS
Recommends: $AVDEVICE_PACKAGE
Section: utils
Priority: optional
Description: on-device nudity detection for downloads and shared folders
 quarantine checks pictures and videos on this computer with two open
 models (NudeNet and Yahoo open_nsfw, run by ONNX Runtime, both included)
 and never uploads anything. Its agent, a systemd user service, watches the
 folders where media arrives (the download folder by default) and moves what
 it flags into a private vault before it is opened, with a blurred preview
 and a discreet notification; "quarantine release" puts a file back exactly
 as it was, and "quarantine scan" checks files on demand.
 .
 Adult and child modes: in child mode, releasing anything needs a guardian
 PIN, and a system service run by root ("quarantine guardian enable") keeps
 the rules out of the child's reach.
EOF

# ---- the package ---------------------------------------------------------------------------
find "$STAGE" -depth -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
mkdir -p "$OUT"
DEB="$OUT/${PACKAGE}_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB" >/dev/null
say "built $DEB ($(du -h "$DEB" | cut -f1), installed $((INSTALLED_SIZE / 1024)) MiB)"
say "Depends: $DEPENDS"
