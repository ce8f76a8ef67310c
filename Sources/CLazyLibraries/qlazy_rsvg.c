/* Written by scripts/lazy-libraries.py: do not edit. librsvg opened at the first call. */
#include "qlazy_common.h"
#pragma GCC visibility push(hidden)
#include <librsvg/rsvg.h>
#pragma GCC visibility pop

static const char *const qlazy_rsvg_names[] = { "librsvg-2.so.2" };
static void *qlazy_rsvg_handles[1];
static __typeof__(rsvg_handle_get_intrinsic_dimensions) *qlazy_rsvg_rsvg_handle_get_intrinsic_dimensions;
static __typeof__(rsvg_handle_get_intrinsic_size_in_pixels) *qlazy_rsvg_rsvg_handle_get_intrinsic_size_in_pixels;
static __typeof__(rsvg_handle_new_from_data) *qlazy_rsvg_rsvg_handle_new_from_data;
static __typeof__(rsvg_handle_render_document) *qlazy_rsvg_rsvg_handle_render_document;
static __typeof__(rsvg_handle_set_dpi) *qlazy_rsvg_rsvg_handle_set_dpi;

static pthread_once_t qlazy_rsvg_once = PTHREAD_ONCE_INIT;
static char qlazy_rsvg_error[512];

static void qlazy_rsvg_open(void) {
    if (!qlazy_open_all(qlazy_rsvg_names, qlazy_rsvg_handles, 1, qlazy_rsvg_error, sizeof qlazy_rsvg_error)) return;
    if (!(qlazy_rsvg_rsvg_handle_get_intrinsic_dimensions = (__typeof__(rsvg_handle_get_intrinsic_dimensions) *)qlazy_symbol(qlazy_rsvg_handles[0], "rsvg_handle_get_intrinsic_dimensions", qlazy_rsvg_error, sizeof qlazy_rsvg_error))) return;
    if (!(qlazy_rsvg_rsvg_handle_get_intrinsic_size_in_pixels = (__typeof__(rsvg_handle_get_intrinsic_size_in_pixels) *)qlazy_symbol(qlazy_rsvg_handles[0], "rsvg_handle_get_intrinsic_size_in_pixels", qlazy_rsvg_error, sizeof qlazy_rsvg_error))) return;
    if (!(qlazy_rsvg_rsvg_handle_new_from_data = (__typeof__(rsvg_handle_new_from_data) *)qlazy_symbol(qlazy_rsvg_handles[0], "rsvg_handle_new_from_data", qlazy_rsvg_error, sizeof qlazy_rsvg_error))) return;
    if (!(qlazy_rsvg_rsvg_handle_render_document = (__typeof__(rsvg_handle_render_document) *)qlazy_symbol(qlazy_rsvg_handles[0], "rsvg_handle_render_document", qlazy_rsvg_error, sizeof qlazy_rsvg_error))) return;
    if (!(qlazy_rsvg_rsvg_handle_set_dpi = (__typeof__(rsvg_handle_set_dpi) *)qlazy_symbol(qlazy_rsvg_handles[0], "rsvg_handle_set_dpi", qlazy_rsvg_error, sizeof qlazy_rsvg_error))) return;
}

__attribute__((visibility("default"))) const char *qlazy_load_rsvg(void) {
    pthread_once(&qlazy_rsvg_once, qlazy_rsvg_open);
    return qlazy_rsvg_error[0] ? qlazy_rsvg_error : NULL;
}

__attribute__((visibility("default"))) void *qlazy_rsvg_library(void) {
    return qlazy_load_rsvg() ? NULL : qlazy_rsvg_handles[0];
}

void rsvg_handle_get_intrinsic_dimensions(RsvgHandle *a0, gboolean *a1, RsvgLength *a2, gboolean *a3, RsvgLength *a4, gboolean *a5, RsvgRectangle *a6) {
    if (qlazy_load_rsvg()) qlazy_missing("rsvg_handle_get_intrinsic_dimensions", qlazy_rsvg_error);
    qlazy_rsvg_rsvg_handle_get_intrinsic_dimensions(a0, a1, a2, a3, a4, a5, a6);
}
gboolean rsvg_handle_get_intrinsic_size_in_pixels(RsvgHandle *a0, gdouble *a1, gdouble *a2) {
    if (qlazy_load_rsvg()) qlazy_missing("rsvg_handle_get_intrinsic_size_in_pixels", qlazy_rsvg_error);
    return qlazy_rsvg_rsvg_handle_get_intrinsic_size_in_pixels(a0, a1, a2);
}
RsvgHandle * rsvg_handle_new_from_data(const guint8 *a0, gsize a1, GError **a2) {
    if (qlazy_load_rsvg()) qlazy_missing("rsvg_handle_new_from_data", qlazy_rsvg_error);
    return qlazy_rsvg_rsvg_handle_new_from_data(a0, a1, a2);
}
gboolean rsvg_handle_render_document(RsvgHandle *a0, cairo_t *a1, const RsvgRectangle *a2, GError **a3) {
    if (qlazy_load_rsvg()) qlazy_missing("rsvg_handle_render_document", qlazy_rsvg_error);
    return qlazy_rsvg_rsvg_handle_render_document(a0, a1, a2, a3);
}
void rsvg_handle_set_dpi(RsvgHandle *a0, double a1) {
    if (qlazy_load_rsvg()) qlazy_missing("rsvg_handle_set_dpi", qlazy_rsvg_error);
    qlazy_rsvg_rsvg_handle_set_dpi(a0, a1);
}
