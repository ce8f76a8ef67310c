#!/usr/bin/python3
"""Opens a PAM session with the real libpam, as su, cron or atd do, then runs a command in it.

    pam-session.py [--confdir DIR] [--caller USER] SERVICE USER -- COMMAND...

As root: pam_start(SERVICE, USER) (pam_start_confdir with --confdir: the service file is read
from DIR instead of /etc/pam.d), pam_open_session, then a child process takes USER's groups,
gid and uid (initgroups, setgid, setuid, as su does after its session) and runs COMMAND; the
session is closed when it ends. --caller USER: this process becomes USER before the session is
opened (a session opened by an unprivileged program). Exit status: COMMAND's, or 3 when the
session is refused (PAM's error on standard error), 2 for a usage error.
Used by Tests/PAMModuleTests and scripts/attack-guardian.d (pam_quarantine, issue 26).
"""
import ctypes
import ctypes.util
import os
import pwd
import sys

PAM_PROMPT_ECHO_OFF, PAM_PROMPT_ECHO_ON, PAM_ERROR_MSG, PAM_TEXT_INFO = 1, 2, 3, 4


class PamMessage(ctypes.Structure):
    _fields_ = [("msg_style", ctypes.c_int), ("msg", ctypes.c_char_p)]


class PamResponse(ctypes.Structure):
    _fields_ = [("resp", ctypes.c_char_p), ("resp_retcode", ctypes.c_int)]


CONV_FUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.POINTER(PamMessage)),
                             ctypes.POINTER(ctypes.POINTER(PamResponse)), ctypes.c_void_p)


class PamConv(ctypes.Structure):
    _fields_ = [("conv", CONV_FUNC), ("appdata_ptr", ctypes.c_void_p)]


libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.calloc.restype = ctypes.c_void_p
libc.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
libpam = ctypes.CDLL("libpam.so.0")
libpam.pam_strerror.restype = ctypes.c_char_p


@CONV_FUNC
def conversation(count, messages, responses, _data):
    """Shows the module's messages on standard error; answers no prompt (libpam frees the answers)."""
    answers = libc.calloc(count, ctypes.sizeof(PamResponse))
    if not answers:
        return 5  # PAM_BUF_ERR
    for i in range(count):
        message = messages[i].contents
        if message.msg_style in (PAM_ERROR_MSG, PAM_TEXT_INFO):
            sys.stderr.write((message.msg or b"").decode(errors="replace") + "\n")
    responses[0] = ctypes.cast(answers, ctypes.POINTER(PamResponse))
    return 0


def main(argv):
    confdir = caller = None
    while argv and argv[0].startswith("--"):
        if argv[0] == "--confdir" and len(argv) > 1:
            confdir, argv = argv[1], argv[2:]
        elif argv[0] == "--caller" and len(argv) > 1:
            caller, argv = argv[1], argv[2:]
        elif argv[0] == "--":
            break
        else:
            sys.stderr.write(__doc__)
            return 2
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write(__doc__)
        return 2
    service, user, command = argv[0], argv[1], argv[3:]
    account = pwd.getpwnam(user)
    if caller:
        other = pwd.getpwnam(caller)
        os.setgroups([])
        os.setgid(other.pw_gid)
        os.setuid(other.pw_uid)

    handle = ctypes.c_void_p()
    conv = PamConv(conversation, None)
    if confdir:
        status = libpam.pam_start_confdir(service.encode(), user.encode(), ctypes.byref(conv), confdir.encode(), ctypes.byref(handle))
    else:
        status = libpam.pam_start(service.encode(), user.encode(), ctypes.byref(conv), ctypes.byref(handle))
    if status != 0:
        sys.stderr.write(f"pam_start: {status}\n")
        return 3
    status = libpam.pam_open_session(handle, 0)
    if status != 0:
        sys.stderr.write(f"session refused: {libpam.pam_strerror(handle, status).decode()} ({status})\n")
        libpam.pam_end(handle, status)
        return 3
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child == 0:
        try:
            if os.getuid() == 0:
                os.initgroups(user, account.pw_gid)
                os.setgid(account.pw_gid)
                os.setuid(account.pw_uid)
            os.chdir(account.pw_dir if os.path.isdir(account.pw_dir) else "/")
            os.environ.update({"HOME": account.pw_dir, "USER": user, "LOGNAME": user})
            os.execvp(command[0], command)
        except OSError as error:
            sys.stderr.write(f"{command[0]}: {error}\n")
            os._exit(127)
    _, wait_status = os.waitpid(child, 0)
    libpam.pam_close_session(handle, 0)
    libpam.pam_end(handle, 0)
    return os.waitstatus_to_exitcode(wait_status) if os.WIFEXITED(wait_status) else 128 + os.WTERMSIG(wait_status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
