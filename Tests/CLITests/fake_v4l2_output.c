/* A stand-in for a v4l2loopback output device, for StreamCommandTests (no kernel module can be
 * loaded where the tests run). Preloaded into `quarantine stream --blur-to /dev/null`, it answers
 * the V4L2 ioctls made on a descriptor of /dev/null as an output-only device would, logs them to
 * $FAKE_V4L2_LOG, and appends what is written to it to $FAKE_V4L2_FRAMES. Everything else goes to
 * the real calls. Only the kernel's side is faked: quarantine's check and libavdevice's v4l2
 * output (its VIDIOC_G_FMT, VIDIOC_S_FMT and one write per frame) run as they would. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/videodev2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_fake(int fd) {
    char link[64], path[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = 0;
    return strcmp(path, "/dev/null") == 0;
}

static void note(const char *format, ...) {
    const char *name = getenv("FAKE_V4L2_LOG");
    FILE *log = name ? fopen(name, "a") : NULL;
    if (!log) return;
    va_list ap;
    va_start(ap, format);
    vfprintf(log, format, ap);
    va_end(ap);
    fclose(log);
}

int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    static int (*real)(int, unsigned long, ...);
    if (!real) real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    if (!is_fake(fd)) return real(fd, request, arg);
    if (request == VIDIOC_QUERYCAP) {
        struct v4l2_capability *c = arg;
        memset(c, 0, sizeof *c);
        strcpy((char *)c->driver, "v4l2 loopback");
        strcpy((char *)c->card, "Fake loopback");
        c->capabilities = V4L2_CAP_VIDEO_OUTPUT | V4L2_CAP_STREAMING | V4L2_CAP_DEVICE_CAPS;
        c->device_caps = V4L2_CAP_VIDEO_OUTPUT | V4L2_CAP_STREAMING;
        note("QUERYCAP\n");
    } else if (request == VIDIOC_G_FMT) {
        struct v4l2_format *f = arg;
        note("G_FMT type %u\n", f->type);
    } else if (request == VIDIOC_S_FMT) {
        struct v4l2_format *f = arg;
        note("S_FMT type %u %ux%u %.4s sizeimage %u\n", f->type, f->fmt.pix.width, f->fmt.pix.height,
             (const char *)&f->fmt.pix.pixelformat, f->fmt.pix.sizeimage);
    } else {
        note("ioctl %lx\n", request);
    }
    return 0;
}

ssize_t write(int fd, const void *buffer, size_t count) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (is_fake(fd)) {
        const char *name = getenv("FAKE_V4L2_FRAMES");
        FILE *out = name ? fopen(name, "a") : NULL;
        if (out) {
            fwrite(buffer, 1, count, out);
            fclose(out);
        }
        note("write %zu\n", count);
    }
    return real(fd, buffer, count);
}
