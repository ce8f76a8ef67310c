#ifndef QUARANTINE_CFFMPEG_SHIM_H
#define QUARANTINE_CFFMPEG_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

/* Function-like macros do not import into Swift: tiny inline equivalents. */
static inline int qff_averror(int posix_errno) { return AVERROR(posix_errno); }
static inline int qff_averror_eof(void) { return AVERROR_EOF; }
static inline int qff_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int qff_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int64_t qff_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline void qff_err2str(int code, char *buffer, size_t size) { av_strerror(code, buffer, size); }
#endif
