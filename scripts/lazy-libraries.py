#!/usr/bin/env python3
"""Writes Sources/CLazyLibraries/qlazy_<group>.c: the media libraries opened at their first use.

Linked, FFmpeg, Poppler, cairo, librsvg, libheif and libjxl brought about 125 more shared libraries
into every `quarantine` process, `list` and `status` included: 51 ms of a start's 85 ms went to the
dynamic loader. Instead the program defines each function it calls from them (hidden, so no library
binds to it) as a small function that opens the library on the first call (dlopen, once) and
calls the real one (dlsym on that library's handle). The header declares each function, so a
signature that does not match is a compile error, not a wrong call.

Run it after calling a new function of these libraries (the link fails with "undefined reference"
until then): python3 scripts/lazy-libraries.py. It reads the prototypes with clang's AST dump.
"""
import json, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Sources", "CLazyLibraries")
MULTIARCH = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"
GLIB = ["/usr/include/glib-2.0", f"/usr/lib/{MULTIARCH}/glib-2.0/include", "/usr/include/cairo"]

# group: (headers, include folders, [(soname expression, [symbols])], words for a missing library)
GROUPS = {
    "ffmpeg": (
        ["libavformat/avformat.h", "libavcodec/avcodec.h", "libavutil/avutil.h", "libavutil/display.h", "libavutil/imgutils.h",
         "libavutil/opt.h", "libswscale/swscale.h"], [],
        [('"libavutil.so." QLAZY_STR(LIBAVUTIL_VERSION_MAJOR)',
          "av_d2q av_dict_free av_dict_set av_display_rotation_get av_frame_alloc av_frame_free av_frame_get_buffer av_frame_ref av_frame_unref "
          "av_free av_freep av_log_set_level av_malloc av_max_alloc av_pix_fmt_desc_get av_strerror"),
         ('"libswscale.so." QLAZY_STR(LIBSWSCALE_VERSION_MAJOR)', "sws_freeContext sws_getContext sws_scale"),
         ('"libavcodec.so." QLAZY_STR(LIBAVCODEC_VERSION_MAJOR)',
          "av_new_packet av_packet_alloc av_packet_free av_packet_rescale_ts av_packet_unref avcodec_alloc_context3 avcodec_find_decoder "
          "avcodec_find_encoder avcodec_flush_buffers avcodec_free_context avcodec_get_name avcodec_open2 avcodec_parameters_from_context "
          "avcodec_parameters_to_context avcodec_receive_frame avcodec_receive_packet avcodec_send_frame avcodec_send_packet avcodec_version"),
         ('"libavformat.so." QLAZY_STR(LIBAVFORMAT_VERSION_MAJOR)',
          "av_find_best_stream av_find_input_format av_guess_format av_read_frame av_seek_frame av_stream_get_side_data av_write_frame av_write_trailer "
          "avformat_alloc_context avformat_alloc_output_context2 avformat_close_input avformat_find_stream_info avformat_free_context "
          "avformat_index_get_entries_count avformat_index_get_entry avformat_new_stream avformat_open_input avformat_version "
          "avformat_write_header avio_alloc_context avio_closep avio_context_free avio_flush avio_open")]),
    "heif": (["libheif/heif.h"], [],
             [('"libheif.so.1"',
               "heif_context_alloc heif_context_free heif_context_get_image_handle heif_context_get_list_of_top_level_image_IDs "
               "heif_context_get_number_of_top_level_images heif_context_get_primary_image_ID heif_context_read_from_memory heif_decode_image "
               "heif_context_get_primary_image_handle heif_get_version heif_have_decoder_for_format heif_image_get_height heif_image_get_plane_readonly heif_image_get_width "
               "heif_image_handle_get_height heif_image_handle_get_width heif_image_handle_release heif_image_release")]),
    "jxl": (["jxl/decode.h"], [],
            [('"libjxl.so." QLAZY_STR(JPEGXL_MAJOR_VERSION) "." QLAZY_STR(JPEGXL_MINOR_VERSION)',
              "JxlDecoderCloseInput JxlDecoderCreate JxlDecoderDestroy JxlDecoderFlushImage JxlDecoderGetBasicInfo JxlDecoderImageOutBufferSize "
              "JxlDecoderProcessInput JxlDecoderSetImageOutBuffer JxlDecoderSetInput JxlDecoderSkipCurrentFrame JxlDecoderSubscribeEvents "
              "JxlDecoderVersion")]),
    "cairo": (["cairo.h"], ["/usr/include/cairo"],
              [('"libcairo.so.2"',
                "cairo_create cairo_destroy cairo_image_surface_create_for_data cairo_paint cairo_scale cairo_set_source_rgb cairo_status "
                "cairo_status_to_string cairo_surface_destroy cairo_surface_flush cairo_surface_status cairo_translate")]),
    "poppler": (["poppler.h"], ["/usr/include/poppler/glib", "/usr/include/poppler"] + GLIB,
                [('"libpoppler-glib.so.8"',
                  "poppler_document_get_n_pages poppler_document_get_page poppler_document_new_from_fd poppler_error_quark poppler_get_version "
                  "poppler_page_free_image_mapping poppler_page_get_image_mapping poppler_page_get_size poppler_page_render")]),
    "rsvg": (["librsvg/rsvg.h"], ["/usr/include/librsvg-2.0", "/usr/include/gdk-pixbuf-2.0"] + GLIB,
             [('"librsvg-2.so.2"',
               "rsvg_handle_get_intrinsic_dimensions rsvg_handle_get_intrinsic_size_in_pixels rsvg_handle_new_from_data "
               "rsvg_handle_render_document rsvg_handle_set_dpi")]),
}


STATIC_DEFINES = {"jxl": ["JXL_STATIC_DEFINE"], "poppler": ["POPPLER_GLIB_STATIC_DEFINE"]}


def prototypes(headers, includes, names):
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        for h in headers:
            f.write(f"#include <{h}>\n")
        source = f.name
    found = {}
    try:
        for name in names:
            run = subprocess.run(["clang", "-fsyntax-only", "-w", "-Xclang", "-ast-dump=json", "-Xclang", f"-ast-dump-filter={name}"]
                                 + [f"-I{i}" for i in includes] + [source], capture_output=True, text=True)
            text, decoder, at = run.stdout, json.JSONDecoder(), 0
            while True:
                m = re.compile(r"\S").search(text, at)
                if not m:
                    break
                node, at = decoder.raw_decode(text, m.start())
                if node.get("kind") == "FunctionDecl" and node.get("name") == name:
                    found[name] = node
            if name not in found:
                sys.exit(f"{name}: no prototype found in {headers} ({run.stderr.strip()[:400]})")
    finally:
        os.unlink(source)
    return found


def declarator(qual_type, name):
    """`TYPE name` for a parameter, also for pointers to functions and arrays."""
    if "(*)" in qual_type:
        return qual_type.replace("(*)", f"(*{name})", 1)
    m = re.match(r"^(.*?)\s*(\[.*\])$", qual_type)
    if m:
        return f"{m.group(1)} {name}{m.group(2)}"
    return f"{qual_type} {name}" if qual_type.endswith("*") is False else f"{qual_type}{name}"


def return_type(function_type):
    depth = 0
    for i in range(len(function_type) - 1, -1, -1):
        c = function_type[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return function_type[:i].strip()
    sys.exit(f"cannot read the return type of {function_type}")


def write(group, headers, includes, libraries, words):
    names = [n for _, symbols in libraries for n in symbols.split()]
    found = prototypes(headers, includes, names)
    lines = [f"/* Written by scripts/lazy-libraries.py: do not edit. {words} opened at the first call. */",
             "#include \"qlazy_common.h\""]
    # libjxl's and Poppler's headers mark each function visibility("default"), which outweighs the
    # pragma: their own switch for a static build drops that mark, or the statically linked
    # program (its link exports every default symbol) would offer its stand-ins to the libraries.
    lines += [f"#define {define}" for define in STATIC_DEFINES.get(group, [])]
    lines += ["#pragma GCC visibility push(hidden)"]
    lines += [f"#include <{h}>" for h in headers]
    lines += ["#pragma GCC visibility pop", ""]
    lines.append(f"static const char *const qlazy_{group}_names[] = {{ {', '.join(s for s, _ in libraries)} }};")
    lines.append(f"static void *qlazy_{group}_handles[{len(libraries)}];")
    for index, (_, symbols) in enumerate(libraries):
        for name in symbols.split():
            lines.append(f"static __typeof__({name}) *qlazy_{group}_{name};")
    lines += ["", f"static pthread_once_t qlazy_{group}_once = PTHREAD_ONCE_INIT;", f"static char qlazy_{group}_error[512];", "",
              f"static void qlazy_{group}_open(void) {{",
              f"    if (!qlazy_open_all(qlazy_{group}_names, qlazy_{group}_handles, {len(libraries)}, qlazy_{group}_error, sizeof qlazy_{group}_error)) return;"]
    for index, (_, symbols) in enumerate(libraries):
        for name in symbols.split():
            lines.append(f"    if (!(qlazy_{group}_{name} = (__typeof__({name}) *)qlazy_symbol(qlazy_{group}_handles[{index}], \"{name}\", "
                         f"qlazy_{group}_error, sizeof qlazy_{group}_error))) return;")
    lines += ["}", "",
              f"__attribute__((visibility(\"default\"))) const char *qlazy_load_{group}(void) {{",
              f"    pthread_once(&qlazy_{group}_once, qlazy_{group}_open);",
              f"    return qlazy_{group}_error[0] ? qlazy_{group}_error : NULL;", "}", "",
              f"__attribute__((visibility(\"default\"))) void *qlazy_{group}_library(void) {{",
              f"    return qlazy_load_{group}() ? NULL : qlazy_{group}_handles[{len(libraries) - 1}];", "}", ""]
    for name in names:
        node = found[name]
        params = [p for p in node.get("inner", []) if p.get("kind") == "ParmVarDecl"]
        if node.get("variadic"):
            sys.exit(f"{name} is variadic: call its va_list form instead")
        ret = return_type(node["type"]["qualType"])
        args = [f"a{i}" for i in range(len(params))]
        plist = ", ".join(declarator(p["type"]["qualType"], a) for p, a in zip(params, args)) or "void"
        lines.append(f"{ret} {name}({plist}) {{")
        lines.append(f"    if (qlazy_load_{group}()) qlazy_missing(\"{name}\", qlazy_{group}_error);")
        call = f"qlazy_{group}_{name}({', '.join(args)})"
        lines.append(f"    {'' if ret == 'void' else 'return '}{call};")
        lines.append("}")
    path = os.path.join(OUT, f"qlazy_{group}.c")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(names)} functions")


if __name__ == "__main__":
    words = {"ffmpeg": "FFmpeg (libavformat, libavcodec, libswscale, libavutil)", "heif": "libheif", "jxl": "libjxl",
             "cairo": "cairo", "poppler": "Poppler (glib)", "rsvg": "librsvg"}
    for group, (headers, includes, libraries) in GROUPS.items():
        if len(sys.argv) > 1 and group not in sys.argv[1:]:
            continue
        write(group, headers, includes, libraries, words[group])
