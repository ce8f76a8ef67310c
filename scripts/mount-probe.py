#!/usr/bin/python3
"""Tries every way to mount a folder only this process sees, and says what the kernel answered.

    mount-probe.py [--no-unshare] TARGET_DIR

In a user and mount namespace of its own (unshare, as `unshare -r -m` makes; root: a mount
namespace alone), tries mount (a tmpfs on TARGET_DIR), the new mount API (fsopen, fsconfig,
fsmount, move_mount), open_tree (a bind clone moved onto TARGET_DIR), fspick, mount_setattr,
pivot_root (on a folder that does not exist: ENOENT unfiltered), and chroot (which must stay allowed). Prints one JSON object: each call's result
("ok" or the errno's name) and "mounted": how many mounts the namespace gained. x86_64 numbers.
Used by Tests/PAMModuleTests and scripts/attack-guardian.d (pam_quarantine, issue 26).
"""
import ctypes
import errno
import json
import os
import sys

SYS = {"mount": 165, "pivot_root": 155, "chroot": 161, "unshare": 272, "open_tree": 428, "move_mount": 429,
       "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442}
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
AT_FDCWD = -100
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def call(name, *args):
    """(result, 'ok' or the errno's name)."""
    converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = libc.syscall(ctypes.c_long(SYS[name]), *converted)
    if result < 0:
        return result, errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    return result, "ok"


def mounts():
    with open("/proc/self/mountinfo") as f:
        return len(f.readlines())


def main(argv):
    unshare = True
    if argv and argv[0] == "--no-unshare":
        unshare, argv = False, argv[1:]
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    target = os.path.abspath(argv[0]).encode()
    report = {}
    if unshare:
        uid, gid = os.getuid(), os.getgid()
        flags = CLONE_NEWNS if uid == 0 else CLONE_NEWNS | CLONE_NEWUSER
        _, report["unshare"] = call("unshare", flags)
        if report["unshare"] != "ok":
            print(json.dumps(report))
            return 1
        if uid != 0:
            for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        # Our own changes stay in this namespace.
        call("mount", b"none", b"/", None, ctypes.c_long(0x40000 | 0x4000), None)  # MS_PRIVATE | MS_REC
    before = mounts()
    _, report["mount"] = call("mount", b"none", target, b"tmpfs", 0, None)
    fs, report["fsopen"] = call("fsopen", b"tmpfs", 1)
    _, report["fsconfig"] = call("fsconfig", fs, 6, None, None, 0)  # FSCONFIG_CMD_CREATE
    mnt, report["fsmount"] = call("fsmount", fs, 1, 0)
    _, report["move_mount"] = call("move_mount", mnt, b"", AT_FDCWD, target, 4)  # MOVE_MOUNT_F_EMPTY_PATH
    tree, report["open_tree"] = call("open_tree", AT_FDCWD, os.path.dirname(target) or b"/", 1 | 0o2000000)  # OPEN_TREE_CLONE|CLOEXEC
    if tree >= 0:
        _, report["move_mount(open_tree)"] = call("move_mount", tree, b"", AT_FDCWD, target, 4)
    _, report["fspick"] = call("fspick", AT_FDCWD, target, 1)
    attr = (ctypes.c_uint64 * 4)()
    _, report["mount_setattr"] = call("mount_setattr", AT_FDCWD, target, 0, ctypes.byref(attr), ctypes.sizeof(attr))
    report["mounted"] = mounts() - before
    # Unfiltered: ENOENT (no such folder); filtered: EPERM.
    _, report["pivot_root"] = call("pivot_root", b"/nonexistent-quarantine-probe", b"/nonexistent-quarantine-probe")
    _, report["chroot"] = call("chroot", b"/")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
