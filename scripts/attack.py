#!/usr/bin/env python3
"""The attacks of issue 11 against the built quarantine agent, one fresh agent per attack.

    scripts/attack.py [--only NAME] [--keep] [--timeout S] [--skip-large] [BINARY]

Each attack tries to get the synthetic test card (`quarantine testcard`, harmless, always flagged
as TEST_CARD) past `quarantine agent`, or to make the agent harm something it should not. Every
agent runs in its own temporary HOME, as Tests/CLITests/CLIRunner.swift runs one: HOME,
XDG_CONFIG_HOME and XDG_DATA_HOME inside it, no desktop session, no systemd, and the models found
through QUARANTINE_DATA_DIR in the invoking user's real data folder. The agent watches
HOME/Downloads and logs at debug level to HOME/agent.log.

One line per attempt:

    held         non-UTF-8 name (evil-\\xff\\xfe.png): hidden as item 1 (0.6 s)
    GOT THROUGH  two 14000x14000 PNG cards at once: ... (41.2 s)

"Held" for a card means: its bytes can no longer be read where they arrived (gone, or other
bytes under that name) and `quarantine list --json` shows an item with its sha256. Under a
GOT THROUGH line come the agent's own warning and error lines, if it logged any. An ERROR line
is a setup problem of that attack (no verdict). Run as root, the `unreadable` attack runs its
agents as nobody (setpriv), with a copy of the models, since root reads mode-000 files.

Exit status: 0 everything held, 1 something got through, 2 a setup problem (binary or models
missing, an agent that would not start), 130 interrupted. Python 3 standard library only.
"""

import argparse
import errno
import glob
import grp
import hashlib
import json
import os
import pwd
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
READY = "file(s) waiting from before"
PIN = "2468"
# The agent's peak RSS allowed while two 14000x14000 pictures are checked.
LARGE_RSS_LIMIT_MB = 400


class SetupProblem(Exception):
    """Something an attack needs is missing or broken: no verdict on the agent."""


def show(name):
    """A file name for a report line: bytes that are not UTF-8 as \\xNN, control characters escaped."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "backslashreplace")
    return name.replace("\n", "\\n").replace("\t", "\\t")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def wait_until(condition, timeout, interval=0.2):
    """Polls `condition` until it returns something true or `timeout` seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def holds(path, data):
    """Whether `data` can still be read at `path` (never following a symbolic link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EISDIR):
            return False
        return True  # unreadable to us: count it as still there
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read(len(data) + 1) == data
    except IsADirectoryError:
        return False


def png_with_text_chunk(png, text):
    """The same picture with a tEXt chunk after IHDR: other bytes (another sha256), same pixels."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    ihdr_end = 8 + 8 + struct.unpack(">I", png[8:12])[0] + 4
    body = b"tEXt" + b"Comment\0" + text.encode()
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    return png[:ihdr_end] + chunk + png[ihdr_end:]


def inotify_limits():
    """The system-wide inotify limits (another program, a test suite say, may lower them for a while)."""
    limits = {}
    for name in ("max_user_watches", "max_user_instances", "max_queued_events"):
        try:
            limits[name] = int(Path(f"/proc/sys/fs/inotify/{name}").read_text())
        except (OSError, ValueError):
            pass
    return limits


def real_data_dir():
    """Where the invoking user's models are (as CLIRunner.swift finds them)."""
    if os.environ.get("QUARANTINE_DATA_DIR"):
        return Path(os.environ["QUARANTINE_DATA_DIR"])
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local/share")
    return Path(base) / "quarantine"


class PeakRSS(threading.Thread):
    """Samples a process's VmRSS every 20 ms and reads its VmHWM (the kernel's own peak) as it goes."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kb = 0
        self._done = threading.Event()

    def run(self):
        while not self._done.is_set():
            self.sample()
            self._done.wait(0.02)

    def sample(self):
        try:
            with open(f"/proc/{self.pid}/status") as status:
                for line in status:
                    if line.startswith(("VmHWM:", "VmRSS:")):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
        except (OSError, ValueError):
            pass

    def stop(self):
        self.sample()
        self._done.set()
        self.join(1)
        return self.peak_kb / 1024


class Run:
    """What every attack shares: the binary, the options, the cards made so far, and the report."""

    def __init__(self, binary, args):
        self.binary = binary
        self.args = args
        self.timeout = args.timeout
        self.models = real_data_dir()
        self.root = Path(tempfile.mkdtemp(prefix="quarantine-attack-"))
        os.chmod(self.root, 0o711)  # an agent run as another user must reach its HOME below
        self.limits = inotify_limits()
        self.results = []  # (verdict, label, reason, seconds)
        self.agents = []
        self._cards = {}
        self._binary_for_others = None

    # The environment of commands that are not an agent's (testcard, scan): the real models.
    @property
    def env(self):
        env = dict(os.environ)
        env.update(HOME=str(self.root / "home"), XDG_CONFIG_HOME=str(self.root / "home/.config"),
                   XDG_DATA_HOME=str(self.root / "home/.local/share"), QUARANTINE_DATA_DIR=str(self.models),
                   XDG_RUNTIME_DIR="", DBUS_SESSION_BUS_ADDRESS="", NOTIFY_SOCKET="")
        return env

    def card(self, size="640x480"):
        """The PNG test card at `size` (made once per run)."""
        if size not in self._cards:
            path = self.root / f"card-{size}.png"
            result = subprocess.run([str(self.binary), "testcard", "--size", size, str(path)], env=self.env,
                                    stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
            if result.returncode != 0:
                raise SetupProblem(f"quarantine testcard --size {size} failed: {result.stderr.strip()}")
            self._cards[size] = path.read_bytes()
        return self._cards[size]

    def large_card(self, side=14000):
        """A side x side PNG test card: testcard itself, else a small one scaled up by ffmpeg."""
        key = f"{side}x{side}"
        if key in self._cards:
            return self._cards[key]
        try:
            return self.card(key)
        except SetupProblem:
            pass
        small = self.root / "card-small.png"
        small.write_bytes(self.card("1024x1024"))
        big = self.root / f"card-{key}.png"
        result = subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(small), "-vf", f"scale={side}:{side}:flags=neighbor",
                                 "-frames:v", "1", str(big)], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if result.returncode != 0:
            raise SetupProblem(f"cannot make a {key} card with ffmpeg: {result.stderr.strip()[-300:]}")
        self._cards[key] = big.read_bytes()
        return self._cards[key]

    def benign(self):
        """A natural photo (PNG) nothing flags: from testdata/photos, else ffmpeg's test pattern."""
        if "benign" not in self._cards:
            photo = REPO / "testdata/photos/chelsea.png"
            if photo.exists():
                self._cards["benign"] = photo.read_bytes()
            else:
                path = self.root / "benign.png"
                result = subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x480",
                                         "-frames:v", "1", str(path)], stdin=subprocess.DEVNULL, capture_output=True, text=True)
                if result.returncode != 0:
                    raise SetupProblem(f"no benign picture: testdata/photos is missing and ffmpeg failed: {result.stderr.strip()}")
                self._cards["benign"] = path.read_bytes()
        return self._cards["benign"]

    def scan(self, data, name):
        """`quarantine scan --json` of `data`: the one JSON object it prints."""
        path = self.root / name
        path.write_bytes(data)
        result = subprocess.run([str(self.binary), "scan", "--json", str(path)], env=self.env, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, errors="replace")
        try:
            return json.loads(result.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise SetupProblem(f"quarantine scan {name} printed no JSON (status {result.returncode}): {result.stderr.strip()[-300:]}")

    def binary_for_others(self):
        """A copy of the binary any user can run (the original may sit under a private home)."""
        if self._binary_for_others is None:
            copy = self.root / "bin/quarantine"
            copy.parent.mkdir(mode=0o755)
            shutil.copy2(self.binary, copy)
            os.chmod(copy, 0o755)
            self._binary_for_others = copy
        return self._binary_for_others

    def report(self, held, label, reason, started, seconds=None, agent=None):
        """One line: held or GOT THROUGH, what was tried, why, and how long it took (from `started`,
        or `seconds` when given). Below a GOT THROUGH, what `agent` logged as going wrong."""
        seconds = time.monotonic() - started if seconds is None else seconds
        verdict = "held" if held else "GOT THROUGH"
        self.results.append((verdict, label, reason, seconds))
        print(f"{verdict:<12} {label}: {reason} ({seconds:.1f} s)", flush=True)
        if not held and agent is not None:
            for line in agent.problems()[:3]:
                print(f"{'':<12}   agent: {line[:240]}", flush=True)

    def error(self, label, message, started):
        seconds = time.monotonic() - started
        self.results.append(("ERROR", label, message, seconds))
        print(f"{'ERROR':<12} {label}: {message} ({seconds:.1f} s)", flush=True)

    def skipped(self, label, why):
        self.results.append(("skipped", label, why, 0.0))
        print(f"{'skipped':<12} {label}: {why}", flush=True)


class Agent:
    """One `quarantine agent` in a fresh temporary HOME that watches HOME/Downloads, logging to
    HOME/agent.log; the CLI commands run in the same environment (and as the same user).

    With `user` (uid, gid) the agent and the commands run as that user (setpriv), the HOME is
    theirs, and the models are copied into it so that they can read them."""

    def __init__(self, run, name, mode="adult", config_extra="", user=None, umask=0o022):
        self.run_ = run
        self.user = user
        self.umask = umask
        self.home = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=run.root))
        self.downloads = self.home / "Downloads"
        self.scratch = self.home / "scratch"  # same filesystem as Downloads: a rename is an atomic arrival
        self.elsewhere = self.home / "elsewhere"  # not watched
        for folder in (self.downloads, self.scratch, self.elsewhere):
            folder.mkdir(parents=True)
        self.config_path = self.home / ".config/quarantine/config.toml"
        self.config_path.parent.mkdir(parents=True)
        self.data = self.home / ".local/share/quarantine"
        self.log_path = self.home / "agent.log"
        self.log_path.touch()
        self.binary = run.binary
        models = run.models
        self.wrapper = []
        if user:
            self.binary = run.binary_for_others()
            models = self.home / "models"
            for part in ("lib", "models"):
                shutil.copytree(run.models / part, models / part)
            self.wrapper = ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"]
        self.env = dict(os.environ)
        self.env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / ".config"),
                        XDG_DATA_HOME=str(self.home / ".local/share"), QUARANTINE_DATA_DIR=str(models),
                        XDG_RUNTIME_DIR="", DBUS_SESSION_BUS_ADDRESS="", NOTIFY_SOCKET="")
        self.write_config(mode, config_extra)
        if user:
            for folder, dirs, files in os.walk(self.home):
                for entry in [folder] + [os.path.join(folder, n) for n in dirs + files]:
                    os.lchown(entry, *user)
        self.process = None
        run.agents.append(self)

    def write_config(self, mode="adult", extra=""):
        self.config_path.write_text(f'mode = "{mode}"\n[watch]\nincoming = ["{self.downloads}"]\n{extra}')
        self.own(self.config_path)

    def own(self, path):
        """Gives `path` to the agent's user (nothing when the agent runs as us)."""
        if self.user:
            os.lchown(path, *self.user)

    # -- the process

    def start(self, timeout=60):
        """Starts the agent and waits for its ready line."""
        self.limits_at_start = inotify_limits()
        before = self.log().count(READY)
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(self.wrapper + [str(self.binary), "agent", "--log-level", "debug"], env=self.env,
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, umask=self.umask)
        log.close()
        ready = wait_until(lambda: self.log().count(READY) > before or self.process.poll() is not None, timeout)
        if self.process.poll() is not None or not ready or self.log().count(READY) <= before:
            status = self.process.poll()
            self.stop()
            raise SetupProblem(f"the agent did not start (status {status}); log tail: {self.log()[-600:]!r}")

    @property
    def pid(self):
        return self.process.pid if self.process else None

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        """SIGTERM, then SIGKILL after 15 s; returns the exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        status = self.process.returncode
        self.process = None
        return status

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def log(self):
        return self.log_path.read_text(errors="replace")

    def problems(self):
        """The agent's warning, error and critical log lines (time stamp cut), and a note when the
        system's inotify limits were not what they were when the run began."""
        lines = [line.split(" ", 1)[-1] for line in self.log().splitlines()
                 if line.split(" ", 2)[1:2] and line.split(" ", 2)[1] in ("warning:", "error:", "critical:")]
        changed = {name: (was, now) for name, was in self.run_.limits.items()
                   for now in [getattr(self, "limits_at_start", {}).get(name, was)] if now != was}
        if changed:
            lines.insert(0, "(the system's inotify limits were changed when it started: "
                         + ", ".join(f"{name} {was} -> {now}" for name, (was, now) in changed.items()) + ")")
        return lines

    # -- the CLI in the same environment

    def cli(self, *args, input=None):
        return subprocess.run(self.wrapper + [str(self.binary), *args], env=self.env, input=input, capture_output=True,
                              text=True, errors="replace", timeout=120, umask=self.umask,
                              stdin=None if input is not None else subprocess.DEVNULL)

    def items(self, all=False):
        result = self.cli("list", "--json", *(["--all"] if all else []))
        return [json.loads(line) for line in result.stdout.splitlines() if line.strip().startswith("{")]

    def status(self):
        try:
            return json.loads(self.cli("status", "--json").stdout)
        except ValueError:
            return {}

    def counters(self):
        return (self.status().get("last_status") or {}).get("counters") or {}

    def idle(self):
        status = self.status()
        return status.get("queue_depth") == 0 and not (status.get("last_status") or {}).get("inFlight")

    def settle(self, timeout):
        """Waits until nothing is queued or in flight, twice in a row a second apart."""
        return wait_until(lambda: self.idle() and (time.sleep(1) or self.idle()), timeout, interval=0.5)

    def find_item(self, digest=None, name=None, all=False):
        """The vault item with that sha256 and/or whose original path ends with `name`."""
        for item in self.items(all=all):
            if digest and item.get("sha256") != digest:
                continue
            if name and not str(item.get("original_path", "")).endswith(name):
                continue
            return item
        return None

    def vault_file(self, item):
        found = glob.glob(str(self.data / "vault" / f"{item['id']}-*" / "item"))
        return found[0] if found else None

    # -- files

    def path(self, name):
        """A path (bytes) inside Downloads."""
        return os.path.join(os.fsencode(self.downloads), name if isinstance(name, bytes) else os.fsencode(name))

    def put(self, name, data):
        """Writes `data` in the scratch folder and renames it to Downloads/name: one atomic arrival."""
        target = self.path(name)
        fd, scratch = tempfile.mkstemp(dir=self.scratch)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(scratch, 0o644)
        os.rename(scratch, target)
        return target

    def write_in_place(self, name, data):
        """Creates Downloads/name and writes `data` into it there (open, write, close)."""
        target = self.path(name)
        with open(target, "wb") as handle:
            handle.write(data)
        return target

    def hide_first(self, name, data, what):
        """Puts `data` at Downloads/`name` and waits until it is hidden: the starting point of an
        attack, so a failure here is a SetupProblem (no verdict). Returns the path."""
        path = self.put(name, data)
        held, reason, _ = self.wait_hidden(path, data, self.run_.timeout)
        if not held:
            raise SetupProblem(f"{what} was not hidden to begin with: {reason}")
        return path

    def wait_hidden(self, path, data, timeout, digest=True, name=None):
        """Polls until `data` is no longer readable at `path` and the vault lists its item (by
        sha256, and/or by the end of its original path). Returns (held, reason, seconds waited)."""
        return self.wait_all_hidden([(path, data, digest, name)], timeout)[0]

    def wait_all_hidden(self, cards, timeout):
        """`wait_hidden` for several cards at once, each (path, data, digest, name). Returns
        [(held, reason, seconds until it was seen hidden or given up)] in the same order."""
        began = time.monotonic()
        deadline = began + timeout
        outcomes = [None] * len(cards)
        while True:
            pending = [index for index, outcome in enumerate(outcomes) if outcome is None]
            if not pending:
                return outcomes
            gone = {index: not holds(cards[index][0], cards[index][1]) for index in pending}
            items = self.items() if any(gone.values()) else []
            for index in pending:
                path, data, digest, name = cards[index]
                wanted = sha256(data) if digest else None
                item = next((i for i in items if (not wanted or i.get("sha256") == wanted)
                             and (not name or str(i.get("original_path", "")).endswith(name))), None) if gone[index] else None
                if item:
                    outcomes[index] = (True, f"hidden as item {item.get('id')} ({', '.join(item.get('reasons') or [])})",
                                       time.monotonic() - began)
                elif not self.alive() or time.monotonic() >= deadline:
                    if not self.alive():
                        why = f"the agent exited (status {self.process.returncode if self.process else None})"
                    else:
                        why = f"after {timeout:.0f} s"
                    if not gone[index]:
                        where = show(os.path.relpath(path, os.fsencode(self.home)))
                        outcomes[index] = (False, f"still readable at {where} {why}", time.monotonic() - began)
                    else:
                        outcomes[index] = (False, f"gone from where it arrived but no vault item for it {why}", time.monotonic() - began)
            time.sleep(0.25)


def unprivileged_user():
    """(uid, gid) to run an agent as when we are root (for whom mode 000 is readable), or None."""
    if os.geteuid() != 0:
        return None
    if not shutil.which("setpriv"):
        raise SetupProblem("running as root needs setpriv (util-linux) to run the agent as nobody")
    user = pwd.getpwnam("nobody")
    try:
        gid = grp.getgrnam("nogroup").gr_gid
    except KeyError:
        gid = user.pw_gid
    return (user.pw_uid, gid)


# ---------------------------------------------------------------------------------------------
# The attacks. Each takes the Run, starts its own agent(s) and reports one line per attempt.
# ---------------------------------------------------------------------------------------------

def attack_odd_names(run):
    """Names that are not plain text: the card arrives as evil-\\xff\\xfe.png (not UTF-8), as a name
    with a newline in it, and as one that starts with dashes (these two held before: regression).
    Held: each one's bytes are gone from Downloads and the vault lists its sha256."""
    started = time.monotonic()
    names = [("non-UTF-8 name", b"evil-\xff\xfe.png", "640x480"),
             ("name with a newline", b"new\nline.png", "648x480"),
             ("name with leading dashes", b"--version.png", "656x480")]
    with Agent(run, "odd-names") as agent:
        agent.start()
        arrived = [(agent.put(name, run.card(size)), run.card(size), True, None) for _, name, size in names]
        outcomes = agent.wait_all_hidden(arrived, run.timeout)
        for (label, name, _), (held, reason, seconds) in zip(names, outcomes):
            run.report(held, f"{label} ({show(name)})", reason, started, seconds, agent=agent)


def attack_temporary_names(run):
    """Download-looking names never renamed: the card written as card.png.part, card.crdownload,
    card.download and card.partial, closed and left alone. The agent checks such a file once it has
    been closed and unchanged for 60 s, so this waits 60 s longer than the others.
    Held: each is hidden."""
    started = time.monotonic()
    timeout = 60 + run.timeout
    names = [(b"card.png.part", "640x488"), (b"card.crdownload", "640x496"), (b"card.download", "640x504"), (b"card.partial", "640x512")]
    with Agent(run, "temp-names") as agent:
        agent.start()
        arrived = [(agent.write_in_place(name, run.card(size)), run.card(size), True, None) for name, size in names]
        outcomes = agent.wait_all_hidden(arrived, timeout)
        for (name, _), (held, reason, seconds) in zip(names, outcomes):
            run.report(held, f"temporary name never renamed ({show(name)})", reason, started, seconds, agent=agent)


def attack_exclusions(run):
    """Folders other tools skip: the card inside Downloads/node_modules/x, .git, .cache, .hg, .svn
    and .Trash-1000 (no exclusions are configured). Held: each is hidden."""
    started = time.monotonic()
    folders = ["node_modules/x", ".git", ".cache", ".hg", ".svn", ".Trash-1000"]
    with Agent(run, "exclusions") as agent:
        agent.start()
        arrived = []
        for index, folder in enumerate(folders):
            os.makedirs(agent.path(folder))
            card = run.card(f"{664 + 8 * index}x480")
            arrived.append((agent.put(f"{folder}/card.png", card), card, True, None))
        outcomes = agent.wait_all_hidden(arrived, run.timeout)
        for folder, (held, reason, seconds) in zip(folders, outcomes):
            run.report(held, f"card inside Downloads/{folder}", reason, started, seconds, agent=agent)


def attack_large_pictures(run):
    """Very large pictures: two 14000x14000 PNG cards (different bytes) renamed into Downloads at
    once. Held: both are hidden and the agent's peak RSS (VmHWM, sampled from /proc) stays under
    400 MB."""
    label = "two 14000x14000 PNG cards at once"
    if run.args.skip_large:
        run.skipped(label, "--skip-large")
        return
    made = time.monotonic()
    first = run.large_card(14000)
    second = png_with_text_chunk(first, "second card")
    made = time.monotonic() - made
    started = time.monotonic()
    with Agent(run, "large") as agent:
        agent.start()
        monitor = PeakRSS(agent.pid)
        monitor.start()
        paths = []
        for index, card in enumerate((first, second)):
            scratch = agent.scratch / f"big-{index}.png"
            scratch.write_bytes(card)
            paths.append(os.fsencode(scratch))
        targets = [agent.path(f"big-{index}.png") for index in range(2)]
        for source, target in zip(paths, targets):
            os.rename(source, target)
        timeout = max(run.timeout, 60)
        outcomes = agent.wait_all_hidden([(target, card, True, None) for target, card in zip(targets, (first, second))], timeout)
        peak = monitor.stop()
        hidden = all(held for held, _, _ in outcomes)
        why = "; ".join(f"card {index + 1}: {reason}" for index, (held, reason, _) in enumerate(outcomes) if not held)
        reason = f"peak RSS {peak:.0f} MB (limit {LARGE_RSS_LIMIT_MB})"
        if not hidden:
            reason += f"; {why}"
        elif peak >= LARGE_RSS_LIMIT_MB:
            reason += ": both hidden, but over the limit"
        else:
            reason += ", both hidden"
        run.report(hidden and peak < LARGE_RSS_LIMIT_MB, label, f"{reason}; cards made in {made:.0f} s", started, agent=agent)


def attack_swap_race(run):
    """Swap between hashing and analysis (best effort from outside): 20 times, the card is written
    under a new name and then replaced (rename over it) by a benign photo after 0 to 380 ms. Once
    the agent has settled, a fresh copy of the card arrives under another name.
    Held: that copy is hidden, i.e. the card's sha256 was never recorded as clean."""
    started = time.monotonic()
    card = run.card("704x480")
    benign = run.benign()
    with Agent(run, "swap-race") as agent:
        agent.start()
        benigns = []
        for index in range(20):
            path = agent.scratch / f"benign-{index}.png"
            path.write_bytes(benign)
            benigns.append(path)
        for index in range(20):
            target = agent.write_in_place(f"race-{index:02}.png", card)
            time.sleep(index * 0.02)
            os.replace(benigns[index], target)
        settled = agent.settle(max(run.timeout, 30))
        raced = sum(1 for item in agent.items() if item.get("sha256") == sha256(card))
        fresh = agent.put("fresh-card.png", card)
        held, reason, seconds = agent.wait_hidden(fresh, card, run.timeout)
        note = f"{raced} of 20 raced cards were caught before the swap" + ("" if settled else "; the agent never settled")
        run.report(held, "card swapped for a photo between hashing and analysis, then a fresh copy",
                   f"{reason}; {note}", started, seconds, agent=agent)


def attack_rewrite_in_place(run):
    """Rewritten in place: a benign PNG arrives and is judged clean; then its bytes are overwritten
    in place (same inode) by the card padded with zeros to the very same size, and its old atime
    and mtime are put back. Held: the card is hidden."""
    started = time.monotonic()
    benign, card = run.benign(), run.card("512x384")
    size = max(len(benign), len(card))
    benign, card = benign + bytes(size - len(benign)), card + bytes(size - len(card))
    if not run.scan(card, "padded-card.png").get("sensitive"):
        raise SetupProblem("the card padded with trailing zeros is not flagged by 'quarantine scan': pick another padding")
    if run.scan(benign, "padded-benign.png").get("sensitive"):
        raise SetupProblem("the benign photo is flagged by 'quarantine scan'")
    with Agent(run, "rewrite") as agent:
        agent.start()
        path = agent.put("photo.png", benign)
        judged = wait_until(lambda: (agent.counters().get("clean") or 0) >= 1, run.timeout, interval=0.3)
        if not judged or not holds(path, benign):
            raise SetupProblem("the benign photo was not judged clean (or not left in place)")
        before = os.stat(path)
        with open(path, "r+b") as handle:
            handle.write(card)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        same = (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
        held, reason, seconds = agent.wait_hidden(path, card, run.timeout)
        run.report(held, "benign photo rewritten in place with the card, size and mtime kept",
                   reason + ("" if same else " (size/mtime/inode could not be kept identical)"), started, seconds, agent=agent)


def attack_touched(run):
    """Touched for longer than the give-up deadline: the card arrives, then its times are set every
    50 ms for 40 s (it never settles). The agent checks it at its 30-s give-up deadline, so this
    waits 40 s longer than the others. Held: it is hidden (the touching stops once it is gone)."""
    started = time.monotonic()
    card = run.card("712x480")
    with Agent(run, "touched") as agent:
        agent.start()
        path = agent.put("touched.png", card)
        arrived = time.monotonic()
        touching_until = time.monotonic() + 40
        while time.monotonic() < touching_until:
            try:
                os.utime(path)
            except FileNotFoundError:
                break
            time.sleep(0.05)
        held, reason, seconds = agent.wait_hidden(path, card, max(1, arrived + 40 + run.timeout - time.monotonic()))
        run.report(held, "card touched every 50 ms for 40 s", reason, arrived, agent=agent)


def attack_hard_links(run):
    """Hard links: the card lies in HOME/elsewhere/card.png (not watched, mode 0644) and is hard
    linked into Downloads as a.png, later again as b.png.
    Held: a.png is hidden, HOME/elsewhere/card.png keeps its bytes and its mode, and the vault's
    copy is not that inode; then b.png is hidden too."""
    started = time.monotonic()
    card = run.card("720x480")
    with Agent(run, "hard-links") as agent:
        agent.start()
        outside = agent.elsewhere / "card.png"
        outside.write_bytes(card)
        os.chmod(outside, 0o644)
        mode_before = os.stat(outside).st_mode
        first = agent.path("a.png")
        os.link(outside, first)
        held, reason, seconds = agent.wait_hidden(first, card, run.timeout, name="/a.png")
        if held:
            problems = []
            if not holds(os.fsencode(outside), card):
                problems.append("HOME/elsewhere/card.png lost its bytes")
            else:
                info = os.stat(outside)
                if info.st_mode != mode_before:
                    problems.append(f"HOME/elsewhere/card.png's mode changed {oct(mode_before & 0o7777)} -> {oct(info.st_mode & 0o7777)}")
                item = agent.find_item(sha256(card), "/a.png")
                vault = agent.vault_file(item) if item else None
                if vault is None:
                    problems.append("no vault file for the item")
                elif (os.stat(vault).st_dev, os.stat(vault).st_ino) == (info.st_dev, info.st_ino):
                    problems.append("the vault copy IS HOME/elsewhere/card.png (same inode)")
            if problems:
                held, reason = False, "; ".join(problems)
        run.report(held, "card hard-linked into Downloads (a.png)", reason, started, seconds, agent=agent)
        second = agent.path("b.png")
        if not os.path.exists(outside):
            run.error("card hard-linked again (b.png)", "HOME/elsewhere/card.png is gone: nothing to link", started)
            return
        os.link(outside, second)
        held, reason, seconds = agent.wait_hidden(second, card, run.timeout, name="/b.png")
        run.report(held, "card hard-linked again (b.png)", reason, started, seconds, agent=agent)


def attack_unreadable(run):
    """Unreadable on arrival, readable later. As root mode 000 is readable, so the agent runs as
    nobody here. Adult mode: the card written with mode 000, made 0644 three seconds later; and a
    folder moved in with mode 0300 holding the card, made 0755 three seconds later. Held: both
    are hidden. Child mode: a mode-000 card is held (as unverified) without being made readable."""
    started = time.monotonic()
    user = unprivileged_user()

    def arrive_unreadable(agent, name, card):
        """Creates Downloads/name with mode 000, owned by the agent's user, and writes the card."""
        path = agent.path(name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o000)
        try:
            if user:
                os.fchown(fd, *user)
            os.fchmod(fd, 0o000)
            os.write(fd, card)
        finally:
            os.close(fd)
        return path

    with Agent(run, "unreadable", user=user) as agent:
        agent.start()
        card_file, card_folder = run.card("728x480"), run.card("736x480")
        file_path = arrive_unreadable(agent, "locked.png", card_file)
        album = agent.scratch / "album"
        album.mkdir()
        (album / "card.png").write_bytes(card_folder)
        agent.own(album)
        agent.own(album / "card.png")
        os.chmod(album, 0o300)
        os.rename(album, agent.downloads / "album")
        time.sleep(3)
        os.chmod(file_path, 0o644)
        os.chmod(agent.downloads / "album", 0o755)
        outcomes = agent.wait_all_hidden([(file_path, card_file, True, None),
                                          (agent.path("album/card.png"), card_folder, True, None)], run.timeout)
        for label, (held, reason, seconds) in zip(("card with mode 000, readable 3 s later",
                                                   "folder with mode 0300 moved in, readable 3 s later"), outcomes):
            run.report(held, label, reason, started, seconds + 3, agent=agent)

    started = time.monotonic()
    with Agent(run, "unreadable-child", mode="child", user=user) as agent:
        agent.start()
        card = run.card("744x480")
        path = arrive_unreadable(agent, "locked.png", card)
        held, reason, seconds = agent.wait_hidden(path, card, run.timeout, digest=False, name="/locked.png")
        if held and "unverified" not in reason:
            reason += " (not marked unverified)"
        run.report(held, "child mode: card with mode 000, never made readable", reason, started, seconds, agent=agent)


def attack_adult_then_child(run):
    """Seen in adult mode, judged in child mode. The card is hidden in adult mode and released
    (its bytes go on the allow list); a copy of it arrives and is left alone. Then a guardian PIN
    is set and `quarantine mode child` switches the running agent. A release made in adult mode
    does not stand in child mode. Held: the released card and its copy are both hidden again."""
    started = time.monotonic()
    card = run.card("752x480")
    with Agent(run, "adult-then-child") as agent:
        agent.start()
        path = agent.hide_first("card.png", card, "the card (adult mode)")
        item = agent.find_item(sha256(card))
        released = agent.cli("release", str(item["id"]), "--yes")
        if released.returncode != 0 or not holds(path, card):
            raise SetupProblem(f"release did not put the card back: {released.stdout.strip()} {released.stderr.strip()}")
        copy = agent.put("card copy.png", card)
        allowed = wait_until(lambda: (agent.counters().get("allowed") or 0) >= 1, run.timeout)
        time.sleep(1)
        if not (allowed and holds(path, card) and holds(copy, card)):
            raise SetupProblem("in adult mode the released card and its copy were not left alone as allowed")
        pin = agent.cli("guardian", "set-pin", "--pin-stdin", input=f"{PIN}\n{PIN}\n")
        mode = agent.cli("mode", "child")
        if pin.returncode != 0 or mode.returncode != 0:
            raise SetupProblem(f"cannot enter child mode: {pin.stderr.strip()} {mode.stderr.strip()}")
        outcomes = agent.wait_all_hidden([(path, card, True, "/card.png"), (copy, card, True, "/card copy.png")], run.timeout)
        for label, (held, reason, seconds) in zip(("card released in adult mode", "copy of it allowed in adult mode"), outcomes):
            run.report(held, f"{label}, then child mode", reason, started, seconds, agent=agent)


def attack_release_symlink(run):
    """Release through a symlinked folder: the card in Downloads/sub/ is hidden; then Downloads/sub
    is replaced by a symbolic link to HOME/elsewhere and the item is released (adult, --yes).
    Held: nothing is written into HOME/elsewhere (the release is refused or goes elsewhere)."""
    started = time.monotonic()
    card = run.card("760x480")
    with Agent(run, "release-symlink") as agent:
        agent.start()
        os.makedirs(agent.path("sub"))
        path = agent.hide_first("sub/card.png", card, "the card in Downloads/sub")
        item = agent.find_item(sha256(card))
        shutil.rmtree(agent.path("sub"))
        os.symlink(agent.elsewhere, agent.path("sub"))
        released = agent.cli("release", str(item["id"]), "--yes")
        written = sorted(os.listdir(agent.elsewhere))
        said = (released.stdout.strip() or released.stderr.strip()).splitlines()
        said = said[0][:160] if said else ""
        if written:
            run.report(False, "release through a folder swapped for a symbolic link",
                       f"wrote {', '.join(written)} into HOME/elsewhere (status {released.returncode}: {said})", started, agent=agent)
        else:
            run.report(True, "release through a folder swapped for a symbolic link",
                       f"nothing written through the link (status {released.returncode}: {said})", started, agent=agent)


def attack_database_deleted(run):
    """The audit database deleted while the agent runs: a card is hidden; audit.sqlite3 and its
    -wal and -shm are deleted; a card arrives; the agent is restarted; another card arrives.
    Held: the log says the database was lost, both later cards are hidden (the first one listed
    again by `doctor --repair`), and `doctor --json` then finds no orphan in the vault."""
    started = time.monotonic()
    before, during, after = run.card("768x480"), run.card("776x480"), run.card("784x480")
    with Agent(run, "database-deleted") as agent:
        agent.start()
        path = agent.hide_first("before.png", before, "the first card")
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(agent.data / f"audit.sqlite3{suffix}")
            except FileNotFoundError:
                pass
        during_path = agent.put("during.png", during)
        gone = wait_until(lambda: not holds(during_path, during), run.timeout)

        def mentioned():
            return any("database" in line.lower() and ("deleted" in line or "replaced" in line or "lost" in line)
                       for line in agent.log().splitlines())
        said = wait_until(mentioned, 10)
        crashed = not agent.alive()
        status = agent.stop()
        agent.start()
        after_path = agent.put("after.png", after)
        after_held, after_reason, after_seconds = agent.wait_hidden(after_path, after, run.timeout)
        agent.stop()
        repair = agent.cli("doctor", "--repair")
        doctor = agent.cli("doctor", "--json")
        try:
            checks = json.loads(doctor.stdout).get("checks", [])
        except ValueError:
            checks = []
        vault_check = next((c for c in checks if c.get("name") == "vault"), None)
        listed = agent.find_item(sha256(during))

        problems = []
        if crashed:
            problems.append(f"the agent exited by itself (status {status})")
        if not gone:
            problems.append("the card is still in Downloads")
        elif not listed:
            problems.append("gone from Downloads but not listed even after doctor --repair")
        if not said:
            problems.append("the log does not mention the lost database")
        run.report(not problems, "card arriving after the database was deleted",
                   "; ".join(problems) or f"hidden as item {listed.get('id')} (listed again by doctor --repair); the log says so", started, agent=agent)
        run.report(after_held, "card arriving after the restart", after_reason, started, after_seconds, agent=agent)
        if vault_check is None:
            run.report(False, "no orphan in the vault after doctor --repair",
                       f"doctor --json gave no vault check (status {doctor.returncode}): {doctor.stderr.strip()[:200]}", started, agent=agent)
        else:
            run.report(bool(vault_check.get("ok")), "no orphan in the vault after doctor --repair",
                       vault_check.get("detail", "")[:200] + ("" if repair.returncode in (0, 1) else f" (repair status {repair.returncode})"),
                       started, agent=agent)


def attack_privacy(run):
    """Privacy of what the program writes: an agent (umask 002, as Debian gives users) hides a
    card; everything under XDG_DATA_HOME/quarantine is then looked at, while it runs and after
    it stopped. Held: no file or folder there is readable, writable or enterable by group or
    others (files 0600, folders 0700), the audit database and its -wal/-shm included."""
    started = time.monotonic()
    card = run.card("792x480")
    with Agent(run, "privacy", umask=0o002) as agent:
        agent.start()
        agent.hide_first("card.png", card, "the card")
        agent.cli("status")
        agent.cli("history")

        def loose():
            found = []
            for folder, dirs, files in os.walk(agent.data):
                for entry in [folder] + [os.path.join(folder, n) for n in dirs + files]:
                    info = os.lstat(entry)
                    if not os.path.islink(entry) and info.st_mode & 0o077:
                        found.append(f"{os.path.relpath(entry, agent.data)} {oct(info.st_mode & 0o7777)}")
            return found

        running = loose()
        database = [n for n in ("audit.sqlite3", "audit.sqlite3-wal", "audit.sqlite3-shm") if (agent.data / n).exists()]
        agent.stop()
        stopped = [entry for entry in loose() if entry not in running]
        offenders = running + stopped
        run.report(not offenders, "files the program writes are private",
                   f"group/other may read: {', '.join(offenders[:6])}" + (f" and {len(offenders) - 6} more" if len(offenders) > 6 else "")
                   if offenders else f"all 0600/0700 (database files seen: {', '.join(database)})", started, agent=agent)


ATTACKS = [
    ("odd-names", attack_odd_names),
    ("temporary-names", attack_temporary_names),
    ("exclusions", attack_exclusions),
    ("large-pictures", attack_large_pictures),
    ("swap-race", attack_swap_race),
    ("rewrite-in-place", attack_rewrite_in_place),
    ("touched", attack_touched),
    ("hard-links", attack_hard_links),
    ("unreadable", attack_unreadable),
    ("adult-then-child", attack_adult_then_child),
    ("release-symlink", attack_release_symlink),
    ("database-deleted", attack_database_deleted),
    ("privacy", attack_privacy),
]


def main():
    parser = argparse.ArgumentParser(description="Run the attacks of issue 11 against the built quarantine agent.",
                                     epilog="Attacks: " + ", ".join(name for name, _ in ATTACKS))
    parser.add_argument("binary", nargs="?", default=str(REPO / ".build/release/quarantine"), help="the quarantine binary")
    parser.add_argument("--only", metavar="NAME", help="run only the attacks whose name contains NAME")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders (their path is printed)")
    parser.add_argument("--timeout", type=float, default=30, help="seconds to wait for each card (default 30; "
                        "the temporary-names and touched attacks add 60 and 40)")
    parser.add_argument("--skip-large", action="store_true", help="skip the two 14000x14000 pictures")
    args = parser.parse_args()

    binary = Path(args.binary).resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"attack: no binary at {binary}: build it first (make build)", file=sys.stderr)
        return 2
    models = real_data_dir()
    if not (models / "models/320n.onnx").exists() or not (models / "models/open-nsfw.onnx").exists() \
            or not glob.glob(str(models / "lib/libonnxruntime.so*")):
        print(f"attack: the models or ONNX Runtime are missing in {models}: run make setup", file=sys.stderr)
        return 2
    selected = [(name, attack) for name, attack in ATTACKS if not args.only or args.only.lower() in name]
    if not selected:
        print(f"attack: no attack matches {args.only!r}; there are: {', '.join(name for name, _ in ATTACKS)}", file=sys.stderr)
        return 2

    def terminated(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, terminated)  # stop the agents on the way out, as for Ctrl-C

    run = Run(binary, args)
    began = time.monotonic()
    interrupted = False
    print(f"attacking {binary} ({len(selected)} attack(s); temporary folders in {run.root})", flush=True)
    try:
        for name, attack in selected:
            started = time.monotonic()
            try:
                attack(run)
            except SetupProblem as problem:
                run.error(name, str(problem), started)
            except Exception as error:  # an attack's own bug: say so and go on with the others
                run.error(name, f"{type(error).__name__}: {error}", started)
            finally:
                for agent in run.agents:
                    agent.stop()
                run.agents.clear()
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted", file=sys.stderr)
    finally:
        for agent in run.agents:
            agent.stop()
        if args.keep:
            print(f"kept {run.root}")
        else:
            shutil.rmtree(run.root, ignore_errors=True)

    verdicts = [verdict for verdict, *_ in run.results]
    through = [label for verdict, label, *_ in run.results if verdict == "GOT THROUGH"]
    errors = [label for verdict, label, *_ in run.results if verdict == "ERROR"]
    print(f"\n{verdicts.count('held')} held, {len(through)} got through, {len(errors)} error(s)"
          + (f", {verdicts.count('skipped')} skipped" if "skipped" in verdicts else "")
          + f" in {time.monotonic() - began:.0f} s")
    for label in through:
        print(f"  GOT THROUGH: {label}")
    for label in errors:
        print(f"  ERROR: {label}")
    if through:
        return 1
    if interrupted:
        return 130
    if errors:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
