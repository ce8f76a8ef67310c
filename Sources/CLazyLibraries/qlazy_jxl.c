/* Written by scripts/lazy-libraries.py: do not edit. libjxl opened at the first call. */
#include "qlazy_common.h"
#define JXL_STATIC_DEFINE
#pragma GCC visibility push(hidden)
#include <jxl/decode.h>
#pragma GCC visibility pop

static const char *const qlazy_jxl_names[] = { "libjxl.so." QLAZY_STR(JPEGXL_MAJOR_VERSION) "." QLAZY_STR(JPEGXL_MINOR_VERSION) };
static void *qlazy_jxl_handles[1];
static __typeof__(JxlDecoderCloseInput) *qlazy_jxl_JxlDecoderCloseInput;
static __typeof__(JxlDecoderCreate) *qlazy_jxl_JxlDecoderCreate;
static __typeof__(JxlDecoderDestroy) *qlazy_jxl_JxlDecoderDestroy;
static __typeof__(JxlDecoderFlushImage) *qlazy_jxl_JxlDecoderFlushImage;
static __typeof__(JxlDecoderGetBasicInfo) *qlazy_jxl_JxlDecoderGetBasicInfo;
static __typeof__(JxlDecoderImageOutBufferSize) *qlazy_jxl_JxlDecoderImageOutBufferSize;
static __typeof__(JxlDecoderProcessInput) *qlazy_jxl_JxlDecoderProcessInput;
static __typeof__(JxlDecoderSetImageOutBuffer) *qlazy_jxl_JxlDecoderSetImageOutBuffer;
static __typeof__(JxlDecoderSetInput) *qlazy_jxl_JxlDecoderSetInput;
static __typeof__(JxlDecoderSkipCurrentFrame) *qlazy_jxl_JxlDecoderSkipCurrentFrame;
static __typeof__(JxlDecoderSubscribeEvents) *qlazy_jxl_JxlDecoderSubscribeEvents;
static __typeof__(JxlDecoderVersion) *qlazy_jxl_JxlDecoderVersion;

static pthread_once_t qlazy_jxl_once = PTHREAD_ONCE_INIT;
static char qlazy_jxl_error[512];

static void qlazy_jxl_open(void) {
    if (!qlazy_open_all(qlazy_jxl_names, qlazy_jxl_handles, 1, qlazy_jxl_error, sizeof qlazy_jxl_error)) return;
    if (!(qlazy_jxl_JxlDecoderCloseInput = (__typeof__(JxlDecoderCloseInput) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderCloseInput", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderCreate = (__typeof__(JxlDecoderCreate) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderCreate", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderDestroy = (__typeof__(JxlDecoderDestroy) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderDestroy", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderFlushImage = (__typeof__(JxlDecoderFlushImage) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderFlushImage", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderGetBasicInfo = (__typeof__(JxlDecoderGetBasicInfo) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderGetBasicInfo", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderImageOutBufferSize = (__typeof__(JxlDecoderImageOutBufferSize) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderImageOutBufferSize", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderProcessInput = (__typeof__(JxlDecoderProcessInput) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderProcessInput", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderSetImageOutBuffer = (__typeof__(JxlDecoderSetImageOutBuffer) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderSetImageOutBuffer", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderSetInput = (__typeof__(JxlDecoderSetInput) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderSetInput", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderSkipCurrentFrame = (__typeof__(JxlDecoderSkipCurrentFrame) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderSkipCurrentFrame", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderSubscribeEvents = (__typeof__(JxlDecoderSubscribeEvents) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderSubscribeEvents", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
    if (!(qlazy_jxl_JxlDecoderVersion = (__typeof__(JxlDecoderVersion) *)qlazy_symbol(qlazy_jxl_handles[0], "JxlDecoderVersion", qlazy_jxl_error, sizeof qlazy_jxl_error))) return;
}

__attribute__((visibility("default"))) const char *qlazy_load_jxl(void) {
    pthread_once(&qlazy_jxl_once, qlazy_jxl_open);
    return qlazy_jxl_error[0] ? qlazy_jxl_error : NULL;
}

__attribute__((visibility("default"))) void *qlazy_jxl_library(void) {
    return qlazy_load_jxl() ? NULL : qlazy_jxl_handles[0];
}

void JxlDecoderCloseInput(JxlDecoder *a0) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderCloseInput", qlazy_jxl_error);
    qlazy_jxl_JxlDecoderCloseInput(a0);
}
JxlDecoder * JxlDecoderCreate(const JxlMemoryManager *a0) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderCreate", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderCreate(a0);
}
void JxlDecoderDestroy(JxlDecoder *a0) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderDestroy", qlazy_jxl_error);
    qlazy_jxl_JxlDecoderDestroy(a0);
}
JxlDecoderStatus JxlDecoderFlushImage(JxlDecoder *a0) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderFlushImage", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderFlushImage(a0);
}
JxlDecoderStatus JxlDecoderGetBasicInfo(const JxlDecoder *a0, JxlBasicInfo *a1) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderGetBasicInfo", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderGetBasicInfo(a0, a1);
}
JxlDecoderStatus JxlDecoderImageOutBufferSize(const JxlDecoder *a0, const JxlPixelFormat *a1, size_t *a2) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderImageOutBufferSize", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderImageOutBufferSize(a0, a1, a2);
}
JxlDecoderStatus JxlDecoderProcessInput(JxlDecoder *a0) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderProcessInput", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderProcessInput(a0);
}
JxlDecoderStatus JxlDecoderSetImageOutBuffer(JxlDecoder *a0, const JxlPixelFormat *a1, void *a2, size_t a3) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderSetImageOutBuffer", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderSetImageOutBuffer(a0, a1, a2, a3);
}
JxlDecoderStatus JxlDecoderSetInput(JxlDecoder *a0, const uint8_t *a1, size_t a2) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderSetInput", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderSetInput(a0, a1, a2);
}
JxlDecoderStatus JxlDecoderSkipCurrentFrame(JxlDecoder *a0) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderSkipCurrentFrame", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderSkipCurrentFrame(a0);
}
JxlDecoderStatus JxlDecoderSubscribeEvents(JxlDecoder *a0, int a1) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderSubscribeEvents", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderSubscribeEvents(a0, a1);
}
uint32_t JxlDecoderVersion(void) {
    if (qlazy_load_jxl()) qlazy_missing("JxlDecoderVersion", qlazy_jxl_error);
    return qlazy_jxl_JxlDecoderVersion();
}
