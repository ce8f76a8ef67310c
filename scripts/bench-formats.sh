#!/usr/bin/env bash
# make bench, the picture formats of issue 12: a 12 MP HEIC as a phone writes it (512-px HEVC tile
# grid, scripts/heic-grid.py), a 12 MP JPEG XL photo (cjxl -d 1) and a 50-frame animated WebP (a pan
# across a photo, 640x360), each against its library's own decode plus one inference of both models
# for every image judged (quarantine-bench formats). Target: within 1.3x. The files are made from
# testdata/photos at each run into .build/bench/formats.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=.build/release/quarantine-bench
OUT=.build/bench/formats
PHOTOS=testdata/photos
mkdir -p "$OUT"
echo "bench: picture formats..." >&2
photo=$PHOTOS/coffee__4032x3024_q90.jpg
[[ -s $OUT/phone.heic ]] || scripts/heic-grid.py "$photo" "$OUT/phone.heic" --quality 20
[[ -s $OUT/photo.png ]] || ffmpeg -v error -y -i "$photo" "$OUT/photo.png"
[[ -s $OUT/photo.jxl ]] || cjxl "$OUT/photo.png" "$OUT/photo.jxl" -d 1 >/dev/null 2>&1
[[ -s $OUT/animation.webp ]] || ffmpeg -v error -y -loop 1 -i "$PHOTOS/motorcycle_left__x2_q90.jpg" \
  -vf "scale=1280:-1,crop=640:360:x='t*40':y=100,fps=10" -frames:v 50 -c:v libwebp_anim -q:v 75 -loop 0 "$OUT/animation.webp"
"$BENCH" formats --reps "${BENCH_REPS:-7}" "$OUT/phone.heic" "$OUT/photo.jxl" "$OUT/animation.webp" > "$OUT/results.jsonl"
python3 - "$OUT/results.jsonl" <<'PY' | tee "$OUT/results.md"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("| picture (same run) | library decode ms | images judged x inference ms | floor ms | quarantine ms | ratio |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['file']} ({r['type']}, {r['frames']} frame{'s' if r['frames'] > 1 else ''}) | {r['library_decode_ms']:.1f} | "
          f"{r['images_judged']} x {r['inference_ms']:.1f} | {r['floor_ms']:.1f} | {r['quarantine_ms']:.1f} | {r['ratio']:.2f} |")
print()
failed = 0
for r in rows:
    ok = r["ratio"] <= 1.3 and r["verdict"] == "clean"
    failed += not ok
    print(f"- {'PASS' if ok else 'FAIL'} {r['file']} within 1.3x of library decode + inference: {r['ratio']:.2f} ({r['verdict']})")
sys.exit(1 if failed else 0)
PY
