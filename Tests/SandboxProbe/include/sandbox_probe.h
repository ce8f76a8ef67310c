#ifndef QUARANTINE_SANDBOX_PROBE_H
#define QUARANTINE_SANDBOX_PROBE_H
#include <stddef.h>

/// What a forked child does (see sandbox_probe.c).
enum {
    /// Enters the sandbox, then tries every forbidden and every harmless operation.
    SANDBOX_PROBE_ALL = 0,
    /// Tries every operation without entering the sandbox (the control: shows what the checks
    /// would see if qsys_enter_analysis_sandbox did nothing).
    SANDBOX_PROBE_WITHOUT_SANDBOX = 1,
    /// Enters the sandbox, then makes an x32 system call (x86_64 only): the filter kills it.
    SANDBOX_PROBE_X32_CALL = 2,
    /// Enters the sandbox, then makes an i386 system call through int 0x80 (x86_64 only).
    SANDBOX_PROBE_I386_CALL = 3,
    /// Starts a thread, enters the sandbox, seals the file system (Landlock), then tries to open
    /// files from the main thread, the thread started before and one started after.
    SANDBOX_PROBE_LANDLOCK = 4,
    /// The same without the seal (the control).
    SANDBOX_PROBE_LANDLOCK_CONTROL = 5,
    /// Under a filter that refuses Landlock's calls with EPERM (as a unit's SystemCallFilter=
    /// without them would), enters the sandbox and tries to seal.
    SANDBOX_PROBE_LANDLOCK_REFUSED = 6,
};

/// Forks a child that runs the probes of `mode` on the files in `directory` (it expects a file
/// "existing" holding "original", and a folder "folder"). The child writes one line per probe,
/// "name RESULT" (RESULT is OK, an errno name such as EPERM, or a value), into a pipe it holds
/// as descriptor 2; it holds one end of a socket pair as descriptor 3 and sends a memfd over it,
/// whose contents the parent adds as the line "parent-memfd <text>". Waits at most
/// `timeout_seconds` for the child (then kills it). Writes the report into `report` and
/// returns the child's wait status, or -1 with errno when the child could not be started.
int sandbox_probe_run(int mode, const char *directory, int timeout_seconds, char *report, size_t report_size);

#endif

/// Test only: forks a child that installs the crash journal on `journal_fd`, registers `path` (and
/// a second path it then removes again), and dies: `how` 1 dereferences NULL (SIGSEGV), 2 calls
/// abort() (SIGABRT), 3 is SIGKILLed by itself (no handler can run). Returns the signal that
/// ended the child, or -1.
int crash_journal_probe(int journal_fd, const char *path, int how);
