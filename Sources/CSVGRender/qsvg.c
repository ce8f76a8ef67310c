#include "qsvg.h"
#include <librsvg/rsvg.h>
#include <string.h>

static void set_error(char *error, size_t length, const char *what, GError *cause) {
    if (length == 0) return;
    snprintf(error, length, "%s%s%s", what, cause ? ": " : "", cause ? cause->message : "");
}

static RsvgHandle *load(const uint8_t *data, size_t length, char *error, size_t error_length) {
    GError *cause = NULL;
    // No base file: librsvg then refuses every reference but data: URLs (no file, no network).
    RsvgHandle *handle = rsvg_handle_new_from_data(data, length, &cause);
    if (!handle) {
        set_error(error, error_length, "librsvg cannot read the document", cause);
        g_clear_error(&cause);
        return NULL;
    }
    rsvg_handle_set_dpi(handle, 96.0);
    return handle;
}

int qsvg_size(const uint8_t *data, size_t length, double *width, double *height, char *error, size_t error_length) {
    RsvgHandle *handle = load(data, length, error, error_length);
    if (!handle) return -1;
    double w = 0, h = 0;
    if (!rsvg_handle_get_intrinsic_size_in_pixels(handle, &w, &h) || w <= 0 || h <= 0) {
        gboolean has_width, has_height, has_viewbox;
        RsvgLength lw, lh;
        RsvgRectangle viewbox;
        rsvg_handle_get_intrinsic_dimensions(handle, &has_width, &lw, &has_height, &lh, &has_viewbox, &viewbox);
        if (has_viewbox && viewbox.width > 0 && viewbox.height > 0) {
            w = viewbox.width;
            h = viewbox.height;
        } else {
            w = 0;
            h = 0;
        }
    }
    g_object_unref(handle);
    *width = w;
    *height = h;
    return 0;
}

int qsvg_render(const uint8_t *data, size_t length, int width, int height, uint8_t *out_bgra, char *error, size_t error_length) {
    RsvgHandle *handle = load(data, length, error, error_length);
    if (!handle) return -1;
    cairo_surface_t *surface = cairo_image_surface_create_for_data(out_bgra, CAIRO_FORMAT_ARGB32, width, height, width * 4);
    if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
        set_error(error, error_length, "cairo cannot create the canvas", NULL);
        cairo_surface_destroy(surface);
        g_object_unref(handle);
        return -1;
    }
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    RsvgRectangle viewport = { 0, 0, width, height };
    GError *cause = NULL;
    gboolean rendered = rsvg_handle_render_document(handle, cr, &viewport, &cause);
    if (!rendered) set_error(error, error_length, "librsvg cannot render the document", cause);
    g_clear_error(&cause);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    cairo_surface_destroy(surface);
    g_object_unref(handle);
    return rendered ? 0 : -1;
}

void qsvg_version(int *major, int *minor, int *micro) {
    *major = (int)rsvg_major_version;
    *minor = (int)rsvg_minor_version;
    *micro = (int)rsvg_micro_version;
}
