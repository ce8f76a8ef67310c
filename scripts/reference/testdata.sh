#!/usr/bin/env bash
# Make <repo>/testdata/photos (and optionally testdata/bench) with a pinned Pillow.
#
#   scripts/reference/testdata.sh                 # testdata/photos (fast when already there)
#   scripts/reference/testdata.sh bench [--count N] [--png-count M]   # testdata/bench
#
# Needs python3 (with venv) and access to PyPI only. Creates <repo>/.venv-testdata on first use.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="$REPO/.venv-testdata"
REQ="$HERE/requirements-testdata.txt"
PY="${PYTHON:-python3}"

want="$(sha256sum "$REQ" | cut -d' ' -f1)"
stamp="$VENV/.requirements.sha256"
if [[ ! -x "$VENV/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "testdata: setting up $VENV"
  [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: -r "$REQ"
  echo "$want" > "$stamp"
fi

case "${1:-photos}" in
  photos) [[ $# -gt 0 ]] && shift; exec "$VENV/bin/python" "$HERE/make_testdata.py" "$@" ;;
  bench)  shift; exec "$VENV/bin/python" "$HERE/make_bench_photos.py" "$@" ;;
  -*)     exec "$VENV/bin/python" "$HERE/make_testdata.py" "$@" ;;
  *)      echo "usage: $0 [photos|bench] [options]" >&2; exit 2 ;;
esac
