#ifndef QUARANTINE_CTURBOJPEG_SHIM_H
#define QUARANTINE_CTURBOJPEG_SHIM_H
#include <stddef.h>
#include <turbojpeg.h>

/// TurboJPEG 2.x's TJSCALED is a function-like macro: this is the same arithmetic.
static inline int qtj_scaled(int dimension, tjscalingfactor factor) {
    return (dimension * factor.num + factor.denom - 1) / factor.denom;
}
#endif
