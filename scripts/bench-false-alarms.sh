#!/usr/bin/env bash
# False alarms on everyday pictures, before and after the decision rules (issue 28).
#
#   scripts/bench-false-alarms.sh [BINARY]        # default .build/release/quarantine
#   MODES="adult" CORPORA="clipart-stamps emoji" scripts/bench-false-alarms.sh   # a part
#   PASSES=before scripts/bench-false-alarms.sh OLD; PASSES=after scripts/bench-false-alarms.sh NEW
#                                                   # one pass each (say, the rules-off pass of main)
#
# Makes the corpora (scripts/bench-corpora.sh), scans each in adult and child mode twice with
# the same binary: rules off ([policy.*.rules] lone_part = false: the thresholds alone, as
# before issue 28; the raw detections are the same) and rules as configured by default, and
# prints the table of scripts/bench-false-alarms.py. Scans run at nice 10. Results stay in
# .build/bench/false-alarms/. Exit 1 when a people corpus changes or the target is missed.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${1:-$REPO/.build/release/quarantine}"
OUT="$REPO/.build/bench/false-alarms"
CORP="$REPO/.build/bench/corpora"
"$REPO/scripts/bench-corpora.sh" "$CORP"
mkdir -p "$OUT/before" "$OUT/after"
off="$OUT/rules-off.toml"; on="$OUT/rules-default.toml"
printf '[policy.adult.rules]\nlone_part = false\n[policy.child.rules]\nlone_part = false\n' > "$off"
: > "$on"   # an empty file: every default, whatever ~/.config says
corpora=(${CORPORA:-$(cd "$CORP" && ls -d */ | tr -d /)})
# The rules-on passes first: they are the ones a shortened run must have.
for pass in ${PASSES:-after before}; do
  for mode in ${MODES:-adult child}; do
    config="$off"; [[ $pass == after ]] && config="$on"
    start=$(date +%s%N)
    for c in "${corpora[@]}"; do
      nice -n 10 "$BIN" scan --json --mode "$mode" --config "$config" "$CORP/$c" > "$OUT/$pass/$c.$mode.jsonl" 2>/dev/null || [[ $? -le 1 ]]
    done
    awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f\n", (b - a) / 1e9 }' > "$OUT/$pass.$mode.seconds"
    echo "false alarms: $mode, rules $([[ $pass == before ]] && echo off || echo on): $(cat "$OUT/$pass.$mode.seconds") s" >&2
  done
done
PY="$REPO/.build/bench/venv/bin/python"; [[ -x "$PY" ]] || PY=python3
"$PY" "$REPO/scripts/bench-false-alarms.py" "$OUT" ${STRICT:+--strict} | tee "$OUT/report.md"
