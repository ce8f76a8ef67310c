#!/usr/bin/env python3
"""Probes how the real browsers record downloads, for the DownloadOrigins library.

Runs Chromium and Firefox ESR headless in a throw-away HOME, lets each download a few files
(through a redirect, some with non-ASCII names) from a local web server, and measures:

  1. how long after the final rename of each downloaded file (seen with inotify) its row is
     visible, polling every 50 ms with three ways of reading the browser's database:
       direct    - sqlite `file:DB?mode=ro` (a normal read-only open; fails if the browser locks)
       immutable - sqlite `file:DB?immutable=1` (no locking, reads the main file only)
       copy      - copy DB and its -wal / -journal into a private 0700 folder, open the copy
  2. whether the database is locked while the browser runs, its journal mode, its side files;
  3. the cost of one lookup (per approach);
  4. what the rows look like (url chains, referrer/tab urls, Firefox annotations and visits).

Measured here (Debian 12, 2 cores; Chromium 156.0.8078.79, Firefox ESR 153.7.0; 6 downloads each,
three runs):
  - Chromium: `History` is journal_mode=DELETE with exclusive locking: a plain read-only open gets
    "database is locked" for as long as the browser runs. A download's row becomes visible 2.6 to
    9.7 s after the file's final rename (Chromium commits its history every 10 s; all downloads
    of one 10 s window appear together). `History-journal` exists (0 to 85 KiB) but was never hot
    when sampled every 50 ms. immutable=1 and the copy see the row at the same moment.
  - Firefox: `places.sqlite` is WAL with exclusive locking (no -shm): a plain open is locked out.
    The row (annotation `downloads/destinationFileURI` on the final URL's place) is in the -wal
    0.001 to 0.07 s after the final rename; an immutable=1 open of the main file sees it only
    after a checkpoint, 0.07 to 6.3 s later or not within 30 s. Copying the database and its -wal
    sees it at once. The page is the place of the visit the download visit (visit_type 7)
    came from (`moz_historyvisits.from_visit`); there is no referrer annotation.
  - Lookup cost (the Swift library, `--swift-check`): 1.3 to 4.4 ms on a 200 KiB History, 9 to
    14 ms on a 5 MiB places.sqlite with a 2.4 MiB -wal; the copy costs most.
  - Firefox replaces `%` in a file name with `_` ("100% sure" is saved as "100_ sure"); its
    destination URI percent-encodes space, `#`, `%` and non-ASCII bytes and leaves `+` alone.
    Started with a fresh HOME and no --profile, Firefox ESR 153 makes its profiles under
    ~/.config/mozilla/firefox (XDG), not ~/.mozilla/firefox.
  - Chromium lets a page start a second download without a user gesture only with the content
    setting `automatic_downloads` allowed (written into Default/Preferences below).

Usage: probe-history.py [--downloads N] [--only chromium|firefox] [--keep] [--json FILE]
                        [--swift-check SCRATCH]   (SCRATCH: a build folder made with
                        `swift build --scratch-path SCRATCH --build-tests`)
Needs: chromium, firefox-esr, ImageMagick `convert` (or falls back to a fixed PNG).
Run as any user; as root the browsers need --no-sandbox (Chromium) which is passed.
"""
import argparse
import ctypes
import ctypes.util
import http.server
import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

NAMES = ["plain-{k}.png", "héllo wörld {k}.png", "100% sure #{k} 日本.png", "space {k} + plus.png"]

PNG_FALLBACK = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c63f8cfc0f01f0005000201e2213bc90000000049454e44ae426082")


# ---------------------------------------------------------------- inotify: the final rename's time
class Inotify:
    IN_MOVED_TO = 0x80
    IN_CLOSE_WRITE = 0x8
    IN_CREATE = 0x100

    def __init__(self, folder):
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = self.libc.inotify_init1(0)
        self.libc.inotify_add_watch(self.fd, folder.encode(), self.IN_MOVED_TO | self.IN_CREATE | self.IN_CLOSE_WRITE)
        self.events = []  # (monotonic time, mask, name)
        self.cond = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            data = os.read(self.fd, 65536)
            now = time.monotonic()
            i = 0
            while i < len(data):
                _wd, mask, _cookie, length = struct.unpack_from("iIII", data, i)
                name = data[i + 16:i + 16 + length].rstrip(b"\0").decode("utf-8", "surrogateescape")
                i += 16 + length
                with self.cond:
                    self.events.append((now, mask, name))
                    self.cond.notify_all()


# ---------------------------------------------------------------- the web server
def serve(root):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def log_message(self, fmt, *a):
            if os.environ.get("PROBE_VERBOSE"):
                sys.stderr.write("%.3f http %s\n" % (time.monotonic(), fmt % a))

        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            if path.startswith("/go/"):  # a two-hop redirect chain: /go/X -> /hop/X -> /files/X
                self.send_response(302)
                self.send_header("Location", "/hop/" + path[4:])
                self.end_headers()
                return
            if path.startswith("/hop/"):
                self.send_response(307)
                self.send_header("Location", "/files/" + path[5:])
                self.end_headers()
                return
            if path.startswith("/files/"):
                body = open(os.path.join(root, "a.png"), "rb").read()
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            return super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


PAGE = """<!doctype html><meta charset="utf-8"><title>downloads</title><body><script>
const names = %s;
const ports = %s;
const k = +(new URLSearchParams(location.search).get('k') || 0);
if (k < names.length) {
  const a = document.createElement('a');
  a.href = '/go/' + encodeURIComponent(names[k]);
  a.download = names[k];
  a.textContent = names[k];
  document.body.appendChild(a);
  setTimeout(() => a.click(), 300);
  // The next download from another origin (another port): Chromium lets a page start only one
  // download without a user gesture, per origin and tab.
  if (k + 1 < names.length)
    setTimeout(() => { location.href = 'http://127.0.0.1:' + ports[k + 1] + location.pathname + '?k=' + (k + 1); }, %d);
}
</script>"""


# ---------------------------------------------------------------- the three ways of reading
def open_direct(db):
    return sqlite3.connect("file:%s?mode=ro" % urllib.parse.quote(db), uri=True, timeout=0)


def open_immutable(db):
    return sqlite3.connect("file:%s?immutable=1" % urllib.parse.quote(db), uri=True, timeout=0)


class CopyOpener:
    def __init__(self, db):
        self.db = db
        self.folder = None

    def __enter__(self):
        self.folder = tempfile.mkdtemp(prefix="probe-copy-")
        os.chmod(self.folder, 0o700)
        name = os.path.basename(self.db)
        for suffix in ("", "-wal", "-journal"):
            try:
                shutil.copyfile(self.db + suffix, os.path.join(self.folder, name + suffix))
            except FileNotFoundError:
                pass
        # Read-write: a hot -journal copied along must be rolled back (into the copy) on open.
        return sqlite3.connect(os.path.join(self.folder, name), timeout=0)

    def __exit__(self, *a):
        shutil.rmtree(self.folder, ignore_errors=True)


def query(conn, kind, path):
    conn.execute("PRAGMA trusted_schema=OFF")
    conn.execute("PRAGMA query_only=ON")
    if kind == "chromium":
        rows = conn.execute("SELECT id FROM downloads WHERE target_path = ? OR current_path = ?", (path, path)).fetchall()
        return len(rows) > 0
    rows = conn.execute(
        "SELECT a.content FROM moz_annos a JOIN moz_anno_attributes n ON n.id = a.anno_attribute_id "
        "WHERE n.name = 'downloads/destinationFileURI'").fetchall()
    for (content,) in rows:
        if isinstance(content, str) and content.startswith("file://"):
            if urllib.parse.unquote(urllib.parse.urlsplit(content).path) == path:
                return True
    return False


def attempt(approach, db, kind, path):
    """(found, error, seconds) for one lookup."""
    start = time.monotonic()
    try:
        if approach == "copy":
            with CopyOpener(db) as conn:
                found = query(conn, kind, path)
                conn.close()
        else:
            conn = (open_direct if approach == "direct" else open_immutable)(db)
            try:
                found = query(conn, kind, path)
            finally:
                conn.close()
        return found, None, time.monotonic() - start
    except sqlite3.Error as e:
        return False, str(e), time.monotonic() - start


def poll(db, kind, path, t_final, results, limit=30.0):
    """Polls each approach every 50 ms from the final rename until found (or limit).

    For each approach: the start of the last attempt that missed and of the first that found the
    row, in seconds after the final rename (the row became visible in between)."""
    state = {a: {"hit": None, "miss": None, "errors": set(), "costs": []} for a in ("direct", "immutable", "copy")}
    while time.monotonic() - t_final < limit and any(s["hit"] is None for s in state.values()):
        for approach, s in state.items():
            if s["hit"] is not None or not os.path.exists(db):
                continue
            started = time.monotonic() - t_final
            found, error, cost = attempt(approach, db, kind, path)
            s["costs"].append(cost)
            if error:
                s["errors"].add(error)
            if found:
                s["hit"] = started
            else:
                s["miss"] = started
        time.sleep(0.05)
    results[path] = {a: {"last_miss_s": None if s["miss"] is None else round(s["miss"], 3),
                         "first_hit_s": None if s["hit"] is None else round(s["hit"], 3),
                         "errors": sorted(s["errors"]),
                         "median_lookup_ms": round(1000 * sorted(s["costs"])[len(s["costs"]) // 2], 2) if s["costs"] else None}
                     for a, s in state.items()}


class SideFileSampler:
    """Samples the database's -journal and -wal every 50 ms: how often a rollback journal is hot
    (non-empty, first byte not zero) and how big the WAL gets."""

    def __init__(self, db):
        self.db = db
        self.samples = []
        self.stop = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.stop:
            sample = {}
            for suffix in ("-journal", "-wal"):
                try:
                    with open(self.db + suffix, "rb") as f:
                        first = f.read(1)
                        sample[suffix] = (os.fstat(f.fileno()).st_size, first not in (b"", b"\0"))
                except FileNotFoundError:
                    pass
            self.samples.append(sample)
            time.sleep(0.05)

    def summary(self):
        self.stop = True
        journals = [s["-journal"] for s in self.samples if "-journal" in s]
        wals = [s["-wal"][0] for s in self.samples if "-wal" in s]
        return {"samples": len(self.samples),
                "journal_present": len(journals),
                "journal_hot": sum(1 for size, nonzero in journals if size > 0 and nonzero),
                "journal_max_size": max((size for size, _ in journals), default=None),
                "wal_present": len(wals),
                "wal_max_size": max(wals, default=None)}


# ---------------------------------------------------------------- one browser run
def swift_check(scratch, home):
    """Runs the DownloadOrigins library itself (its opt-in test) on this HOME while the browser
    still runs; returns its REAL lines and whether it passed."""
    swift = shutil.which("swift") or "/opt/swift/usr/bin/swift"
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([swift, "test", "--scratch-path", scratch, "--skip-build", "--filter", "realBrowserHome"],
                          cwd=repo, env=dict(os.environ, DOWNLOAD_ORIGINS_REAL_HOME=home),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [l for l in done.stdout.splitlines() if "REAL" in l or "✘" in l]
    return {"passed": done.returncode == 0, "lines": lines}


def run_browser(kind, home, url, downloads_n, linger, scratch=None):
    downloads = os.path.join(home, "Downloads")
    os.makedirs(downloads, exist_ok=True)
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_CACHE_HOME=os.path.join(home, ".cache"), XDG_DOWNLOAD_DIR=downloads)
    env.pop("DISPLAY", None)
    if kind == "chromium":
        profile = os.path.join(home, ".config", "chromium")
        db = os.path.join(profile, "Default", "History")
        # Let a page start several downloads without a user gesture (otherwise the second one
        # waits for a prompt that headless never shows).
        os.makedirs(os.path.join(profile, "Default"), exist_ok=True)
        with open(os.path.join(profile, "Default", "Preferences"), "w") as f:
            json.dump({"profile": {"default_content_setting_values": {"automatic_downloads": 1}}}, f)
        cmd = ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--user-data-dir=" + profile, url]
    else:
        profile = os.path.join(home, ".mozilla", "firefox", "test.default")
        os.makedirs(profile, exist_ok=True)
        with open(os.path.join(profile, "user.js"), "w") as f:
            f.write('user_pref("browser.download.dir", "%s");\n' % downloads)
            f.write('user_pref("browser.download.folderList", 2);\n')
            f.write('user_pref("browser.download.useDownloadDir", true);\n')
            f.write('user_pref("browser.download.always_ask_before_handling_new_types", false);\n')
            f.write('user_pref("browser.helperApps.neverAsk.saveToDisk", "image/png,image/jpeg,application/octet-stream");\n')
        db = os.path.join(profile, "places.sqlite")
        cmd = ["firefox-esr", "--headless", "--no-remote", "--profile", profile, url]
    watcher = Inotify(downloads)
    sampler = SideFileSampler(db)
    log = open(os.path.join(home, kind + ".log"), "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, start_new_session=True)
    results, threads, seen = {}, [], set()
    deadline = time.monotonic() + 25 + downloads_n * 6
    lock_report = {}
    while time.monotonic() < deadline and len(seen) < downloads_n:
        with watcher.cond:
            watcher.cond.wait(0.5)
            events = list(watcher.events)
        for t, mask, name in events:
            if mask & Inotify.IN_MOVED_TO and not name.startswith(".") and not name.endswith((".crdownload", ".part")) \
                    and name not in seen:
                seen.add(name)
                path = os.path.join(downloads, name)
                th = threading.Thread(target=poll, args=(db, kind, path, t, results))
                th.start()
                threads.append(th)
    for th in threads:
        th.join()
    # While the browser still runs: locking and journal facts.
    lock_report["side_file_samples"] = sampler.summary()
    lock_report["side_files_while_running"] = sorted(os.listdir(os.path.dirname(db)))
    for approach in ("direct", "immutable", "copy"):
        try:
            if approach == "copy":
                with CopyOpener(db) as conn:
                    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                    conn.close()
            else:
                conn = (open_direct if approach == "direct" else open_immutable)(db)
                mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                conn.close()
            lock_report[approach] = "ok, journal_mode=" + mode
        except sqlite3.Error as e:
            lock_report[approach] = "error: " + str(e)
    lock_report["sizes"] = {n: os.path.getsize(os.path.join(os.path.dirname(db), n))
                            for n in os.listdir(os.path.dirname(db))
                            if n.startswith(os.path.basename(db))}
    if scratch:
        lock_report["swift_check"] = swift_check(scratch, home)
    time.sleep(linger)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return db, results, lock_report, sorted(seen)


def dump(kind, db):
    """The schema of the tables read and the rows, from a copy after the browser stopped."""
    out = {}
    with CopyOpener(db) as conn:
        tables = ("downloads", "downloads_url_chains") if kind == "chromium" else \
            ("moz_places", "moz_annos", "moz_anno_attributes", "moz_historyvisits", "moz_origins")
        out["schema"] = [r[0] for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name IN (%s) AND sql IS NOT NULL" % ",".join("?" * len(tables)), tables)]
        out["journal_mode"] = conn.execute("PRAGMA journal_mode").fetchone()[0]
        out["user_version"] = conn.execute("PRAGMA user_version").fetchone()[0]
        out["rows"] = {}
        for t in tables:
            cur = conn.execute("SELECT * FROM %s" % t)
            cols = [d[0] for d in cur.description]
            out["rows"][t] = [dict(zip(cols, [v if not isinstance(v, bytes) else v.hex() for v in r])) for r in cur.fetchall()]
        conn.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--downloads", type=int, default=4)
    ap.add_argument("--only", choices=["chromium", "firefox"])
    ap.add_argument("--keep", action="store_true", help="keep the temporary HOME")
    ap.add_argument("--gap", type=int, default=3500, help="ms between downloads")
    ap.add_argument("--linger", type=float, default=5.0, help="seconds the browser keeps running after the measurements")
    ap.add_argument("--json", help="write the full report here")
    ap.add_argument("--swift-check", metavar="SCRATCH",
                    help="also run the Swift library (swift test --scratch-path SCRATCH --skip-build, built with --build-tests) "
                         "on each browser's HOME while the browser runs")
    args = ap.parse_args()

    site = tempfile.mkdtemp(prefix="probe-site-")
    png = os.path.join(site, "a.png")
    if shutil.which("convert"):
        subprocess.run(["convert", "-size", "64x64", "xc:orange", png], check=True)
    else:
        open(png, "wb").write(PNG_FALLBACK)
    names = [NAMES[i % len(NAMES)].format(k=i) for i in range(args.downloads)]
    servers = [serve(site) for _ in names]
    ports = [s.server_address[1] for s in servers]
    with open(os.path.join(site, "page.html"), "w") as f:
        f.write(PAGE % (json.dumps(names), json.dumps(ports), args.gap))
    url = "http://127.0.0.1:%d/page.html" % ports[0]

    report = {}
    for kind in ("chromium", "firefox"):
        if args.only and args.only != kind:
            continue
        home = tempfile.mkdtemp(prefix="probe-home-")
        print("== %s (HOME=%s)" % (kind, home), flush=True)
        db, results, lock_report, seen = run_browser(kind, home, url, args.downloads, args.linger, args.swift_check)
        check = lock_report.pop("swift_check", None)
        print("downloaded:", seen)
        for path, r in sorted(results.items()):
            print("  %s" % os.path.basename(path))
            for approach, v in r.items():
                print("    %-9s missed at %s s, found at %s s after the rename; median lookup %s ms; errors %s" % (
                    approach, v["last_miss_s"], v["first_hit_s"], v["median_lookup_ms"], v["errors"]))
        print("while running:", json.dumps({k: v for k, v in lock_report.items() if k != "side_files_while_running"}, ensure_ascii=False))
        if check:
            print("swift check (the library, while the browser runs): %s" % ("passed" if check["passed"] else "FAILED"))
            for line in check["lines"]:
                print("  " + line)
        d = dump(kind, db)
        print("journal_mode (copy, after exit):", d["journal_mode"], "user_version:", d["user_version"])
        for s in d["schema"]:
            print("  " + s)
        for t, rows in d["rows"].items():
            if t == "moz_places":
                rows = [r for r in rows if "127.0.0.1" in (r.get("url") or "")]
            print("  %s: %s" % (t, json.dumps(rows, ensure_ascii=False)))
        report[kind] = {"results": results, "locking": lock_report, "database": d, "downloaded": seen, "swift_check": check}
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    for server in servers:
        server.shutdown()
    shutil.rmtree(site, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
