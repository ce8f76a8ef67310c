#include "qsvg.h"
#include <librsvg/rsvg.h>
#include <dlfcn.h>
#include "qlazy.h"
#include <string.h>

struct qsvg { RsvgHandle *handle; };

static void set_error(char *error, size_t length, const char *what, GError *cause) {
    if (length == 0) return;
    snprintf(error, length, "%s%s%s", what, cause ? ": " : "", cause ? cause->message : "");
}

qsvg *qsvg_open(const uint8_t *data, size_t length, char *error, size_t error_length) {
    GError *cause = NULL;
    // No base file: librsvg then refuses every reference but data: URLs (no file, no network).
    RsvgHandle *handle = rsvg_handle_new_from_data(data, length, &cause);
    if (!handle) {
        set_error(error, error_length, "librsvg cannot read the document", cause);
        g_clear_error(&cause);
        return NULL;
    }
    rsvg_handle_set_dpi(handle, 96.0);
    qsvg *svg = g_new0(qsvg, 1);
    svg->handle = handle;
    return svg;
}

void qsvg_close(qsvg *svg) {
    if (!svg) return;
    g_object_unref(svg->handle);
    g_free(svg);
}

void qsvg_size(qsvg *svg, double *width, double *height) {
    double w = 0, h = 0;
    if (!rsvg_handle_get_intrinsic_size_in_pixels(svg->handle, &w, &h) || w <= 0 || h <= 0) {
        gboolean has_width, has_height, has_viewbox;
        RsvgLength lw, lh;
        RsvgRectangle viewbox;
        rsvg_handle_get_intrinsic_dimensions(svg->handle, &has_width, &lw, &has_height, &lh, &has_viewbox, &viewbox);
        if (has_viewbox && viewbox.width > 0 && viewbox.height > 0) {
            w = viewbox.width;
            h = viewbox.height;
        } else {
            w = 0;
            h = 0;
        }
    }
    *width = w;
    *height = h;
}

int qsvg_render(qsvg *svg, int width, int height, uint8_t *out_bgra, char *error, size_t error_length) {
    cairo_surface_t *surface = cairo_image_surface_create_for_data(out_bgra, CAIRO_FORMAT_ARGB32, width, height, width * 4);
    if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
        set_error(error, error_length, "cairo cannot create the canvas", NULL);
        cairo_surface_destroy(surface);
        return -1;
    }
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    RsvgRectangle viewport = { 0, 0, width, height };
    GError *cause = NULL;
    gboolean rendered = rsvg_handle_render_document(svg->handle, cr, &viewport, &cause);
    if (!rendered) set_error(error, error_length, "librsvg cannot render the document", cause);
    g_clear_error(&cause);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    cairo_surface_destroy(surface);
    return rendered ? 0 : -1;
}

/* librsvg is opened at its first use (CLazyLibraries): its version variables are read from it. */
static int qsvg_version_part(void *library, const char *name) {
    const guint *value = library ? (const guint *)dlsym(library, name) : NULL;
    return value ? (int)*value : -1;
}

void qsvg_version(int *major, int *minor, int *micro) {
    void *library = qlazy_rsvg_library();
    *major = qsvg_version_part(library, "rsvg_major_version");
    *minor = qsvg_version_part(library, "rsvg_minor_version");
    *micro = qsvg_version_part(library, "rsvg_micro_version");
}
