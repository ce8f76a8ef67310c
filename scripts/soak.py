#!/usr/bin/env python3
"""Soak test: the release agent for an hour of steady arrivals, its memory, descriptors and
threads sampled, and every file it was given checked at the end.

The agent (`quarantine agent`, the release binary) runs as scripts/bench-agent.py runs it: in a
temporary home (HOME, XDG_CONFIG_HOME and XDG_DATA_HOME inside the output folder, no desktop
session, adult mode, the default configuration but for the watched Downloads folder; the models
from the real data folder through QUARANTINE_DATA_DIR). For SOAK_MINUTES (or --minutes, default
60) one new file is renamed into Downloads every --interval seconds (default 2): written under a
temporary name in a folder of the same home that is not watched, then os.rename'd in. Every file
has distinct bytes (a few unique bytes after a picture's end marker, a `free` box after a video's
last box), so no verdict is reused. The files come in decks of 24, each deck in its own order
from a seeded random generator (--seed), the same for every run with the same seed:

- 5 test cards made once with `quarantine testcard`: 640x480, 1920x1080 and 4000x3000 JPEG,
  1920x1080 `--inset 50` JPEG (the card over a quarter of the picture), 800x600 PNG;
- 10 benign photos from testdata/photos (JPEG and PNG, in turn);
- 2 short H.264 clips of lavfi testsrc2 (20 s 320x240, 30 s 640x360, 10 s 640x360, in turn) and
  1 card video: 12 s of 640x360 testsrc2 with a 320x240 test card overlaid from t=3 to t=6 s;
- 6 broken files: a truncated JPEG, a JPEG with random bytes over a stretch of its middle, a
  JPEG whose header is followed by garbage, a zero-byte .jpg, a .png that is really text, a PNG
  with bytes flipped all through it.

Every template is checked once with `quarantine scan` before the agent starts (cards and the card
video flagged, clips clean), so the end checks can fail. Every --sample seconds (10) the agent's
VmRSS, VmHWM, open descriptors and threads, its analysis worker's (the `quarantine
analysis-worker` child; several are summed) VmRSS and descriptors, the audit database's size
(audit.sqlite3 + its -wal) and the files sent and recorded (the agent's seenFile table) go to
soak.csv. After the last file the agent is given up to 5 minutes to finish what waits, then is
stopped with SIGTERM (it must exit 0), and every file is checked:

- a card (and the card video) is gone from Downloads and in `quarantine list --json` with its
  sha256, and its copy in the vault (vault/ID-*/item) has that sha256;
- a benign photo or clip is in Downloads byte for byte (sha256) with its mtime, recorded clean;
- a broken file is in Downloads byte for byte (nothing is lost; adult on_error = "leave") and was
  handled as the README says: the truncated JPEG judged on what arrived ("analysed", "partial
  picture" in `quarantine history --json`), the header-garbage JPEG and the flipped PNG "could
  not be checked" (an `error` event), the JPEG with garbage inside analysed or an error, the text
  ".png" recorded as not media (seenFile verdict "other"), the empty file never recorded (empty
  placeholders wait for their final name);
- nothing else is in the vault.

Goals (report.md and report.json, a table with PASS/FAIL each; exit 1 if any fails). Warm-up is the
first 10 % of the run, at least 2 minutes; slopes are least squares over the samples after it:

- agent peak RSS (VmHWM at the end, which no sampling gap can miss) < 300 MB;
- agent and worker RSS slope after warm-up < 10 MB/hour (10 MB/h is 240 MB a day: a leak that
  size would take a long-running service past its MemoryMax=1G in a few days). Over a short run
  the slope is mostly noise: judge it on the hour;
- agent descriptors and threads flat after warm-up: max - min <= 4;
- worker descriptors: their floor (the least in each 10 minutes after warm-up) does not rise,
  last - first <= 1. Each file in analysis holds a few (the passed descriptor, one per decoder),
  so the samples go up and down with the work; a leak raises the floor (it was one per video);
- the analysis worker never replaced (a replacement means a crash or a 120-s timeout);
- the agent alive all along, every file recorded by the end, exit 0 on SIGTERM;
- every card hidden, every benign file untouched, every broken file kept and handled as above.

Output in --out (default .build/soak/<date-time>/): soak.csv, report.md, report.json, sent.jsonl
(every file sent: name, kind, sha256), agent.log, soak.png (RSS, descriptors and threads, database
size over time; drawn with matplotlib from the reference venv, .venv-reference, when it can import
it: `pip install matplotlib==3.8.4` there, pinned in scripts/reference/requirements-reference.txt;
otherwise the plot is skipped and said so). The temporary home (Downloads and the vault) is
home/ there: removed when every goal passed, kept when one failed (or with --keep).

  scripts/soak.py                                  # 60 minutes (make soak)
  SOAK_MINUTES=4 scripts/soak.py --out /tmp/soak   # a short try: warm-up, then 2 minutes
  scripts/soak.py --minutes 240 --interval 1       # longer, faster
  scripts/soak.py --tamper ...                     # checks the checks: before the final checks, one
                                                   # benign file is changed, a card put back and a
                                                   # broken file deleted; the run must FAIL
  BIN=/path/to/quarantine scripts/soak.py          # another binary (default .build/release/quarantine)

A 60-minute run at the default pace sends 1,800 files (75 decks, 180 KB a file on average) and
needs about 350 MB in the output folder while it runs (Downloads and the vault; measured: 22 MB
for 120 files); what stays after a passing run is about 1 MB (a failing run keeps the home). Python 3 standard library only (plus matplotlib for the plot).
"""
import argparse
import csv
import glob
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BIN") or os.path.join(ROOT, ".build/release/quarantine")
PHOTOS = os.path.join(ROOT, "testdata/photos")
PLOT_PYTHON = os.path.join(ROOT, ".venv-reference/bin/python")
READY = "file(s) waiting from before"

RSS_MAX_MB = 300.0
SLOPE_MAX_MB_PER_HOUR = 10.0
FLAT_MAX_SPREAD = 4
WARMUP_SHARE, WARMUP_MIN_S = 0.10, 120.0
DRAIN_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 30.0

CSV_COLUMNS = ["time_s", "agent_rss_mb", "agent_hwm_mb", "agent_fds", "agent_threads", "worker_rss_mb", "worker_fds",
               "db_bytes", "files_sent", "files_done"]

# Test cards: (file name, --size, --inset).
CARDS = [("card-640x480.jpg", "640x480", None), ("card-1920x1080.jpg", "1920x1080", None),
         ("card-4000x3000.jpg", "4000x3000", None), ("card-1920x1080-inset50.jpg", "1920x1080", "50"),
         ("card-800x600.png", "800x600", None)]
# Clean clips: (file name, WxH, seconds). The card video: 640x360, a 320x240 card from t=3 to t=6 s.
CLIPS = [("clip-320x240-20s.mp4", "320x240", 20), ("clip-640x360-30s.mp4", "640x360", 30),
         ("clip-640x360-10s.mp4", "640x360", 10)]
CARD_VIDEO = "cardvideo-640x360-12s.mp4"
X264 = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "30", "-pix_fmt", "yuv420p"]
# Broken files, and what the agent is documented to do with each (see outcome()).
BROKEN = {
    "truncated.jpg": {"analysed-partial"},
    "garbage-middle.jpg": {"analysed", "analysed-partial", "error"},
    "garbage-header.jpg": {"error"},
    "empty.jpg": {"unrecorded"},
    "text.png": {"other"},
    "flipped.png": {"error"},
}
DECK = ([("card", c[0]) for c in CARDS] + [("benign", None)] * 10 + [("clip", None)] * 2 + [("cardvideo", CARD_VIDEO)]
        + [("broken", b) for b in BROKEN])


def say(text):
    print("soak: " + text, file=sys.stderr, flush=True)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------
# /proc


def proc_status(pid):
    """VmRSS and VmHWM (MB) and Threads of `pid`, from /proc/PID/status; None if it is gone."""
    values = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    values[key] = int(rest.split()[0]) / 1024.0
                elif key == "Threads":
                    values[key] = int(rest.split()[0])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return values


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return None


def children(pid):
    """The child processes of `pid` (of all its threads)."""
    kids = set()
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(path) as f:
                kids.update(int(k) for k in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            pass
    return kids


def cpu_seconds(pid):
    """utime + stime of `pid` (all its threads), in seconds; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def is_worker(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"analysis-worker" in f.read().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return False


def slope_per_hour(points):
    """Least-squares slope of (seconds, value) points, per hour; None under 3 points."""
    if len(points) < 3:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    if sxx == 0:
        return None
    return sum((t - mx) * (v - my) for t, v in points) / sxx * 3600.0


# ------------------------------------------------------------------------------------------------
# The soak


class Soak:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        self.home = os.path.join(self.out, "home")
        if os.path.exists(self.home):
            sys.exit(f"soak: {self.home} exists; give another --out")
        self.downloads = os.path.join(self.home, "Downloads")
        self.staging = os.path.join(self.home, "staging")  # same filesystem, not watched
        self.templates = os.path.join(self.out, "templates")
        for d in (self.downloads, self.staging, self.templates, os.path.join(self.home, ".config/quarantine")):
            os.makedirs(d)
        with open(os.path.join(self.home, ".config/quarantine/config.toml"), "w") as f:
            # The worker kept for the whole run (no idle exit): its own slope is measured.
            f.write(f'[watch]\nincoming = ["{self.downloads}"]\n[agent]\nworker_idle_seconds = 0\n')
        real_data = os.path.join(os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")), "quarantine")
        self.env = dict(os.environ)
        self.env.update(HOME=self.home, XDG_CONFIG_HOME=os.path.join(self.home, ".config"),
                        XDG_DATA_HOME=os.path.join(self.home, ".local/share"),
                        QUARANTINE_DATA_DIR=os.environ.get("QUARANTINE_DATA_DIR", real_data))
        for key in ("DBUS_SESSION_BUS_ADDRESS", "NOTIFY_SOCKET", "XDG_RUNTIME_DIR", "QUARANTINE_LOG_LEVEL"):
            self.env.pop(key, None)
        self.data = os.path.join(self.home, ".local/share/quarantine")
        self.database = os.path.join(self.data, "audit.sqlite3")
        self.log_path = os.path.join(self.out, "agent.log")
        self.rng = random.Random(args.seed)
        self.agent = None
        self.sent = []  # one dict per file sent
        self.samples = []  # one dict per sample (CSV_COLUMNS, plus backlog and worker pids)
        self.worker_pids = []  # in order of first sight
        self.cpu = {}  # pid: CPU seconds at its last sample (the agent and each worker)
        self.notes = []

    # -- templates --------------------------------------------------------------------------------

    def quarantine(self, *args, check=True):
        return subprocess.run([BIN, *args], env=self.env, capture_output=True, text=True, check=check)

    def make_templates(self):
        say("making the templates: test cards, clips, the card video...")
        for name, size, inset in CARDS:
            extra = ["--inset", inset] if inset else []
            self.quarantine("testcard", "--size", size, *extra, os.path.join(self.templates, name))
        ffmpeg = ["nice", "ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-nostdin"]
        for name, size, seconds in CLIPS:
            subprocess.run([*ffmpeg, "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25", "-t", str(seconds), *X264,
                            os.path.join(self.templates, name)], check=True)
        card_png = os.path.join(self.templates, "overlay-card-320x240.png")
        self.quarantine("testcard", "--size", "320x240", card_png)
        subprocess.run([*ffmpeg, "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-i", card_png, "-filter_complex",
                        "[0][1]overlay=x=(W-w)/2:y=(H-h)/2:enable='between(t,3,6)'", "-t", "12", *X264,
                        os.path.join(self.templates, CARD_VIDEO)], check=True)
        self.photos = sorted(p for p in os.listdir(PHOTOS) if p.lower().endswith((".jpg", ".jpeg", ".png")))
        if not self.photos:
            sys.exit(f"soak: no photos in {PHOTOS}; run `make testdata` first")
        self.rng.shuffle(self.photos)
        self.jpegs = [p for p in self.photos if p.lower().endswith((".jpg", ".jpeg"))]
        self.pngs = [p for p in self.photos if p.lower().endswith(".png")]
        self.template_bytes = {}
        for name in os.listdir(self.templates):
            with open(os.path.join(self.templates, name), "rb") as f:
                self.template_bytes[name] = f.read()

        # So that the end checks can fail: the agent's own analysis flags every card and the card
        # video, and no clip.
        say("checking the templates with `quarantine scan`...")
        names = [c[0] for c in CARDS] + [CARD_VIDEO] + [c[0] for c in CLIPS]
        done = self.quarantine("scan", "--json", *[os.path.join(self.templates, n) for n in names], check=False)
        verdicts = {}
        for line in done.stdout.splitlines():
            row = json.loads(line)
            verdicts[os.path.basename(row["path"])] = bool(row.get("sensitive"))
        wrong = [n for n in names if verdicts.get(n) != (n.startswith("card"))]
        if wrong:
            sys.exit(f"soak: `quarantine scan` does not judge these templates as expected: {', '.join(wrong)} "
                     f"({verdicts}); {done.stderr.strip()[-500:]}")

    # -- files ------------------------------------------------------------------------------------

    def unique(self, n):
        return b"\nquarantine soak %06d %08x\n" % (n, self.rng.getrandbits(32))

    def make_file(self, n, kind, which):
        """(file name, bytes, detail) of the n-th file, of `kind`."""
        rng = self.rng
        if kind == "card":
            return f"{n:05d}-{which}", self.template_bytes[which] + self.unique(n), which
        if kind == "cardvideo" or kind == "clip":
            if kind == "clip":
                which = CLIPS[self.clip_turn % len(CLIPS)][0]
                self.clip_turn += 1
            payload = self.unique(n)
            free_box = struct.pack(">I", 8 + len(payload)) + b"free" + payload  # a valid top-level box
            return f"{n:05d}-{which}", self.template_bytes[which] + free_box, which
        if kind == "benign":
            photo = self.photos[self.photo_turn % len(self.photos)]
            self.photo_turn += 1
            with open(os.path.join(PHOTOS, photo), "rb") as f:
                data = f.read()
            return f"{n:05d}-benign-{photo}", data + self.unique(n), photo
        # Broken files, made from the photos.
        jpeg = self.jpegs[n % len(self.jpegs)]
        png = self.pngs[n % len(self.pngs)]
        with open(os.path.join(PHOTOS, jpeg), "rb") as f:
            jdata = f.read()
        with open(os.path.join(PHOTOS, png), "rb") as f:
            pdata = f.read()
        if which == "truncated.jpg":
            cut = int(len(jdata) * rng.uniform(0.3, 0.7))
            data, detail = jdata[:cut] + self.unique(n).replace(b"\n", b" "), f"{jpeg} cut at {cut}"
        elif which == "garbage-middle.jpg":
            start = len(jdata) // 2
            length = min(4096, len(jdata) // 8)
            garbage = bytes(rng.getrandbits(8) for _ in range(length))
            data, detail = jdata[:start] + garbage + jdata[start + length:], f"{jpeg}, {length} random bytes at {start}"
        elif which == "garbage-header.jpg":
            # Half of the header (up to the start of scan, FF DA), then random bytes that hold no marker
            # (no FF): the decoder never finds a frame or scan, whichever photo it was.
            keep = max(20, jdata.find(b"\xff\xda") // 2)
            garbage = bytes(rng.randrange(255) for _ in range(8192))
            data, detail = jdata[:keep] + garbage, f"{jpeg}'s first {keep} bytes + 8192 random (no FF)"
        elif which == "empty.jpg":
            data, detail = b"", "zero bytes"
        elif which == "text.png":
            data, detail = b"This is not a picture. quarantine soak file %d.\n" % n * 20, "text"
        elif which == "flipped.png":
            flipped = bytearray(pdata)
            for i in range(200 + rng.randrange(97), len(flipped), 997):
                flipped[i] ^= 0xFF
            data, detail = bytes(flipped), f"{png}, every 997th byte flipped"
        else:
            raise ValueError(which)
        return f"{n:05d}-broken-{which}", data, detail

    def next_file(self):
        if not self.deck:
            self.deck = list(DECK)
            self.rng.shuffle(self.deck)
        kind, which = self.deck.pop(0)
        n = len(self.sent)
        name, data, detail = self.make_file(n, kind, which)
        source = os.path.join(self.staging, name)
        target = os.path.join(self.downloads, name)
        with open(source, "wb") as f:
            f.write(data)
        os.rename(source, target)
        st = os.stat(target)
        entry = {"n": n, "name": name, "path": target, "kind": kind, "which": which or "", "detail": detail,
                 "size": len(data), "sha256": sha256(data), "mtime_ns": st.st_mtime_ns,
                 "sent_s": round(time.monotonic() - self.t0, 3)}
        self.sent.append(entry)
        self.sent_log.write(json.dumps(entry) + "\n")
        self.sent_log.flush()

    # -- the agent --------------------------------------------------------------------------------

    def start_agent(self):
        self.log = open(self.log_path, "w")
        self.agent = subprocess.Popen([BIN, "agent"], env=self.env, stdout=self.log, stderr=self.log,
                                      stdin=subprocess.DEVNULL)
        deadline = time.time() + 60
        while READY not in open(self.log_path).read():
            if time.time() > deadline or self.agent.poll() is not None:
                sys.exit("soak: the agent did not start; see " + self.log_path)
            time.sleep(0.05)
        say(f"agent started, pid {self.agent.pid}")

    def stop_agent(self):
        """SIGTERM; (exit status, seconds to exit)."""
        if self.agent is None:
            return None, None
        if self.agent.poll() is not None:
            return self.agent.returncode, 0.0
        t = time.monotonic()
        self.agent.send_signal(signal.SIGTERM)
        try:
            code = self.agent.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.agent.kill()
            self.agent.wait()
            code = f"did not exit within {STOP_TIMEOUT_S:.0f} s (killed)"
        self.log.close()
        return code, time.monotonic() - t

    def db_counts(self):
        """(distinct paths recorded under Downloads, backlog length); (None, None) if unreadable now."""
        prefix = self.downloads + "/"
        try:
            db = sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=5)
            try:
                done = db.execute("SELECT count(DISTINCT path) FROM seenFile WHERE substr(path, 1, ?) = ?",
                                  (len(prefix), prefix)).fetchone()[0]
                backlog = db.execute("SELECT count(*) FROM backlog").fetchone()[0]
            finally:
                db.close()
        except sqlite3.Error:
            return None, None
        return done, backlog

    def sample(self):
        pid = self.agent.pid
        status = proc_status(pid)
        if status is None:
            return None
        workers = [k for k in children(pid) if is_worker(k)]
        for w in workers:
            if w not in self.worker_pids:
                self.worker_pids.append(w)
                if len(self.worker_pids) > 1:
                    say(f"a new analysis worker: pid {w} (worker pids so far: {self.worker_pids})")
        w_rss = w_fds = 0.0
        for p in [pid] + workers:
            seconds = cpu_seconds(p)
            if seconds is not None:
                self.cpu[p] = seconds
        for w in workers:
            ws = proc_status(w)
            wf = fd_count(w)
            if ws is not None and wf is not None:
                w_rss += ws.get("VmRSS", 0.0)
                w_fds += wf
        db_bytes = sum(os.path.getsize(p) for p in (self.database, self.database + "-wal") if os.path.exists(p))
        done, backlog = self.db_counts()
        row = {"time_s": round(time.monotonic() - self.t0, 1), "agent_rss_mb": round(status.get("VmRSS", 0.0), 1),
               "agent_hwm_mb": round(status.get("VmHWM", 0.0), 1), "agent_fds": fd_count(pid),
               "agent_threads": status.get("Threads"), "worker_rss_mb": round(w_rss, 1) if workers else "",
               "worker_fds": int(w_fds) if workers else "", "db_bytes": db_bytes, "files_sent": len(self.sent),
               "files_done": done if done is not None else ""}
        self.csv.writerow(row)
        self.csv_file.flush()
        row["backlog"] = backlog
        row["workers"] = list(workers)
        self.samples.append(row)
        return row

    # -- the run ----------------------------------------------------------------------------------

    def run(self):
        args = self.args
        self.deck, self.photo_turn, self.clip_turn = [], 0, 0
        self.make_templates()
        self.csv_file = open(os.path.join(self.out, "soak.csv"), "w", newline="")
        self.csv = csv.DictWriter(self.csv_file, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        self.csv.writeheader()
        self.sent_log = open(os.path.join(self.out, "sent.jsonl"), "w")
        self.start_agent()
        self.t0 = time.monotonic()
        duration = args.minutes * 60.0
        self.feed_s = duration
        say(f"{args.minutes:g} minutes: one file every {args.interval:g} s into {self.downloads}, "
            f"a sample every {args.sample:g} s into {os.path.join(self.out, 'soak.csv')}")
        next_send, next_sample, next_say = self.t0 + 1.0, self.t0, self.t0 + 60.0
        self.interrupted = False
        self.died = None
        try:
            while True:
                now = time.monotonic()
                if now - self.t0 >= duration:
                    break
                if self.agent.poll() is not None:
                    self.died = f"the agent exited with status {self.agent.returncode} at {now - self.t0:.0f} s"
                    say(self.died)
                    break
                if now >= next_sample:
                    self.sample()
                    next_sample += args.sample
                if now >= next_send:
                    self.next_file()
                    next_send += args.interval
                    if next_send < now:  # fell behind (a slow file): keep the pace, do not burst
                        next_send = now + args.interval
                if now >= next_say and self.samples:
                    s = self.samples[-1]
                    say(f"{(now - self.t0) / 60:.0f} min: sent {len(self.sent)}, recorded {s['files_done']}, "
                        f"backlog {s['backlog']}; agent {s['agent_rss_mb']} MB, {s['agent_fds']} fds, "
                        f"{s['agent_threads']} threads; worker {s['worker_rss_mb']} MB, {s['worker_fds']} fds")
                    next_say += 60.0
                time.sleep(max(0.0, min(next_send, next_sample, self.t0 + duration) - time.monotonic()))
        except KeyboardInterrupt:
            self.interrupted = True
            self.feed_s = time.monotonic() - self.t0
            say("interrupted: no more files; finishing, stopping the agent and checking what was sent")
        self.sent_log.close()

        # Let the agent finish what waits (empty files are never recorded: not counted).
        recordable = sum(1 for e in self.sent if e["size"] > 0)
        t_drain = time.monotonic()
        self.drained = None
        while self.died is None:
            if self.agent.poll() is not None:
                self.died = f"the agent exited with status {self.agent.returncode} while finishing"
                break
            done, backlog = self.db_counts()
            if done is not None and done >= recordable and backlog == 0:
                self.drained = time.monotonic() - t_drain
                break
            if time.monotonic() - t_drain > DRAIN_TIMEOUT_S:
                break
            if time.monotonic() >= next_sample:
                self.sample()
                next_sample += args.sample
            time.sleep(0.5)
        if self.died is None:
            self.sample()
        self.final_hwm = self.samples[-1]["agent_hwm_mb"] if self.samples else None
        self.done_at_end, self.backlog_at_end = self.db_counts()
        self.recordable = recordable
        say(f"sent {len(self.sent)} files; all recorded {'after %.1f s' % self.drained if self.drained is not None else 'NOT within %d s' % DRAIN_TIMEOUT_S}; stopping the agent (SIGTERM)")
        self.exit_code, self.stop_s = self.stop_agent()
        self.csv_file.close()

    # -- the checks -------------------------------------------------------------------------------

    def tamper(self):
        """--tamper: break one benign file, put a card back, delete a broken file: the checks must fail."""
        def first(kind, pred=lambda e: True):
            return next((e for e in self.sent if e["kind"] == kind and pred(e)), None)
        benign = first("benign")
        if benign and os.path.exists(benign["path"]):
            with open(benign["path"], "ab") as f:
                f.write(b"x")
            os.utime(benign["path"], ns=(benign["mtime_ns"], benign["mtime_ns"]))  # same mtime: only the bytes differ
            say(f"--tamper: appended a byte to {benign['name']}")
        card = first("card")
        if card:
            with open(os.path.join(self.templates, card["which"]), "rb") as f:
                data = f.read()
            with open(card["path"], "wb") as f:
                f.write(data)  # the card's bytes without the unique suffix: back in Downloads
            say(f"--tamper: put a card back as {card['name']}")
        broken = first("broken", lambda e: e["size"] > 0)
        if broken and os.path.exists(broken["path"]):
            os.unlink(broken["path"])
            say(f"--tamper: deleted {broken['name']}")

    def check(self):
        """{kind: (passed, total, [failures])}, and the vault items that are no card."""
        listed = [json.loads(line) for line in self.quarantine("list", "--json").stdout.splitlines() if line.strip()]
        by_path = {}
        for item in listed:
            by_path.setdefault(item.get("original_path"), []).append(item)
        events = {}
        for line in self.quarantine("history", "--json").stdout.splitlines():
            if line.strip():
                e = json.loads(line)
                events.setdefault(e.get("path"), []).append(e)
        verdicts = {}
        db = sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=30)
        for path, verdict in db.execute("SELECT path, verdict FROM seenFile ORDER BY id"):
            verdicts[path] = verdict  # the latest
        db.close()

        def outcome(e):
            verdict = verdicts.get(e["path"])
            kinds = {ev.get("kind") for ev in events.get(e["path"], [])}
            if verdict is None:
                return "unrecorded"
            if verdict == "other":
                return "other"
            if "error" in kinds:
                return "error"
            if verdict == "clean" and "analysed" in kinds:
                partial = any("partial" in (ev.get("detail") or "") for ev in events[e["path"]] if ev.get("kind") == "analysed")
                return "analysed-partial" if partial else "analysed"
            return f"{verdict} ({', '.join(sorted(k for k in kinds if k)) or 'no event'})"

        results = {}
        card_paths = set()

        def note(kind, ok, why):
            r = results.setdefault(kind, [0, 0, []])
            r[1] += 1
            if ok:
                r[0] += 1
            else:
                r[2].append(why)

        for e in self.sent:
            name = e["name"]
            if e["kind"] in ("card", "cardvideo"):
                card_paths.add(e["path"])
                items = [i for i in by_path.get(e["path"], []) if i.get("sha256") == e["sha256"]]
                if os.path.lexists(e["path"]):
                    note(e["kind"], False, f"{name}: still in Downloads (outcome: {outcome(e)})")
                elif not items:
                    note(e["kind"], False, f"{name}: gone from Downloads but not in `quarantine list` with its sha256")
                else:
                    copies = glob.glob(os.path.join(self.data, "vault", f"{items[0]['id']}-*", "item"))
                    if len(copies) != 1 or file_sha256(copies[0]) != e["sha256"]:
                        note(e["kind"], False, f"{name}: item {items[0]['id']}'s vault copy missing or other bytes ({copies})")
                    else:
                        note(e["kind"], True, "")
            else:
                kind = e["kind"] if e["kind"] == "broken" else "benign"
                if not os.path.lexists(e["path"]):
                    note(kind, False, f"{name}: gone from Downloads (outcome: {outcome(e)}; listed: {bool(by_path.get(e['path']))})")
                    continue
                st = os.stat(e["path"])
                if file_sha256(e["path"]) != e["sha256"] or st.st_size != e["size"]:
                    note(kind, False, f"{name}: its bytes changed ({st.st_size} bytes, sent {e['size']})")
                elif st.st_mtime_ns != e["mtime_ns"]:
                    note(kind, False, f"{name}: its mtime changed")
                elif kind == "benign":
                    got = outcome(e)
                    note(kind, got == "analysed", f"{name}: recorded as {got}, not analysed clean")
                else:
                    got = outcome(e)
                    want = BROKEN[e["which"]]
                    note(kind, got in want, f"{name} ({e['detail']}): {got}, expected {' or '.join(sorted(want))}")
        extra = [i for i in listed if i.get("original_path") not in card_paths]
        return results, extra

    # -- the verdicts -----------------------------------------------------------------------------

    def verdicts(self, results, extra):
        warmup = max(WARMUP_SHARE * self.feed_s, WARMUP_MIN_S)
        after = [s for s in self.samples if s["time_s"] >= warmup]
        span_min = (after[-1]["time_s"] - after[0]["time_s"]) / 60 if len(after) > 1 else 0.0

        def series(key, rows):
            return [(s["time_s"], float(s[key])) for s in rows if s[key] not in ("", None)]

        agent_rss = series("agent_rss_mb", after)
        agent_slope = slope_per_hour(agent_rss)
        # The worker's slope over the last worker's samples only (a new worker starts from scratch).
        last_worker = self.worker_pids[-1] if self.worker_pids else None
        worker_rows = [s for s in after if s["workers"] == [last_worker]]
        worker_rss = series("worker_rss_mb", worker_rows)
        worker_slope = slope_per_hour(worker_rss)

        def window_floors(key, rows, window=600.0):
            """The least value of `key` in each `window` seconds from the first row on."""
            vals = [(s["time_s"], float(s[key])) for s in rows if s[key] not in ("", None)]
            if not vals:
                return []
            start, floors = vals[0][0], {}
            for t, v in vals:
                w = int((t - start) // window)
                floors[w] = min(floors.get(w, v), v)
            out = [floors[w] for w in sorted(floors)]
            return [int(v) for v in out] if key.endswith("fds") else out

        def spread(key, rows):
            vals = [int(s[key]) for s in rows if s[key] not in ("", None)]
            return (min(vals), max(vals)) if vals else (None, None)

        fds, threads, wfds = spread("agent_fds", after), spread("agent_threads", after), spread("worker_fds", worker_rows)
        all_rss = [float(s["agent_rss_mb"]) for s in self.samples]
        all_wrss = [float(s["worker_rss_mb"]) for s in self.samples if s["worker_rss_mb"] != ""]
        db_sizes = [s["db_bytes"] for s in self.samples]
        counts = {k: sum(1 for e in self.sent if e["kind"] == k) for k in ("card", "cardvideo", "benign", "clip", "broken")}

        def fmt(v, unit="", nd=1):
            return "n/a" if v is None else f"{v:.{nd}f}{unit}"

        def flat(lohi):
            return lohi[0] is not None and lohi[1] - lohi[0] <= FLAT_MAX_SPREAD

        def count_goal(kind):
            ok, total, _ = results.get(kind, (0, 0, []))
            return f"{ok} of {total}", total > 0 and ok == total

        short = " (under 30 min after warm-up: indicative only)" if span_min < 30 else ""
        rows = []  # (figure, measured, goal, ok or None for information)
        rows.append(("run", f"{self.feed_s / 60:.1f} min of arrivals, one every {self.args.interval:g} s"
                     + (" (interrupted)" if self.interrupted else "") + f"; warm-up {warmup / 60:.1f} min; "
                     f"{len(after)} samples after it over {span_min:.1f} min", "", None))
        rows.append(("files sent", f"{len(self.sent)}: {counts['card']} cards, {counts['cardvideo']} card videos, "
                     f"{counts['benign']} benign photos, {counts['clip']} clean clips, {counts['broken']} broken", "", None))
        rows.append(("agent alive until stopped", self.died or "yes", "yes", self.died is None))
        done_text = (f"{self.done_at_end} of {self.recordable} recorded (empty files never are), backlog {self.backlog_at_end}; "
                     + (f"finished {self.drained:.1f} s after the last arrival" if self.drained is not None
                        else f"not finished {DRAIN_TIMEOUT_S:.0f} s after the last arrival"))
        rows.append(("kept up: every file recorded", done_text, f"all, within {DRAIN_TIMEOUT_S:.0f} s", self.drained is not None))
        rows.append(("agent exit status on SIGTERM", f"{self.exit_code} (after {fmt(self.stop_s, ' s', 2)})", "0",
                     self.exit_code == 0))
        rows.append(("agent peak RSS (VmHWM)", f"{fmt(self.final_hwm, ' MB')} (sampled VmRSS max {fmt(max(all_rss) if all_rss else None, ' MB')}, "
                     f"after warm-up {fmt(max(v for _, v in agent_rss) if agent_rss else None, ' MB')})",
                     f"< {RSS_MAX_MB:.0f} MB", self.final_hwm is not None and self.final_hwm < RSS_MAX_MB))
        rows.append(("agent RSS slope after warm-up", fmt(agent_slope, " MB/h") + short, f"< {SLOPE_MAX_MB_PER_HOUR:g} MB/h",
                     agent_slope is not None and agent_slope < SLOPE_MAX_MB_PER_HOUR))
        rows.append(("agent open descriptors after warm-up", f"min {fds[0]}, max {fds[1]}", f"max - min <= {FLAT_MAX_SPREAD}", flat(fds)))
        rows.append(("agent threads after warm-up", f"min {threads[0]}, max {threads[1]}", f"max - min <= {FLAT_MAX_SPREAD}", flat(threads)))
        rows.append(("analysis worker processes", f"{len(self.worker_pids)} (pids {', '.join(map(str, self.worker_pids)) or 'none'})",
                     "1: never replaced", len(self.worker_pids) == 1))
        rows.append(("worker RSS", f"max {fmt(max(all_wrss) if all_wrss else None, ' MB')}; after warm-up "
                     f"{fmt(min(v for _, v in worker_rss) if worker_rss else None, ' MB')} to {fmt(max(v for _, v in worker_rss) if worker_rss else None, ' MB')}",
                     "", None))
        rows.append(("worker RSS slope after warm-up", fmt(worker_slope, " MB/h") + short, f"< {SLOPE_MAX_MB_PER_HOUR:g} MB/h",
                     worker_slope is not None and worker_slope < SLOPE_MAX_MB_PER_HOUR))
        floors = window_floors("worker_fds", worker_rows)
        floor_rise = floors[-1] - floors[0] if floors else None
        rows.append(("worker open descriptors after warm-up", f"min {wfds[0]}, max {wfds[1]} (files in analysis hold some); "
                     f"floor per 10 min: {', '.join(map(str, floors)) or 'n/a'}", "floor rises by <= 1",
                     floor_rise is not None and floor_rise <= 1))
        rss_floors = window_floors("worker_rss_mb", worker_rows)
        rows.append(("worker RSS floor per 10 min", ", ".join(f"{v:.1f}" for v in rss_floors) + " MB" if rss_floors else "n/a", "", None))
        rows.append(("audit database (sqlite + wal)", f"{db_sizes[0] / 1e6:.2f} MB at start, {db_sizes[-1] / 1e6:.2f} MB at the end, "
                     f"max {max(db_sizes) / 1e6:.2f} MB" if db_sizes else "n/a", "", None))
        wall = self.samples[-1]["time_s"] if self.samples else 0
        agent_cpu = self.cpu.get(self.agent.pid, 0.0)
        worker_cpu = sum(v for k, v in self.cpu.items() if k != self.agent.pid)
        rows.append(("CPU used (user + system)", f"agent {agent_cpu:.0f} s, worker {worker_cpu:.0f} s over {wall / 60:.1f} min: "
                     f"{(agent_cpu + worker_cpu) / wall * 100 if wall else 0:.0f} % of one core", "", None))
        backlog_max = max((s["backlog"] for s in after if s["backlog"] is not None), default=None)
        rows.append(("backlog after warm-up (sampled)", f"max {backlog_max}", "", None))
        m, ok = count_goal("card")
        rows.append(("test cards hidden (gone, listed, vault copy's sha256)", m, "all", ok))
        m, ok = count_goal("cardvideo")
        rows.append(("card videos hidden", m, "all", ok))
        m, ok = count_goal("benign")
        rows.append(("benign photos and clips untouched (sha256, mtime) and recorded clean", m, "all", ok))
        m, ok = count_goal("broken")
        rows.append(("broken files kept (sha256) and handled as documented", m, "all", ok))
        rows.append(("vault items that are no card", str(len(extra)), "0", not extra))
        warnings = self.log_summary()
        rows.append(("agent log", warnings, "", None))
        return rows

    def log_summary(self):
        """Counts of the agent's warning and error lines; those not about the broken files named."""
        levels, unexpected = {}, []
        broken = {e["path"] for e in self.sent if e["kind"] == "broken"}
        try:
            lines = open(self.log_path, errors="replace").read().splitlines()
        except OSError:
            return "unreadable"
        for line in lines:
            parts = line.split(" ", 2)
            level = parts[1].rstrip(":") if len(parts) > 2 else "?"
            levels[level] = levels.get(level, 0) + 1
            if level in ("warning", "error", "critical", "fault") and not any(p in line for p in broken) \
                    and "Could not check" not in line:
                unexpected.append(line)
        self.unexpected_log = unexpected
        text = ", ".join(f"{v} {k}" for k, v in sorted(levels.items()))
        return f"{len(lines)} lines ({text}); warnings/errors not about a broken file: {len(unexpected)}"

    def report(self, results, extra, rows):
        goals = [r for r in rows if r[3] is not None]
        passed = all(r[3] for r in goals)
        table = "| figure | measured | goal | result |\n| --- | --- | --- | --- |\n"
        for figure, measured, goal, ok in rows:
            result = "" if ok is None else ("pass" if ok else "**FAIL**")
            table += f"| {figure} | {measured} | {goal} | {result} |\n"
        failures = []
        for kind, (_, _, why) in results.items():
            failures += [f"{kind}: {w}" for w in why]
        failures += [f"vault item {i.get('id')} is no card: {i.get('original_path')} ({i.get('reasons')})" for i in extra]
        text = f"# quarantine soak, {time.strftime('%Y-%m-%d %H:%M')}\n\n`{' '.join(sys.argv)}`, binary {BIN}\n\n" + table
        text += f"\n{'All goals met.' if passed else 'FAILED: ' + ', '.join(r[0] for r in goals if not r[3])}\n"
        if failures:
            text += f"\nFiles that failed a check ({len(failures)}; the first 50):\n\n" + "".join(f"- {f}\n" for f in failures[:50])
        if getattr(self, "unexpected_log", None):
            text += "\nAgent warning/error lines not about a broken file (the first 20):\n\n```\n" + "\n".join(self.unexpected_log[:20]) + "\n```\n"
        with open(os.path.join(self.out, "report.md"), "w") as f:
            f.write(text)
        warmup = max(WARMUP_SHARE * self.feed_s, WARMUP_MIN_S)
        data = {"passed": passed, "binary": BIN, "minutes": self.feed_s / 60, "interval_s": self.args.interval,
                "seed": self.args.seed, "warmup_s": warmup, "interrupted": self.interrupted, "tamper": self.args.tamper,
                "thresholds": {"rss_max_mb": RSS_MAX_MB, "slope_max_mb_per_hour": SLOPE_MAX_MB_PER_HOUR,
                               "flat_max_spread": FLAT_MAX_SPREAD},
                "rows": [{"figure": r[0], "measured": r[1], "goal": r[2], "ok": r[3]} for r in rows],
                "checks": {k: {"passed": v[0], "total": v[1], "failures": v[2]} for k, v in results.items()},
                "extra_vault_items": extra, "worker_pids": self.worker_pids, "files_sent": len(self.sent),
                "exit_code": self.exit_code, "stop_s": self.stop_s, "drain_s": self.drained}
        with open(os.path.join(self.out, "report.json"), "w") as f:
            json.dump(data, f, indent=1)
        return text, passed


# ------------------------------------------------------------------------------------------------
# The plot (run by the reference venv's python: `soak.py --plot DIR`)


def plot(folder):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(open(os.path.join(folder, "soak.csv"))))
    report = json.load(open(os.path.join(folder, "report.json")))
    t = [float(r["time_s"]) / 60 for r in rows]

    def col(key, scale=1.0):
        return [float(r[key]) * scale if r[key] != "" else float("nan") for r in rows]

    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(11, 9), sharex=True, gridspec_kw={"height_ratios": [3, 2, 1.3]})
    ax1.plot(t, col("agent_rss_mb"), label="agent RSS")
    ax1.plot(t, col("agent_hwm_mb"), label="agent VmHWM", linestyle=":", color="C0")
    ax1.plot(t, col("worker_rss_mb"), label="worker RSS", color="C1")
    ax1.set_ylabel("MB")
    ax1.set_ylim(bottom=0)
    ax1.grid(alpha=0.3)
    ax2.plot(t, col("agent_fds"), label="agent fds", color="C2")
    ax2.plot(t, col("worker_fds"), label="worker fds", color="C3")
    ax2.plot(t, col("agent_threads"), label="agent threads", color="C4")
    ax2.set_ylabel("count")
    ax2.set_ylim(bottom=0)
    ax2.grid(alpha=0.3)
    ax3.plot(t, col("db_bytes", 1e-6), label="audit.sqlite3 + -wal", color="C5")
    ax3.set_ylabel("MB")
    ax3.set_xlabel("minutes since the agent started")
    ax3.set_ylim(bottom=0)
    ax3.grid(alpha=0.3)
    for ax in (ax1, ax2, ax3):
        ax.axvline(report["warmup_s"] / 60, color="grey", linestyle="--", linewidth=0.8)
        ax.legend(loc="upper left", fontsize=8)
    last = rows[-1] if rows else {"files_sent": 0, "files_done": 0}
    verdict = "all goals met" if report["passed"] else "FAILED"
    fig.suptitle(f"quarantine soak: {report['minutes']:.0f} min, one file every {report['interval_s']:g} s; "
                 f"files sent {last['files_sent']}, recorded {last['files_done']}; {verdict}", fontsize=10)
    ax1.text(report["warmup_s"] / 60, ax1.get_ylim()[1] * 0.02, " end of warm-up", fontsize=8, color="grey")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "soak.png"), dpi=90)


def draw(folder):
    """The plot with the reference venv's python, if it has matplotlib; never fails the run."""
    python = PLOT_PYTHON if os.access(PLOT_PYTHON, os.X_OK) else sys.executable
    try:
        done = subprocess.run([python, os.path.abspath(__file__), "--plot", folder], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        say(f"plot skipped: {error}")
        return
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        say(f"plot skipped ({python}: {last}); `{PLOT_PYTHON} -m pip install matplotlib==3.8.4` draws it")
    else:
        say(f"plot: {os.path.join(folder, 'soak.png')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Environment: SOAK_MINUTES (default for --minutes), BIN (the quarantine binary).")
    parser.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "60")),
                        help="how long files arrive (default: SOAK_MINUTES or 60)")
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between two files (default 2)")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between two samples (default 10)")
    parser.add_argument("--seed", type=int, default=1, help="of the order of the files (default 1)")
    parser.add_argument("--out", help="output folder (default .build/soak/<date-time>)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary home (Downloads, vault) even when all passed")
    parser.add_argument("--tamper", action="store_true",
                        help="check the checks: before the final checks change a benign file, put a card back, delete a "
                             "broken file; the run must FAIL")
    parser.add_argument("--plot", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plot:
        plot(args.plot)
        return
    if args.minutes <= 0 or args.interval <= 0 or args.sample <= 0:
        parser.error("--minutes, --interval and --sample must be positive")
    if not os.access(BIN, os.X_OK):
        sys.exit(f"soak: no binary at {BIN}; `make build` first")
    if shutil.which("ffmpeg") is None:
        sys.exit("soak: ffmpeg is needed to make the clips (apt-get install ffmpeg)")
    args.out = args.out or os.path.join(ROOT, ".build/soak", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(args.out, exist_ok=True)

    soak = Soak(args)
    try:
        soak.run()
    finally:
        if soak.agent is not None and soak.agent.poll() is None:
            soak.stop_agent()
    if args.tamper:
        soak.tamper()
    say("checking every file sent...")
    results, extra = soak.check()
    rows = soak.verdicts(results, extra)
    text, passed = soak.report(results, extra, rows)
    print(text)
    draw(soak.out)
    home_size = subprocess.run(["du", "-sm", soak.home], capture_output=True, text=True).stdout.split("\t")[0]
    if passed and not args.keep:
        shutil.rmtree(soak.home, ignore_errors=True)
        shutil.rmtree(soak.templates, ignore_errors=True)
        say(f"removed the temporary home ({home_size} MB); report in {soak.out}")
    else:
        say(f"kept the temporary home ({home_size} MB): {soak.home}; report in {soak.out}")
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
