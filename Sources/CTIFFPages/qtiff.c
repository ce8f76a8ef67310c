#include "qtiff.h"
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

struct qtiff {
    const uint8_t *data;
    size_t size, pos;
    TIFF *tif;
    tdir_t dirs[64]; /* directory index of each full page */
    int pages;
};

static tmsize_t read_proc(thandle_t h, void *buf, tmsize_t n) {
    qtiff *t = (qtiff *)h;
    if (t->pos >= t->size) return 0;
    size_t left = t->size - t->pos, take = (size_t)n < left ? (size_t)n : left;
    memcpy(buf, t->data + t->pos, take);
    t->pos += take;
    return (tmsize_t)take;
}
static tmsize_t write_proc(thandle_t h, void *buf, tmsize_t n) { (void)h; (void)buf; (void)n; return -1; }
static toff_t seek_proc(thandle_t h, toff_t off, int whence) {
    qtiff *t = (qtiff *)h;
    uint64_t base = whence == SEEK_CUR ? t->pos : whence == SEEK_END ? t->size : 0;
    uint64_t to = base + off;
    t->pos = (size_t)to;
    return to;
}
static int close_proc(thandle_t h) { (void)h; return 0; }
static toff_t size_proc(thandle_t h) { return ((qtiff *)h)->size; }
static int map_proc(thandle_t h, void **base, toff_t *size) { (void)h; (void)base; (void)size; return 0; }
static void unmap_proc(thandle_t h, void *base, toff_t size) { (void)h; (void)base; (void)size; }

qtiff *qtiff_open(const uint8_t *data, size_t size) {
    /* Messages go nowhere: errors come back as return values. */
    TIFFSetErrorHandler(NULL);
    TIFFSetWarningHandler(NULL);
    qtiff *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->data = data;
    t->size = size;
    t->tif = TIFFClientOpen("memory", "rm", (thandle_t)t, read_proc, write_proc, seek_proc, close_proc, size_proc, map_proc, unmap_proc);
    if (!t->tif) { free(t); return NULL; }
    return t;
}

void qtiff_close(qtiff *t) {
    if (!t) return;
    TIFFClose(t->tif);
    free(t);
}

int qtiff_pages(qtiff *t, int limit) {
    if (limit > 64) limit = 64;
    t->pages = 0;
    tdir_t index = 0;
    if (!TIFFSetDirectory(t->tif, 0)) return 0;
    do {
        uint32_t kind = 0;
        TIFFGetFieldDefaulted(t->tif, TIFFTAG_SUBFILETYPE, &kind);
        if (!(kind & FILETYPE_REDUCEDIMAGE)) t->dirs[t->pages++] = index;
        index++;
    } while (t->pages < limit && index < 1024 && TIFFReadDirectory(t->tif));
    return t->pages;
}

int qtiff_page_size(qtiff *t, int page, int *width, int *height) {
    if (page < 0 || page >= t->pages || !TIFFSetDirectory(t->tif, t->dirs[page])) return -1;
    uint32_t w = 0, h = 0;
    if (!TIFFGetField(t->tif, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(t->tif, TIFFTAG_IMAGELENGTH, &h)) return -1;
    *width = (int)w;
    *height = (int)h;
    return 0;
}

int qtiff_read_reduced(qtiff *t, int page, int out_w, int out_h, size_t max_buffer, uint8_t *out_rgb, long long *rows_read) {
    *rows_read = 0;
    int w = 0, h = 0;
    if (out_w <= 0 || out_h <= 0 || qtiff_page_size(t, page, &w, &h) != 0 || w <= 0 || h <= 0) return -1;
    TIFF *tif = t->tif;
    int tiled = TIFFIsTiled(tif);
    uint32_t bw = (uint32_t)w, bh = 0; /* block (strip or tile) size */
    if (tiled) {
        TIFFGetField(tif, TIFFTAG_TILEWIDTH, &bw);
        TIFFGetField(tif, TIFFTAG_TILELENGTH, &bh);
    } else {
        TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &bh);
        if (bh > (uint32_t)h) bh = (uint32_t)h;
    }
    if (bw == 0 || bh == 0) return -1;
    if ((uint64_t)bw * bh * 4 > max_buffer) return -2;
    uint32_t *block = malloc((size_t)bw * bh * 4);
    size_t cells = (size_t)out_w * out_h;
    uint64_t *sums = calloc(cells * 3, sizeof(uint64_t));
    uint32_t *counts = calloc(cells, sizeof(uint32_t));
    int status = 0;
    if (!block || !sums || !counts) { status = -1; goto done; }
    for (uint32_t y0 = 0; y0 < (uint32_t)h && status == 0; y0 += bh) {
        uint32_t rows = (uint32_t)h - y0 < bh ? (uint32_t)h - y0 : bh;
        for (uint32_t x0 = 0; x0 < (uint32_t)w; x0 += bw) {
            int ok = tiled ? TIFFReadRGBATile(tif, x0, y0, block) : TIFFReadRGBAStrip(tif, y0, block);
            if (!ok) { status = *rows_read > 0 ? 1 : -1; break; }
            uint32_t cols = (uint32_t)w - x0 < bw ? (uint32_t)w - x0 : bw;
            /* libtiff's RGBA blocks are bottom-up: the block's first row is its last in memory.
               A strip shorter than rowsperstrip (the last one) fills the bottom rows. */
            uint32_t filled = tiled ? bh : rows;
            for (uint32_t r = 0; r < rows; r++) {
                const uint32_t *src = block + (size_t)(filled - 1 - r) * bw;
                size_t oy = (size_t)((uint64_t)(y0 + r) * out_h / (uint32_t)h);
                for (uint32_t c = 0; c < cols; c++) {
                    uint32_t px = src[c];
                    size_t ox = (size_t)((uint64_t)(x0 + c) * out_w / (uint32_t)w);
                    size_t cell = oy * out_w + ox;
                    sums[cell * 3] += TIFFGetR(px);
                    sums[cell * 3 + 1] += TIFFGetG(px);
                    sums[cell * 3 + 2] += TIFFGetB(px);
                    counts[cell]++;
                }
            }
            if (x0 + bw >= (uint32_t)w) *rows_read += rows;
        }
    }
    for (size_t i = 0; i < cells; i++) {
        uint32_t n = counts[i];
        if (!n) continue;
        for (int c = 0; c < 3; c++) out_rgb[i * 3 + c] = (uint8_t)((sums[i * 3 + c] + n / 2) / n);
    }
done:
    free(block);
    free(sums);
    free(counts);
    return status;
}
