#ifndef QPDF_H
#define QPDF_H
#include <stddef.h>
#include <stdint.h>

typedef struct qpdf qpdf;

/// Why a document could not be opened.
enum {
    QPDF_ERROR_DAMAGED = 1,   /// not a PDF Poppler can read
    QPDF_ERROR_ENCRYPTED = 2, /// needs a password
};

/// Opens the PDF read from `fd` (a seekable descriptor whose ownership passes to Poppler, also on
/// failure). Poppler opens no other file and fetches nothing for a document it only renders.
/// Returns NULL with `code` (QPDF_ERROR_*) and `error` when Poppler cannot read it.
qpdf *qpdf_open(int fd, int *code, char *error, size_t error_length);
void qpdf_close(qpdf *pdf);

/// Pages in the document.
int qpdf_page_count(qpdf *pdf);

/// A page's size in points (1/72 inch); -1 when the page cannot be read.
int qpdf_page_size(qpdf *pdf, int index, double *width, double *height);

/// The rectangles (points: x1 y1 x2 y2, from the page's top left) where the page draws images,
/// up to `capacity` of them; returns how many the page has (may exceed capacity), -1 on error.
int qpdf_page_images(qpdf *pdf, int index, double *rects, int capacity);

/// Draws the rectangle (x, y, width, height, in points from the page's top left) of a page,
/// scaled to `out_width` x `out_height` pixels on white, into `out_bgra` (stride out_width * 4,
/// bytes B G R A). Returns 0, or -1 with `error`.
int qpdf_render(qpdf *pdf, int index, double x, double y, double width, double height,
                int out_width, int out_height, uint8_t *out_bgra, char *error, size_t error_length);

/// The version of the Poppler this program runs with ("22.12.0").
const char *qpdf_version(void);

#endif
