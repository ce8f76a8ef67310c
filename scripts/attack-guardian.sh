#!/bin/bash
# make attack-guardian (root): the guardian deployment tried as its adversaries would (issue 26).
#
# Real accounts: a protected child, a guardian (member of quarantine-guardians) and another local
# account. 'guardian enable' for the child, then the worker launcher and the service, each started
# with its unit's command line and identity (User=, the unit's ambient capabilities, no_new_privs)
# but WITHOUT the unit's mount sandbox: the code itself must hold, the unit only adds layers. Then every file in
# scripts/attack-guardian.d/ is sourced in order; each attempt prints one line:
#     held: WHAT                 the promise held
#     GOT THROUGH: WHAT          the attacker got what the promise denies
# and the last line counts them. Exit 1 if anything got through (or the set-up failed: exit 2).
#
# Usage: scripts/attack-guardian.sh BINARY PHOTO [FILTER]   (FILTER: a regex on the attack files' names)
# pam_quarantine.so (pam/build.sh builds it beside the copied binary) is what 'guardian enable'
# installs for the child's sessions; the run takes it out of the PAM stacks at the end.
# SERVICE_WRAPPER=PROGRAM runs the service's and the launcher's setpriv under PROGRAM (e.g. one that
# emulates more of the units' sandbox: scripts/unit-sandbox.sh).
set -uo pipefail
[ "$(id -u)" = 0 ] || { echo "attack-guardian: run as root (it makes accounts and starts the system service)"; exit 2; }
binary=$(realpath "$1") photo_source=$2 filter=${3:-.}
here=$(cd "$(dirname "$0")" && pwd)
child=qac$RANDOM guardian=qag$RANDOM other=qao$RANDOM
work=$(mktemp -d /tmp/attack-guardian.XXXXXX) && chmod 755 "$work"
service_pid= launcher_pid=
held_count=0 through_count=0
results=$work/results.txt
: > "$results"

setup_fail() { echo "SETUP PROBLEM: $*"; [ -f "$work/service.log" ] && tail -30 "$work/service.log"; exit 2; }
cleanup() {
    stop_service
    stop_launcher
    # pam_quarantine: the child out of the list, and the module's lines out of the PAM stacks once
    # no account is listed ('guardian disable' does both); the module file if this run put it there.
    [ -n "${q:-}" ] && id "$child" > /dev/null 2>&1 && "$q" guardian disable --user "$child" > /dev/null 2>&1
    if [ -n "${pam_module_installed:-}" ] && ! grep -q pam_quarantine /etc/pam.d/common-session /etc/pam.d/common-session-noninteractive 2>/dev/null; then
        rm -f "$pam_module_installed"
    fi
    # The child's worker user, made by 'guardian enable' (a later account with the same uid would
    # otherwise find it).
    local worker_user
    worker_user=quarantine-w$(id -u "$child" 2>/dev/null)
    [ "$worker_user" != quarantine-w ] && { pkill -KILL -u "$worker_user" 2>/dev/null; userdel "$worker_user" 2>/dev/null; }
    for u in "$child" "$guardian" "$other"; do pkill -KILL -u "$u" 2>/dev/null; userdel -r "$u" 2>/dev/null; done
    rm -rf "/var/lib/quarantine/$child" "/etc/quarantine/$child.toml" "/run/quarantine/$child.sock" \
        "/etc/systemd/system/quarantine-guardian@$child.service.d"
    [ -n "${KEEP:-}" ] && echo "(kept $work)" || rm -rf "$work"
}
trap cleanup EXIT

# --- what the attack files may use -------------------------------------------------
as_child() { runuser -u "$child" -- "$@"; }
as_guardian() { runuser -u "$guardian" -- "$@"; }
as_other() { runuser -u "$other" -- "$@"; }
# The card's bytes written as the child (cp, so any name works: testcard picks the format by the name).
make_card() { as_child cp "$work/card.png" "$1"; }
# 0 when the child can read a file at PATH whose bytes are the test card.
child_sees_card() { [ "$(as_child cat -- "$1" 2>/dev/null | sha256sum | cut -d' ' -f1)" = "$card_sha" ]; }
# 0 as soon as the child can no longer read the card at PATH; 1 after SECONDS.
wait_gone_for_child() {
    local path=$1 deadline=$((SECONDS + ${2:-10}))
    while [ $SECONDS -lt $deadline ]; do child_sees_card "$path" || return 0; sleep 0.1; done
    child_sees_card "$path" && return 1 || return 0
}
# attempt "what" held|through ["detail"]
attempt() {
    local what=$1 result=$2 detail=${3:-}
    if [ "$result" = held ]; then
        held_count=$((held_count + 1)); echo "held: $what${detail:+ ($detail)}" | tee -a "$results"
    else
        through_count=$((through_count + 1)); echo "GOT THROUGH: $what${detail:+ ($detail)}" | tee -a "$results"
    fi
}
# attempt_card "what" PATH SECONDS: held when the child cannot read the card at PATH within SECONDS.
attempt_card() {
    local what=$1 path=$2 seconds=${3:-10} start=$SECONDS
    if wait_gone_for_child "$path" "$seconds"; then attempt "$what" held "unreadable after $((SECONDS - start)) s"
    else attempt "$what" through "the child still reads the card after $seconds s"; fi
}
# vaulted_id PATH: the id of the child's vault item whose original path is PATH (empty if none).
vaulted_id() {
    as_child "$q" list --json 2>/dev/null | RP_CARD="$1" /usr/bin/python3 -c 'import json,os,sys
ids=[json.loads(l)["id"] for l in sys.stdin if l.strip() and json.loads(l).get("original_path")==os.environ["RP_CARD"]]
print(max(ids) if ids else "")'
}
# wait_vaulted PATH SECONDS: 0 once the file at PATH is an item of the child's vault (judged, not
# only held); 1 after SECONDS. Sets vaulted to the item's id.
wait_vaulted() {
    local deadline=$((SECONDS + ${2:-60}))
    vaulted=
    while [ $SECONDS -lt $deadline ]; do vaulted=$(vaulted_id "$1"); [ -n "$vaulted" ] && return 0; sleep 0.5; done
    return 1
}
service_alive() { kill -0 "$service_pid" 2>/dev/null && timeout 10 "$q" guardian status --user "$child" > /dev/null 2>&1; }
start_service() {
    # The unit's own ambient capabilities, as setpriv spells them (+dac_read_search,...), which are
    # also its bounding set (CapabilityBoundingSet= lists the same).
    local caps exec_start
    caps=$(grep '^AmbientCapabilities=' "$unit_file" | cut -d= -f2 | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')
    exec_start=$(grep '^ExecStart=' "$unit_file" | sed "s|^ExecStart=/usr/bin/quarantine|$q|; s|%I|$child|")
    QUARANTINE_LOG_LEVEL=${SERVICE_LOG_LEVEL:-info} ${SERVICE_WRAPPER:-} setpriv --reuid=quarantine --regid=quarantine --init-groups --inh-caps=$caps --ambient-caps=$caps --bounding-set=-all,$caps --no-new-privs \
        $exec_start >> "$work/service.log" 2>&1 &
    service_pid=$!
    for _ in $(seq 150); do [ -S "/run/quarantine/$child.sock" ] && grep -q "watching" "$work/service.log" && return 0; sleep 0.1; done
    return 1
}
stop_service() {
    [ -n "$service_pid" ] || return 0
    kill "$service_pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$service_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$service_pid" 2>/dev/null; wait "$service_pid" 2>/dev/null
    service_pid=
}
restart_service() { stop_service; start_service; }
# The worker launcher as its unit starts it (User=, its ambient capabilities), before the service:
# the service's workers are its children, as the account's worker user.
start_launcher() {
    local caps exec_start user
    caps=$(grep '^AmbientCapabilities=' "$launcher_unit_file" | cut -d= -f2 | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')
    user=$(grep '^User=' "$launcher_unit_file" | cut -d= -f2)
    exec_start=$(grep '^ExecStart=' "$launcher_unit_file" | sed "s|^ExecStart=/usr/bin/quarantine|$q|")
    rm -f /run/quarantine/launcher.sock
    QUARANTINE_LOG_LEVEL=info ${SERVICE_WRAPPER:-} setpriv --reuid="$user" --regid="$user" --init-groups --inh-caps=$caps --ambient-caps=$caps --bounding-set=-all,$caps --no-new-privs \
        $exec_start >> "$work/launcher.log" 2>&1 &
    launcher_pid=$!
    for _ in $(seq 100); do [ -S /run/quarantine/launcher.sock ] && grep -q "listening" "$work/launcher.log" && return 0; sleep 0.1; done
    return 1
}
stop_launcher() {
    [ -n "$launcher_pid" ] || return 0
    kill "$launcher_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$launcher_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$launcher_pid" 2>/dev/null; wait "$launcher_pid" 2>/dev/null
    launcher_pid=
}

# --- set-up -------------------------------------------------------------------------
cp "$binary" "$work/quarantine" && chmod 755 "$work/quarantine"
cp "$photo_source" "$work/photo.png" && chmod 644 "$work/photo.png"
q=$work/quarantine photo=$work/photo.png
"$q" testcard "$work/card.png" > /dev/null && chmod 644 "$work/card.png" || setup_fail "testcard"
card_sha=$(sha256sum < "$work/card.png" | cut -d' ' -f1)
useradd -m -s /bin/bash "$child" && useradd -m -s /bin/bash "$guardian" && useradd -m -s /bin/bash "$other" || setup_fail "useradd"
chome=$(getent passwd "$child" | cut -d: -f6)
as_child mkdir -p "$chome/Downloads" "$chome/Desktop" "$chome/Documents" "$chome/Pictures" "$chome/Music"
# pam_quarantine.so, built beside the copied program from pam/: 'guardian enable' finds it there and
# installs it into libpam's folder and the PAM session stacks.
pam_module_installed=
module_folder=$(dirname "$(find /lib /usr/lib -maxdepth 3 -name pam_unix.so -path '*security*' 2>/dev/null | head -1)")
[ -f "$module_folder/pam_quarantine.so" ] || pam_module_installed=$module_folder/pam_quarantine.so
"$here/../pam/build.sh" "$work/pam_quarantine.so" || setup_fail "pam/build.sh (libpam0g-dev?)"
# Exit status 3: set up, not started (systemd is not PID 1 here).
printf '2468\n2468\n' | "$q" guardian enable --user "$child" --pin-stdin > "$work/enable.log" 2>&1; status=$?
[ $status = 0 ] || [ $status = 3 ] || { cat "$work/enable.log"; setup_fail "guardian enable (exit $status)"; }
usermod -aG quarantine-guardians "$guardian"
unit_file=/etc/systemd/system/quarantine-guardian@.service
[ -f "$unit_file" ] || unit_file=/usr/lib/systemd/system/quarantine-guardian@.service
launcher_unit_file=/etc/systemd/system/quarantine-worker-launcher.service
[ -f "$launcher_unit_file" ] || launcher_unit_file=/usr/lib/systemd/system/quarantine-worker-launcher.service
start_launcher || { tail -20 "$work/launcher.log"; setup_fail "the worker launcher did not start"; }
start_service || setup_fail "the service did not start"
echo "set-up: child $child (home $chome), guardian $guardian, other $other; service pid $service_pid, worker launcher pid $launcher_pid; work $work"

# The baseline: a plain card in Downloads is hidden.
make_card "$chome/Downloads/baseline.png"
attempt_card "baseline: a card saved in ~/Downloads" "$chome/Downloads/baseline.png" 10

for file in "$here"/attack-guardian.d/*.sh; do
    [[ $(basename "$file") =~ $filter ]] || continue
    echo "--- $(basename "$file")"
    # shellcheck disable=SC1090
    source "$file"
    kill -0 "$launcher_pid" 2>/dev/null || { attempt "the worker launcher survived $(basename "$file")" through "it is down; restarting it"; start_launcher || setup_fail "launcher restart"; }
    service_alive || { attempt "the service survived $(basename "$file")" through "it is down; restarting it"; restart_service || setup_fail "restart"; }
done

echo "--- service log (last 15 lines)"
tail -15 "$work/service.log"
echo "--- worker launcher log (last 8 lines)"
tail -8 "$work/launcher.log"
echo "$held_count held, $through_count got through"
[ "$through_count" = 0 ]
