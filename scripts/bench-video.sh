#!/usr/bin/env bash
# make bench, videos (issue 3): quarantine against `ffmpeg -i FILE -f null -` on the same files,
# in the same run. The clips are made once with ffmpeg's test source (no third-party footage)
# and kept in .build/bench/video. Prints a Markdown table (also in .build/bench/video.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.build/release/quarantine
DIR=.build/bench/video
mkdir -p "$DIR"
enc() { nice ffmpeg -hide_banner -loglevel error -y "$@"; }
[ -f "$DIR/card720.png" ] || "$BIN" testcard --size 1280x720 "$DIR/card720.png" >/dev/null
[ -f "$DIR/card2160.png" ] || "$BIN" testcard --size 3840x2160 "$DIR/card2160.png" >/dev/null
if [ ! -f "$DIR/v720_gop8.mp4" ]; then
  echo "bench-video: making a 10-minute 720p H.264 clip, keyframe every 8 s..." >&2
  enc -f lavfi -i "testsrc2=s=1280x720:r=25:d=600" -pix_fmt yuv420p -c:v libx264 -preset veryfast -g 200 -keyint_min 200 -sc_threshold 0 "$DIR/v720_gop8.mp4"
fi
if [ ! -f "$DIR/v1080_gop1.mp4" ]; then
  echo "bench-video: making a 10-minute 1080p H.264 clip, keyframe every second..." >&2
  enc -f lavfi -i "testsrc2=s=1920x1080:r=25:d=600" -pix_fmt yuv420p -c:v libx264 -preset veryfast -g 25 -keyint_min 25 -sc_threshold 0 "$DIR/v1080_gop1.mp4"
fi
# As an encoder would make it: a keyframe every 8 s at most and x264's default scene-cut
# detection (a new keyframe where the picture changes completely, as when the card appears).
if [ ! -f "$DIR/v720_card420_sc.mp4" ]; then
  echo "bench-video: making a 10-minute 720p clip with the test card from 7:00 to 7:01..." >&2
  enc -f lavfi -i "testsrc2=s=1280x720:r=25:d=600" -i "$DIR/card720.png" -filter_complex "[0][1]overlay=enable='between(t,420,421)'" \
      -pix_fmt yuv420p -c:v libx264 -preset veryfast -g 200 "$DIR/v720_card420_sc.mp4"
fi
if [ ! -f "$DIR/v2160.mp4" ]; then
  echo "bench-video: making a 60-second 4K clip..." >&2
  enc -f lavfi -i "testsrc2=s=3840x2160:r=25:d=60" -pix_fmt yuv420p -c:v libx264 -preset ultrafast -g 250 "$DIR/v2160.mp4"
fi

empty=$(mktemp -d); startup=$(scripts/measure.py "$BIN" scan "$empty"); rmdir "$empty"
ff720=$(scripts/measure.py ffmpeg -hide_banner -loglevel error -i "$DIR/v720_gop8.mp4" -f null -)
q720=$(scripts/measure.py "$BIN" scan "$DIR/v720_gop8.mp4")
ff1080=$(scripts/measure.py ffmpeg -hide_banner -loglevel error -i "$DIR/v1080_gop1.mp4" -f null -)
q1080=$(scripts/measure.py "$BIN" scan "$DIR/v1080_gop1.mp4")
card=$("$BIN" scan --json "$DIR/v720_card420_sc.mp4" || true)
q2160=$(scripts/measure.py "$BIN" scan "$DIR/v2160.mp4")
samples720=$("$BIN" scan --json "$DIR/v720_gop8.mp4" | python3 -c "import json,sys; r=json.load(sys.stdin); print(r.get('samples'))")

python3 - "$startup" "$ff720" "$q720" "$ff1080" "$q1080" "$card" "$q2160" "$samples720" <<'PY' | tee .build/bench/video.md
import json, sys
startup, ff720, q720, ff1080, q1080 = (json.loads(a) for a in sys.argv[1:6])
card = json.loads(sys.argv[6]) if sys.argv[6].strip() else {}
q2160 = json.loads(sys.argv[7]); samples720 = sys.argv[8]
w720 = q720["wall_s"] - startup["wall_s"]; w1080 = q1080["wall_s"] - startup["wall_s"]
print("| video, same run | ffmpeg -f null (wall s) | quarantine (wall s, start-up excluded) | ratio | peak RSS MB |")
print("| --- | ---: | ---: | ---: | ---: |")
print(f"| 10 min 720p H.264, keyframe every 8 s, nothing flagged ({samples720} samples) | {ff720['wall_s']:.1f} | {w720:.1f} | {w720 / ff720['wall_s']:.2f}x | {q720['peak_rss_mb']:.0f} |")
print(f"| 10 min 1080p H.264, keyframe every 1 s, nothing flagged | {ff1080['wall_s']:.1f} | {w1080:.1f} | {600 / w1080:.0f}x real time | {q1080['peak_rss_mb']:.0f} |")
print(f"| 60 s 4K H.264 | | {q2160['wall_s'] - startup['wall_s']:.1f} | | {q2160['peak_rss_mb']:.0f} |")
t = card.get("frame_time")
print(f"| test card shown 7:00-7:01 of 10 min | | reported at {t if t is not None else 'not found'} s | | |")
print()
checks = [
    ("720p, long GOP: wall <= 0.5x ffmpeg -f null", w720 / ff720["wall_s"] <= 0.5, f"{w720 / ff720['wall_s']:.2f}x"),
    ("1080p, 1 s GOP: >= 60x real time", 600 / w1080 >= 60, f"{600 / w1080:.0f}x"),
    ("card at 7:00 +/- 2 s", t is not None and abs(t - 420) <= 2, f"{t}"),
    ("4K peak RSS < 300 MB", q2160["peak_rss_mb"] < 300, f"{q2160['peak_rss_mb']:.0f} MB"),
]
for name, ok, value in checks:
    print(f"- {'PASS' if ok else 'FAIL'} {name}: {value}")
sys.exit(0 if all(ok for _, ok, _ in checks) else 1)
PY
