# Sourced by scripts/attack-guardian.sh: the worker launcher (quarantine-worker-launcher.service),
# the one process with CAP_SETUID, tried as the other accounts, as a guardian service taken over
# (its user, quarantine) and by a flood; and the guardian service without CAP_SETUID.

launcher_socket=/run/quarantine/launcher.sock
child_uid=$(id -u "$child") other_uid=$(id -u "$other") quarantine_uid=$(id -u quarantine)
cat > "$work/launcher-client.py" <<'PY'
import json, os, socket, sys, time
path = "/run/quarantine/launcher.sock"
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(15)
    s.connect(path)
    return s
def want(uid, env=None):
    return b"W" + json.dumps({"account": uid, "environment": env or {}}).encode()
def answer(s):
    try:
        data, fds, _, _ = socket.recv_fds(s, 65536, 4)
    except socket.timeout:
        return "timeout", []
    if not data: return "closed", fds
    if data[:1] == b"S": return "started %d" % json.loads(data[1:])["pid"], fds
    if data[:1] == b"N": return "refused: " + json.loads(data[1:])["reason"], fds
    return "other %r" % data[:40], fds
mode = sys.argv[1]
try:
    if mode == "ask":            # ask UID HOLD_SECONDS
        s = connect(); s.send(want(int(sys.argv[2])))
        said, fds = answer(s); print(said, flush=True)
        time.sleep(float(sys.argv[3]))
    elif mode == "kill":         # kill UID: ask, then send the kill message, print how it ended
        s = connect(); s.send(want(int(sys.argv[2])))
        said, fds = answer(s); print(said, flush=True)
        time.sleep(1); s.send(b"K")
        data = s.recv(4096); print("ended: " + (json.loads(data[1:])["how"] if data[:1] == b"E" else repr(data)), flush=True)
    elif mode == "raw":          # raw HEX
        s = connect(); s.send(bytes.fromhex(sys.argv[2])); print(answer(s)[0])
    elif mode == "env":          # env UID NAME VALUE
        s = connect(); s.send(want(int(sys.argv[2]), {sys.argv[3]: sys.argv[4]})); print(answer(s)[0])
    elif mode == "fds":          # fds UID: a request with a descriptor; is it closed by the launcher?
        r, w = os.pipe()
        s = connect(); socket.send_fds(s, [want(int(sys.argv[2]))], [w]); os.close(w)
        print(answer(s)[0])
        os.set_blocking(r, False); time.sleep(0.5)
        try: print("pipe: open elsewhere" if os.read(r, 1) is None else "pipe: closed")
        except BlockingIOError: print("pipe: open elsewhere")
    elif mode == "flood":        # flood UID N HOLD_SECONDS
        conns, started, refused = [], [], 0
        for _ in range(int(sys.argv[3])):
            s = connect(); s.send(want(int(sys.argv[2]))); said, fds = answer(s)
            if said.startswith("started"): started.append(said.split()[1]); conns.append((s, fds))
            else: refused += 1; s.close()
        print("started %d refused %d pids %s" % (len(started), refused, ",".join(started)), flush=True)
        time.sleep(float(sys.argv[4]))
    elif mode == "idle":         # idle N: connections that never ask; what each is told, how soon
        start = time.monotonic()
        conns = [connect() for _ in range(int(sys.argv[2]))]
        kinds = {}
        for s in conns:
            said = answer(s)[0].split(":")[0]
            kinds[said] = kinds.get(said, 0) + 1
        print("%s within %.1f s" % (", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())), time.monotonic() - start))
except OSError as error:
    print("error: %s" % error)
PY
chmod 644 "$work/launcher-client.py"
client() { timeout 30 python3 "$work/launcher-client.py" "$@" 2>&1 | head -3; }
as_quarantine() { runuser -u quarantine -- "$@"; }
cap_bits() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }
gone_within() { local pid=$1 deadline=$((SECONDS + $2)); while [ $SECONDS -le $deadline ]; do [ -d "/proc/$pid" ] || return 0; sleep 0.1; done; return 1; }

# The guardian service holds no CAP_SETUID or CAP_SETGID (bits 7 and 6), in no set.
setid=0
for set in CapEff CapPrm CapInh CapAmb CapBnd; do
    bits=$(cap_bits "$service_pid" "$set"); (( (16#${bits:-0} & 16#c0) != 0 )) && setid=1
done
if [ "$setid" = 0 ]; then
    attempt "a guardian service taken over becomes another user (CAP_SETUID/CAP_SETGID in the service)" held "bounding set $(cap_bits "$service_pid" CapBnd)"
else
    attempt "a guardian service taken over becomes another user (CAP_SETUID/CAP_SETGID in the service)" through "CapEff $(cap_bits "$service_pid" CapEff) CapBnd $(cap_bits "$service_pid" CapBnd)"
fi

# The launcher: exactly CAP_SETUID and CAP_SETGID, as user quarantine.
if [ "$(cap_bits "$launcher_pid" CapBnd)" = 00000000000000c0 ] && [ "$(cap_bits "$launcher_pid" CapEff)" = 00000000000000c0 ] \
   && [ "$(awk '$1 == "Uid:" { print $2 $3 $4 }' "/proc/$launcher_pid/status")" = "$quarantine_uid$quarantine_uid$quarantine_uid" ]; then
    attempt "the worker launcher holds more than CAP_SETUID and CAP_SETGID, or runs as root" held "user quarantine, CapEff/CapBnd 00000000000000c0"
else
    attempt "the worker launcher holds more than CAP_SETUID and CAP_SETGID, or runs as root" through "CapEff $(cap_bits "$launcher_pid" CapEff) CapBnd $(cap_bits "$launcher_pid" CapBnd)"
fi

# Other accounts cannot even connect (0600, quarantine's); were it reachable, SO_PEERCRED refuses.
for who in child other guardian; do
    said=$(runuser -u "${!who}" -- timeout 10 python3 "$work/launcher-client.py" ask "$child_uid" 0 2>&1 | head -1)
    if [[ $said == started* ]]; then
        attempt "the $who account gets a worker from the launcher" through "$said"
    else
        attempt "the $who account gets a worker from the launcher" held "$said"
    fi
done

# A guardian service taken over (user quarantine) asks for what no guardian may have.
for case in "root:0" "an account that is not protected ($other):$other_uid" "no account at all:4000000001" "the launcher's own user:$quarantine_uid"; do
    said=$(as_quarantine timeout 10 python3 "$work/launcher-client.py" ask "${case##*:}" 0 | head -1)
    if [[ $said == refused* ]]; then
        attempt "quarantine's user gets a worker for ${case%:*}" held "${said:0:110}"
    else
        attempt "quarantine's user gets a worker for ${case%:*}" through "$said"
    fi
done
said=$(as_quarantine timeout 10 python3 "$work/launcher-client.py" env "$child_uid" LD_PRELOAD /tmp/x.so | head -1)
[[ $said == refused* ]] && attempt "quarantine's user gives a worker LD_PRELOAD" held "${said:0:110}" \
    || attempt "quarantine's user gives a worker LD_PRELOAD" through "$said"
said=$(as_quarantine timeout 10 python3 "$work/launcher-client.py" raw "57ffff7b" | head -1)
[[ $said == refused* ]] && attempt "a malformed request to the launcher" held "${said:0:110}" \
    || attempt "a malformed request to the launcher" through "$said"
said=$(as_quarantine timeout 10 python3 "$work/launcher-client.py" fds "$child_uid" | tr '\n' ' ')
[[ $said == refused*"pipe: closed"* ]] && attempt "a request carrying a descriptor (kept open by the launcher)" held "${said:0:110}" \
    || attempt "a request carrying a descriptor (kept open by the launcher)" through "$said"

# The legitimate request, as the guardian would make it: the worker runs as the account's worker
# user; the connection closing (the guardian gone) kills it at once, whatever it is doing.
as_quarantine timeout 30 python3 "$work/launcher-client.py" ask "$child_uid" 3 > "$work/ask.out" 2>&1 &
asker=$!
for _ in $(seq 50); do [ -s "$work/ask.out" ] && break; sleep 0.1; done
said=$(head -1 "$work/ask.out") lw=${said#started }
if [[ $said == started* ]] && [ -d "/proc/$lw" ]; then
    ids=$(awk '$1 == "Uid:" { print $2, $3, $4, $5 }' "/proc/$lw/status")
    own=$(id -u "quarantine-w$child_uid" 2>/dev/null)
    if [ "$ids" = "$own $own $own $own" ]; then
        attempt "a launched worker keeps a user id of quarantine's or root's" held "Uid: $ids (quarantine-w$child_uid)"
    else
        attempt "a launched worker keeps a user id of quarantine's or root's" through "Uid: $ids"
    fi
    wait "$asker"
    if gone_within "$lw" 2; then
        attempt "a worker outlives the guardian connection that asked for it" held "gone once the connection closed"
    else
        attempt "a worker outlives the guardian connection that asked for it" through "pid $lw still runs 2 s after"
    fi
else
    wait "$asker"
    attempt "the launcher starts a worker for the protected account" through "${said:-no answer}"
fi
said=$(as_quarantine timeout 30 python3 "$work/launcher-client.py" kill "$child_uid" | tr '\n' ' ')
kw=$(sed -n 's/^started \([0-9]*\).*/\1/p' <<< "$said")
if [[ $said == *"ended: killed at the guardian's request"* ]] && ! [ -d "/proc/$kw" ]; then
    attempt "a guardian cannot stop a hung worker of another user (kill through the launcher)" held "${said:0:120}"
else
    attempt "a guardian cannot stop a hung worker of another user (kill through the launcher)" through "$said"
fi

# A flood by a guardian taken over: at most the per-account cap runs, and all go with it.
said=$(as_quarantine timeout 60 python3 "$work/launcher-client.py" flood "$child_uid" 12 1 | head -1)
started=$(awk '{ print $2 }' <<< "$said") pids=$(awk '{ print $6 }' <<< "$said")
sleep 1
left=0
for p in ${pids//,/ }; do gone_within "$p" 3 || left=$((left + 1)); done
if [ "${started:-99}" -le 6 ] && [ "$left" = 0 ]; then
    attempt "12 workers at once for one account (the launcher's per-account cap)" held "$said; none left after the hang-up"
else
    attempt "12 workers at once for one account (the launcher's per-account cap)" through "$said; $left left running"
fi
# Connections that never ask are refused after the request timeout (5 s), not kept; the launcher
# serves again at once.
said=$(as_quarantine timeout 30 python3 "$work/launcher-client.py" idle 30 | head -1)
after=$(as_quarantine timeout 10 python3 "$work/launcher-client.py" ask "$child_uid" 0 | head -1)
if [[ $said == *"30 refused within"* ]] && [[ $after == started* ]]; then
    attempt "30 idle connections keep the launcher from serving" held "$said; then a worker started"
else
    attempt "30 idle connections keep the launcher from serving" through "$said; then: $after"
fi

# A worker does not outlive its service: stopped, the service's connection closes, the launcher
# kills the worker. The service's worker ends when idle: a new picture (a card of a size not sent
# before, so its bytes are new) makes it start one, so that this is always tried.
service_worker() { pgrep -P "$launcher_pid" -f 'analysis-worker' | head -1; }
w=$(service_worker)
if [ -z "$w" ]; then
    as_child "$q" testcard --size 333x222 "$chome/Downloads/wake-worker.png" > /dev/null
    for _ in $(seq 100); do w=$(service_worker); [ -n "$w" ] && break; sleep 0.1; done
fi
if [ -z "$w" ]; then
    attempt "the service's worker outlives the service (stopped)" through "not tried: no worker of the service ran, even after a new picture arrived"
else
    restart_service
    if gone_within "$w" 3; then
        attempt "the service's worker outlives the service (stopped)" held "worker $w gone"
    else
        attempt "the service's worker outlives the service (stopped)" through "worker $w still runs"
    fi
fi
make_card "$chome/Downloads/after-launcher.png"
attempt_card "a card after the launcher's attempts" "$chome/Downloads/after-launcher.png" 15

# The launcher is not running and a card arrives: stopped with its socket file left behind (it
# crashed), or with no socket at all (after a reboot, before it starts). The service must not start
# a worker of its own, as quarantine (the owner of every account's database, PIN hash and vault):
# the card stays held, 'guardian status' says why; once the launcher is back, a worker starts (as
# the account's worker user) and the card reaches the vault.
# (grep reads the whole list: with pipefail, an early exit of grep -q would fail the pipe.)
in_vault() { timeout 10 "$q" list --user "$child" 2>/dev/null | grep -F "$name" > /dev/null; }
without_launcher() {
    local how=$1 what="the launcher $1, a card arrives: the service starts a worker as quarantine" own_workers=0 quarantine_workers=0 readable=0 said= start
    stop_launcher
    [ "$how" = "gone with its socket" ] && rm -f /run/quarantine/launcher.sock
    sleep 1
    name=card-no-launcher-$RANDOM.png
    make_card "$chome/Downloads/$name"
    start=$SECONDS
    while [ $((SECONDS - start)) -lt 12 ]; do
        # A worker started by the service itself is its child; any analysis worker as quarantine counts too.
        own_workers=$((own_workers + $(pgrep -P "$service_pid" | wc -l)))
        quarantine_workers=$((quarantine_workers + $(pgrep -U quarantine -f 'analysis-worker' | wc -l) + $(pgrep -u quarantine -f 'analysis-worker' | wc -l)))
        child_sees_card "$chome/Downloads/$name" && [ $((SECONDS - start)) -ge 3 ] && readable=1
        said=$(timeout 10 "$q" guardian status --user "$child" 2>&1)
        grep -q "worker launcher is not running" <<< "$said" && [ $((SECONDS - start)) -ge 4 ] && break
        sleep 0.3
    done
    if [ "$own_workers" != 0 ] || [ "$quarantine_workers" != 0 ]; then
        attempt "$what" through "children of the service seen $own_workers time(s), quarantine's analysis workers $quarantine_workers"
    elif [ "$readable" = 1 ]; then
        attempt "$what" through "no worker, but the child still reads the card"
    elif in_vault; then
        attempt "$what" through "the card reached the vault with no launcher: who analysed it?"
    elif ! grep -q "worker launcher is not running" <<< "$said"; then
        attempt "$what" through "held, but 'guardian status' does not say why: $(head -2 <<< "$said" | cut -c1-300)"
    else
        attempt "$what" held "no worker, the card held, status: $(grep -o 'problem: cannot analyse: the worker launcher is not running' <<< "$said")"
    fi
    start_launcher || setup_fail "the worker launcher did not start again"
    start=$SECONDS
    while [ $((SECONDS - start)) -lt 20 ] && ! in_vault; do sleep 0.2; done
    what="the launcher back (after it was $how), the held card is never analysed"
    if child_sees_card "$chome/Downloads/$name"; then
        attempt "$what" through "the child reads the card $((SECONDS - start)) s after the launcher came back"
    elif in_vault; then
        w=$(pgrep -P "$launcher_pid" -f 'analysis-worker' | head -1)
        attempt "$what" held "in the vault $((SECONDS - start)) s after the launcher came back (worker ${w:-ended} as $(ps -o user= -p "${w:-0}" 2>/dev/null || echo '?'))"
    else
        attempt "$what" through "not in the vault $((SECONDS - start)) s after the launcher came back; status: $(timeout 10 "$q" guardian status --user "$child" 2>&1 | head -2)"
    fi
}
# The service has run for over 30 s first: analysis that breaks late must be retried too (before,
# the retry ended for good once it had found analysis working, 30 s after the start).
up=$(ps -o etimes= -p "$service_pid" 2>/dev/null | tr -d ' ')
[ "${up:-99}" -lt 35 ] && sleep $((35 - up))
without_launcher "stopped, its socket left behind"
without_launcher "gone with its socket"
unset -f in_vault without_launcher
