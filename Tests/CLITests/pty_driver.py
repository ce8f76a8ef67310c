#!/usr/bin/env python3
"""Runs a command in a pseudo-terminal and answers its prompts in order, as a person would.

    pty_driver.py 'REGEX=>ANSWER' ... -- COMMAND ARGS...

Prints the whole terminal transcript, then exits with the command's exit status
(124 if a prompt never came within 20 seconds)."""
import os, pty, re, select, sys, time

split = sys.argv.index("--")
steps = [arg.split("=>", 1) for arg in sys.argv[1:split]]
command = sys.argv[split + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(command[0], command)
transcript, seen = b"", 0

def read_some(timeout):
    global transcript
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return True
    try:
        data = os.read(fd, 4096)
    except OSError:
        return False
    if not data:
        return False
    transcript += data
    return True

for pattern, answer in steps:
    deadline = time.time() + 20
    while not re.search(pattern.encode(), transcript[seen:]):
        if time.time() > deadline or not read_some(0.2) and not re.search(pattern.encode(), transcript[seen:]):
            if time.time() > deadline:
                sys.stdout.write(transcript.decode(errors="replace"))
                sys.stdout.write(f"\n[pty_driver: no prompt matching {pattern!r}]\n")
                os.kill(pid, 9)
                sys.exit(124)
    seen = len(transcript)
    os.write(fd, answer.encode() + b"\n")
while read_some(5):
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(transcript.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
