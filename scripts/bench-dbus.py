#!/usr/bin/python3
"""AnalyzeImage over the session bus against `quarantine scan` on the same pictures (issue 31):
what the bus and the confined worker add per picture.

  scripts/bench-dbus.py [BINARY] [PHOTOS_DIR] [--reps N]

Starts a private session bus (dbus-daemon, as dbus-run-session does) and the agent on it in a
temporary home, waits for io.github.quarantine.Analysis1, warms the worker up, then asks for each
picture REPS times (python3-gi, a descriptor per call, one call at a time) and takes the median
wall time per call as the client sees it. `quarantine scan --json` on the same pictures gives the
in-process analysis time of each (elapsed_ms, models already loaded). Prints a table and the
median overhead per picture (bus + worker round trip = D-Bus wall - scan's analysis time).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
BINARY = os.path.abspath(args[0] if args else os.path.join(ROOT, ".build/release/quarantine"))
PHOTOS = os.path.abspath(args[1] if len(args) > 1 else os.path.join(ROOT, "testdata/photos"))
REPS = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 5
NAME, PATH, IFACE = "io.github.quarantine.Analysis1", "/io/github/quarantine/Analysis1", "io.github.quarantine.Analysis1"

pictures = sorted(os.path.join(PHOTOS, f) for f in os.listdir(PHOTOS) if f.endswith((".jpg", ".png")) and "__" not in f)[:12]
if not pictures:
    sys.exit(f"bench-dbus: no pictures in {PHOTOS} (make testdata)")

home = tempfile.mkdtemp(prefix="quarantine-bench-dbus-")
os.makedirs(os.path.join(home, ".config/quarantine"))
with open(os.path.join(home, ".config/quarantine/config.toml"), "w") as f:
    # One picture at a time on both sides: the per-picture cost, not the throughput of two workers.
    f.write("[watch]\nincoming = []\n[agent]\nworker_idle_seconds = 0\n[analysis]\nworkers = 1\n")
env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), XDG_DATA_HOME=os.path.join(home, ".local/share"),
           XDG_RUNTIME_DIR="", NOTIFY_SOCKET="",
           # The runtime and models where 'make setup' put them for the person running the bench.
           QUARANTINE_DATA_DIR=os.environ.get("QUARANTINE_DATA_DIR") or os.path.join(
               os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "quarantine"))
bus_dir = os.path.join(home, "bus")
os.makedirs(bus_dir)
config = os.path.join(bus_dir, "session.conf")
with open(config, "w") as f:
    f.write(f"""<busconfig><type>session</type><listen>unix:path={bus_dir}/socket</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>""")
daemon = subprocess.Popen(["dbus-daemon", "--config-file=" + config, "--nofork"], stderr=subprocess.DEVNULL)
env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={bus_dir}/socket"
os.environ["DBUS_SESSION_BUS_ADDRESS"] = env["DBUS_SESSION_BUS_ADDRESS"]
agent = None
try:
    for _ in range(100):
        if os.path.exists(f"{bus_dir}/socket"):
            break
        time.sleep(0.05)
    agent = subprocess.Popen([BINARY, "agent"], env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(home, "agent.log"), "w"))
    subprocess.run(["gdbus", "wait", "--session", "--timeout", "60", NAME], env=env, check=True)

    from gi.repository import Gio, GLib
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)

    def analyze(path):
        fd = os.open(path, os.O_RDONLY)
        fds = Gio.UnixFDList.new()
        fds.append(fd)
        os.close(fd)
        start = time.perf_counter()
        result, _ = bus.call_with_unix_fd_list_sync(NAME, PATH, IFACE, "AnalyzeImage", GLib.Variant("(h)", (0,)),
                                                     GLib.VariantType("(basa(sddddd)d)"), Gio.DBusCallFlags.NONE, 120000, fds, None)
        wall = (time.perf_counter() - start) * 1000
        return wall, result.unpack()[3]

    for path in pictures[:2]:
        analyze(path)  # the worker starts and loads the models
    bus_wall, bus_agent = {}, {}
    for path in pictures:
        runs = [analyze(path) for _ in range(REPS)]
        bus_wall[path] = statistics.median(r[0] for r in runs)
        bus_agent[path] = statistics.median(r[1] for r in runs)

    scan = {}
    # Two warm-up pictures first (copies under other names, not counted): the models' first runs.
    warm = []
    for i, path in enumerate(pictures[:2]):
        warm.append(os.path.join(home, f"warm-up-{i}" + os.path.splitext(path)[1]))
        shutil.copyfile(path, warm[-1])
    for _ in range(REPS):
        out = subprocess.run([BINARY, "scan", "--json", *warm, *pictures], env=env, capture_output=True, text=True).stdout
        for line in out.splitlines():
            record = json.loads(line)
            scan.setdefault(record["path"], []).append(record["elapsed_ms"])
    print(f"AnalyzeImage over D-Bus (agent, confined worker) against quarantine scan (in process), one picture at a time (analysis.workers = 1), median of {REPS}, ms per picture")
    print(f"{'picture':<28}{'scan':>10}{'D-Bus wall':>12}{'agent':>10}{'overhead':>10}")
    overheads = []
    for path in pictures:
        s = statistics.median(scan[path])
        overheads.append(bus_wall[path] - s)
        print(f"{os.path.basename(path):<28}{s:>10.1f}{bus_wall[path]:>12.1f}{bus_agent[path]:>10.1f}{overheads[-1]:>10.1f}")
    print(f"median overhead of the bus and the worker per picture: {statistics.median(overheads):.1f} ms "
          f"({len(pictures)} pictures; 'agent' is the time the agent measured, from the call to the verdict)")
finally:
    if agent:
        agent.terminate()
        agent.wait(timeout=20)
    daemon.kill()
    daemon.wait()
    shutil.rmtree(home, ignore_errors=True)
