#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (Tests/Fuzz/corpus/HARNESS/) from pictures and clips this
script makes itself: test patterns and gradients from Pillow and ffmpeg's lavfi sources, D-Bus
messages marshalled here, and the project's own configuration. No third-party files.

Needs Pillow (the reference venv has it), ffmpeg, heif-enc, avifenc, cjxl, cwebp (Debian packages).
Run from the repository: .venv-reference/bin/python scripts/fuzz/seeds.py
"""
import io, os, shutil, struct, subprocess, sys, tempfile
from PIL import Image, ImageDraw

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.normpath(os.path.join(ROOT, "Tests", "Fuzz", "corpus"))
HARNESSES = ["sniff", "jpeg-header", "jpeg", "ffmpeg-image", "picture", "video", "gif-frames", "config", "dbus", "guardian-request", "archive", "pdf"]
tmp = tempfile.mkdtemp(prefix="quarantine-seeds-")


def put(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def pattern(w=64, h=48, mode="RGB"):
    """Colour bars, a gradient and a circle: enough structure for the codecs to use every tool."""
    im = Image.new("RGB", (w, h))
    px = im.load()
    for y in range(h):
        for x in range(w):
            px[x, y] = ((x * 255) // max(1, w - 1), (y * 255) // max(1, h - 1), ((x // 8 + y // 8) % 2) * 200)
    ImageDraw.Draw(im).ellipse((w // 4, h // 4, 3 * w // 4, 3 * h // 4), fill=(220, 170, 140))
    return im.convert(mode) if mode != "RGB" else im


def encode(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def exif(orientation, thumbnail=None):
    """A little-endian EXIF APP1 body: IFD0 with the orientation, IFD1 with a JPEG thumbnail."""
    tiff = bytearray(b"II*\x00" + struct.pack("<I", 8))
    ifd1 = 8 + 2 + 12 + 4
    tiff += struct.pack("<H", 1) + struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0)
    tiff += struct.pack("<I", ifd1 if thumbnail else 0)
    if thumbnail:
        data = ifd1 + 2 + 2 * 12 + 4
        tiff += struct.pack("<H", 2)
        tiff += struct.pack("<HHII", 0x0201, 4, 1, data) + struct.pack("<HHII", 0x0202, 4, 1, len(thumbnail))
        tiff += struct.pack("<I", 0) + thumbnail
    return b"Exif\x00\x00" + bytes(tiff)


def with_app1(jpeg, body):
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body + jpeg[2:]


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tool_file(name, make):
    path = os.path.join(tmp, name)
    make(path)
    with open(path, "rb") as f:
        return f.read()


def dbus_message(kind, serial, fields, signature, body):
    """Marshals a little-endian D-Bus message (header fields: code -> (signature char, value))."""
    def align(buf, n):
        buf += b"\x00" * (-len(buf) % n)

    def string(buf, s, length_type="I"):
        b = s.encode()
        if length_type == "I":
            align(buf, 4); buf += struct.pack("<I", len(b))
        else:
            buf += struct.pack("<B", len(b))
        buf += b + b"\x00"

    header = bytearray(struct.pack("<cBBBII", b"l", kind, 0, 1, 0, serial))
    align(header, 4)
    array = bytearray()
    for code, (sig, value) in fields.items():
        align(array, 8)
        array += struct.pack("<B", code) + struct.pack("<B", 1) + sig.encode() + b"\x00"
        if sig in "so":
            string(array, value)
        elif sig == "g":
            string(array, value, "B")
        elif sig == "u":
            align(array, 4); array += struct.pack("<I", value)
    # The array's length excludes the padding before its first element (already 8-aligned: offset 16).
    header += struct.pack("<I", len(array)) + array
    align(header, 8)
    struct.pack_into("<I", header, 4, len(body))
    return bytes(header) + body


def dbus_body(signature, values):
    buf = bytearray()
    def align(n):
        buf.extend(b"\x00" * (-len(buf) % n))
    for sig, value in zip(signature_items(signature), values):
        if sig == "u":
            align(4); buf.extend(struct.pack("<I", value))
        elif sig == "s":
            b = value.encode(); align(4); buf.extend(struct.pack("<I", len(b)) + b + b"\x00")
        elif sig == "as":
            align(4); at = len(buf); buf.extend(b"\x00\x00\x00\x00"); start = len(buf)
            for s in value:
                b = s.encode(); align(4); buf.extend(struct.pack("<I", len(b)) + b + b"\x00")
            struct.pack_into("<I", buf, at, len(buf) - start)
    return bytes(buf)


def signature_items(signature):
    items, i = [], 0
    while i < len(signature):
        if signature[i] == "a":
            items.append(signature[i:i + 2]); i += 2
        else:
            items.append(signature[i]); i += 1
    return items


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    base = pattern()

    # JPEG: baseline, progressive, 4:4:4, greyscale, CMYK, EXIF orientation, EXIF thumbnail, restart intervals.
    thumb = encode(pattern(16, 12), "JPEG", quality=50)
    jpegs = {
        "baseline.jpg": encode(base, "JPEG", quality=80),
        "progressive.jpg": encode(base, "JPEG", quality=70, progressive=True),
        "444.jpg": encode(base, "JPEG", quality=90, subsampling=0),
        "grey.jpg": encode(base.convert("L"), "JPEG", quality=75),
        "cmyk.jpg": encode(base.convert("CMYK"), "JPEG", quality=75),
        "odd-size.jpg": encode(pattern(33, 17), "JPEG", quality=60),
    }
    jpegs["orientation6.jpg"] = with_app1(jpegs["baseline.jpg"], exif(6))
    jpegs["exif-thumbnail.jpg"] = with_app1(jpegs["baseline.jpg"], exif(8, thumb))
    jpegs["restart.jpg"] = tool_file("restart.jpg", lambda p: run("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48",
                                                                "-frames:v", "1", "-huffman", "default", "-q:v", "5", p))
    for name, data in jpegs.items():
        put("jpeg", name, data)
        put("jpeg-header", name, data)

    # The formats libavcodec decodes here, and the animation counters.
    gif_frames = [pattern(40, 30), pattern(40, 30).rotate(90, expand=False), pattern(40, 30).transpose(Image.FLIP_LEFT_RIGHT)]
    gifs = {
        "still.gif": encode(base.convert("P", palette=Image.ADAPTIVE, colors=64), "GIF"),
        "animated.gif": (lambda b: (gif_frames[0].save(b, "GIF", save_all=True, append_images=gif_frames[1:], duration=100, loop=0), b.getvalue())[1])(io.BytesIO()),
        "local-palette.gif": tool_file("local.gif", lambda p: run("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=32x24:rate=5:duration=0.6",
                                                                  "-filter_complex", "split[a][b];[a]palettegen=stats_mode=single[p];[b][p]paletteuse=new=1", p)),
    }
    for name, data in gifs.items():
        put("ffmpeg-image", name, data)
        put("gif-frames", name, data)
    others = {
        "rgb.bmp": encode(base, "BMP"),
        "palette.bmp": encode(base.convert("P", palette=Image.ADAPTIVE, colors=16), "BMP"),
        "rgb.png": encode(base, "PNG"),
        "palette.png": encode(base.convert("P", palette=Image.ADAPTIVE, colors=32), "PNG"),
        "grey16.png": encode(base.convert("I"), "PNG"),
        "rgba-interlaced.png": tool_file("i.png", lambda p: run("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=48x32", "-frames:v", "1",
                                                               "-pix_fmt", "rgba", "-pred", "mixed", p)),
        "animated.png": tool_file("a.apng", lambda p: run("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=32x24:rate=5:duration=0.6",
                                                          "-plays", "0", "-f", "apng", p)),
        "raw.tiff": encode(base, "TIFF"),
        "lzw.tiff": encode(base, "TIFF", compression="tiff_lzw"),
        "packbits-grey.tiff": encode(base.convert("L"), "TIFF", compression="packbits"),
        "pages.tiff": (lambda b: (base.save(b, "TIFF", save_all=True, append_images=[base.rotate(180)]), b.getvalue())[1])(io.BytesIO()),
    }
    for name, data in others.items():
        put("ffmpeg-image", name, data)

    # The other decoders (libwebp, libheif, libjxl, librsvg).
    png_path = os.path.join(tmp, "base.png")
    base.save(png_path)
    pictures = {
        "lossy.webp": tool_file("l.webp", lambda p: run("cwebp", "-quiet", "-q", "60", png_path, "-o", p)),
        "lossless.webp": tool_file("ll.webp", lambda p: run("cwebp", "-quiet", "-lossless", png_path, "-o", p)),
        "animated.webp": tool_file("a.webp", lambda p: run("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=32x24:rate=5:duration=0.6",
                                                           "-c:v", "libwebp", "-loop", "0", p)),
        "picture.heic": tool_file("p.heic", lambda p: run("heif-enc", "-q", "40", png_path, "-o", p)),
        "picture.avif": tool_file("p.avif", lambda p: run("avifenc", "--min", "20", "--max", "40", png_path, p)),
        "picture.jxl": tool_file("p.jxl", lambda p: run("cjxl", "-q", "60", png_path, p)),
        "lossless.jxl": tool_file("l.jxl", lambda p: run("cjxl", "-d", "0", png_path, p)),
        "shapes.svg": b'<svg xmlns="http://www.w3.org/2000/svg" width="64" height="48" viewBox="0 0 64 48">'
                      b'<rect width="64" height="48" fill="#d9a"/><circle cx="32" cy="24" r="12" fill="#fc9"/>'
                      b'<path d="M0 0 L64 48" stroke="#000"/><text x="4" y="40">q</text></svg>',
    }
    for name, data in pictures.items():
        put("picture", name, data)

    # Videos: two seconds at 64x48, keyframes every half second, in each container the agent meets.
    src = ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=2"]
    videos = {
        "h264.mp4": ["-c:v", "libx264", "-g", "5", "-pix_fmt", "yuv420p", "-movflags", "+faststart"],
        "h264-bframes.mkv": ["-c:v", "libx264", "-g", "5", "-bf", "2", "-pix_fmt", "yuv420p"],
        "hevc-rotated.mov": ["-c:v", "libx265", "-x265-params", "log-level=none:keyint=5", "-pix_fmt", "yuv420p", "-metadata:s:v", "rotate=90"],
        "vp9.webm": ["-c:v", "libvpx-vp9", "-g", "5", "-b:v", "50k"],
        "mjpeg.avi": ["-c:v", "mjpeg", "-q:v", "8"],
        "mpeg2.ts": ["-c:v", "mpeg2video", "-g", "5", "-f", "mpegts"],
        "flv1.flv": ["-c:v", "flv1", "-g", "5"],
        "mpeg1.mpg": ["-r", "25", "-c:v", "mpeg1video", "-g", "12", "-f", "mpeg"],
        "fragmented.mp4": ["-c:v", "libx264", "-g", "5", "-pix_fmt", "yuv420p", "-movflags", "frag_keyframe+empty_moov"],
    }
    for name, args in videos.items():
        data = tool_file(name, lambda p: run("ffmpeg", "-v", "error", *src, *args, p))
        put("video", name, data)
        put("sniff", name, data[:4096])

    for harness, names in (("jpeg", jpegs), ("ffmpeg-image", others), ("ffmpeg-image", gifs), ("picture", pictures)):
        for name in names:
            with open(os.path.join(OUT, harness, name), "rb") as f:
                put("sniff", name, f.read()[:4096])

    # The configuration: the shipped file, and small ones with every kind of value.
    with open(os.path.join(ROOT, "etc", "quarantine", "config.toml"), "rb") as f:
        put("config", "default.toml", f.read())
    put("config", "child.toml", b'mode = "child"\n[watch]\nfolders = ["~/Downloads", "~/Shared/outgoing"]\n[analysis]\nworkers = 2\n'
                                b'decode_memory_mib = 300\n[video]\nmax_gap = 1.5\ndecoders = 0\n')
    put("config", "types.toml", b'# comment\nmode = "adult"\non_error = "leave"\n[agent]\nhelp_page = "https://example.org/help"\n'
                                b'[thresholds]\nnudenet = 0.45\nopen_nsfw = 0.8\n[[extra]]\nx = 1979-05-27T07:32:00Z\ny = { a = [1, 2.5, "s"] }\n')

    # D-Bus: what the notification server sends (signals) and answers (method returns).
    path, iface = (1, ("o", "/org/freedesktop/Notifications")), (2, ("s", "org.freedesktop.Notifications"))
    sender = (7, ("s", ":1.42"))
    def signal(member, sig, values, serial):
        body = dbus_body(sig, values)
        return dbus_message(4, serial, dict([path, iface, (3, ("s", member)), sender, (8, ("g", sig))]), sig, body)
    def reply(sig, values, serial):
        body = dbus_body(sig, values)
        return dbus_message(2, serial, dict([(5, ("u", 3)), sender, (8, ("g", sig))]), sig, body)
    put("dbus", "action-invoked", signal("ActionInvoked", "us", [7, "show-preview"], 10))
    put("dbus", "notification-closed", signal("NotificationClosed", "uu", [7, 2], 11))
    put("dbus", "capabilities", reply("as", [["actions", "body", "body-markup", "icon-static"]], 12))
    put("dbus", "server-information", reply("ssss", ["dunst", "knopwob", "1.9.0", "1.2"], 13))
    put("dbus", "notify-id", reply("u", [7], 14))
    guardian_seeds()
    container_seeds(encode(pattern(), "JPEG", quality=80))

    shutil.rmtree(tmp)
    for h in HARNESSES:
        d = os.path.join(OUT, h)
        files = sorted(os.listdir(d))
        print(f"{h:13} {len(files):3} seeds, {sum(os.path.getsize(os.path.join(d, f)) for f in files):7} bytes")


def guardian_seeds():
    """The guardian socket's messages: each verb's request as the CLI sends it (and a few a
    hand-written client or an attacker would: no version, another version, an unknown verb, a
    malformed body), answers as the service sends them."""
    shutil.rmtree(os.path.join(OUT, "guardian-request"), ignore_errors=True)
    event = '{"actor":"kid","at":"2026-01-02T03:04:05Z","detail":"x","id":4802,"itemId":1,"kind":"release_requested","mode":"child"}'
    item = ('{"analysisMode":"child","createdAt":"2026-01-02T03:04:05Z","hasPreview":true,"id":3,"originURL":"https://example.com/a.png",'
            '"originalPath":"/home/kid/Downloads/a.png","reasons":["TEST_CARD 1.00"],"sha256":"00ff","size":1234,"status":"quarantined"}')
    header = '"mode":"child","pinIsSet":true,"role":"guardian","user":"kid","version":1'
    for name, text in [
        ("hello", '{"verb":"hello","version":1}'),
        ("hello-unversioned", '{"verb":"hello"}'),
        ("status", '{"verb":"status","version":1}'),
        ("list", '{"all":true,"limit":50,"verb":"list","version":1}'),
        ("show", '{"id":3,"verb":"show","version":1}'),
        ("history-page", '{"before":5001,"limit":200,"verb":"history","version":1}'),
        ("release-pin", '{"id":3,"pin":"2468","verb":"release","version":1}'),
        ("block", '{"id":7,"keep":true,"origin":false,"verb":"block","version":1}'),
        ("ask", '{"id":7,"verb":"ask","version":1}'),
        ("mode", '{"mode":"adult","verb":"mode","version":1}'),
        ("set-pin", '{"pin":"2468","verb":"setPIN","version":1}'),
        ("watch", '{"folder":"~/Music","outgoing":false,"remove":true,"verb":"watch","version":1}'),
        ("unknown-verb", '{"verb":"formatDisk","version":1}'),
        ("other-version", '{"verb":"list","version":2}'),
        ("malformed", '{"id":"three","verb":"release"}'),
        ("refused", '{"refusal":{"refused":{"_0":"only a guardian can do this"}},"verb":"history","version":1}'),
        ("invalid", '{"refusal":{"invalid":{"_0":{"malformed":{"reason":"id is missing","verb":"release"}}}},"version":1}'),
        ("wrong-pin", '{"refusal":{"wrongPIN":{"wait":60}},"verb":"release",' + header + '}'),
        ("hello-answer", '{"answer":{"verbs":["hello","status","list"]},"verb":"hello",' + header + '}'),
        ("history-answer", '{"answer":{"events":[' + event + '],"more":true,"next":4801},"verb":"history",' + header + '}'),
        ("list-answer", '{"answer":{"items":[' + item + '],"more":false,"requests":{"3":"2026-01-02T03:04:05Z"}},"verb":"list",' + header + '}'),
        ("show-answer", '{"answer":{"events":[' + event + '],"hasPreview":true,"item":' + item + ',"more":true,"next":9},"verb":"show",' + header + '}'),
        ("status-answer", '{"answer":{"status":{"folders":[{"direction":"incoming","path":"/home/kid","state":"watching"}],"inFlight":0,'
                          '"problem":"cannot analyse: the worker launcher is not running","queueDepth":2,"state":"running"}},"verb":"status",' + header + '}'),
    ]:
        put("guardian-request", name, text.encode())


def container_seeds(jpeg):
    """Small archives of every kind libarchive reads here, and small PDFs (issue 30)."""
    import gzip, bz2, lzma, tarfile, zipfile
    for name, compression in [("stored.zip", zipfile.ZIP_STORED), ("deflate.zip", zipfile.ZIP_DEFLATED)]:
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", compression) as z:
            z.writestr("mimetype", b"application/epub+zip")
            z.writestr("a/pic.jpg", jpeg)
            z.writestr("nested.zip", open(os.path.join(tmp, "inner.zip"), "rb").read() if os.path.exists(os.path.join(tmp, "inner.zip")) else b"PK\x05\x06" + bytes(18))
        put("archive", name, b.getvalue())
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w") as t:
        info = tarfile.TarInfo("pic.jpg"); info.size = len(jpeg); t.addfile(info, io.BytesIO(jpeg))
    tar = b.getvalue()
    put("archive", "plain.tar", tar)
    put("archive", "tar.gz", gzip.compress(tar))
    put("archive", "tar.bz2", bz2.compress(tar))
    put("archive", "tar.xz", lzma.compress(tar))
    put("archive", "pic.jpg.gz", gzip.compress(jpeg))
    for i, (w, h) in enumerate([(64, 48), (200, 100)]):
        objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                   b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R /Resources << /XObject << /Im0 5 0 R >> >> >>" % (w, h)]
        content = b"q %d 0 0 %d 0 0 cm /Im0 Do Q BT /F1 8 Tf 2 2 Td (x) Tj ET" % (w // 2, h // 2)
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        objects.append(b"<< /Type /XObject /Subtype /Image /Width 64 /Height 48 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode "
                       b"/Length %d >>\nstream\n" % len(jpeg) + jpeg + b"\nendstream")
        data, offsets = b"%PDF-1.4\n", []
        for n, body in enumerate(objects):
            offsets.append(len(data)); data += b"%d 0 obj\n" % (n + 1) + body + b"\nendobj\n"
        xref = len(data)
        data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
        data += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
        put("pdf", "page%d.pdf" % i, data)


if __name__ == "__main__":
    sys.exit(main())
