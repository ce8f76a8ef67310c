#ifndef QPNG_H
#define QPNG_H
#include <stddef.h>
#include <stdint.h>

/// What qpng_read_reduced found.
typedef struct qpng_result {
    int width, height;      ///< the PNG's own size
    int interlaced;         ///< Adam7
    long long rows_read;    ///< rows (of all passes) decoded before the end or an error
    long long rows_total;   ///< rows there are in all passes
    int failed;             ///< 1 when libpng stopped with an error (message holds it)
    int truncated;          ///< 1 when the data ended before the picture did
    char message[256];
} qpng_result;

/// Decodes the PNG in `data` row by row and averages it down into `out_rgb` (packed RGB, out_w x
/// out_h), keeping only one row of the source in memory: a 14000x14000 picture needs its output
/// plus a few megabytes. Palette, grey, 16-bit and alpha are reduced to 8-bit RGB the way a
/// colour conversion that ignores alpha does. Pixels no row reached stay as `out_rgb` held them.
/// Refuses pictures wider or taller than `max_dimension`. Returns 0, or -1 when it failed
/// (`result->message` says why; `rows_read` says how far it got).
int qpng_read_reduced(const uint8_t *data, size_t size, int max_dimension, int out_w, int out_h,
                      uint8_t *out_rgb, qpng_result *result);

#endif
