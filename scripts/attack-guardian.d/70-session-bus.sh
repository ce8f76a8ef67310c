# Sourced by scripts/attack-guardian.sh: the child's own session bus (issue 31). On the protected
# account 'quarantine agent' is the session forwarder: io.github.quarantine.Analysis1 tells the
# mode the guardian service says (descriptive; simple only while a guardian sets adult mode),
# never disabled, whatever the child's own configuration asks; pictures and videos are forwarded
# to the guardian service (the verb 'analyze'), and so are live streams (the verb 'stream', one
# connection per stream, each frame one descriptor). (A program of the child's own can still take the name once the child stops the
# forwarder: the bus is the child's; docs/dbus.md. Tests/CLITests/guarded_bus.sh shows it.)

cat > "$work/session-bus.sh" <<'EOF'
q=$1
ask() { gdbus call --session --dest io.github.quarantine.Analysis1 --object-path /io/github/quarantine/Analysis1 --method "$@" 2>&1; }
mkdir -p ~/.config/quarantine
printf 'mode = "adult"\n[agent]\napp_analysis = false\n' > ~/.config/quarantine/config.toml
"$q" agent 2> /dev/null & pid=$!
gdbus wait --session --timeout 60 io.github.quarantine.Analysis1
echo "policy: $(ask org.freedesktop.DBus.Properties.Get io.github.quarantine.Analysis1 AnalysisPolicy)"
echo "analyze: $(ask io.github.quarantine.Analysis1.AnalyzeImage 3 3<"$2")"
echo "stream: $(ask io.github.quarantine.Analysis1.BeginStream p incoming)"
kill $pid; wait $pid
EOF
chmod 644 "$work/session-bus.sh"
# The card is read from the work folder: one in the child's home is hidden by the service (while
# the attempt waits for the service's analysis, it was, and the script could not open it).
session_bus() { as_child env -i HOME="$chome" PATH=/usr/bin:/bin dbus-run-session -- bash "$work/session-bus.sh" "$q" "$work/card.png" 2>&1; }

# Unavailable is no verdict (nothing judged clean): the service's analysis may still be starting
# again after the configuration attempts before this file. Asked again for up to 2 min.
answer=$(session_bus)
for _ in 1 2 3 4 5 6; do grep -q "Error.Unavailable" <<< "$answer" || break; sleep 20; answer=$(session_bus); done
if grep -q "^policy: (<'descriptive'>,)" <<< "$answer" && grep -q "^analyze: (true, \['TEST_CARD" <<< "$answer" && grep -q "^stream: (objectpath '/io/github/quarantine/Analysis1/stream/" <<< "$answer"; then
    attempt "the child's own configuration (adult, app_analysis = false) makes its session bus tell applications 'disabled' or judge the card clean" held "descriptive; the card judged sensitive by the guardian service; a stream begun by it"
else
    attempt "the child's own configuration (adult, app_analysis = false) makes its session bus tell applications 'disabled' or judge the card clean" through "$(head -3 <<< "$answer" | tr '\n' ' ')"
fi
# The forwarder tells what the guardian service says: a guardian sets adult mode, then child again.
if "$q" mode adult --user "$child" < /dev/null > "$work/mode.log" 2>&1; then
    # Unavailable is no verdict (nothing judged clean): the service's analysis may still be starting
# again after the configuration attempts before this file. Asked again for up to 2 min.
answer=$(session_bus)
for _ in 1 2 3 4 5 6; do grep -q "Error.Unavailable" <<< "$answer" || break; sleep 20; answer=$(session_bus); done
    "$q" mode child --user "$child" < /dev/null >> "$work/mode.log" 2>&1
    if grep -q "^policy: (<'simple'>,)" <<< "$answer"; then
        attempt "the forwarder does not follow the guardian service (adult mode set by a guardian)" held "simple while adult"
    else
        attempt "the forwarder does not follow the guardian service (adult mode set by a guardian)" through "$(head -1 <<< "$answer")"
    fi
    # Unavailable is no verdict (nothing judged clean): the service's analysis may still be starting
# again after the configuration attempts before this file. Asked again for up to 2 min.
answer=$(session_bus)
for _ in 1 2 3 4 5 6; do grep -q "Error.Unavailable" <<< "$answer" || break; sleep 20; answer=$(session_bus); done
    if grep -q "^policy: (<'descriptive'>,)" <<< "$answer"; then
        attempt "after child mode is set again the child's applications still get simple" held "descriptive again"
    else
        attempt "after child mode is set again the child's applications still get simple" through "$(head -1 <<< "$answer")"
    fi
else
    echo "SETUP PROBLEM (70-session-bus): 'quarantine mode adult --user $child' failed: $(cat "$work/mode.log")"
fi

# --- The guardian socket's 'analyze' verb, asked directly (what the forwarder does), as attackers.
# scripts: analyze.py SOCKET CASE -> one line "CASE: WHAT" (the answers' kinds, or the refusal).
cat > "$work/analyze.py" <<'PY'
import json, os, socket, stat, sys, time
path, case = sys.argv[1], sys.argv[2]
home = os.path.expanduser("~")
req = json.dumps({"verb": "analyze", "version": 1, "kind": "video" if case.startswith("video") else "image"}).encode()
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(30)
    s.connect(path)
    return s
def answers(s):
    out = []
    try:
        while True:
            data = s.recv(70000)
            if not data: break
            a = json.loads(data)
            if a.get("refusal"): out.append("refused " + json.dumps(a["refusal"])[:160]); break
            body = a.get("answer") or {}
            if body.get("progress"): out.append("progress"); continue
            if body.get("verdict"): out.append("verdict sensitive=%s" % body["verdict"]["sensitive"]); break
            if body.get("failure"): out.append("failure " + body["failure"]["kind"] + " " + body["failure"]["code"]); break
            out.append("other " + data[:80].decode(errors="replace"))
    except (ConnectionResetError, BrokenPipeError) as e: out.append("reset")
    except socket.timeout: out.append("TIMEOUT")
    return out or ["closed"]
def ask(fds):
    s = connect()
    try: socket.send_fds(s, [req], fds)
    except OSError as e:
        # Refused on connecting (another account): the refusal waits to be read.
        return ["send failed %s" % e.errno] + answers(s)
    return answers(s)
card = sys.argv[3] if len(sys.argv) > 3 else os.path.join(home, "bus-card.png")
if case == "card":
    print(case + ": " + " ".join(ask([os.open(card, os.O_RDONLY)])))
elif case == "fifo":
    f = os.path.join(home, "fifo"); 
    if not os.path.exists(f): os.mkfifo(f)
    t = time.time(); r = ask([os.open(f, os.O_RDONLY | os.O_NONBLOCK)])
    print(case + ": " + " ".join(r) + " in %.1fs" % (time.time() - t))
elif case == "opath":
    print(case + ": " + " ".join(ask([os.open(card, os.O_PATH)])))
elif case == "wronly":
    f = os.path.join(home, "w.bin"); open(f, "wb").write(b"x")
    print(case + ": " + " ".join(ask([os.open(f, os.O_WRONLY)])))
elif case == "zero":
    print(case + ": " + " ".join(ask([os.open("/dev/zero", os.O_RDONLY)])))
elif case == "dir":
    print(case + ": " + " ".join(ask([os.open(home, os.O_RDONLY | os.O_DIRECTORY)])))
elif case == "sparse":
    f = os.path.join(home, "sparse.png"); fd = os.open(f, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 300 << 20); os.close(fd)
    print(case + ": " + " ".join(ask([os.open(f, os.O_RDONLY)])))
elif case == "video-sparse":
    f = os.path.join(home, "sparse.mp4"); fd = os.open(f, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, 9 << 30); os.close(fd)
    print(case + ": " + " ".join(ask([os.open(f, os.O_RDONLY)])))
elif case == "many":
    fds = [os.open(card, os.O_RDONLY) for _ in range(16)]
    print(case + ": " + " ".join(ask(fds)))
elif case == "toomany":
    fd = os.open(card, os.O_RDONLY)
    print(case + ": " + " ".join(ask([fd] * 250)))
elif case == "flood":
    # 60 connections at once, each an analysis of the card: the bound answers the rest at once.
    socks = []
    for _ in range(60):
        try:
            s = connect(); socket.send_fds(s, [req], [os.open(card, os.O_RDONLY)]); socks.append(s)
        except OSError as e: socks.append(None)
    kinds = {}
    for s in socks:
        k = "refused-at-connect" if s is None else answers(s)[-1].split(" sensitive")[0].split(" ")[0:2]
        k = k if isinstance(k, str) else " ".join(k)
        kinds[k] = kinds.get(k, 0) + 1
    print(case + ": " + ", ".join("%s x%d" % kv for kv in sorted(kinds.items())))
PY
chmod 644 "$work/analyze.py"
guardian_socket=/run/quarantine/$child.sock
# The card is read from the work folder (one in the child's home would be hidden by the service).
analyze() { local who=$1; shift; $who python3 "$work/analyze.py" "$guardian_socket" "$what" "${1:-$work/card.png}" 2>&1 | tail -1; }
fds_of_service() { ls /proc/"$service_pid"/fd 2>/dev/null | wc -l; }
fds_before=$(fds_of_service)

what=card; line=$(analyze as_child)
for _ in 1 2 3 4 5 6; do [[ $line == *unavailable* ]] || break; sleep 20; line=$(analyze as_child); done
if [[ $line == "card: verdict sensitive=True" ]]; then attempt "the child's own analyze request gets the card judged clean" held "$line"
else attempt "the child's own analyze request gets the card judged clean" through "$line"; fi
for who in other guardian; do
    what=card; line=$(analyze as_$who "$work/card.png")
    if [[ $line == card:\ refused* || $line == card:\ send\ failed* || $line == "card: reset" || $line == "card: closed" ]] && [[ $line != *verdict* ]]; then
        attempt "the $who account passes a descriptor on analyze and gets it judged" held "$line"
    else attempt "the $who account passes a descriptor on analyze and gets it judged" through "$line"; fi
done
for what in fifo opath wronly zero dir sparse video-sparse many toomany; do
    line=$(analyze as_child)
    if [[ $line == *"failure "* || $line == *refused* ]] && [[ $line != *verdict* && $line != *TIMEOUT* ]]; then
        attempt "the child passes a hostile descriptor ($what) on analyze" held "$line"
    else attempt "the child passes a hostile descriptor ($what) on analyze" through "$line"; fi
done
what=flood; started=$(date +%s.%N); line=$(analyze as_child)
# Meanwhile the guardian's own requests are answered.
if timeout 10 "$q" guardian status --user "$child" > /dev/null 2>&1 && [[ $line == flood:* ]] && [[ $line != *TIMEOUT* ]]; then
    attempt "a flood of 60 analyze requests from the child starves the service" held "$line; status answered after"
else attempt "a flood of 60 analyze requests from the child starves the service" through "$line"; fi
sleep 1
# Settled: the service's own descriptors come and go (a worker starting again, a database
# connection); the ones passed must not stay, so the count must come back within 30 s.
for _ in $(seq 30); do fds_after=$(fds_of_service); [ "$fds_after" -le $((fds_before + 2)) ] && break; sleep 1; done
if [ -n "$fds_before" ] && [ "$fds_after" -le $((fds_before + 2)) ]; then
    attempt "descriptors passed on analyze stay open in the service" held "$fds_before descriptors before, $fds_after after"
else attempt "descriptors passed on analyze stay open in the service" through "$fds_before descriptors before, $fds_after after"; fi

# --- Live streams (the verb 'stream'): the child floods two streams through its forwarder at full
# rate while a card arrives in Downloads; the card must still be judged and vaulted. The service
# judges the account's frames one at a time, at most 8 a second (docs/dbus.md), so the intake keeps
# the worker's other threads. First the card's time without a flood, for comparison.
stream_card_time() {   # stream_card_time NAME: seconds until the card saved as NAME in Downloads is vaulted
    local path=$chome/Downloads/$1 t0
    t0=$(date +%s.%N)
    make_card "$path"
    if wait_vaulted "$path" 120; then echo "$(date +%s.%N) - $t0" | bc; else echo never; fi
}
quiet_time=$(stream_card_time stream-quiet-card.png)
cat > "$work/stream-flood.py" <<'PY'
import os, sys, time
from gi.repository import Gio, GLib
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
name, root, iface = "io.github.quarantine.Analysis1", "/io/github/quarantine/Analysis1", "io.github.quarantine.Analysis1"
card, photo, seconds = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), float(sys.argv[3])
paths = []
for i in range(3):
    try:
        paths.append(bus.call_sync(name, root, iface, "BeginStream", GLib.Variant("(ss)", ("p%d" % i, "incoming")), GLib.VariantType("(o)"), 0, 10000, None).unpack()[0])
    except GLib.Error as e:
        print("third:" if i == 2 else "refused:", e.message, flush=True)
print("began:", len(paths), flush=True)
changes = {p: [] for p in paths}
for p in paths:
    bus.signal_subscribe(name, iface + ".Stream", "AnalysisChanged", p, None, 0, lambda c, s, o, i, m, a: changes[o].append((time.time(), a.unpack())))
ctx = GLib.MainContext.default()
def pump():
    while ctx.pending(): ctx.iteration(False)
def memfd(data):
    fd = os.memfd_create("frame"); os.write(fd, data); return fd
benign = memfd(photo)
def frame(path, fd):
    fds = Gio.UnixFDList.new(); fds.append(fd)
    bus.call_with_unix_fd_list_sync(name, path, iface + ".Stream", "AnalyzeFrame", GLib.Variant("(h)", (0,)), None, 0, 10000, fds, None)
def prop(path, p):
    return bus.call_sync(name, path, "org.freedesktop.DBus.Properties", "Get", GLib.Variant("(ss)", (iface + ".Stream", p)), None, 0, 5000, None).unpack()[0]
print("flooding", flush=True)
sent, end = 0, time.time() + seconds
while time.time() < end:
    for p in paths: frame(p, benign); sent += 1
    pump()
print("sent: %d frames in %.0f s (%.0f a second)" % (sent, seconds, sent / seconds), flush=True)
# The card as a frame of the first stream, still flooding the second: the advice must come.
cardfd, t = memfd(card), time.time()
frame(paths[0], cardfd)
while not changes[paths[0]] and time.time() - t < 10:
    frame(paths[1], benign); pump(); time.sleep(0.005)
got = changes[paths[0]][0] if changes[paths[0]] else None
print("card-advice:", got[1] if got else None, "%.3f" % (got[0] - t) if got else "never", flush=True)
for p in paths:
    print("counts:", prop(p, "FramesSeen"), prop(p, "FramesJudged"), prop(p, "FramesDropped"), flush=True)
print("leaving", flush=True)
os._exit(0)   # no End: the streams must end in the service as the caller leaves the bus
PY
cat > "$work/stream-session.sh" <<'SESSION'
"$1" agent 2> /dev/null & pid=$!
gdbus wait --session --timeout 60 io.github.quarantine.Analysis1
python3 "$2" "$3" "$4" "$5"
sleep 2
kill $pid; wait $pid
SESSION
chmod 644 "$work/stream-flood.py" "$work/stream-session.sh"
# Streams open in the service, from its log (each stream logs its beginning and its end).
stream_threads() { echo $(( $(grep -c "an application's stream began" "$work/service.log") - $(grep -c "an application's stream ended" "$work/service.log") )); }
as_child env -i HOME="$chome" PATH=/usr/bin:/bin dbus-run-session -- bash "$work/stream-session.sh" "$q" "$work/stream-flood.py" "$work/card.png" "$photo" 25 > "$work/stream-flood.out" 2>&1 &
flood_pid=$!
for _ in $(seq 120); do grep -q '^flooding' "$work/stream-flood.out" && break; sleep 0.5; done
sleep 3
threads_during=$(stream_threads)
flood_time=$(stream_card_time stream-flood-card.png)
for _ in $(seq 120); do grep -q '^leaving' "$work/stream-flood.out" && break; sleep 0.5; done
sleep 1
threads_after=$(stream_threads)
left_lines=$(grep "an application's stream ended (the client left)" "$work/service.log" | tail -2 | tr '\n' ' ')
wait $flood_pid
flood_out=$(tr '\n' ' ' < "$work/stream-flood.out")
if [ "$flood_time" != never ] && [ "$(echo "$flood_time < 30" | bc)" = 1 ]; then
    attempt "a stream flood from the child (2 streams at full rate) keeps a card in Downloads from being judged" held "vaulted after $(printf %.1f "$flood_time") s under the flood ($(printf %.1f "$quiet_time") s without); ${flood_out}"
else
    attempt "a stream flood from the child (2 streams at full rate) keeps a card in Downloads from being judged" through "vaulted: $flood_time s (without: $quiet_time s); $flood_out"
fi
if grep -q '^card-advice: (True, True, True)' "$work/stream-flood.out"; then
    attempt "the test card in a flooded stream gets no descriptive advice (indicate, interrupt, mute)" held "$(grep '^card-advice' "$work/stream-flood.out")"
else attempt "the test card in a flooded stream gets no descriptive advice (indicate, interrupt, mute)" through "$flood_out"; fi
if grep -q '^third: .*LimitsExceeded' "$work/stream-flood.out" && grep -q '^began: 2' "$work/stream-flood.out" && [ "$threads_during" -le 2 ]; then
    attempt "the child opens a third stream through its forwarder" held "$(grep '^third' "$work/stream-flood.out"); $threads_during stream(s) open in the service"
else attempt "the child opens a third stream through its forwarder" through "$flood_out; $threads_during streams open"; fi
if [ "$threads_during" -ge 1 ] && [ "$threads_after" = 0 ]; then
    attempt "streams of a caller that left the bus (no End) go on in the service" held "$threads_during stream(s) open while flooding, $threads_after a second after it left: $left_lines"
else attempt "streams of a caller that left the bus (no End) go on in the service" through "$threads_during while flooding, $threads_after after"; fi

# The verb asked directly (not through the forwarder), as attackers: the bound, hostile frames,
# other accounts. stream-raw.py SOCKET CASE CARD -> one line "CASE: WHAT".
cat > "$work/stream-raw.py" <<'PY'
import json, os, socket, sys
path, case = sys.argv[1], sys.argv[2]
def msg(step, **kw): return json.dumps(dict(verb="stream", version=1, step=step, **kw)).encode()
def begin():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.settimeout(20); s.connect(path)
    try: s.send(msg("begin", participant="p", direction="incoming"))
    except OSError: pass
    return s
def answer(s):
    try:
        data = s.recv(70000)
    except (ConnectionResetError, BrokenPipeError): return "reset"
    except socket.timeout: return "TIMEOUT"
    if not data: return "closed"
    a = json.loads(data)
    if a.get("refusal"): return "refused " + json.dumps(a["refusal"])[:120]
    b = a.get("answer") or {}
    if "began" in b: return "began " + b["began"]
    if "failure" in b: return "failure " + b["failure"]["kind"]
    return "other " + data[:80].decode(errors="replace")
def final(s):
    for _ in range(50):
        a = answer(s)
        if not a.startswith("other"): return a
    return "no final answer"
if case == "three":
    socks = [begin() for _ in range(3)]
    print(case + ": " + ", ".join(answer(s) for s in socks))
elif case == "begin":
    print(case + ": " + answer(begin()))
else:
    s = begin(); first = answer(s)
    home = os.path.expanduser("~")
    if case == "fifo":
        f = os.path.join(home, "stream-fifo")
        if not os.path.exists(f): os.mkfifo(f)
        fds = [os.open(f, os.O_RDONLY | os.O_NONBLOCK)]
    elif case == "zero": fds = [os.open("/dev/zero", os.O_RDONLY)]
    elif case == "opath": fds = [os.open(sys.argv[3], os.O_PATH)]
    elif case == "big":
        f = os.path.join(home, "stream-big.png"); fd = os.open(f, os.O_RDWR | os.O_CREAT, 0o600); os.ftruncate(fd, 64 << 20); os.close(fd)
        fds = [os.open(f, os.O_RDONLY)]
    elif case == "two": fds = [os.open(sys.argv[3], os.O_RDONLY)] * 2
    socket.send_fds(s, [msg("frame")], fds)
    print(case + ": " + first + " then " + final(s))
PY
chmod 644 "$work/stream-raw.py"
stream_raw() { local who=$1 what=$2; $who python3 "$work/stream-raw.py" "$guardian_socket" "$what" "$work/card.png" 2>&1 | tail -1; }
line=$(stream_raw as_child three)
# The three are served side by side: any one of them may be the one refused.
if [ "$(grep -o 'began descriptive' <<< "$line" | wc -l)" = 2 ] && [ "$(grep -o 'failure limitsExceeded' <<< "$line" | wc -l)" = 1 ]; then
    attempt "the child opens a third stream on the guardian socket directly" held "$line"
else attempt "the child opens a third stream on the guardian socket directly" through "$line"; fi
for who in other guardian; do
    line=$(stream_raw as_$who begin)
    if [[ $line != *began* && $line != *TIMEOUT* ]]; then attempt "the $who account begins a stream on the child's guardian socket" held "$line"
    else attempt "the $who account begins a stream on the child's guardian socket" through "$line"; fi
done
for what in fifo zero opath big two; do
    line=$(stream_raw as_child $what)
    if [[ $line == *"began descriptive then failure "* ]]; then attempt "the child passes a hostile frame ($what) on a stream" held "$line"
    else attempt "the child passes a hostile frame ($what) on a stream" through "$line"; fi
done
if service_alive; then attempt "the stream attacks stop the guardian service" held "it answers"
else attempt "the stream attacks stop the guardian service" through "it does not answer"; fi
