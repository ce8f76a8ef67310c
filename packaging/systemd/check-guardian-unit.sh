#!/usr/bin/env bash
# Checks the guardian service's system unit (quarantine-guardian@.service) and
# its packaging files on this machine, without installing anything:
#   1. systemd-sysusers and systemd-tmpfiles apply packaging/sysusers.d and
#      packaging/tmpfiles.d cleanly in a scratch root;
#   2. 'systemd-analyze verify' on the instance quarantine-guardian@alice.service
#      (with its home.conf drop-in) prints nothing and exits 0;
#   3. 'systemd-analyze security --offline=yes' on that instance: the table and
#      the overall exposure, which must not be above --max (default 2.5);
#   4. the same two for the worker launcher's unit
#      (quarantine-worker-launcher.service, which the instance Wants=): verify
#      silent, and its exposure not above --max either.
#
# Usage: packaging/systemd/check-guardian-unit.sh [--score] [--max N] [BINARY]
#   BINARY   the executable ExecStart= should name in the checked copy (verify
#            wants an existing one). Default: /usr/bin/quarantine when installed,
#            else .build/debug/quarantine of this source tree, made absolute.
#   --score  print only the guardian instance's exposure number (e.g. 1.0),
#            nothing else on stdout (the launcher's is still checked against --max).
#   --max N  fail (exit 1) when the exposure is above N.
# Exit status: 0 all good; 1 a check failed; 2 usage error.
#
# Nothing of the output of verify is filtered. If verify complains about the
# user 'quarantine' missing on this machine (systemd 252 does not, but other
# versions may), and the script runs as root, it creates the users with
# 'systemd-sysusers packaging/sysusers.d/quarantine.conf', says so, and retries.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
unit_template="$root/packaging/systemd/quarantine-guardian@.service"
dropin_template="$root/packaging/systemd/quarantine-guardian-home.conf.in"
launcher_unit="$root/packaging/systemd/quarantine-worker-launcher.service"
launcher="quarantine-worker-launcher.service"
sysusers="$root/packaging/sysusers.d/quarantine.conf"
tmpfiles="$root/packaging/tmpfiles.d/quarantine.conf"
instance="quarantine-guardian@alice.service"

score_only=no
max=2.5
binary=""
while (($#)); do
    case "$1" in
        --score) score_only=yes ;;
        --max) [[ $# -ge 2 ]] || { echo "check-guardian-unit: --max needs a number" >&2; exit 2; }
               max="$2"; shift ;;
        --max=*) max="${1#--max=}" ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "check-guardian-unit: unknown option $1" >&2; exit 2 ;;
        *) [[ -z "$binary" ]] || { echo "check-guardian-unit: one BINARY only" >&2; exit 2; }
           binary="$1" ;;
    esac
    shift
done
[[ "$max" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "check-guardian-unit: --max wants a number, not '$max'" >&2; exit 2; }

say() { [[ $score_only == yes ]] || printf '%s\n' "$*"; }
fail() { printf 'check-guardian-unit: %s\n' "$*" >&2; exit 1; }

command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed (Debian: apt-get install systemd)"

if [[ -z "$binary" ]]; then
    if [[ -x /usr/bin/quarantine ]]; then binary=/usr/bin/quarantine; else binary="$root/.build/debug/quarantine"; fi
fi
[[ "$binary" == /* ]] || binary="$PWD/$binary"
[[ -x "$binary" ]] || fail "$binary is not an executable file: build it first ('swift build') or name one as BINARY"

work="$(mktemp -d "${TMPDIR:-/tmp}/check-guardian-unit.XXXXXX")"
trap 'rm -rf -- "$work"' EXIT

# 1. sysusers.d and tmpfiles.d, applied to a scratch root (read from stdin:
#    with --root, a file argument would be looked up inside the root).
mkdir -p "$work/root/etc"
systemd-sysusers --root="$work/root" - < "$sysusers" > "$work/sysusers.log" 2>&1 \
    || { cat "$work/sysusers.log" >&2; fail "systemd-sysusers refused $sysusers"; }
grep -q '^quarantine:x:[0-9]*:[0-9]*:quarantine guardian service:/var/lib/quarantine:/usr/sbin/nologin$' "$work/root/etc/passwd" \
    || { cat "$work/root/etc/passwd" >&2; fail "systemd-sysusers did not create the user quarantine as expected"; }
grep -q '^quarantine-guardians:' "$work/root/etc/group" || fail "systemd-sysusers did not create the group quarantine-guardians"
systemd-tmpfiles --root="$work/root" --create - < "$tmpfiles" > "$work/tmpfiles.log" 2>&1 \
    || { cat "$work/tmpfiles.log" >&2; fail "systemd-tmpfiles refused $tmpfiles"; }
for spec in "var/lib/quarantine 700 quarantine" "run/quarantine 755 quarantine" "etc/quarantine 755 0"; do
    read -r path mode owner <<< "$spec"
    uid=$([[ $owner == quarantine ]] && awk -F: '$1 == "quarantine" { print $3 }' "$work/root/etc/passwd" || echo "$owner")
    [[ "$(stat -c '%a %u' "$work/root/$path")" == "$mode $uid" ]] \
        || fail "systemd-tmpfiles made /$path $(stat -c '%a uid %u' "$work/root/$path"), wanted $mode uid $uid"
done
say "sysusers.d and tmpfiles.d: apply cleanly (scratch root)"

# 2. The instance as it would be installed, with ExecStart= pointing at $binary
#    and the drop-in 'quarantine guardian enable --user alice' would write.
mkdir -p "$work/units/$instance.d"
sed "s|/usr/bin/quarantine|$binary|g" "$unit_template" > "$work/units/$instance"
sed "s|@HOME@|/home/alice|" "$dropin_template" > "$work/units/$instance.d/home.conf"
sed "s|/usr/bin/quarantine|$binary|g" "$launcher_unit" > "$work/units/$launcher"

# Documentation=man:quarantine(1): verify runs man(1) on it. When the page is
# not installed, the one in packaging/man is offered through MANPATH (so the
# reference is still checked, not skipped).
if ! man -w quarantine >/dev/null 2>&1 && [[ -f "$root/packaging/man/quarantine.1" ]]; then
    mkdir -p "$work/man/man1"
    ln -s "$root/packaging/man/quarantine.1" "$work/man/man1/quarantine.1"
    export MANPATH="$work/man"
fi

verify() {
    local status=0
    verify_output="$(cd "$work/units" && systemd-analyze verify "$work/units/$instance" "$work/units/$launcher" 2>&1)" || status=$?
    [[ $status -eq 0 && -z "$verify_output" ]]
}
if ! verify; then
    if grep -qiE "user.*quarantine|quarantine.*(user|group)|Failed to resolve (user|group)" <<< "$verify_output" \
       && [[ $EUID -eq 0 ]] && ! getent passwd quarantine >/dev/null; then
        echo "check-guardian-unit: verify wants the user 'quarantine', which this machine lacks:" >&2
        echo "  running systemd-sysusers $sysusers (creates the system user and groups), then verifying again" >&2
        systemd-sysusers "$sysusers" >&2
        verify || { printf '%s\n' "$verify_output" >&2; fail "systemd-analyze verify $instance failed"; }
    else
        printf '%s\n' "$verify_output" >&2
        fail "systemd-analyze verify $instance failed (output above)"
    fi
fi
say "systemd-analyze verify $instance $launcher: OK (no output, exit 0)"

# 3. The exposure assessment, offline (no service manager needed).
assess() { # unit -> sets table and score
    table="$(cd "$work/units" && SYSTEMD_COLORS=0 systemd-analyze security --offline=yes --no-pager "$work/units/$1" 2>&1)" \
        || { printf '%s\n' "$table" >&2; fail "systemd-analyze security $1 failed"; }
    local line
    line="$(grep -E 'Overall exposure level for ' <<< "$table" | tail -n 1)"
    score="$(sed -nE 's/.*Overall exposure level for [^:]*: ([0-9]+(\.[0-9]+)?).*/\1/p' <<< "$line")"
    [[ -n "$score" ]] || { printf '%s\n' "$table" >&2; fail "no overall exposure level in the output of systemd-analyze security $1"; }
}
assess "$instance"
guardian_score=$score
if [[ $score_only == yes ]]; then
    printf '%s\n' "$score"
else
    printf '%s\n' "$table"
    printf '\nexposure: %s (at most %s allowed)\n' "$score" "$max"
fi

# 4. The worker launcher's unit.
assess "$launcher"
launcher_score=$score
if [[ $score_only == no ]]; then
    printf '\n%s\n' "$table"
    printf '\nworker launcher exposure: %s (at most %s allowed)\n' "$launcher_score" "$max"
fi
if awk -v s="$guardian_score" -v m="$max" 'BEGIN { exit !(s > m) }'; then
    fail "exposure $guardian_score is above $max"
fi
if awk -v s="$launcher_score" -v m="$max" 'BEGIN { exit !(s > m) }'; then
    fail "the worker launcher's exposure $launcher_score is above $max"
fi
