/* Written by scripts/lazy-libraries.py: do not edit. libheif opened at the first call. */
#include "qlazy_common.h"
#pragma GCC visibility push(hidden)
#include <libheif/heif.h>
#pragma GCC visibility pop

static const char *const qlazy_heif_names[] = { "libheif.so.1" };
static void *qlazy_heif_handles[1];
static __typeof__(heif_context_alloc) *qlazy_heif_heif_context_alloc;
static __typeof__(heif_context_free) *qlazy_heif_heif_context_free;
static __typeof__(heif_context_get_image_handle) *qlazy_heif_heif_context_get_image_handle;
static __typeof__(heif_context_get_list_of_top_level_image_IDs) *qlazy_heif_heif_context_get_list_of_top_level_image_IDs;
static __typeof__(heif_context_get_number_of_top_level_images) *qlazy_heif_heif_context_get_number_of_top_level_images;
static __typeof__(heif_context_get_primary_image_ID) *qlazy_heif_heif_context_get_primary_image_ID;
static __typeof__(heif_context_read_from_memory) *qlazy_heif_heif_context_read_from_memory;
static __typeof__(heif_decode_image) *qlazy_heif_heif_decode_image;
static __typeof__(heif_context_get_primary_image_handle) *qlazy_heif_heif_context_get_primary_image_handle;
static __typeof__(heif_get_version) *qlazy_heif_heif_get_version;
static __typeof__(heif_have_decoder_for_format) *qlazy_heif_heif_have_decoder_for_format;
static __typeof__(heif_image_get_height) *qlazy_heif_heif_image_get_height;
static __typeof__(heif_image_get_plane_readonly) *qlazy_heif_heif_image_get_plane_readonly;
static __typeof__(heif_image_get_width) *qlazy_heif_heif_image_get_width;
static __typeof__(heif_image_handle_get_height) *qlazy_heif_heif_image_handle_get_height;
static __typeof__(heif_image_handle_get_width) *qlazy_heif_heif_image_handle_get_width;
static __typeof__(heif_image_handle_release) *qlazy_heif_heif_image_handle_release;
static __typeof__(heif_image_release) *qlazy_heif_heif_image_release;

static pthread_once_t qlazy_heif_once = PTHREAD_ONCE_INIT;
static char qlazy_heif_error[512];

static void qlazy_heif_open(void) {
    if (!qlazy_open_all(qlazy_heif_names, qlazy_heif_handles, 1, qlazy_heif_error, sizeof qlazy_heif_error)) return;
    if (!(qlazy_heif_heif_context_alloc = (__typeof__(heif_context_alloc) *)qlazy_symbol(qlazy_heif_handles[0], "heif_context_alloc", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_context_free = (__typeof__(heif_context_free) *)qlazy_symbol(qlazy_heif_handles[0], "heif_context_free", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_context_get_image_handle = (__typeof__(heif_context_get_image_handle) *)qlazy_symbol(qlazy_heif_handles[0], "heif_context_get_image_handle", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_context_get_list_of_top_level_image_IDs = (__typeof__(heif_context_get_list_of_top_level_image_IDs) *)qlazy_symbol(qlazy_heif_handles[0], "heif_context_get_list_of_top_level_image_IDs", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_context_get_number_of_top_level_images = (__typeof__(heif_context_get_number_of_top_level_images) *)qlazy_symbol(qlazy_heif_handles[0], "heif_context_get_number_of_top_level_images", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_context_get_primary_image_ID = (__typeof__(heif_context_get_primary_image_ID) *)qlazy_symbol(qlazy_heif_handles[0], "heif_context_get_primary_image_ID", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_context_read_from_memory = (__typeof__(heif_context_read_from_memory) *)qlazy_symbol(qlazy_heif_handles[0], "heif_context_read_from_memory", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_decode_image = (__typeof__(heif_decode_image) *)qlazy_symbol(qlazy_heif_handles[0], "heif_decode_image", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_context_get_primary_image_handle = (__typeof__(heif_context_get_primary_image_handle) *)qlazy_symbol(qlazy_heif_handles[0], "heif_context_get_primary_image_handle", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_get_version = (__typeof__(heif_get_version) *)qlazy_symbol(qlazy_heif_handles[0], "heif_get_version", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_have_decoder_for_format = (__typeof__(heif_have_decoder_for_format) *)qlazy_symbol(qlazy_heif_handles[0], "heif_have_decoder_for_format", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_image_get_height = (__typeof__(heif_image_get_height) *)qlazy_symbol(qlazy_heif_handles[0], "heif_image_get_height", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_image_get_plane_readonly = (__typeof__(heif_image_get_plane_readonly) *)qlazy_symbol(qlazy_heif_handles[0], "heif_image_get_plane_readonly", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_image_get_width = (__typeof__(heif_image_get_width) *)qlazy_symbol(qlazy_heif_handles[0], "heif_image_get_width", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_image_handle_get_height = (__typeof__(heif_image_handle_get_height) *)qlazy_symbol(qlazy_heif_handles[0], "heif_image_handle_get_height", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_image_handle_get_width = (__typeof__(heif_image_handle_get_width) *)qlazy_symbol(qlazy_heif_handles[0], "heif_image_handle_get_width", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_image_handle_release = (__typeof__(heif_image_handle_release) *)qlazy_symbol(qlazy_heif_handles[0], "heif_image_handle_release", qlazy_heif_error, sizeof qlazy_heif_error))) return;
    if (!(qlazy_heif_heif_image_release = (__typeof__(heif_image_release) *)qlazy_symbol(qlazy_heif_handles[0], "heif_image_release", qlazy_heif_error, sizeof qlazy_heif_error))) return;
}

__attribute__((visibility("default"))) const char *qlazy_load_heif(void) {
    pthread_once(&qlazy_heif_once, qlazy_heif_open);
    return qlazy_heif_error[0] ? qlazy_heif_error : NULL;
}

__attribute__((visibility("default"))) void *qlazy_heif_library(void) {
    return qlazy_load_heif() ? NULL : qlazy_heif_handles[0];
}

struct heif_context * heif_context_alloc(void) {
    if (qlazy_load_heif()) qlazy_missing("heif_context_alloc", qlazy_heif_error);
    return qlazy_heif_heif_context_alloc();
}
void heif_context_free(struct heif_context *a0) {
    if (qlazy_load_heif()) qlazy_missing("heif_context_free", qlazy_heif_error);
    qlazy_heif_heif_context_free(a0);
}
struct heif_error heif_context_get_image_handle(struct heif_context *a0, heif_item_id a1, struct heif_image_handle **a2) {
    if (qlazy_load_heif()) qlazy_missing("heif_context_get_image_handle", qlazy_heif_error);
    return qlazy_heif_heif_context_get_image_handle(a0, a1, a2);
}
int heif_context_get_list_of_top_level_image_IDs(struct heif_context *a0, heif_item_id *a1, int a2) {
    if (qlazy_load_heif()) qlazy_missing("heif_context_get_list_of_top_level_image_IDs", qlazy_heif_error);
    return qlazy_heif_heif_context_get_list_of_top_level_image_IDs(a0, a1, a2);
}
int heif_context_get_number_of_top_level_images(struct heif_context *a0) {
    if (qlazy_load_heif()) qlazy_missing("heif_context_get_number_of_top_level_images", qlazy_heif_error);
    return qlazy_heif_heif_context_get_number_of_top_level_images(a0);
}
struct heif_error heif_context_get_primary_image_ID(struct heif_context *a0, heif_item_id *a1) {
    if (qlazy_load_heif()) qlazy_missing("heif_context_get_primary_image_ID", qlazy_heif_error);
    return qlazy_heif_heif_context_get_primary_image_ID(a0, a1);
}
struct heif_error heif_context_read_from_memory(struct heif_context *a0, const void *a1, size_t a2, const struct heif_reading_options *a3) {
    if (qlazy_load_heif()) qlazy_missing("heif_context_read_from_memory", qlazy_heif_error);
    return qlazy_heif_heif_context_read_from_memory(a0, a1, a2, a3);
}
struct heif_error heif_decode_image(const struct heif_image_handle *a0, struct heif_image **a1, enum heif_colorspace a2, enum heif_chroma a3, const struct heif_decoding_options *a4) {
    if (qlazy_load_heif()) qlazy_missing("heif_decode_image", qlazy_heif_error);
    return qlazy_heif_heif_decode_image(a0, a1, a2, a3, a4);
}
struct heif_error heif_context_get_primary_image_handle(struct heif_context *a0, struct heif_image_handle **a1) {
    if (qlazy_load_heif()) qlazy_missing("heif_context_get_primary_image_handle", qlazy_heif_error);
    return qlazy_heif_heif_context_get_primary_image_handle(a0, a1);
}
const char * heif_get_version(void) {
    if (qlazy_load_heif()) qlazy_missing("heif_get_version", qlazy_heif_error);
    return qlazy_heif_heif_get_version();
}
int heif_have_decoder_for_format(enum heif_compression_format a0) {
    if (qlazy_load_heif()) qlazy_missing("heif_have_decoder_for_format", qlazy_heif_error);
    return qlazy_heif_heif_have_decoder_for_format(a0);
}
int heif_image_get_height(const struct heif_image *a0, enum heif_channel a1) {
    if (qlazy_load_heif()) qlazy_missing("heif_image_get_height", qlazy_heif_error);
    return qlazy_heif_heif_image_get_height(a0, a1);
}
const uint8_t * heif_image_get_plane_readonly(const struct heif_image *a0, enum heif_channel a1, int *a2) {
    if (qlazy_load_heif()) qlazy_missing("heif_image_get_plane_readonly", qlazy_heif_error);
    return qlazy_heif_heif_image_get_plane_readonly(a0, a1, a2);
}
int heif_image_get_width(const struct heif_image *a0, enum heif_channel a1) {
    if (qlazy_load_heif()) qlazy_missing("heif_image_get_width", qlazy_heif_error);
    return qlazy_heif_heif_image_get_width(a0, a1);
}
int heif_image_handle_get_height(const struct heif_image_handle *a0) {
    if (qlazy_load_heif()) qlazy_missing("heif_image_handle_get_height", qlazy_heif_error);
    return qlazy_heif_heif_image_handle_get_height(a0);
}
int heif_image_handle_get_width(const struct heif_image_handle *a0) {
    if (qlazy_load_heif()) qlazy_missing("heif_image_handle_get_width", qlazy_heif_error);
    return qlazy_heif_heif_image_handle_get_width(a0);
}
void heif_image_handle_release(const struct heif_image_handle *a0) {
    if (qlazy_load_heif()) qlazy_missing("heif_image_handle_release", qlazy_heif_error);
    qlazy_heif_heif_image_handle_release(a0);
}
void heif_image_release(const struct heif_image *a0) {
    if (qlazy_load_heif()) qlazy_missing("heif_image_release", qlazy_heif_error);
    qlazy_heif_heif_image_release(a0);
}
