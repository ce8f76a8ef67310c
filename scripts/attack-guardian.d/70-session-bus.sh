# Sourced by scripts/attack-guardian.sh: the child's own session bus (issue 31). On the protected
# account 'quarantine agent' is the session forwarder: io.github.quarantine.Analysis1 tells the
# mode the guardian service says (descriptive; simple only while a guardian sets adult mode),
# never disabled, whatever the child's own configuration asks; pictures and videos are forwarded
# to the guardian service (the verb 'analyze', the only one that carries a descriptor), streams are
# not offered. (A program of the child's own can still take the name once the child stops the
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
if grep -q "^policy: (<'descriptive'>,)" <<< "$answer" && grep -q "^analyze: (true, \['TEST_CARD" <<< "$answer" && grep -q "^stream: .*Error.NotOffered" <<< "$answer"; then
    attempt "the child's own configuration (adult, app_analysis = false) makes its session bus tell applications 'disabled' or judge the card clean" held "descriptive; the card judged sensitive by the guardian service; streams NotOffered"
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
