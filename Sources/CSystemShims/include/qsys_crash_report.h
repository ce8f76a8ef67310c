#ifndef QSYS_CRASH_REPORT_H
#define QSYS_CRASH_REPORT_H

/// A crash report on standard error for the analysis worker, whose crashes are otherwise silent:
/// a Swift runtime trap in optimised code (the standard library's, Foundation's), a libdispatch
/// client crash or an allocation failure is a bare `ud2` (SIGILL) with no message, the worker may
/// not dump core (RLIMIT_CORE 0, decoded pictures) and Swift's backtracer cannot run in its
/// sandbox (it execs a helper). On SIGSEGV, SIGBUS, SIGABRT, SIGILL or SIGFPE the handler writes,
/// with write(2) only, one line with the signal, its code, the faulting address and instruction
/// and the thread's name, then one line per return address as `module+0xoffset` (the modules
/// loaded when the handler was installed; `addr2line -f -e MODULE OFFSET` names the function),
/// then hands the signal to the earlier handler or the default action. The service relays the
/// worker's standard error into its own log.

/// Installs the handlers, writing to `fd`. Call it once every library is loaded (the module
/// table is taken then). Returns 0, or -1 with errno.
int qsys_crash_report_install(int fd);

/// Test only: the report the handler would write for `signal_number` at this call, into
/// `buffer` (at most `size` bytes, NUL-terminated); returns its length.
int qsys_crash_report_format(int signal_number, char *buffer, int size);

#endif
