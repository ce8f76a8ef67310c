/* Written by scripts/lazy-libraries.py: do not edit. FFmpeg (libavformat, libavcodec, libswscale, libavutil) opened at the first call. */
#include "qlazy_common.h"
#pragma GCC visibility push(hidden)
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#pragma GCC visibility pop

static const char *const qlazy_ffmpeg_names[] = { "libavutil.so." QLAZY_STR(LIBAVUTIL_VERSION_MAJOR), "libswscale.so." QLAZY_STR(LIBSWSCALE_VERSION_MAJOR), "libavcodec.so." QLAZY_STR(LIBAVCODEC_VERSION_MAJOR), "libavformat.so." QLAZY_STR(LIBAVFORMAT_VERSION_MAJOR) };
static void *qlazy_ffmpeg_handles[4];
static __typeof__(av_d2q) *qlazy_ffmpeg_av_d2q;
static __typeof__(av_dict_free) *qlazy_ffmpeg_av_dict_free;
static __typeof__(av_dict_set) *qlazy_ffmpeg_av_dict_set;
static __typeof__(av_display_rotation_get) *qlazy_ffmpeg_av_display_rotation_get;
static __typeof__(av_frame_alloc) *qlazy_ffmpeg_av_frame_alloc;
static __typeof__(av_frame_free) *qlazy_ffmpeg_av_frame_free;
static __typeof__(av_frame_get_buffer) *qlazy_ffmpeg_av_frame_get_buffer;
static __typeof__(av_frame_ref) *qlazy_ffmpeg_av_frame_ref;
static __typeof__(av_frame_unref) *qlazy_ffmpeg_av_frame_unref;
static __typeof__(av_free) *qlazy_ffmpeg_av_free;
static __typeof__(av_freep) *qlazy_ffmpeg_av_freep;
static __typeof__(av_log_set_level) *qlazy_ffmpeg_av_log_set_level;
static __typeof__(av_malloc) *qlazy_ffmpeg_av_malloc;
static __typeof__(av_max_alloc) *qlazy_ffmpeg_av_max_alloc;
static __typeof__(av_pix_fmt_desc_get) *qlazy_ffmpeg_av_pix_fmt_desc_get;
static __typeof__(av_strerror) *qlazy_ffmpeg_av_strerror;
static __typeof__(sws_freeContext) *qlazy_ffmpeg_sws_freeContext;
static __typeof__(sws_getContext) *qlazy_ffmpeg_sws_getContext;
static __typeof__(sws_scale) *qlazy_ffmpeg_sws_scale;
static __typeof__(av_new_packet) *qlazy_ffmpeg_av_new_packet;
static __typeof__(av_packet_alloc) *qlazy_ffmpeg_av_packet_alloc;
static __typeof__(av_packet_free) *qlazy_ffmpeg_av_packet_free;
static __typeof__(av_packet_rescale_ts) *qlazy_ffmpeg_av_packet_rescale_ts;
static __typeof__(av_packet_unref) *qlazy_ffmpeg_av_packet_unref;
static __typeof__(avcodec_alloc_context3) *qlazy_ffmpeg_avcodec_alloc_context3;
static __typeof__(avcodec_find_decoder) *qlazy_ffmpeg_avcodec_find_decoder;
static __typeof__(avcodec_find_encoder) *qlazy_ffmpeg_avcodec_find_encoder;
static __typeof__(avcodec_flush_buffers) *qlazy_ffmpeg_avcodec_flush_buffers;
static __typeof__(avcodec_free_context) *qlazy_ffmpeg_avcodec_free_context;
static __typeof__(avcodec_get_name) *qlazy_ffmpeg_avcodec_get_name;
static __typeof__(avcodec_open2) *qlazy_ffmpeg_avcodec_open2;
static __typeof__(avcodec_parameters_from_context) *qlazy_ffmpeg_avcodec_parameters_from_context;
static __typeof__(avcodec_parameters_to_context) *qlazy_ffmpeg_avcodec_parameters_to_context;
static __typeof__(avcodec_receive_frame) *qlazy_ffmpeg_avcodec_receive_frame;
static __typeof__(avcodec_receive_packet) *qlazy_ffmpeg_avcodec_receive_packet;
static __typeof__(avcodec_send_frame) *qlazy_ffmpeg_avcodec_send_frame;
static __typeof__(avcodec_send_packet) *qlazy_ffmpeg_avcodec_send_packet;
static __typeof__(avcodec_version) *qlazy_ffmpeg_avcodec_version;
static __typeof__(av_find_best_stream) *qlazy_ffmpeg_av_find_best_stream;
static __typeof__(av_find_input_format) *qlazy_ffmpeg_av_find_input_format;
static __typeof__(av_guess_format) *qlazy_ffmpeg_av_guess_format;
static __typeof__(av_read_frame) *qlazy_ffmpeg_av_read_frame;
static __typeof__(av_seek_frame) *qlazy_ffmpeg_av_seek_frame;
static __typeof__(av_stream_get_side_data) *qlazy_ffmpeg_av_stream_get_side_data;
static __typeof__(av_write_frame) *qlazy_ffmpeg_av_write_frame;
static __typeof__(av_write_trailer) *qlazy_ffmpeg_av_write_trailer;
static __typeof__(avformat_alloc_context) *qlazy_ffmpeg_avformat_alloc_context;
static __typeof__(avformat_alloc_output_context2) *qlazy_ffmpeg_avformat_alloc_output_context2;
static __typeof__(avformat_close_input) *qlazy_ffmpeg_avformat_close_input;
static __typeof__(avformat_find_stream_info) *qlazy_ffmpeg_avformat_find_stream_info;
static __typeof__(avformat_free_context) *qlazy_ffmpeg_avformat_free_context;
static __typeof__(avformat_index_get_entries_count) *qlazy_ffmpeg_avformat_index_get_entries_count;
static __typeof__(avformat_index_get_entry) *qlazy_ffmpeg_avformat_index_get_entry;
static __typeof__(avformat_new_stream) *qlazy_ffmpeg_avformat_new_stream;
static __typeof__(avformat_open_input) *qlazy_ffmpeg_avformat_open_input;
static __typeof__(avformat_version) *qlazy_ffmpeg_avformat_version;
static __typeof__(avformat_write_header) *qlazy_ffmpeg_avformat_write_header;
static __typeof__(avio_alloc_context) *qlazy_ffmpeg_avio_alloc_context;
static __typeof__(avio_closep) *qlazy_ffmpeg_avio_closep;
static __typeof__(avio_context_free) *qlazy_ffmpeg_avio_context_free;
static __typeof__(avio_flush) *qlazy_ffmpeg_avio_flush;
static __typeof__(avio_open) *qlazy_ffmpeg_avio_open;

static pthread_once_t qlazy_ffmpeg_once = PTHREAD_ONCE_INIT;
static char qlazy_ffmpeg_error[512];

static void qlazy_ffmpeg_open(void) {
    if (!qlazy_open_all(qlazy_ffmpeg_names, qlazy_ffmpeg_handles, 4, qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error)) return;
    if (!(qlazy_ffmpeg_av_d2q = (__typeof__(av_d2q) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_d2q", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_dict_free = (__typeof__(av_dict_free) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_dict_free", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_dict_set = (__typeof__(av_dict_set) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_dict_set", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_display_rotation_get = (__typeof__(av_display_rotation_get) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_display_rotation_get", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_frame_alloc = (__typeof__(av_frame_alloc) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_frame_alloc", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_frame_free = (__typeof__(av_frame_free) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_frame_free", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_frame_get_buffer = (__typeof__(av_frame_get_buffer) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_frame_get_buffer", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_frame_ref = (__typeof__(av_frame_ref) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_frame_ref", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_frame_unref = (__typeof__(av_frame_unref) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_frame_unref", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_free = (__typeof__(av_free) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_free", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_freep = (__typeof__(av_freep) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_freep", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_log_set_level = (__typeof__(av_log_set_level) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_log_set_level", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_malloc = (__typeof__(av_malloc) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_malloc", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_max_alloc = (__typeof__(av_max_alloc) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_max_alloc", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_pix_fmt_desc_get = (__typeof__(av_pix_fmt_desc_get) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_pix_fmt_desc_get", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_strerror = (__typeof__(av_strerror) *)qlazy_symbol(qlazy_ffmpeg_handles[0], "av_strerror", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_sws_freeContext = (__typeof__(sws_freeContext) *)qlazy_symbol(qlazy_ffmpeg_handles[1], "sws_freeContext", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_sws_getContext = (__typeof__(sws_getContext) *)qlazy_symbol(qlazy_ffmpeg_handles[1], "sws_getContext", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_sws_scale = (__typeof__(sws_scale) *)qlazy_symbol(qlazy_ffmpeg_handles[1], "sws_scale", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_new_packet = (__typeof__(av_new_packet) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "av_new_packet", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_packet_alloc = (__typeof__(av_packet_alloc) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "av_packet_alloc", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_packet_free = (__typeof__(av_packet_free) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "av_packet_free", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_packet_rescale_ts = (__typeof__(av_packet_rescale_ts) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "av_packet_rescale_ts", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_packet_unref = (__typeof__(av_packet_unref) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "av_packet_unref", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_alloc_context3 = (__typeof__(avcodec_alloc_context3) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_alloc_context3", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_find_decoder = (__typeof__(avcodec_find_decoder) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_find_decoder", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_find_encoder = (__typeof__(avcodec_find_encoder) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_find_encoder", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_flush_buffers = (__typeof__(avcodec_flush_buffers) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_flush_buffers", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_free_context = (__typeof__(avcodec_free_context) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_free_context", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_get_name = (__typeof__(avcodec_get_name) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_get_name", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_open2 = (__typeof__(avcodec_open2) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_open2", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_parameters_from_context = (__typeof__(avcodec_parameters_from_context) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_parameters_from_context", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_parameters_to_context = (__typeof__(avcodec_parameters_to_context) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_parameters_to_context", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_receive_frame = (__typeof__(avcodec_receive_frame) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_receive_frame", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_receive_packet = (__typeof__(avcodec_receive_packet) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_receive_packet", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_send_frame = (__typeof__(avcodec_send_frame) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_send_frame", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_send_packet = (__typeof__(avcodec_send_packet) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_send_packet", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avcodec_version = (__typeof__(avcodec_version) *)qlazy_symbol(qlazy_ffmpeg_handles[2], "avcodec_version", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_find_best_stream = (__typeof__(av_find_best_stream) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "av_find_best_stream", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_find_input_format = (__typeof__(av_find_input_format) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "av_find_input_format", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_guess_format = (__typeof__(av_guess_format) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "av_guess_format", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_read_frame = (__typeof__(av_read_frame) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "av_read_frame", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_seek_frame = (__typeof__(av_seek_frame) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "av_seek_frame", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_stream_get_side_data = (__typeof__(av_stream_get_side_data) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "av_stream_get_side_data", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_write_frame = (__typeof__(av_write_frame) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "av_write_frame", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_av_write_trailer = (__typeof__(av_write_trailer) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "av_write_trailer", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_alloc_context = (__typeof__(avformat_alloc_context) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_alloc_context", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_alloc_output_context2 = (__typeof__(avformat_alloc_output_context2) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_alloc_output_context2", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_close_input = (__typeof__(avformat_close_input) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_close_input", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_find_stream_info = (__typeof__(avformat_find_stream_info) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_find_stream_info", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_free_context = (__typeof__(avformat_free_context) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_free_context", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_index_get_entries_count = (__typeof__(avformat_index_get_entries_count) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_index_get_entries_count", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_index_get_entry = (__typeof__(avformat_index_get_entry) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_index_get_entry", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_new_stream = (__typeof__(avformat_new_stream) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_new_stream", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_open_input = (__typeof__(avformat_open_input) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_open_input", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_version = (__typeof__(avformat_version) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_version", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avformat_write_header = (__typeof__(avformat_write_header) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avformat_write_header", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avio_alloc_context = (__typeof__(avio_alloc_context) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avio_alloc_context", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avio_closep = (__typeof__(avio_closep) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avio_closep", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avio_context_free = (__typeof__(avio_context_free) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avio_context_free", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avio_flush = (__typeof__(avio_flush) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avio_flush", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
    if (!(qlazy_ffmpeg_avio_open = (__typeof__(avio_open) *)qlazy_symbol(qlazy_ffmpeg_handles[3], "avio_open", qlazy_ffmpeg_error, sizeof qlazy_ffmpeg_error))) return;
}

__attribute__((visibility("default"))) const char *qlazy_load_ffmpeg(void) {
    pthread_once(&qlazy_ffmpeg_once, qlazy_ffmpeg_open);
    return qlazy_ffmpeg_error[0] ? qlazy_ffmpeg_error : NULL;
}

__attribute__((visibility("default"))) void *qlazy_ffmpeg_library(void) {
    return qlazy_load_ffmpeg() ? NULL : qlazy_ffmpeg_handles[3];
}

AVRational av_d2q(double a0, int a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_d2q", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_d2q(a0, a1);
}
void av_dict_free(AVDictionary **a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_dict_free", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_dict_free(a0);
}
int av_dict_set(AVDictionary **a0, const char *a1, const char *a2, int a3) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_dict_set", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_dict_set(a0, a1, a2, a3);
}
double av_display_rotation_get(const int32_t *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_display_rotation_get", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_display_rotation_get(a0);
}
AVFrame * av_frame_alloc(void) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_frame_alloc", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_frame_alloc();
}
void av_frame_free(AVFrame **a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_frame_free", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_frame_free(a0);
}
int av_frame_get_buffer(AVFrame *a0, int a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_frame_get_buffer", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_frame_get_buffer(a0, a1);
}
int av_frame_ref(AVFrame *a0, const AVFrame *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_frame_ref", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_frame_ref(a0, a1);
}
void av_frame_unref(AVFrame *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_frame_unref", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_frame_unref(a0);
}
void av_free(void *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_free", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_free(a0);
}
void av_freep(void *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_freep", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_freep(a0);
}
void av_log_set_level(int a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_log_set_level", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_log_set_level(a0);
}
void * av_malloc(size_t a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_malloc", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_malloc(a0);
}
void av_max_alloc(size_t a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_max_alloc", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_max_alloc(a0);
}
const AVPixFmtDescriptor * av_pix_fmt_desc_get(enum AVPixelFormat a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_pix_fmt_desc_get", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_pix_fmt_desc_get(a0);
}
int av_strerror(int a0, char *a1, size_t a2) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_strerror", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_strerror(a0, a1, a2);
}
void sws_freeContext(struct SwsContext *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("sws_freeContext", qlazy_ffmpeg_error);
    qlazy_ffmpeg_sws_freeContext(a0);
}
struct SwsContext * sws_getContext(int a0, int a1, enum AVPixelFormat a2, int a3, int a4, enum AVPixelFormat a5, int a6, SwsFilter *a7, SwsFilter *a8, const double *a9) {
    if (qlazy_load_ffmpeg()) qlazy_missing("sws_getContext", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_sws_getContext(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9);
}
int sws_scale(struct SwsContext *a0, const uint8_t *const *a1, const int *a2, int a3, int a4, uint8_t *const *a5, const int *a6) {
    if (qlazy_load_ffmpeg()) qlazy_missing("sws_scale", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_sws_scale(a0, a1, a2, a3, a4, a5, a6);
}
int av_new_packet(AVPacket *a0, int a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_new_packet", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_new_packet(a0, a1);
}
AVPacket * av_packet_alloc(void) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_packet_alloc", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_packet_alloc();
}
void av_packet_free(AVPacket **a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_packet_free", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_packet_free(a0);
}
void av_packet_rescale_ts(AVPacket *a0, AVRational a1, AVRational a2) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_packet_rescale_ts", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_packet_rescale_ts(a0, a1, a2);
}
void av_packet_unref(AVPacket *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_packet_unref", qlazy_ffmpeg_error);
    qlazy_ffmpeg_av_packet_unref(a0);
}
AVCodecContext * avcodec_alloc_context3(const AVCodec *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_alloc_context3", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_alloc_context3(a0);
}
const AVCodec * avcodec_find_decoder(enum AVCodecID a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_find_decoder", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_find_decoder(a0);
}
const AVCodec * avcodec_find_encoder(enum AVCodecID a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_find_encoder", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_find_encoder(a0);
}
void avcodec_flush_buffers(AVCodecContext *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_flush_buffers", qlazy_ffmpeg_error);
    qlazy_ffmpeg_avcodec_flush_buffers(a0);
}
void avcodec_free_context(AVCodecContext **a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_free_context", qlazy_ffmpeg_error);
    qlazy_ffmpeg_avcodec_free_context(a0);
}
const char * avcodec_get_name(enum AVCodecID a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_get_name", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_get_name(a0);
}
int avcodec_open2(AVCodecContext *a0, const AVCodec *a1, AVDictionary **a2) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_open2", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_open2(a0, a1, a2);
}
int avcodec_parameters_from_context(AVCodecParameters *a0, const AVCodecContext *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_parameters_from_context", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_parameters_from_context(a0, a1);
}
int avcodec_parameters_to_context(AVCodecContext *a0, const AVCodecParameters *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_parameters_to_context", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_parameters_to_context(a0, a1);
}
int avcodec_receive_frame(AVCodecContext *a0, AVFrame *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_receive_frame", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_receive_frame(a0, a1);
}
int avcodec_receive_packet(AVCodecContext *a0, AVPacket *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_receive_packet", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_receive_packet(a0, a1);
}
int avcodec_send_frame(AVCodecContext *a0, const AVFrame *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_send_frame", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_send_frame(a0, a1);
}
int avcodec_send_packet(AVCodecContext *a0, const AVPacket *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_send_packet", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_send_packet(a0, a1);
}
unsigned int avcodec_version(void) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avcodec_version", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avcodec_version();
}
int av_find_best_stream(AVFormatContext *a0, enum AVMediaType a1, int a2, int a3, const AVCodec **a4, int a5) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_find_best_stream", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_find_best_stream(a0, a1, a2, a3, a4, a5);
}
const AVInputFormat * av_find_input_format(const char *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_find_input_format", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_find_input_format(a0);
}
const AVOutputFormat * av_guess_format(const char *a0, const char *a1, const char *a2) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_guess_format", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_guess_format(a0, a1, a2);
}
int av_read_frame(AVFormatContext *a0, AVPacket *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_read_frame", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_read_frame(a0, a1);
}
int av_seek_frame(AVFormatContext *a0, int a1, int64_t a2, int a3) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_seek_frame", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_seek_frame(a0, a1, a2, a3);
}
uint8_t * av_stream_get_side_data(const AVStream *a0, enum AVPacketSideDataType a1, size_t *a2) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_stream_get_side_data", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_stream_get_side_data(a0, a1, a2);
}
int av_write_frame(AVFormatContext *a0, AVPacket *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_write_frame", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_write_frame(a0, a1);
}
int av_write_trailer(AVFormatContext *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("av_write_trailer", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_av_write_trailer(a0);
}
AVFormatContext * avformat_alloc_context(void) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_alloc_context", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_alloc_context();
}
int avformat_alloc_output_context2(AVFormatContext **a0, const AVOutputFormat *a1, const char *a2, const char *a3) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_alloc_output_context2", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_alloc_output_context2(a0, a1, a2, a3);
}
void avformat_close_input(AVFormatContext **a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_close_input", qlazy_ffmpeg_error);
    qlazy_ffmpeg_avformat_close_input(a0);
}
int avformat_find_stream_info(AVFormatContext *a0, AVDictionary **a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_find_stream_info", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_find_stream_info(a0, a1);
}
void avformat_free_context(AVFormatContext *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_free_context", qlazy_ffmpeg_error);
    qlazy_ffmpeg_avformat_free_context(a0);
}
int avformat_index_get_entries_count(const AVStream *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_index_get_entries_count", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_index_get_entries_count(a0);
}
const AVIndexEntry * avformat_index_get_entry(AVStream *a0, int a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_index_get_entry", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_index_get_entry(a0, a1);
}
AVStream * avformat_new_stream(AVFormatContext *a0, const AVCodec *a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_new_stream", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_new_stream(a0, a1);
}
int avformat_open_input(AVFormatContext **a0, const char *a1, const AVInputFormat *a2, AVDictionary **a3) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_open_input", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_open_input(a0, a1, a2, a3);
}
unsigned int avformat_version(void) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_version", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_version();
}
int avformat_write_header(AVFormatContext *a0, AVDictionary **a1) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avformat_write_header", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avformat_write_header(a0, a1);
}
AVIOContext * avio_alloc_context(unsigned char *a0, int a1, int a2, void *a3, int (*a4)(void *, uint8_t *, int), int (*a5)(void *, uint8_t *, int), int64_t (*a6)(void *, int64_t, int)) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avio_alloc_context", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avio_alloc_context(a0, a1, a2, a3, a4, a5, a6);
}
int avio_closep(AVIOContext **a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avio_closep", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avio_closep(a0);
}
void avio_context_free(AVIOContext **a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avio_context_free", qlazy_ffmpeg_error);
    qlazy_ffmpeg_avio_context_free(a0);
}
void avio_flush(AVIOContext *a0) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avio_flush", qlazy_ffmpeg_error);
    qlazy_ffmpeg_avio_flush(a0);
}
int avio_open(AVIOContext **a0, const char *a1, int a2) {
    if (qlazy_load_ffmpeg()) qlazy_missing("avio_open", qlazy_ffmpeg_error);
    return qlazy_ffmpeg_avio_open(a0, a1, a2);
}
