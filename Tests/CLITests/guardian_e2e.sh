#!/bin/bash
# The guardian deployment end to end, with real accounts (run by GuardianTests as root):
# a child account and a guardian account made here, 'guardian enable', the service run as the
# system unit runs it (User=quarantine, the unit's four ambient capabilities, same command line),
# after the worker launcher as its unit runs it (User=quarantine, CAP_SETUID CAP_SETGID),
# then every attempt of the child fails with a clear message and the guardian can do everything.
# Usage: guardian_e2e.sh BINARY PHOTO. Prints one line per check; exits 1 at the first failure.
set -uo pipefail
binary=$1 photo=$2
child=qtc$RANDOM guardian=qtg$RANDOM
work=$(mktemp -d) && chmod 755 "$work"
service_pid= launcher_pid=
fail() { echo "FAIL: $*"; echo "--- service log"; cat "$work/service.log" 2>/dev/null | tail -30; exit 1; }
ok() { echo "ok: $*"; }
cleanup() {
    [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null && wait "$service_pid" 2>/dev/null
    [ -n "$launcher_pid" ] && kill "$launcher_pid" 2>/dev/null && wait "$launcher_pid" 2>/dev/null
    # Out of pam_quarantine's list (and its lines out of the PAM stacks when no account is left).
    id -u "$child" > /dev/null 2>&1 && [ -x "$work/quarantine" ] && "$work/quarantine" guardian disable --user "$child" > /dev/null 2>&1
    id -u "$child" > /dev/null 2>&1 && userdel "quarantine-w$(id -u "$child")" 2>/dev/null
    # The preview copies the child's and the guardian's CLI wrote (a later account with the same
    # uid would own them, and /tmp is watched for the protected account's files).
    for account in "$child" "$guardian"; do id -u "$account" > /dev/null 2>&1 && rm -rf "/tmp/quarantine-preview-$(id -u "$account")"; done
    userdel -r "$child" 2>/dev/null; userdel -r "$guardian" 2>/dev/null
    rm -rf "/var/lib/quarantine/$child" "/etc/quarantine/$child.toml" "/run/quarantine/$child.sock" \
        "/etc/systemd/system/quarantine-guardian@$child.service.d" "$work"
}
trap cleanup EXIT

# Everyone may run the binary (the build folder may not be reachable by other accounts).
cp "$binary" "$work/quarantine" && chmod 755 "$work/quarantine"
cp "$photo" "$work/photo.png" && chmod 644 "$work/photo.png" && photo=$work/photo.png
q=$work/quarantine
useradd -m -s /bin/bash "$child" && useradd -m -s /bin/bash "$guardian" || fail "useradd"
# Nothing of an earlier account with the same uid (a killed run's preview copies) in /tmp, which the
# service watches for the child's own files.
rm -rf "/tmp/quarantine-preview-$(id -u "$child")" "/tmp/quarantine-preview-$(id -u "$guardian")"
as_child() { runuser -u "$child" -- "$@"; }
as_guardian() { runuser -u "$guardian" -- "$@"; }
as_child mkdir -p "/home/$child/Downloads"

# Exit status 3: set up, not started (systemd is not PID 1 here); the service is started below as the unit would.
printf '2468\n2468\n' | "$q" guardian enable --user "$child" --pin-stdin > "$work/enable.log" 2>&1; status=$?
[ $status = 0 ] || [ $status = 3 ] || { cat "$work/enable.log"; fail "guardian enable (exit $status)"; }
grep -q setpriv "$work/enable.log" && fail "guardian enable suggests running the service outside its unit: $(cat "$work/enable.log")"
usermod -aG quarantine-guardians "$guardian"
ok "guardian enable --user $child"
[ "$(stat -c %U:%a "/var/lib/quarantine/$child")" = quarantine:700 ] || fail "state folder not quarantine:700"
[ "$(stat -c %U:%a "/etc/quarantine/$child.toml")" = root:644 ] || fail "configuration not root:644"

# The worker launcher first, as its unit runs it: the service's analysis workers are its children,
# as the account's own worker user (the service holds no CAP_SETUID).
launcher_unit=/etc/systemd/system/quarantine-worker-launcher.service
[ -f "$launcher_unit" ] || fail "guardian enable did not install $launcher_unit"
launcher_caps=$(grep '^AmbientCapabilities=' "$launcher_unit" | cut -d= -f2 | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')
launcher_user=$(grep '^User=' "$launcher_unit" | cut -d= -f2)
launcher_exec=$(grep '^ExecStart=' "$launcher_unit" | sed "s|^ExecStart=/usr/bin/quarantine|$q|")
rm -f /run/quarantine/launcher.sock
setpriv --reuid="$launcher_user" --regid="$launcher_user" --init-groups --inh-caps=$launcher_caps --ambient-caps=$launcher_caps \
    --bounding-set=-all,$launcher_caps --no-new-privs $launcher_exec > "$work/launcher.log" 2>&1 &
launcher_pid=$!
for _ in $(seq 100); do [ -S /run/quarantine/launcher.sock ] && grep -q listening "$work/launcher.log" && break; sleep 0.1; done
[ -S /run/quarantine/launcher.sock ] || { cat "$work/launcher.log"; fail "the worker launcher did not start"; }
ok "the worker launcher runs: $launcher_exec"

# The command line and the identity the unit gives it.
# The unit's own ambient capabilities, as setpriv spells them (+dac_read_search,...).
caps=$(grep '^AmbientCapabilities=' /etc/systemd/system/quarantine-guardian@.service | cut -d= -f2 | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')
exec_start=$(grep '^ExecStart=' /etc/systemd/system/quarantine-guardian@.service | sed "s|^ExecStart=/usr/bin/quarantine|$q|; s|%I|$child|")
setpriv --reuid=quarantine --regid=quarantine --init-groups --inh-caps=$caps --ambient-caps=$caps --no-new-privs \
    $exec_start > "$work/service.log" 2>&1 &
service_pid=$!
for _ in $(seq 100); do [ -S "/run/quarantine/$child.sock" ] && grep -q "watching" "$work/service.log" && break; sleep 0.1; done
[ -S "/run/quarantine/$child.sock" ] || fail "the service did not start"
ok "the service runs as $(ps -o user:32= -p $service_pid): $exec_start"
worker=$(pgrep -P "$launcher_pid" -f analysis-worker | head -1)
[ -n "$worker" ] && [ "$(ps -o user:32= -p "$worker")" = "quarantine-w$(id -u "$child")" ] \
    || fail "no analysis worker of the launcher's runs as quarantine-w$(id -u "$child") ($(ps -o user:32=,args= --ppid "$launcher_pid"))"
ok "its analysis worker $worker runs as quarantine-w$(id -u "$child"), started by the worker launcher"

# A card and a clean photo arrive in the child's download folder.
as_child "$q" testcard "/home/$child/Downloads/card.png" > /dev/null || fail "testcard"
# The photo is made the child's, with an old mtime, outside the watched folders, then moved in:
# the service holds what arrives at once, so it cannot be touched once it is in Downloads.
cp "$photo" "$work/staged.png" && chown "$child:$child" "$work/staged.png" && chmod 644 "$work/staged.png"
touch -d '2020-01-02 03:04:05' "$work/staged.png"
before=$(stat -c '%s %a %U %G %Y' "$work/staged.png")
mv "$work/staged.png" "/home/$child/Downloads/photo.png" || fail "the photo could not be moved in"
sum=$(sha256sum < "$photo")
# Both judged: the card gone, the photo's clean verdict in the history (it is held at once and
# put back after; the service logs a clean verdict at debug level only), then the photo back.
judged() { "$q" history --user "$child" --json 2>/dev/null | grep '"path":"[^"]*photo\.png"' | grep -q '"kind":"analysed"'; }
for _ in $(seq 200); do [ ! -e "/home/$child/Downloads/card.png" ] && judged && break; sleep 0.1; done
[ ! -e "/home/$child/Downloads/card.png" ] || fail "the card is still in the download folder"
judged || fail "the photo was not judged: $("$q" history --user "$child" 2>&1 | tail -5)"
ok "the card was held, checked and hidden"
for _ in $(seq 100); do [ -e "/home/$child/Downloads/photo.png" ] && [ -z "$(ls -A /home/$child/.quarantine-held-* 2>/dev/null)" ] && break; sleep 0.1; done
[ "$(sha256sum < "/home/$child/Downloads/photo.png")" = "$sum" ] || fail "the photo's bytes changed"
[ "$(stat -c '%s %a %U %G %Y' "/home/$child/Downloads/photo.png")" = "$before" ] || fail "the photo's size, mode, owner or mtime changed"
ok "the clean photo came back identical (bytes, size, mode, owner, mtime)"

# As the child: every attempt fails, with a clear message.
expect_denied() { # what, command...
    local what=$1; shift
    if out=$(as_child "$@" 2>&1); then fail "the child could $what: $out"; fi
    ok "the child cannot $what: $(echo "$out" | tail -1)"
}
expect_denied "read the vault" ls "/var/lib/quarantine/$child"
expect_denied "read the database" cat "/var/lib/quarantine/$child/audit.sqlite3"
expect_denied "read a preview" bash -c "cat /var/lib/quarantine/$child/vault/*/preview.jpg"
expect_denied "see held files" bash -c "ls /home/$child/.quarantine-held-*"
expect_denied "edit the configuration" bash -c "echo 'mode = \"adult\"' >> /etc/quarantine/$child.toml"
expect_denied "signal the service" kill "$service_pid"
expect_denied "release with --yes" "$q" release 1 --yes
expect_denied "release without a terminal (and so without the PIN)" "$q" release 1
expect_denied "change the mode" "$q" mode adult
expect_denied "read the history" "$q" history
expect_denied "watch another folder" "$q" watch add "/home/$child/Music"
expect_denied "set a PIN" bash -c "printf '1111\n1111\n' | $q guardian set-pin --pin-stdin"
out=$(as_child "$q" list) || fail "the child cannot list: $out"
grep -q "card.png: hidden" <<< "$out" || fail "the child's list: $out"
ok "the child lists their item in plain words: $out"
as_child "$q" show 1 > "$work/show.txt" 2>&1 || fail "show"
grep -q "preview   /tmp/quarantine-preview-" "$work/show.txt" || fail "show gives no preview copy: $(cat "$work/show.txt")"
ok "the child sees the blurred preview (handed over as a descriptor), never the original"

# Guessing the PIN quickly, with a hand-written client on the socket (no CLI in the way).
guess_client() {
    as_child /usr/bin/python3 - "/run/quarantine/$child.sock" "$@" <<'EOF'
import json, socket, sys
answers = []
for pin in sys.argv[2:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    s.send(json.dumps({"verb": "release", "id": 1, "pin": pin}).encode())
    answers.append(json.loads(s.recv(1 << 20)).get("refusal"))
    s.close()
print(json.dumps(answers))
EOF
}
# The first wrong guess is derived at the PIN's full cost (enable's row); then the row is made
# again at scrypt's N=16 (as GuardianPIN.set(_:rounds:) makes test rows; the same PIN), so that
# the other wrong guesses, which only need counting, do not cost ~0.1 s of CPU each.
first=$(guess_client 0000) || fail "the guessing client"
/usr/bin/python3 - "/var/lib/quarantine/$child/audit.sqlite3" <<'EOF' || fail "a cheap PIN row"
import hashlib, os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
salt = os.urandom(16)
pin = hashlib.scrypt(b"2468", salt=salt, n=16, r=8, p=1, dklen=32)
assert db.execute("UPDATE guardian SET salt = ?, hash = ?, rounds = 16 WHERE id = 1", (salt, pin)).rowcount == 1
db.commit()
EOF
rest=$(guess_client 1111 2222 3333 4444 5555 2468) || fail "the guessing client"
guess=$(/usr/bin/python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1]) + json.loads(sys.argv[2])))' "$first" "$rest")
echo "$guess" | /usr/bin/python3 -c '
import json, sys
a = json.load(sys.stdin)
assert all("wrongPIN" in x for x in a[:5]), a
assert "waitForPIN" in a[5] and "waitForPIN" in a[6], a   # the right PIN is not even checked while waiting
' || fail "PIN guesses were not slowed down: $guess"
ok "PIN guesses are slowed down by the service: 5 wrong, then waits (even the right PIN is not checked)"
[ -e "/home/$child/Downloads/card.png" ] && fail "a guess released the card"
as_child "$q" release 1 --ask > /dev/null || fail "release --ask"
ok "the child's request without the PIN is recorded"

# The guardian's own session (root's agent, on the session bus GUARDIAN_BUS that the test made,
# with a stand-in notification server) is told about the request.
if [ -n "${GUARDIAN_BUS:-}" ]; then
    mkdir -p "$work/root-home/Downloads"
    HOME=$work/root-home DBUS_SESSION_BUS_ADDRESS=$GUARDIAN_BUS QUARANTINE_LOG_LEVEL=info timeout 20 "$q" agent > "$work/root-agent.log" 2>&1 &
    root_agent=$!
    start=$SECONDS
    for _ in $(seq 150); do grep -q "$child asks for a picture back" "$work/root-agent.log" && break; sleep 0.1; done
    echo "(told after $((SECONDS - start)) s)"
    # The agent itself is stopped: a TERM sent to timeout(1) is not passed on when the test
    # runner started this script with TERM blocked (timeout then waited out its 20 s).
    kill $(pgrep -P "$root_agent") "$root_agent" 2>/dev/null; wait "$root_agent" 2>/dev/null
    grep -q "$child asks for a picture back" "$work/root-agent.log" || { cat "$work/root-agent.log"; fail "the guardian's session was not told"; }
    ok "the guardian's desktop session is told: $(grep -o "$child asks for a picture back.*" "$work/root-agent.log" | head -1)"
fi

# As the guardian, from their own account: everything, without the PIN.
out=$(as_guardian "$q" list --user "$child") || fail "guardian list: $out"
grep -q "release asked for" <<< "$out" || fail "the guardian does not see the request: $out"
ok "the guardian lists the child's items and sees the request: $out"
out=$(as_guardian "$q" history --user "$child") && grep -q quarantined <<< "$out" || fail "guardian history: $out"
ok "the guardian reads the history"
out=$(as_guardian "$q" mode --user "$child") && grep -q child <<< "$out" || fail "guardian mode: $out"
out=$(as_guardian "$q" guardian status --user "$child") && grep -q "protected, child mode" <<< "$out" || fail "guardian status: $out"
ok "guardian status: $out"
as_child mkdir -p "/home/$child/Pictures/Shared"
out=$(as_guardian "$q" watch add --outgoing --user "$child" Pictures/Shared) || fail "guardian watch add: $out"
grep -q "/home/$child/Pictures/Shared" "/etc/quarantine/$child.toml" || fail "the folder is not in the configuration"
# The service logs "watching ..." for the new folder before "configuration reloaded": wait for both.
for _ in $(seq 100); do grep -q "configuration reloaded" "$work/service.log" && break; sleep 0.1; done
grep -q "configuration reloaded" "$work/service.log" || fail "the service did not reload"
grep -q "watching.*Pictures/Shared" "$work/service.log" || fail "the service does not watch the new folder"
ok "the guardian watches another folder of the child's: $out"
out=$(as_guardian "$q" release 1 --user "$child") || fail "guardian release: $out"
[ "$(stat -c %U "/home/$child/Downloads/card.png")" = "$child" ] || fail "the released card is not the child's"
ok "the guardian released it, back to the child, owned by the child: $out"
out=$(runuser -u nobody -- "$q" list --user "$child" 2>&1) && fail "another account could list: $out"
ok "another account is refused: $out"
exit 0
