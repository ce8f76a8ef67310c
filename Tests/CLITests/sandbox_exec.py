#!/usr/bin/python3
"""Runs a command under the user unit's RestrictAddressFamilies=AF_UNIX, as systemd applies it.

    sandbox_exec.py PROGRAM ARGS...

systemd implements that setting as a seccomp filter on socket() and socketpair(): any family
but AF_UNIX fails with EAFNOSUPPORT. This applies the same filter (with no_new_privs, as
systemd does for an unprivileged service) and execs the program. Test helper only."""
import errno, os, socket, sys

import seccomp  # Debian: python3-seccomp

rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for call in ("socket", "socketpair"):
    rules.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), call, seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
rules.load()
os.execv(sys.argv[1], sys.argv[1:])
