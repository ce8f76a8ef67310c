#define _GNU_SOURCE
#include "qsys_crash.h"
#include "qsys_signal_chain.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static char slot_paths[QSYS_CRASH_SLOTS][QSYS_CRASH_PATH_MAX];
static atomic_int slot_used[QSYS_CRASH_SLOTS];
static int journal = -1;
static const int fatal_signals[QSYS_FATAL_COUNT] = QSYS_FATAL_SIGNALS;
#define FATAL_COUNT ((size_t)QSYS_FATAL_COUNT)
static struct sigaction previous[FATAL_COUNT];
/* The handler's own stack: a stack overflow (SIGSEGV) leaves none to run on. */
static char alternate_stack[64 * 1024];

static void on_fatal_signal(int signal_number, siginfo_t *info, void *context) {
    int saved = errno;
    if (journal >= 0) {
        for (int i = 0; i < QSYS_CRASH_SLOTS; i++) {
            /* 2: the path is complete (1 while it is being written). */
            if (atomic_load(&slot_used[i]) != 2) continue;
            qsys_write_all(journal, slot_paths[i], strnlen(slot_paths[i], QSYS_CRASH_PATH_MAX));
            qsys_write_all(journal, "\n", 1);
        }
        fsync(journal);
    }
    qsys_chain_fatal_signal(signal_number, info, context, fatal_signals, previous, FATAL_COUNT, saved);
}

int qsys_crash_journal_install(int journal_fd) {
    journal = journal_fd;
    return qsys_install_fatal_handler(on_fatal_signal, alternate_stack, sizeof alternate_stack, fatal_signals, previous, FATAL_COUNT);
}

int qsys_crash_inflight_add(const char *path) {
    for (int i = 0; i < QSYS_CRASH_SLOTS; i++) {
        int expected = 0;
        if (!atomic_compare_exchange_strong(&slot_used[i], &expected, 1)) continue;
        strncpy(slot_paths[i], path, QSYS_CRASH_PATH_MAX - 1);
        slot_paths[i][QSYS_CRASH_PATH_MAX - 1] = 0;
        atomic_store(&slot_used[i], 2);
        return i;
    }
    return -1;
}

void qsys_crash_inflight_remove(int slot) {
    if (slot < 0 || slot >= QSYS_CRASH_SLOTS) return;
    atomic_store(&slot_used[slot], 0);
}
