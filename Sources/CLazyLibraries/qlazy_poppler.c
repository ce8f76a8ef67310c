/* Written by scripts/lazy-libraries.py: do not edit. Poppler (glib) opened at the first call. */
#include "qlazy_common.h"
#define POPPLER_GLIB_STATIC_DEFINE
#pragma GCC visibility push(hidden)
#include <poppler.h>
#pragma GCC visibility pop

static const char *const qlazy_poppler_names[] = { "libpoppler-glib.so.8" };
static void *qlazy_poppler_handles[1];
static __typeof__(poppler_document_get_n_pages) *qlazy_poppler_poppler_document_get_n_pages;
static __typeof__(poppler_document_get_page) *qlazy_poppler_poppler_document_get_page;
static __typeof__(poppler_document_new_from_fd) *qlazy_poppler_poppler_document_new_from_fd;
static __typeof__(poppler_error_quark) *qlazy_poppler_poppler_error_quark;
static __typeof__(poppler_get_version) *qlazy_poppler_poppler_get_version;
static __typeof__(poppler_page_free_image_mapping) *qlazy_poppler_poppler_page_free_image_mapping;
static __typeof__(poppler_page_get_image_mapping) *qlazy_poppler_poppler_page_get_image_mapping;
static __typeof__(poppler_page_get_size) *qlazy_poppler_poppler_page_get_size;
static __typeof__(poppler_page_render) *qlazy_poppler_poppler_page_render;

static pthread_once_t qlazy_poppler_once = PTHREAD_ONCE_INIT;
static char qlazy_poppler_error[512];

static void qlazy_poppler_open(void) {
    if (!qlazy_open_all(qlazy_poppler_names, qlazy_poppler_handles, 1, qlazy_poppler_error, sizeof qlazy_poppler_error)) return;
    if (!(qlazy_poppler_poppler_document_get_n_pages = (__typeof__(poppler_document_get_n_pages) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_document_get_n_pages", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
    if (!(qlazy_poppler_poppler_document_get_page = (__typeof__(poppler_document_get_page) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_document_get_page", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
    if (!(qlazy_poppler_poppler_document_new_from_fd = (__typeof__(poppler_document_new_from_fd) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_document_new_from_fd", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
    if (!(qlazy_poppler_poppler_error_quark = (__typeof__(poppler_error_quark) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_error_quark", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
    if (!(qlazy_poppler_poppler_get_version = (__typeof__(poppler_get_version) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_get_version", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
    if (!(qlazy_poppler_poppler_page_free_image_mapping = (__typeof__(poppler_page_free_image_mapping) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_page_free_image_mapping", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
    if (!(qlazy_poppler_poppler_page_get_image_mapping = (__typeof__(poppler_page_get_image_mapping) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_page_get_image_mapping", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
    if (!(qlazy_poppler_poppler_page_get_size = (__typeof__(poppler_page_get_size) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_page_get_size", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
    if (!(qlazy_poppler_poppler_page_render = (__typeof__(poppler_page_render) *)qlazy_symbol(qlazy_poppler_handles[0], "poppler_page_render", qlazy_poppler_error, sizeof qlazy_poppler_error))) return;
}

__attribute__((visibility("default"))) const char *qlazy_load_poppler(void) {
    pthread_once(&qlazy_poppler_once, qlazy_poppler_open);
    return qlazy_poppler_error[0] ? qlazy_poppler_error : NULL;
}

__attribute__((visibility("default"))) void *qlazy_poppler_library(void) {
    return qlazy_load_poppler() ? NULL : qlazy_poppler_handles[0];
}

int poppler_document_get_n_pages(PopplerDocument *a0) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_document_get_n_pages", qlazy_poppler_error);
    return qlazy_poppler_poppler_document_get_n_pages(a0);
}
PopplerPage * poppler_document_get_page(PopplerDocument *a0, int a1) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_document_get_page", qlazy_poppler_error);
    return qlazy_poppler_poppler_document_get_page(a0, a1);
}
PopplerDocument * poppler_document_new_from_fd(int a0, const char *a1, GError **a2) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_document_new_from_fd", qlazy_poppler_error);
    return qlazy_poppler_poppler_document_new_from_fd(a0, a1, a2);
}
GQuark poppler_error_quark(void) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_error_quark", qlazy_poppler_error);
    return qlazy_poppler_poppler_error_quark();
}
const char * poppler_get_version(void) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_get_version", qlazy_poppler_error);
    return qlazy_poppler_poppler_get_version();
}
void poppler_page_free_image_mapping(GList *a0) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_page_free_image_mapping", qlazy_poppler_error);
    qlazy_poppler_poppler_page_free_image_mapping(a0);
}
GList * poppler_page_get_image_mapping(PopplerPage *a0) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_page_get_image_mapping", qlazy_poppler_error);
    return qlazy_poppler_poppler_page_get_image_mapping(a0);
}
void poppler_page_get_size(PopplerPage *a0, double *a1, double *a2) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_page_get_size", qlazy_poppler_error);
    qlazy_poppler_poppler_page_get_size(a0, a1, a2);
}
void poppler_page_render(PopplerPage *a0, cairo_t *a1) {
    if (qlazy_load_poppler()) qlazy_missing("poppler_page_render", qlazy_poppler_error);
    qlazy_poppler_poppler_page_render(a0, a1);
}
