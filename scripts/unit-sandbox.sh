#!/bin/bash
# Runs a command with more of the guardian unit's sandbox than setpriv gives, as systemd would
# apply it (root; a test and attack-guardian helper, never a deployment):
#   ProcSubset=pid + ProtectProc=invisible   a private mount namespace with a proc of subset=pid
#   SystemCallFilter=~@resources             those calls fail with EPERM (python3-seccomp)
# Usage: scripts/unit-sandbox.sh PROGRAM ARGS...   e.g. SERVICE_WRAPPER=scripts/unit-sandbox.sh make attack-guardian
exec unshare -m --propagation private bash -c '
mount -t proc -o subset=pid,hidepid=invisible proc /proc || exit 70
exec /usr/bin/python3 -c "
import errno, os, sys, seccomp
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for call in [\"ioprio_set\", \"mbind\", \"migrate_pages\", \"move_pages\", \"nice\", \"sched_setaffinity\", \"sched_setattr\", \"sched_setparam\",
             \"sched_setscheduler\", \"set_mempolicy\", \"set_mempolicy_home_node\", \"setpriority\", \"setrlimit\"]:
    try: f.add_rule(seccomp.ERRNO(errno.EPERM), call)
    except Exception: pass   # a call this libseccomp does not know
f.load()
os.execvp(sys.argv[1], sys.argv[1:])
" "$@"' _ "$@"
