#include "qpng.h"
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libpng's progressive reader: the bytes are pushed in, and each row is handed over once all of
   its data has arrived. A file that ends early simply stops giving rows: nothing is invented. */
typedef struct state {
    qpng_result *result;
    int max_dimension, out_w, out_h;
    uint64_t *sums;   /* per output pixel, 3 channels */
    uint32_t *counts; /* per output pixel */
    int ended;        /* IEND reached */
    png_uint_32 width, height;
} state;

static void on_error(png_structp png, png_const_charp message) {
    state *s = (state *)png_get_error_ptr(png);
    snprintf(s->result->message, sizeof s->result->message, "%s", message);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp message) { (void)png; (void)message; }

static void on_info(png_structp png, png_infop info) {
    state *s = (state *)png_get_progressive_ptr(png);
    s->width = png_get_image_width(png, info);
    s->height = png_get_image_height(png, info);
    s->result->width = (int)s->width;
    s->result->height = (int)s->height;
    s->result->interlaced = png_get_interlace_type(png, info) == PNG_INTERLACE_ADAM7;
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    /* No png_set_interlace_handling: an interlaced picture's rows come pass by pass, each of
       its own width, and are placed where they belong. */
    png_read_update_info(png, info);
    if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8) png_error(png, "unexpected pixel layout after conversion");
    size_t cells = (size_t)s->out_w * (size_t)s->out_h;
    s->sums = calloc(cells * 3, sizeof(uint64_t));
    s->counts = calloc(cells, sizeof(uint32_t));
    if (!s->sums || !s->counts) png_error(png, "out of memory");
    long long total = 0;
    if (!s->result->interlaced) total = s->height;
    else for (int p = 0; p < 7; p++) if (PNG_PASS_COLS(s->width, p) > 0) total += PNG_PASS_ROWS(s->height, p);
    s->result->rows_total = total;
}

static void on_row(png_structp png, png_bytep row, png_uint_32 row_num, int pass) {
    state *s = (state *)png_get_progressive_ptr(png);
    if (!row) return;
    s->result->rows_read++;
    int interlaced = s->result->interlaced;
    png_uint_32 y = interlaced ? PNG_ROW_FROM_PASS_ROW(row_num, pass) : row_num;
    png_uint_32 cols = interlaced ? PNG_PASS_COLS(s->width, pass) : s->width;
    if (y >= s->height) return;
    size_t oy = (size_t)((uint64_t)y * (uint64_t)s->out_h / s->height);
    uint64_t *line = s->sums + oy * (size_t)s->out_w * 3;
    uint32_t *count = s->counts + oy * (size_t)s->out_w;
    for (png_uint_32 pc = 0; pc < cols; pc++) {
        png_uint_32 x = interlaced ? PNG_COL_FROM_PASS_COL(pc, pass) : pc;
        if (x >= s->width) break;
        size_t ox = (size_t)((uint64_t)x * (uint64_t)s->out_w / s->width);
        const png_byte *px = row + (size_t)pc * 3;
        line[ox * 3] += px[0];
        line[ox * 3 + 1] += px[1];
        line[ox * 3 + 2] += px[2];
        count[ox]++;
    }
}

static void on_end(png_structp png, png_infop info) {
    (void)info;
    state *s = (state *)png_get_progressive_ptr(png);
    s->ended = 1;
}

/* Averages what was summed into the output; pixels no row reached keep their bytes. */
static void flush(const state *s, uint8_t *out_rgb) {
    if (!s->sums || !s->counts) return;
    size_t cells = (size_t)s->out_w * (size_t)s->out_h;
    for (size_t i = 0; i < cells; i++) {
        uint32_t n = s->counts[i];
        if (!n) continue;
        for (int c = 0; c < 3; c++) out_rgb[i * 3 + c] = (uint8_t)((s->sums[i * 3 + c] + n / 2) / n);
    }
}

int qpng_read_reduced(const uint8_t *data, size_t size, int max_dimension, int out_w, int out_h,
                      uint8_t *out_rgb, qpng_result *result) {
    memset(result, 0, sizeof *result);
    if (out_w <= 0 || out_h <= 0) {
        snprintf(result->message, sizeof result->message, "empty output size");
        result->failed = 1;
        return -1;
    }
    state s = { result, max_dimension, out_w, out_h, NULL, NULL, 0, 0, 0 };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, on_error, on_warning);
    if (!png) { snprintf(result->message, sizeof result->message, "out of memory"); result->failed = 1; return -1; }
    png_infop info = png_create_info_struct(png);
    int status = 0;
    if (!info || setjmp(png_jmpbuf(png))) {
        if (!result->message[0]) snprintf(result->message, sizeof result->message, "out of memory");
        result->failed = 1;
        status = -1;
    } else {
        png_set_user_limits(png, (png_uint_32)max_dimension, (png_uint_32)max_dimension);
        png_set_progressive_read_fn(png, &s, on_info, on_row, on_end);
        png_process_data(png, info, (png_bytep)data, size);
        if (!s.ended) {
            result->truncated = 1;
            result->failed = 1;
            snprintf(result->message, sizeof result->message, "the data ends before the picture does (%lld of %lld rows)",
                     result->rows_read, result->rows_total);
            status = -1;
        }
    }
    flush(&s, out_rgb);
    png_destroy_read_struct(&png, info ? &info : NULL, NULL);
    free(s.sums);
    free(s.counts);
    return status;
}
