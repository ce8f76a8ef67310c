#define _GNU_SOURCE
#include "qsys_crash_report.h"
#include "qsys_signal_chain.h"

#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <ucontext.h>
#include <unistd.h>

/* The modules loaded at install time: where each lies, and its file name (cut). */
#define MODULES 256
#define MODULE_NAME 160
struct module { uintptr_t low, high, bias; char name[MODULE_NAME]; };
static struct module modules[MODULES];
static int module_count = 0;
static int report_fd = -1;
static const int fatal_signals[QSYS_FATAL_COUNT] = QSYS_FATAL_SIGNALS;
#define FATAL_COUNT ((size_t)QSYS_FATAL_COUNT)
static struct sigaction previous[FATAL_COUNT];
static char alternate_stack[64 * 1024];
#define FRAMES 48

static int add_module(struct dl_phdr_info *info, size_t size, void *unused) {
    (void)size; (void)unused;
    if (module_count >= MODULES) return 1;
    uintptr_t low = UINTPTR_MAX, high = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
        uintptr_t end = start + info->dlpi_phdr[i].p_memsz;
        if (start < low) low = start;
        if (end > high) high = end;
    }
    if (high == 0) return 0;
    struct module *m = &modules[module_count++];
    m->low = low;
    m->high = high;
    /* Offsets from the load bias: what addr2line takes (an absolute address for a fixed one). */
    m->bias = info->dlpi_addr;
    const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "(executable)";
    strncpy(m->name, name, MODULE_NAME - 1);
    m->name[MODULE_NAME - 1] = 0;
    return 0;
}

/* Appends text to a fixed buffer (no allocation: async-signal-safe). */
struct text { char *bytes; int size; int length; };

static void put(struct text *t, const char *s) {
    if (t->size <= 0) return;
    while (*s && t->length < t->size - 1) t->bytes[t->length++] = *s++;
    t->bytes[t->length < t->size ? t->length : t->size - 1] = 0;
}

static void put_hex(struct text *t, uintptr_t value) {
    char digits[2 + 2 * sizeof value + 1];
    int n = 0;
    char reversed[2 * sizeof value];
    do { reversed[n++] = "0123456789abcdef"[value & 15]; value >>= 4; } while (value && n < (int)sizeof reversed);
    int k = 0;
    digits[k++] = '0'; digits[k++] = 'x';
    while (n > 0) digits[k++] = reversed[--n];
    digits[k] = 0;
    put(t, digits);
}

static void put_int(struct text *t, long value) {
    char digits[24];
    int n = 0;
    unsigned long magnitude = value < 0 ? (unsigned long)(-value) : (unsigned long)value;
    char reversed[22];
    do { reversed[n++] = (char)('0' + magnitude % 10); magnitude /= 10; } while (magnitude && n < (int)sizeof reversed);
    int k = 0;
    if (value < 0) digits[k++] = '-';
    while (n > 0) digits[k++] = reversed[--n];
    digits[k] = 0;
    put(t, digits);
}

static void put_address(struct text *t, uintptr_t address) {
    for (int i = 0; i < module_count; i++) {
        if (address < modules[i].low || address >= modules[i].high) continue;
        put(t, modules[i].name);
        put(t, "+");
        put_hex(t, address - modules[i].bias);
        return;
    }
    put_hex(t, address);
}

static const char *signal_name(int signal_number) {
    switch (signal_number) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    default: return "signal";
    }
}

/* The report: a header line, then the faulting instruction and the return addresses. */
static int format_report(int signal_number, siginfo_t *info, void *context, char *buffer, int size) {
    struct text t = { buffer, size, 0 };
    if (size > 0) buffer[0] = 0;
    put(&t, "crash: ");
    put(&t, signal_name(signal_number));
    put(&t, " (");
    put_int(&t, signal_number);
    put(&t, ") code ");
    put_int(&t, info ? info->si_code : 0);
    if (info && signal_number != SIGABRT) { put(&t, " address "); put_hex(&t, (uintptr_t)info->si_addr); }
    char thread[17] = { 0 };
    if (prctl(PR_GET_NAME, thread, 0, 0, 0) == 0) { put(&t, " in thread '"); put(&t, thread); put(&t, "'"); }
    put(&t, "\n");
#if defined(__x86_64__)
    if (context) {
        ucontext_t *uc = (ucontext_t *)context;
        put(&t, "crash: at ");
        put_address(&t, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP]);
        put(&t, "\n");
    }
#else
    (void)context;
#endif
    void *frames[FRAMES];
    int count = backtrace(frames, FRAMES);
    for (int i = 0; i < count; i++) {
        put(&t, "crash: #");
        put_int(&t, i);
        put(&t, " ");
        put_address(&t, (uintptr_t)frames[i]);
        put(&t, "\n");
    }
    return t.length;
}

static char report[16 * 1024];

static void on_fatal_signal(int signal_number, siginfo_t *info, void *context) {
    int saved = errno;
    if (report_fd >= 0) {
        int length = format_report(signal_number, info, context, report, (int)sizeof report);
        qsys_write_all(report_fd, report, (size_t)length);
    }
    qsys_chain_fatal_signal(signal_number, info, context, fatal_signals, previous, FATAL_COUNT, saved);
}

int qsys_crash_report_install(int fd) {
    report_fd = fd;
    module_count = 0;
    dl_iterate_phdr(add_module, NULL);
    /* backtrace() loads libgcc_s on its first call: done here, not in the handler. */
    void *warm[2];
    (void)backtrace(warm, 2);
    return qsys_install_fatal_handler(on_fatal_signal, alternate_stack, sizeof alternate_stack, fatal_signals, previous, FATAL_COUNT);
}

int qsys_crash_report_format(int signal_number, char *buffer, int size) {
    if (module_count == 0) dl_iterate_phdr(add_module, NULL);
    return format_report(signal_number, NULL, NULL, buffer, size);
}
