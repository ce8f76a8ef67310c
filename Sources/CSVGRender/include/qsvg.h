#ifndef QSVG_H
#define QSVG_H
#include <stddef.h>
#include <stdint.h>

/// The size an SVG document declares, in pixels at 96 dpi: its width and height when they are
/// absolute, else its viewBox. Returns 0, or -1 (with `error`) when librsvg cannot load it.
/// The document is loaded without a base URL, so librsvg loads no file and no network
/// resource: only images embedded as data: URLs.
int qsvg_size(const uint8_t *data, size_t length, double *width, double *height, char *error, size_t error_length);

/// Renders the document scaled to `width` x `height` on white into `out_bgra` (stride
/// width * 4, bytes B G R A). Returns 0, or -1 with `error`.
int qsvg_render(const uint8_t *data, size_t length, int width, int height, uint8_t *out_bgra, char *error, size_t error_length);

/// The version of the librsvg this program runs with.
void qsvg_version(int *major, int *minor, int *micro);

#endif
