#ifndef QTIFF_H
#define QTIFF_H
#include <stddef.h>
#include <stdint.h>

typedef struct qtiff qtiff;

/// Opens a TIFF held in memory (the bytes must outlive the handle). NULL if it is not readable.
qtiff *qtiff_open(const uint8_t *data, size_t size);
void qtiff_close(qtiff *t);
/// Full-resolution pages (reduced-resolution subfiles, i.e. thumbnails, are not counted), at most `limit`.
int qtiff_pages(qtiff *t, int limit);
/// The size of full page `page` (0-based); -1 if it cannot be read.
int qtiff_page_size(qtiff *t, int page, int *width, int *height);
/// Decodes page `page` strip by strip (or tile by tile) through libtiff's RGBA interface and
/// averages it down into `out_rgb` (out_w x out_h packed RGB): memory is one strip or tile plus
/// the output. A strip or tile needing more than `max_buffer` bytes is refused. Returns 0; 1 when
/// only part of the page could be read (rows up to `*rows_read` are there, the rest keeps what
/// `out_rgb` held); -1 when nothing could be; -2 when a strip or tile is over `max_buffer`.
int qtiff_read_reduced(qtiff *t, int page, int out_w, int out_h, size_t max_buffer, uint8_t *out_rgb, long long *rows_read);

#endif
