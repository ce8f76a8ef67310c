#!/bin/bash
# The main suite's time against the share of the machine it gets (make suite-speed; issue 27).
#
# The suite keeps both cores busy from its first second to its last few, so its time is its CPU
# over what the machine gives it: a host that takes a fifth of each core (steal, in its busy
# hours) makes it a quarter slower. This runs `make test` once for each share, in a CPU cgroup
# held to that share of one CPU (200 = both cores, no hold), and prints the suite's own time
# ("the main suite, both parts"), the CPU used meanwhile (the cgroup's, sampled every 0.25 s and
# read between the suite's start and end that `make test` prints; FolderWatch's 25 tests run
# beside it, under 1 s of CPU) and the host's steal in all, so the curve can be measured again
# on any checkout and any machine.
#
# Usage (as root: cgroups): scripts/suite-speed.sh [SHARE...]     default: 200 180 160 140
# The build is expected to be done (make suite-speed builds first); each run's log is kept in
# $TMPDIR (default /tmp) as suite-speed.N.SHARE.log (N: the run's place in the list).
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "suite-speed: needs root (it makes CPU cgroups)" >&2; exit 2; }
shares=("$@"); [ ${#shares[@]} -gt 0 ] || shares=(200 180 160 140)
name=quarantine-suite-speed.$$
period=100000
logs=${TMPDIR:-/tmp}

# One cgroup holding the quota, and where its CPU use so far is read (the suite's is the difference
# between two samples): v2 (one hierarchy) or v1 (cpu, cpuacct).
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu > /sys/fs/cgroup/cgroup.subtree_control
    groups=(/sys/fs/cgroup/$name)
    limit() { if [ "$1" -ge 200 ]; then echo "max $period"; else echo "$(($1 * period / 100)) $period"; fi > "${groups[0]}/cpu.max"; }
    used() { awk '/^usage_usec/ { printf "%.1f", $2 / 1e6 }' "${groups[0]}/cpu.stat"; }
else
    groups=(/sys/fs/cgroup/cpu/$name /sys/fs/cgroup/cpuacct/$name)
    limit() {
        echo $period > "${groups[0]}/cpu.cfs_period_us"
        if [ "$1" -ge 200 ]; then echo -1; else echo $(($1 * period / 100)); fi > "${groups[0]}/cpu.cfs_quota_us"
    }
    used() { awk '{ printf "%.1f", $1 / 1e9 }' "${groups[1]}/cpuacct.usage"; }
fi
mkdir -p "${groups[@]}" || exit 1
trap 'for g in "${groups[@]}"; do rmdir "$g" 2>/dev/null; done' EXIT
steal() { awk '/^cpu / { print $9 }' /proc/stat; }

printf '%-8s %-10s %-14s %-8s %s\n' share "the suite" "its CPU" steal result
status=0
run=0
for share in "${shares[@]}"; do
    run=$((run + 1))
    [[ "$share" =~ ^[0-9]+$ ]] && [ "$share" -ge 10 ] || { echo "suite-speed: a share is a percentage of one CPU, 10 or more: $share" >&2; exit 2; }
    limit "$share"
    log=$logs/suite-speed.$run.$share.log samples=$logs/suite-speed.$run.$share.cpu
    before=$(steal)
    (while :; do echo "$(date +%s.%N) $(used)"; sleep 0.25; done) > "$samples" & sampler=$!
    # Every process make test starts stays in the cgroup (tests that make their own move only theirs).
    (for g in "${groups[@]}"; do echo $BASHPID > "$g/cgroup.procs"; done; exec make test) > "$log" 2>&1
    result=$?
    kill $sampler; wait $sampler 2>/dev/null
    suite=$(sed -n 's/^the main suite, both parts: \(.*\)$/\1/p' "$log")
    read -r from to < <(sed -n 's/^the main suite ran from \([0-9.]*\) to \([0-9.]*\) .*/\1 \2/p' "$log")
    cpu=$(awk -v from="${from:-0}" -v to="${to:-0}" '$1 <= from { a = $2 } $1 <= to { b = $2 } END { if (to > 0) printf "%.1f s", b - a; else print "?" }' "$samples")
    [ $result = 0 ] && outcome=passed || { outcome="FAILED (see $log)"; status=1; }
    printf '%-8s %-10s %-14s %-8s %s\n' "$share%" "${suite:-?}" "$cpu" "$(( $(steal) - before ))" "$outcome"
done
exit $status
