#!/usr/bin/python3
"""Where the test suite's CPU goes, by program and verb (make suite-cpu; issue 27).

Runs the main suite (every test but FolderWatchTests, in one process, TEST_WIDTH at once) under
`strace -f -e trace=execve`, for each process's command line, with BSD process accounting on
(acct(2)), for each process's CPU, and joins the two by pid: a table of the programs the tests
start (`quarantine` by its verb, Python by its script), how many of them ran and the CPU they
used. strace slows the test process itself (its own row is inflated, the others are not), and
a few tests fail under it because strace changes what they check: `--seccomp-bpf` puts a seccomp
filter on every process it traces (the sandbox's control test and the PAM module's tests see one).
Their failures are listed, not fatal.

Usage (as root: acct(2) needs CAP_SYS_PACCT): scripts/suite-cpu.py BUNDLE [--width N] [--keep DIR]
"""
import argparse
import collections
import ctypes
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time


def compressed(value):
    """acct's comp_t: a 13-bit mantissa and a 3-bit base-8 exponent, in clock ticks."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def accounting(path):
    """pid -> CPU seconds from an acct v3 file (64-byte records)."""
    ticks = os.sysconf("SC_CLK_TCK")
    data = open(path, "rb").read()
    found = {}
    for offset in range(0, len(data) - 63, 64):
        record = data[offset:offset + 64]
        fields = struct.unpack("<BBHIIIIIIfHHHHHHHH", record[:48])
        if fields[1] != 3:
            continue
        pid, user, system = fields[6], fields[10], fields[11]
        found[pid] = (compressed(user) + compressed(system)) / ticks
    return found


def command_lines(prefix):
    """pid -> argv of the last successful execve in each strace -ff file."""
    found = {}
    for path in glob.glob(prefix + ".*"):
        try:
            pid = int(path.rsplit(".", 1)[1])
        except ValueError:
            continue
        last = None
        with open(path, errors="replace") as lines:
            for line in lines:
                if line.startswith("execve(") and line.rstrip().endswith("= 0"):
                    last = line
        if last:
            match = re.match(r'execve\("([^"]*)", \[(.*?)\]', last)
            if match:
                found[pid] = (match.group(1), re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(2)))
    return found


def label(program, argv, bundle):
    name = os.path.basename(program)
    if os.path.realpath(program) == os.path.realpath(bundle):
        return "the test process"
    if name in ("quarantine", "exe") and len(argv) > 1:
        return "quarantine " + argv[1]
    if name.startswith("python") and len(argv) > 1:
        script = next((a for a in argv[1:] if not a.startswith("-")), argv[1])
        return "python3 " + os.path.basename(script)
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", help="the built test bundle (quarantinePackageTests.xctest)")
    parser.add_argument("--width", type=int, default=6, help="tests at once (make test's TEST_WIDTH)")
    parser.add_argument("--keep", help="keep strace's files and the accounting file in this folder")
    parser.add_argument("--top", type=int, default=25, help="rows to print")
    options = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("suite-cpu: run as root (process accounting, acct(2), needs CAP_SYS_PACCT)")
    if not shutil.which("strace"):
        sys.exit("suite-cpu: strace is not installed (apt install strace)")
    folder = options.keep or tempfile.mkdtemp(prefix="suite-cpu.")
    os.makedirs(folder, exist_ok=True)
    accounting_file, prefix = os.path.join(folder, "acct"), os.path.join(folder, "exec")
    open(accounting_file, "wb").close()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(accounting_file.encode()) != 0:
        sys.exit(f"suite-cpu: acct({accounting_file}) failed: {os.strerror(ctypes.get_errno())}")
    environment = dict(os.environ, SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=str(options.width), NO_COLOR="1")
    started = time.monotonic()
    try:
        run = subprocess.run(["strace", "-f", "--seccomp-bpf", "-qq", "-e", "trace=execve", "-e", "signal=none", "-s", "300",
                              "-ff", "-o", prefix, options.bundle, "--testing-library", "swift-testing", "--skip", "FolderWatchTests"],
                             env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    finally:
        libc.acct(None)
    took = time.monotonic() - started
    cpu, lines = accounting(accounting_file), command_lines(prefix)
    rows = collections.defaultdict(lambda: [0, 0.0])
    for pid, (program, argv) in lines.items():
        if pid in cpu:
            row = rows[label(program, argv, options.bundle)]
            row[0] += 1
            row[1] += cpu[pid]
    total = sum(row[1] for row in rows.values())
    print(f"the main suite under strace: {took:.1f} s, {sum(r[0] for r in rows.values())} processes, {total:.1f} s of CPU")
    print(f"{'CPU':>8} {'processes':>9} {'each':>7}  program")
    for name, (count, seconds) in sorted(rows.items(), key=lambda item: -item[1][1])[:options.top]:
        print(f"{seconds:7.1f}s {count:9d} {seconds / count:6.3f}s  {name}")
    failed = [line for line in run.stdout.splitlines()
              if line.startswith("✘ Test ") and not line.startswith("✘ Test run") and "recorded an issue" not in line]
    print(f"tests: {run.stdout.strip().splitlines()[-1] if run.stdout.strip() else 'no output'}")
    for line in failed[:10]:
        print("  " + line[:200])
    if not options.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
