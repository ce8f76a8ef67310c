#ifndef QSVG_H
#define QSVG_H
#include <stddef.h>
#include <stdint.h>

typedef struct qsvg qsvg;

/// Parses an SVG document once, for sizing and drawing. It is loaded without a base URL, so
/// librsvg loads no file and no network resource: only images embedded as data: URLs. Returns
/// NULL with `error` when librsvg cannot read it. The bytes need not outlive the handle.
qsvg *qsvg_open(const uint8_t *data, size_t length, char *error, size_t error_length);
void qsvg_close(qsvg *svg);

/// The size the document declares, in pixels at 96 dpi: its width and height when they are
/// absolute, else its viewBox; 0 x 0 when it declares neither.
void qsvg_size(qsvg *svg, double *width, double *height);

/// Draws the document scaled to `width` x `height` on white into `out_bgra` (stride width * 4,
/// bytes B G R A). Returns 0, or -1 with `error`.
int qsvg_render(qsvg *svg, int width, int height, uint8_t *out_bgra, char *error, size_t error_length);

/// The version of the librsvg this program runs with.
void qsvg_version(int *major, int *minor, int *micro);

#endif
