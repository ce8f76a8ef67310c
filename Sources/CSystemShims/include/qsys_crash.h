#ifndef QSYS_CRASH_H
#define QSYS_CRASH_H

/// Which files were in flight when the process died of a fatal signal (issue 27: a kill is not a
/// crash). The agent registers each file it judges in its own process in a slot; a handler for
/// SIGSEGV, SIGBUS, SIGABRT, SIGILL and SIGFPE writes every registered path, one per line, to the
/// journal descriptor (write(2) only: async-signal-safe), then hands the signal to the handler
/// that was there before (the Swift runtime's backtracer) or the default action. A process that
/// vanishes without running it (SIGKILL, power loss, the OOM killer) writes nothing: nothing is
/// counted against its files.

/// Slots for paths in flight; a path longer than QSYS_CRASH_PATH_MAX - 1 bytes is cut.
#define QSYS_CRASH_SLOTS 64
#define QSYS_CRASH_PATH_MAX 4096

/// Installs the handlers, writing to `journal_fd` (open for appending). Returns 0, or -1 with errno.
int qsys_crash_journal_install(int journal_fd);
/// Registers `path` in a free slot; returns the slot, or -1 when every slot is taken.
int qsys_crash_inflight_add(const char *path);
/// Frees a slot returned by qsys_crash_inflight_add.
void qsys_crash_inflight_remove(int slot);

#endif
