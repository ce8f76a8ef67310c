#include "qpng.h"
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    const uint8_t *data;
    size_t size, pos;
    qpng_result *result;
} reader;

static void read_data(png_structp png, png_bytep out, size_t length) {
    reader *r = (reader *)png_get_io_ptr(png);
    if (r->size - r->pos < length) {
        r->result->truncated = 1;
        png_error(png, "the data ends before the picture does");
    }
    memcpy(out, r->data + r->pos, length);
    r->pos += length;
}

static void on_error(png_structp png, png_const_charp message) {
    reader *r = (reader *)png_get_error_ptr(png);
    snprintf(r->result->message, sizeof r->result->message, "%s", message);
    png_longjmp(png, 1);
}

/* Averages what was summed into the output; cells no row reached keep their bytes. */
static void flush(const uint64_t *sums, const uint32_t *counts, size_t cells, uint8_t *out_rgb) {
    for (size_t i = 0; i < cells; i++) {
        uint32_t n = counts[i];
        if (!n) continue;
        for (int c = 0; c < 3; c++) out_rgb[i * 3 + c] = (uint8_t)((sums[i * 3 + c] + n / 2) / n);
    }
}

static void on_warning(png_structp png, png_const_charp message) { (void)png; (void)message; }

int qpng_read_reduced(const uint8_t *data, size_t size, int max_dimension, int out_w, int out_h,
                      uint8_t *out_rgb, qpng_result *result) {
    memset(result, 0, sizeof *result);
    if (out_w <= 0 || out_h <= 0) {
        snprintf(result->message, sizeof result->message, "empty output size");
        result->failed = 1;
        return -1;
    }
    reader r = { data, size, 0, result };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, on_error, on_warning);
    if (!png) { snprintf(result->message, sizeof result->message, "out of memory"); result->failed = 1; return -1; }
    png_infop info = png_create_info_struct(png);
    /* Volatile: they change between setjmp and a longjmp back. */
    uint64_t *volatile sums = NULL;
    uint32_t *volatile counts = NULL;
    png_bytep volatile row = NULL;
    volatile size_t cells = 0;
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, info ? &info : NULL, NULL);
        if (sums && counts) flush(sums, counts, cells, out_rgb);
        free(sums); free(counts); free(row);
        if (!result->message[0]) snprintf(result->message, sizeof result->message, "out of memory");
        result->failed = 1;
        return -1;
    }
    png_set_read_fn(png, &r, read_data);
    png_set_user_limits(png, (png_uint_32)max_dimension, (png_uint_32)max_dimension);
    png_read_info(png, info);
    png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
    result->width = (int)width;
    result->height = (int)height;
    result->interlaced = png_get_interlace_type(png, info) == PNG_INTERLACE_ADAM7;

    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    png_read_update_info(png, info);
    if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8) {
        png_error(png, "unexpected pixel layout after conversion");
    }

    /* Which output column each source column falls in, and the running sums per output pixel. */
    cells = (size_t)out_w * (size_t)out_h;
    sums = calloc(cells * 3, sizeof(uint64_t));
    counts = calloc(cells, sizeof(uint32_t));
    row = malloc(png_get_rowbytes(png, info));
    if (!sums || !counts || !row) png_error(png, "out of memory");

    int passes = result->interlaced ? 7 : 1;
    long long total = 0;
    for (int p = 0; p < passes; p++) {
        if (!result->interlaced) { total += height; break; }
        if (PNG_PASS_COLS(width, p) > 0) total += PNG_PASS_ROWS(height, p);
    }
    result->rows_total = total;

    for (int p = 0; p < passes; p++) {
        png_uint_32 rows = result->interlaced ? PNG_PASS_ROWS(height, p) : height;
        png_uint_32 cols = result->interlaced ? PNG_PASS_COLS(width, p) : width;
        if (cols == 0) continue;
        for (png_uint_32 pr = 0; pr < rows; pr++) {
            png_read_row(png, row, NULL);
            result->rows_read++;
            png_uint_32 y = result->interlaced ? PNG_ROW_FROM_PASS_ROW(pr, p) : pr;
            size_t oy = (size_t)((uint64_t)y * (uint64_t)out_h / height);
            uint64_t *line = sums + oy * (size_t)out_w * 3;
            uint32_t *count = counts + oy * (size_t)out_w;
            for (png_uint_32 pc = 0; pc < cols; pc++) {
                png_uint_32 x = result->interlaced ? PNG_COL_FROM_PASS_COL(pc, p) : pc;
                size_t ox = (size_t)((uint64_t)x * (uint64_t)out_w / width);
                const png_byte *px = row + (size_t)pc * 3;
                line[ox * 3] += px[0];
                line[ox * 3 + 1] += px[1];
                line[ox * 3 + 2] += px[2];
                count[ox]++;
            }
        }
    }
    png_read_end(png, NULL);

    flush(sums, counts, cells, out_rgb);
    png_destroy_read_struct(&png, &info, NULL);
    free(sums); free(counts); free(row);
    return 0;
}
