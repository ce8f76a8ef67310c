# Sourced by scripts/attack-guardian.sh: the service's socket as an attack surface (issue 26,
# point 2, "The socket as an attack surface"). Another local account floods it (descriptors,
# idle connections, oversized pipelined requests); the guardian and the child use up their own
# connection caps; the child makes the history long. Each time the child's new card must still be
# hidden and the service must still answer.

sock=/run/quarantine/$child.sock
# A hostile client: MODE N HOLD -> opens N connections (each passing 16 descriptors, or idle, or
# sending 20 oversized requests), keeps them HOLD seconds, prints what it saw as one JSON line.
cat > "$work/socket-flood.py" <<'EOF'
import json, os, resource, socket, sys, time
mode, path, n, hold = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
# Descriptors in flight count against the sender's own limit: raised to what it may.
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(16)]
socks, seen = [], {"connected": 0, "connect_failed": 0, "refused_with_reason": 0, "too_many": 0, "reset": 0, "answered": 0, "send_failed": 0}
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
    except OSError:
        seen["connect_failed"] += 1; s.close(); continue
    seen["connected"] += 1
    try:
        if mode == "fds":
            socket.send_fds(s, [b'{"verb":"history"}'], fds)
        elif mode == "big":
            for size in [60000, 70000, 200000] * 7:
                s.send(b'{"verb":"list","x":"' + b"x" * size + b'"}')
    except OSError:
        seen["send_failed"] += 1
    socks.append(s)
# What came back on each (without waiting long): the refusal's words, or a reset.
for s in socks:
    s.settimeout(0.2)
    try:
        answer = s.recv(1 << 17)
        if b"only" in answer and b"may use it" in answer: seen["refused_with_reason"] += 1
        elif b"too many connections" in answer: seen["too_many"] += 1
        elif answer: seen["answered"] += 1
    except ConnectionResetError:
        seen["reset"] += 1
    except OSError:
        pass
print(json.dumps(seen)); sys.stdout.flush()
time.sleep(hold)
EOF
chmod 644 "$work/socket-flood.py"

# flood_then_card WHO MODE N "what": WHO floods (held 8 s) while the child saves a card; the card
# must be hidden and the service must answer root, the child and the guardian (but the flooder:
# a full cap costs its own account) during the flood.
flood_then_card() {
    local who=$1 mode=$2 n=$3 what=$4 name=card-socket-$RANDOM.png flood_pid out start
    "as_$who" python3 "$work/socket-flood.py" "$mode" "$sock" "$n" 8 > "$work/flood-$mode.json" 2>&1 &
    flood_pid=$!
    for _ in $(seq 50); do [ -s "$work/flood-$mode.json" ] && break; sleep 0.1; done
    start=$SECONDS
    make_card "$chome/Downloads/$name"
    if ! wait_gone_for_child "$chome/Downloads/$name" 10; then
        attempt "$what" through "the child's card stayed readable during the flood: $(cat "$work/flood-$mode.json")"
    elif ! out=$(timeout 10 "$q" guardian status --user "$child" 2>&1); then
        attempt "$what" through "root's guardian status failed during the flood: $out"
    elif [ "$who" != child ] && ! out=$(as_child timeout 10 "$q" list 2>&1); then
        attempt "$what" through "the child's list failed during the flood: $out"
    elif [ "$who" != guardian ] && ! out=$(as_guardian timeout 10 "$q" list --user "$child" 2>&1); then
        attempt "$what" through "the guardian's list failed during the flood: $out"
    else
        attempt "$what" held "card hidden after $((SECONDS - start)) s, child, guardian and root served; the flooder saw $(cat "$work/flood-$mode.json")"
    fi
    # The flooder (under runuser) ends by itself after its 8 s: its connections are gone after.
    wait "$flood_pid" 2>/dev/null
}

# Enough descriptors to fill the service's table if it took them in (its soft limit / 16, plus
# 64 connections; at least 64 connections, at most 1,400).
limit=$(awk '/^Max open files/ {print $4}' "/proc/$service_pid/limits" 2>/dev/null)
fd_connections=$(( ${limit:-1024} / 16 + 64 )); [ $fd_connections -gt 1400 ] && fd_connections=1400
flood_then_card other fds $fd_connections "another account: $fd_connections connections each passing 16 descriptors (the service's limit is ${limit:-?} descriptors)"
flood_then_card other idle 500 "another account: 500 idle connections"
flood_then_card other big 32 "another account: 32 connections pipelining oversized requests (60 KB to 200 KB)"
flood_then_card guardian fds 64 "a guardian's account: 64 connections each passing 16 descriptors"
flood_then_card guardian idle 64 "a guardian's account: 64 idle connections (over its cap of 8), the child and root must still be served"
flood_then_card child big 32 "the child: 32 connections pipelining oversized requests"

# The child holds its own 8 connections: the guardian is still served, and so is a new card.
as_child python3 "$work/socket-flood.py" idle "$sock" 8 8 > "$work/flood-child-idle.json" 2>&1 &
child_flood=$!
sleep 1
name=card-socket-cap.png
make_card "$chome/Downloads/$name"
if wait_gone_for_child "$chome/Downloads/$name" 10 && out=$(as_guardian timeout 5 "$q" list --user "$child" 2>&1); then
    attempt "the child holds its cap of connections to starve the guardian" held "the guardian listed, the card was hidden"
else
    attempt "the child holds its cap of connections to starve the guardian" through "$out"
fi
wait "$child_flood" 2>/dev/null

# A refused account gets words, not a reset, from the CLI.
out=$(as_other timeout 10 "$q" list --user "$child" 2>&1)
if grep -q "only $child, root and members of quarantine-guardians may use it" <<< "$out"; then
    attempt "another account uses the CLI on the child's service" held "it says: $(tail -1 <<< "$out")"
else
    attempt "another account uses the CLI on the child's service" through "no clear refusal: $out"
fi

# The child makes the history long: 2,000 copies of a clean photo under 200-byte names, each
# one an 'analysed' event (over 600 KB of history, three times what one message could carry).
long=$(printf 'p%.0s' $(seq 190))
as_child mkdir -p "$chome/Downloads/many"
as_child bash -c "for i in \$(seq 2000); do cp '$photo' '$chome/Downloads/many/$long-'\$i.png; done"
start=$SECONDS
while [ $((SECONDS - start)) -lt 180 ]; do
    count=$(timeout 60 "$q" history --user "$child" 2>/dev/null | grep -c "$long")
    [ "${count:-0}" -ge 2000 ] && break
    sleep 3
done
if out=$(as_guardian timeout 60 "$q" history --user "$child" 2>&1) && [ "$(grep -c "$long" <<< "$out")" -ge 2000 ]; then
    attempt "the child makes the history long (2,000 events with 200-byte names), then the guardian reads it" held "$(wc -l <<< "$out") lines, $(wc -c <<< "$out") bytes, in pages"
else
    attempt "the child makes the history long (2,000 events with 200-byte names), then the guardian reads it" through "$(tail -2 <<< "$out") ($(grep -c "$long" <<< "$out") of 2000 events after $((SECONDS - start)) s)"
fi
as_child rm -rf "$chome/Downloads/many"
unset -f flood_then_card
