/* Private to CSystemShims (not under include/): what the fatal-signal handlers of qsys_crash.c
 * (the agent's crash journal) and qsys_crash_report.c (the worker's crash report) share. */
#ifndef QSYS_SIGNAL_CHAIN_H
#define QSYS_SIGNAL_CHAIN_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

/* The signals both handlers record: the ones a crash (or a Swift trap, SIGILL) raises. */
#define QSYS_FATAL_SIGNALS { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE }
#define QSYS_FATAL_COUNT 5

/* Writes all of `bytes` to `fd`, going on after EINTR and short writes; stops at an error.
 * Async-signal-safe. */
static inline void qsys_write_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, bytes, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        bytes += n;
        length -= (size_t)n;
    }
}

/* Once a handler has recorded a fatal signal: hands it on to the handler that was in place
 * before (restored, so whatever happens next is that one's), or to the default action. Returning
 * from a fault re-runs the faulting instruction under the default action; a signal sent by
 * raise() or abort() (si_code <= 0) is raised again. Async-signal-safe. */
static inline void qsys_chain_fatal_signal(int signal_number, siginfo_t *info, void *context, const int *signals,
                                           struct sigaction *previous, size_t count, int saved_errno) {
    for (size_t i = 0; i < count; i++) {
        if (signals[i] != signal_number) continue;
        sigaction(signal_number, &previous[i], NULL);
        if (previous[i].sa_flags & SA_SIGINFO) {
            if (previous[i].sa_sigaction) { errno = saved_errno; previous[i].sa_sigaction(signal_number, info, context); return; }
        } else if (previous[i].sa_handler != SIG_DFL && previous[i].sa_handler != SIG_IGN) {
            errno = saved_errno; previous[i].sa_handler(signal_number); return;
        }
    }
    errno = saved_errno;
    if (info == NULL || info->si_code <= 0) raise(signal_number);
}

/* Installs `handler` for each of the fatal `signals` on its own alternate stack (a stack overflow
 * leaves none to run on), keeping the handlers in place before in `previous`; -1 on failure. */
static inline int qsys_install_fatal_handler(void (*handler)(int, siginfo_t *, void *), char *stack, size_t stack_size,
                                             const int *signals, struct sigaction *previous, size_t count) {
    stack_t alternate = { .ss_sp = stack, .ss_size = stack_size, .ss_flags = 0 };
    if (sigaltstack(&alternate, NULL) != 0) return -1;
    for (size_t i = 0; i < count; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = handler;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        if (sigaction(signals[i], &action, &previous[i]) != 0) return -1;
    }
    return 0;
}

#endif
