/* Written by scripts/lazy-libraries.py: do not edit. cairo opened at the first call. */
#include "qlazy_common.h"
#pragma GCC visibility push(hidden)
#include <cairo.h>
#pragma GCC visibility pop

static const char *const qlazy_cairo_names[] = { "libcairo.so.2" };
static void *qlazy_cairo_handles[1];
static __typeof__(cairo_create) *qlazy_cairo_cairo_create;
static __typeof__(cairo_destroy) *qlazy_cairo_cairo_destroy;
static __typeof__(cairo_image_surface_create_for_data) *qlazy_cairo_cairo_image_surface_create_for_data;
static __typeof__(cairo_paint) *qlazy_cairo_cairo_paint;
static __typeof__(cairo_scale) *qlazy_cairo_cairo_scale;
static __typeof__(cairo_set_source_rgb) *qlazy_cairo_cairo_set_source_rgb;
static __typeof__(cairo_status) *qlazy_cairo_cairo_status;
static __typeof__(cairo_status_to_string) *qlazy_cairo_cairo_status_to_string;
static __typeof__(cairo_surface_destroy) *qlazy_cairo_cairo_surface_destroy;
static __typeof__(cairo_surface_flush) *qlazy_cairo_cairo_surface_flush;
static __typeof__(cairo_surface_status) *qlazy_cairo_cairo_surface_status;
static __typeof__(cairo_translate) *qlazy_cairo_cairo_translate;

static pthread_once_t qlazy_cairo_once = PTHREAD_ONCE_INIT;
static char qlazy_cairo_error[512];

static void qlazy_cairo_open(void) {
    if (!qlazy_open_all(qlazy_cairo_names, qlazy_cairo_handles, 1, qlazy_cairo_error, sizeof qlazy_cairo_error)) return;
    if (!(qlazy_cairo_cairo_create = (__typeof__(cairo_create) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_create", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_destroy = (__typeof__(cairo_destroy) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_destroy", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_image_surface_create_for_data = (__typeof__(cairo_image_surface_create_for_data) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_image_surface_create_for_data", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_paint = (__typeof__(cairo_paint) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_paint", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_scale = (__typeof__(cairo_scale) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_scale", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_set_source_rgb = (__typeof__(cairo_set_source_rgb) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_set_source_rgb", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_status = (__typeof__(cairo_status) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_status", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_status_to_string = (__typeof__(cairo_status_to_string) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_status_to_string", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_surface_destroy = (__typeof__(cairo_surface_destroy) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_surface_destroy", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_surface_flush = (__typeof__(cairo_surface_flush) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_surface_flush", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_surface_status = (__typeof__(cairo_surface_status) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_surface_status", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
    if (!(qlazy_cairo_cairo_translate = (__typeof__(cairo_translate) *)qlazy_symbol(qlazy_cairo_handles[0], "cairo_translate", qlazy_cairo_error, sizeof qlazy_cairo_error))) return;
}

__attribute__((visibility("default"))) const char *qlazy_load_cairo(void) {
    pthread_once(&qlazy_cairo_once, qlazy_cairo_open);
    return qlazy_cairo_error[0] ? qlazy_cairo_error : NULL;
}

__attribute__((visibility("default"))) void *qlazy_cairo_library(void) {
    return qlazy_load_cairo() ? NULL : qlazy_cairo_handles[0];
}

cairo_t * cairo_create(cairo_surface_t *a0) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_create", qlazy_cairo_error);
    return qlazy_cairo_cairo_create(a0);
}
void cairo_destroy(cairo_t *a0) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_destroy", qlazy_cairo_error);
    qlazy_cairo_cairo_destroy(a0);
}
cairo_surface_t * cairo_image_surface_create_for_data(unsigned char *a0, cairo_format_t a1, int a2, int a3, int a4) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_image_surface_create_for_data", qlazy_cairo_error);
    return qlazy_cairo_cairo_image_surface_create_for_data(a0, a1, a2, a3, a4);
}
void cairo_paint(cairo_t *a0) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_paint", qlazy_cairo_error);
    qlazy_cairo_cairo_paint(a0);
}
void cairo_scale(cairo_t *a0, double a1, double a2) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_scale", qlazy_cairo_error);
    qlazy_cairo_cairo_scale(a0, a1, a2);
}
void cairo_set_source_rgb(cairo_t *a0, double a1, double a2, double a3) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_set_source_rgb", qlazy_cairo_error);
    qlazy_cairo_cairo_set_source_rgb(a0, a1, a2, a3);
}
cairo_status_t cairo_status(cairo_t *a0) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_status", qlazy_cairo_error);
    return qlazy_cairo_cairo_status(a0);
}
const char * cairo_status_to_string(cairo_status_t a0) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_status_to_string", qlazy_cairo_error);
    return qlazy_cairo_cairo_status_to_string(a0);
}
void cairo_surface_destroy(cairo_surface_t *a0) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_surface_destroy", qlazy_cairo_error);
    qlazy_cairo_cairo_surface_destroy(a0);
}
void cairo_surface_flush(cairo_surface_t *a0) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_surface_flush", qlazy_cairo_error);
    qlazy_cairo_cairo_surface_flush(a0);
}
cairo_status_t cairo_surface_status(cairo_surface_t *a0) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_surface_status", qlazy_cairo_error);
    return qlazy_cairo_cairo_surface_status(a0);
}
void cairo_translate(cairo_t *a0, double a1, double a2) {
    if (qlazy_load_cairo()) qlazy_missing("cairo_translate", qlazy_cairo_error);
    qlazy_cairo_cairo_translate(a0, a1, a2);
}
