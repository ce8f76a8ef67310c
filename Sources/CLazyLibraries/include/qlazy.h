/* The media libraries quarantine opens at their first use, not at every start (see
   scripts/lazy-libraries.py). Each loader opens its libraries once and returns NULL, or why they
   cannot be opened; a call into a library that cannot be opened ends the process saying so. */
#ifndef QUARANTINE_QLAZY_H
#define QUARANTINE_QLAZY_H
const char *qlazy_load_ffmpeg(void);
const char *qlazy_load_heif(void);
const char *qlazy_load_jxl(void);
const char *qlazy_load_cairo(void);
const char *qlazy_load_poppler(void);
const char *qlazy_load_rsvg(void);
/* The group's main library, opened (for data such as librsvg's version variables), or NULL. */
void *qlazy_ffmpeg_library(void);
void *qlazy_heif_library(void);
void *qlazy_jxl_library(void);
void *qlazy_cairo_library(void);
void *qlazy_poppler_library(void);
void *qlazy_rsvg_library(void);
#endif
