// Poppler (glib API) behind a few plain C calls: Swift sees no glib or cairo type.
#include "qpdf.h"
#include <poppler.h>
#include <cairo.h>
#include <stdio.h>
#include <string.h>

struct qpdf {
    PopplerDocument *document;
};

static void copy_error(char *error, size_t length, const char *message) {
    if (error && length) snprintf(error, length, "%s", message ? message : "unknown error");
}

qpdf *qpdf_open(int fd, int *code, char *error, size_t error_length) {
    GError *failure = NULL;
    PopplerDocument *document = poppler_document_new_from_fd(fd, NULL, &failure);
    if (!document) {
        if (code) *code = (failure && failure->domain == POPPLER_ERROR && failure->code == POPPLER_ERROR_ENCRYPTED)
            ? QPDF_ERROR_ENCRYPTED : QPDF_ERROR_DAMAGED;
        copy_error(error, error_length, failure ? failure->message : "Poppler could not read it");
        if (failure) g_error_free(failure);
        return NULL;
    }
    qpdf *pdf = g_new0(qpdf, 1);
    pdf->document = document;
    return pdf;
}

void qpdf_close(qpdf *pdf) {
    if (!pdf) return;
    g_object_unref(pdf->document);
    g_free(pdf);
}

int qpdf_page_count(qpdf *pdf) { return poppler_document_get_n_pages(pdf->document); }

int qpdf_page_size(qpdf *pdf, int index, double *width, double *height) {
    PopplerPage *page = poppler_document_get_page(pdf->document, index);
    if (!page) return -1;
    poppler_page_get_size(page, width, height);
    g_object_unref(page);
    return 0;
}

int qpdf_page_images(qpdf *pdf, int index, double *rects, int capacity) {
    PopplerPage *page = poppler_document_get_page(pdf->document, index);
    if (!page) return -1;
    GList *mapping = poppler_page_get_image_mapping(page);
    int count = 0;
    for (GList *item = mapping; item; item = item->next, count++) {
        if (count >= capacity) continue;
        PopplerImageMapping *image = item->data;
        rects[count * 4 + 0] = image->area.x1;
        rects[count * 4 + 1] = image->area.y1;
        rects[count * 4 + 2] = image->area.x2;
        rects[count * 4 + 3] = image->area.y2;
    }
    poppler_page_free_image_mapping(mapping);
    g_object_unref(page);
    return count;
}

int qpdf_render(qpdf *pdf, int index, double x, double y, double width, double height,
                int out_width, int out_height, uint8_t *out_bgra, char *error, size_t error_length) {
    if (out_width <= 0 || out_height <= 0 || width <= 0 || height <= 0) {
        copy_error(error, error_length, "empty area");
        return -1;
    }
    PopplerPage *page = poppler_document_get_page(pdf->document, index);
    if (!page) {
        copy_error(error, error_length, "the page cannot be read");
        return -1;
    }
    cairo_surface_t *surface = cairo_image_surface_create_for_data(out_bgra, CAIRO_FORMAT_ARGB32, out_width, out_height, out_width * 4);
    int result = 0;
    if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
        copy_error(error, error_length, cairo_status_to_string(cairo_surface_status(surface)));
        result = -1;
    } else {
        cairo_t *cr = cairo_create(surface);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_paint(cr);
        cairo_scale(cr, out_width / width, out_height / height);
        cairo_translate(cr, -x, -y);
        // What a viewer shows, not what a printer would get.
        poppler_page_render(page, cr);
        cairo_status_t status = cairo_status(cr);
        if (status != CAIRO_STATUS_SUCCESS) {
            copy_error(error, error_length, cairo_status_to_string(status));
            result = -1;
        }
        cairo_destroy(cr);
        cairo_surface_flush(surface);
    }
    cairo_surface_destroy(surface);
    g_object_unref(page);
    return result;
}

const char *qpdf_version(void) { return poppler_get_version(); }
