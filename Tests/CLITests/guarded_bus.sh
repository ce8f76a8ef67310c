#!/bin/bash
# The analysis service on a protected child's session bus (issue 31), with a real account: run by
# GuardedAnalysisBusTests as root, under 'flock /tmp/attack.lock' (it lists the account in
# /etc/quarantine/protected-uids, root's list of protected accounts, and puts the list back after).
#
# The child tries to get 'disabled' from io.github.quarantine.Analysis1 on its own session bus:
# its configuration asks for adult mode without analysis for applications, it sets the property,
# it stops the forwarder and starts its own with another configuration folder. Each line:
#     ok: WHAT          held
#     FAIL: WHAT        did not
#     limit: WHAT       what cannot hold on a bus the child owns (docs/dbus.md), shown, not failed
# Usage: guarded_bus.sh BINARY
set -uo pipefail
# A test process's children can inherit a signal mask that blocks SIGTERM (dispatch's threads
# block it): this script's children (the bus, the child's own program) must die of it as in a
# session, so the script starts again with nothing blocked.
if [ -z "${GUARDED_BUS_UNMASKED:-}" ]; then
    export GUARDED_BUS_UNMASKED=1
    exec /usr/bin/python3 -c 'import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv("/bin/bash", ["/bin/bash"] + sys.argv[1:])' "$0" "$@"
fi
[ "$(id -u)" = 0 ] || { echo "guarded_bus.sh: run as root"; exit 2; }
q=$(realpath "$1")
child=qgb$RANDOM
list=/etc/quarantine/protected-uids
child_uid=
# Only this run's own line leaves the list: a snapshot put back would undo what another run
# (guardian_e2e.sh's 'guardian enable' and 'disable', not under this lock) changed meanwhile, and
# leave a removed account's uid protected for the next account given it.
drop_own_line() { [ -n "$child_uid" ] && [ -f "$list" ] && sed -i -e "/^${child_uid}\t# ${child}\$/d" -e '/^$/d' "$list"; }
cleanup() {
    pkill -KILL -u "$child" 2>/dev/null
    drop_own_line
    userdel -r "$child" 2>/dev/null
}
trap cleanup EXIT
useradd -m -s /bin/bash "$child" || { echo "FAIL: useradd"; exit 2; }
home=$(getent passwd "$child" | cut -d: -f6)
mkdir -p /etc/quarantine
child_uid=$(id -u "$child")
printf '\n%s\t# %s\n' "$child_uid" "$child" >> "$list"
chmod 644 "$list"

cat > "$home/session.sh" <<'EOF'
q=$1
name=io.github.quarantine.Analysis1
ask() { gdbus call --session --dest $name --object-path /io/github/quarantine/Analysis1 --method "$@" 2>&1; }
policy() { ask org.freedesktop.DBus.Properties.Get $name AnalysisPolicy; }
owner_pid() { gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus --method org.freedesktop.DBus.GetConnectionUnixProcessID $name 2>&1 | tr -dc 0-9 | cut -c3-; }
mkdir -p ~/.config/quarantine
# The child's own configuration asks for adult mode and no analysis for applications.
printf 'mode = "adult"\n[agent]\napp_analysis = false\n' > ~/.config/quarantine/config.toml
"$q" testcard --size 320x240 ~/card.jpg > /dev/null
"$q" agent 2> ~/agent.log & pid=$!
gdbus wait --session --timeout 30 $name || echo "no forwarder on the bus"
echo "owner-is-agent: $([ "$(owner_pid)" = "$pid" ] && echo yes || echo no)"
echo "policy-agent: $(policy)"
echo "analyze: $(ask $name.AnalyzeImage 3 3<~/card.jpg)"
echo "video: $(ask $name.AnalyzeVideo 3 3<~/card.jpg)"
echo "stream: $(ask $name.BeginStream p incoming)"
echo "set: $(ask org.freedesktop.DBus.Properties.Set $name AnalysisPolicy "<'disabled'>")"
echo "policy-after-set: $(policy)"
kill $pid; wait $pid; echo "agent-exit: $?"
# Its own forwarder, told to read another configuration folder.
XDG_CONFIG_HOME=/tmp HOME=/tmp "$q" session-forwarder 2>> ~/agent.log & pid=$!
gdbus wait --session --timeout 30 $name
echo "policy-own: $(policy)"
kill $pid; wait $pid; echo "forwarder-exit: $?"
# Any program of the child's can own the name on the child's own bus once it is free.
/usr/bin/python3 - <<'PY' & pid=$!
from gi.repository import Gio, GLib
XML = '<node><interface name="io.github.quarantine.Analysis1"><property name="AnalysisPolicy" type="s" access="read"/></interface></node>'
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
bus.register_object("/io/github/quarantine/Analysis1", Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0], None,
                    lambda *a: GLib.Variant("s", "disabled"), None)
Gio.bus_own_name_on_connection(bus, "io.github.quarantine.Analysis1", Gio.BusNameOwnerFlags.NONE, None, None)
GLib.MainLoop().run()
PY
gdbus wait --session --timeout 30 $name
echo "policy-replaced: $(policy)"
kill $pid; wait $pid 2> /dev/null
# Under the user unit (Type=notify, WatchdogSec=): READY=1, then WATCHDOG=1 each half period.
/usr/bin/python3 - ~/notify.sock > ~/notify.log <<'PY' & npid=$!
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(1)
end = time.time() + 5
while time.time() < end:
    try:
        print(s.recv(4096).decode().replace("\n", " "), flush=True)
    except socket.timeout:
        pass
PY
sleep 0.5
NOTIFY_SOCKET=$HOME/notify.sock WATCHDOG_USEC=1000000 "$q" agent 2>> ~/agent.log & pid=$!
sleep 3.5
# The unit's reload (ExecReload=kill -HUP): it asks the guardian service again and goes on.
kill -HUP $pid
sleep 0.5
echo "after-hup: $(policy) $(kill -0 $pid 2> /dev/null && echo alive)"
kill $pid; wait $pid
wait $npid
echo "notify: $(grep -c WATCHDOG=1 ~/notify.log) $(grep -c READY=1 ~/notify.log)"
# A forwarder left running when the session ends goes with its bus.
"$q" session-forwarder 2>> ~/agent.log &
gdbus wait --session --timeout 30 $name
echo "left-running: $!"
EOF
chmod 644 "$home/session.sh"
out=$(runuser -u "$child" -- env -i HOME="$home" PATH=/usr/bin:/bin dbus-run-session -- bash "$home/session.sh" "$q" 2>&1)
echo "$out" | sed 's/^/  | /'
line() { echo "$out" | grep "^$1: " | head -1 | cut -d' ' -f2-; }
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fi; }

check "'quarantine agent' on a protected account owns the name as the forwarder" '[ "$(line owner-is-agent)" = yes ] && grep -q "protected by a guardian service" "$home/agent.log"'
check "its policy is descriptive although the child's configuration says adult, app_analysis = false" '[ "$(line policy-agent)" = "(<'"'descriptive'"'>,)" ]'
# No guardian service runs in this test: pictures and videos are forwarded to it and fail so
# (GuardianAnalysisTests and attack-guardian's 70-session-bus.sh judge them with one running).
check "analyze is forwarded to the guardian service: Unavailable while none answers, saying why" '[[ "$(line analyze)" == *io.github.quarantine.Analysis1.Error.Unavailable*"guardian service cannot be asked"* ]]'
check "video is forwarded: a job object, as the agent answers" '[[ "$(line video)" == *"/io/github/quarantine/Analysis1/video/"* ]]'
check "a stream is forwarded to the guardian service too: Unavailable while none answers, saying why" '[[ "$(line stream)" == *io.github.quarantine.Analysis1.Error.Unavailable*"guardian service cannot be asked"* ]]'
check "the property cannot be set" '[[ "$(line set)" == *PropertyReadOnly* ]] && [ "$(line policy-after-set)" = "(<'"'descriptive'"'>,)" ]'
check "stopped by the child, it exits cleanly" '[ "$(line agent-exit)" = 0 ] && [ "$(line forwarder-exit)" = 0 ]'
check "a forwarder the child starts with another configuration folder says descriptive too" '[ "$(line policy-own)" = "(<'"'descriptive'"'>,)" ]'
notified=$(line notify)
check "under the user unit it says READY=1 and pings the watchdog (WatchdogSec=1 s: $notified)" '[ "${notified#* }" = 1 ] && [ "${notified% *}" -ge 3 ]'
check "a reload (SIGHUP) does not stop it" '[ "$(line after-hup)" = "(<'"'descriptive'"'>,) alive" ]'
left=$(line left-running)
sleep 2
check "a forwarder still running when the session's bus ends exits with it" '[ -n "$left" ] && ! kill -0 "$left" 2>/dev/null'
echo "limit: a program of the child's own that takes the free name answers $(line policy-replaced)"
# Control: the same account out of the list is not protected: the forwarder refuses to run.
drop_own_line
words=$(runuser -u "$child" -- env -i HOME="$home" PATH=/usr/bin:/bin DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent "$q" session-forwarder 2>&1)
status=$?
check "an account not protected is refused by session-forwarder (exit 2)" '[ $status = 2 ] && [[ "$words" == *"no guardian service protects this account"* ]]'
