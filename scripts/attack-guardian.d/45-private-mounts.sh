# Sourced by scripts/attack-guardian.sh: a folder only the child sees (issue 26, "A private mount").
# 'guardian enable' installed pam_quarantine (the driver put the built module beside the program):
# every session the child opens through PAM (login, su, ssh, cron, at, systemd's user manager)
# runs without the mount system calls. The child's attempts run in such sessions (su, or a
# cron-like stack opened by scripts/pam-session.py with the real libpam); as_child (runuser -u,
# no PAM session) is root's tool, not the child's.

# as_child_session "shell command": su's PAM stack (common-session), a non-login shell (as cron and
# scripts use su -s); as_child_login "shell command": su - (a login shell).
as_child_session() { su -s /bin/bash "$child" -c "cd && $1"; }
as_child_login() { su - "$child" -c "$1"; }
probe_py=$here/mount-probe.py
pam_session_py=$here/pam-session.py
cp "$probe_py" "$pam_session_py" "$work/" && chmod 755 "$work/mount-probe.py" "$work/pam-session.py"

if ! grep -q pam_quarantine /etc/pam.d/common-session 2>/dev/null; then
    attempt "guardian enable adds pam_quarantine to the PAM session stacks" through "$(grep -i 'private mounts' "$work/enable.log" | head -2 | tr '\n' ' ')"
else
    attempt "guardian enable adds pam_quarantine to the PAM session stacks" held "$(grep -c pam_quarantine /etc/pam.d/common-session /etc/pam.d/common-session-noninteractive | tr '\n' ' ')"
fi

# The attempt of the issue: a tmpfs over ~/Downloads in a user namespace of the child's own, a card saved there.
private_mount_attempt() {
    local how=$1 out
    out=$($how "unshare -r -m bash -c \"mount -t tmpfs none '$chome/Downloads' && '$q' testcard '$chome/Downloads/private.png' >/dev/null && sleep 3 && sha256sum < '$chome/Downloads/private.png'\"" 2>&1)
    if [ "${out%% *}" = "$card_sha" ]; then attempt "a tmpfs mounted over ~/Downloads in the child's own user namespace ($2)" through "the card stayed readable there"
    else attempt "a tmpfs mounted over ~/Downloads in the child's own user namespace ($2)" held "$(grep -m1 -i -e denied -e 'not permitted' -e refused <<< "$out" | head -c 100)"; fi
}
# The control, not counted: the same as the child without a PAM session (runuser -u, root's tool,
# which the child cannot use), so without the filter: the attempt is real.
as_child_no_session() { runuser -u "$child" -- bash -c "cd && $1"; }
out=$(as_child_no_session "unshare -r -m bash -c \"mount -t tmpfs none '$chome/Downloads' && echo mounted\"" 2>&1)
echo "control (not counted): a tmpfs over ~/Downloads in a user namespace, as the child WITHOUT a PAM session: ${out:0:80}"
private_mount_attempt as_child_login "a login session, su -"
private_mount_attempt as_child_session "su -s, as cron-like scripts"

# The filter keeps user namespaces: unshare -r -m itself still works (browsers' sandboxes need it).
if out=$(as_child_session "unshare -r -m sh -c 'echo in-namespace'" 2>&1) && [ "$out" = in-namespace ]; then
    attempt "pam_quarantine takes user namespaces from the child (unshare -r -m)" held "unshare -r -m works"
else
    attempt "pam_quarantine takes user namespaces from the child (unshare -r -m)" through "$out"
fi

# Every call of the mount family, in a user and mount namespace of the child's own.
mount_family_attempt() {
    local out
    out=$($1 "/usr/bin/python3 '$work/mount-probe.py' '$chome/Downloads'" 2>&1)
    if python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if r.get("mounted")==0 and all(r.get(k)=="EPERM" for k in ("mount","fsopen","fsconfig","fsmount","move_mount","open_tree","fspick","mount_setattr","pivot_root")) else 1)' "$out" 2>/dev/null; then
        attempt "fsopen/fsmount/move_mount, open_tree, fspick, mount_setattr, pivot_root in the child's own namespace ($2)" held "every call EPERM, nothing mounted"
    else
        attempt "fsopen/fsmount/move_mount, open_tree, fspick, mount_setattr, pivot_root in the child's own namespace ($2)" through "$(head -c 300 <<< "$out")"
    fi
}
mount_family_attempt as_child_session "su -s"
echo "control (not counted): the same calls without a PAM session: $(as_child_no_session "/usr/bin/python3 '$work/mount-probe.py' '$chome/Downloads'" 2>&1 | head -c 300)"

# The non-interactive stack (cron, atd, systemd's user manager include common-session-noninteractive):
# a service file as Debian's cron writes it, the session opened with the real libpam.
cron_service=quarantine-attack-cron-$child
printf '# made by scripts/attack-guardian.d/45-private-mounts.sh (removed after)\n@include common-account\n@include common-session-noninteractive\nsession required pam_limits.so\n' > "/etc/pam.d/$cron_service"
as_cron() { /usr/bin/python3 "$work/pam-session.py" "$cron_service" "$child" -- /bin/bash -c "cd && $1"; }
mount_family_attempt as_cron "a cron-like session, common-session-noninteractive"
private_mount_attempt as_cron "a cron-like session"
rm -f "/etc/pam.d/$cron_service"

# FUSE: fusermount3 is setuid root and mounts in the child's own view, where the service (root
# without allow_other) cannot even read. The filter follows the child into setuid programs.
fuse_try() {
    $1 "/usr/bin/python3 -c '
import os, socket, subprocess, sys
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
r = subprocess.run([\"fusermount3\", \"-o\", \"rw,nosuid,nodev,fsname=private\", \"--\", sys.argv[1]], env=dict(os.environ, _FUSE_COMMFD=str(b.fileno())), pass_fds=[b.fileno()], capture_output=True, text=True)
print(\"mounted\" if r.returncode == 0 else \"refused: \" + r.stderr.strip())
if r.returncode == 0: subprocess.run([\"fusermount3\", \"-u\", \"-z\", sys.argv[1]])
' '${2:-$chome/Downloads}'" 2>&1
}
if command -v fusermount3 > /dev/null; then
    out=$(fuse_try as_child_session)
    if [ "$out" = mounted ]; then attempt "a FUSE mount over ~/Downloads with fusermount3 (su -s)" through "fusermount3 mounted it"
    else attempt "a FUSE mount over ~/Downloads with fusermount3 (su -s)" held "$(head -c 100 <<< "$out")"; fi
    as_child mkdir -p "$chome/.fuse-control"
    echo "control (not counted): fusermount3 as the child without a PAM session, on ~/.fuse-control: $(fuse_try as_child_no_session "$chome/.fuse-control" | head -c 100)"
else
    attempt "a FUSE mount over ~/Downloads with fusermount3" held "fusermount3 is not installed (apt-get install fuse3 to try it)"
fi

# The list made untrustworthy: the child's session is refused (fail closed), the guardian's still opens.
list=/etc/quarantine/protected-uids
for how in "group- and world-writable" "missing" "a line that is not a uid"; do
    cp -p "$list" "$work/protected-uids.saved"
    case $how in
        group*) chmod 666 "$list" ;;
        missing) rm -f "$list" ;;
        *) echo "12ab" >> "$list" ;;
    esac
    out=$(as_child_session "echo session-opened" 2>&1)
    guardian_out=$(su -s /bin/sh "$guardian" -c "echo session-opened" 2>&1)
    cp -p "$work/protected-uids.saved" "$list"
    if [ "$out" = session-opened ]; then attempt "the list $how: the child's session opens anyway" through "it opened"
    else attempt "the list $how: the child's session opens anyway" held "refused: $(tail -1 <<< "$out" | head -c 100)"; fi
    [ "$guardian_out" = session-opened ] || attempt "the list $how: the guardian's own session is refused too" through "$guardian_out"
done

# A process of the child's from before the module was in force (here: started without a PAM session)
# is named by guardian status, which does not claim everything is covered.
as_child sleep 20 & old_pid=$!
sleep 0.5
status_text=$("$q" guardian status --user "$child" 2>&1)
kill "$old_pid" 2>/dev/null; wait "$old_pid" 2>/dev/null
if grep -q "run without the filter" <<< "$status_text" && grep -q "closed for $child's sessions by pam_quarantine" <<< "$status_text"; then
    attempt "guardian status hides the child's processes that run without the filter" held "$(grep -o '[0-9]* of [^(]*processes run without the filter' <<< "$status_text")"
else
    attempt "guardian status hides the child's processes that run without the filter" through "$(grep 'private mounts' <<< "$status_text")"
fi

# Browsers keep their sandboxes under the filter (Chromium's and Firefox's use user namespaces and chroot).
page=$chome/page.html
as_child bash -c "echo '<p id=x>page</p><script>document.getElementById(\"x\").textContent += \" and script\";</script>' > '$page'"
if command -v chromium > /dev/null; then
    out=$(as_child_session "timeout 60 chromium --headless=new --disable-gpu --user-data-dir=\$HOME/.attack-chromium --dump-dom file://$page 2>/dev/null")
    if grep -q "page and script" <<< "$out"; then attempt "Chromium, with its sandbox, fails in the child's filtered session" held "it rendered the page"
    else attempt "Chromium, with its sandbox, fails in the child's filtered session" through "$(head -c 100 <<< "$out")"; fi
fi
if command -v firefox-esr > /dev/null; then
    # The screenshot is a new picture in the watched home: it may be held a moment while it is checked.
    out=$(as_child_session "mkdir -p \$HOME/.attack-firefox && timeout 120 firefox-esr --headless --no-remote --profile \$HOME/.attack-firefox --screenshot \$HOME/.attack-shot.png file://$page > \$HOME/.attack-firefox.log 2>&1; echo \"exit \$?\"" 2>&1)
    for _ in $(seq 50); do as_child test -s "$chome/.attack-shot.png" && break; sleep 0.2; done
    if as_child test -s "$chome/.attack-shot.png"; then attempt "Firefox ESR, with its sandbox, fails in the child's filtered session" held "it took the screenshot ($out)"
    else attempt "Firefox ESR, with its sandbox, fails in the child's filtered session" through "no screenshot: firefox $out: $(tail -2 "$chome/.attack-firefox.log" | tr '\n' ' ' | head -c 200)"; fi
fi
