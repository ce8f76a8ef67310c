#!/usr/bin/env python3
"""Writes a HEIC as a phone does: the picture cut into 512x512 HEVC tiles (all intra, one shared
hvcC), a hidden `hvc1` item per tile and a `grid` item that puts them together, optionally with
the transforms a viewer applies (`irot`, `imir`, `clap`). heif-enc (libheif 1.15) writes one
HEVC image instead, so tests and `make bench` build grids with this.

    scripts/heic-grid.py INPUT OUTPUT.heic [--rotate 90|180|270] [--mirror 0|1] [--crop W H]

Needs ffmpeg with libx265. Test data only: nothing here runs in the program.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

TILE = 512


def box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind.encode()) + payload


def full_box(kind, version, flags, payload):
    return box(kind, struct.pack(">I", (version << 24) | flags) + payload)


def probe_size(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                          "-of", "json", path], check=True, capture_output=True, text=True).stdout
    stream = json.loads(out)["streams"][0]
    return stream["width"], stream["height"]


def nal_units(stream):
    """Annex B byte stream -> list of NAL units (without start codes)."""
    units, i, starts = [], 0, []
    while True:
        j = stream.find(b"\x00\x00\x01", i)
        if j < 0:
            break
        starts.append(j + 3)
        i = j + 3
    for n, start in enumerate(starts):
        end = starts[n + 1] - 3 if n + 1 < len(starts) else len(stream)
        unit = stream[start:end]
        while unit.endswith(b"\x00"):
            unit = unit[:-1]
        units.append(unit)
    return units


def unescape(rbsp):
    out, zeros = bytearray(), 0
    for b in rbsp:
        if zeros >= 2 and b == 3:
            zeros = 0
            continue
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


def hvcc(vps, sps, pps):
    ptl = unescape(sps[2:])[1:13]  # after the NAL header and the vps id / sub-layer byte
    config = bytes([1]) + ptl[0:1] + ptl[1:5] + ptl[5:11] + ptl[11:12]
    config += struct.pack(">HBBBBHB", 0xF000, 0xFC, 0xFC | 1, 0xF8, 0xF8, 0, (1 << 3) | (1 << 2) | 3)
    arrays = b""
    for unit in (vps, sps, pps):
        arrays += bytes([0x80 | ((unit[0] >> 1) & 0x3F)]) + struct.pack(">HH", 1, len(unit)) + unit
    return box("hvcC", config + bytes([3]) + arrays)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--rotate", type=int, default=0, choices=[0, 90, 180, 270], help="irot: anticlockwise")
    parser.add_argument("--mirror", type=int, choices=[0, 1], help="imir axis (0 vertical axis, 1 horizontal)")
    parser.add_argument("--crop", type=int, nargs=2, metavar=("W", "H"), help="clap: keep the centred W x H")
    parser.add_argument("--quality", type=int, default=24, help="x265 crf")
    args = parser.parse_args()

    width, height = probe_size(args.input)
    columns, rows = -(-width // TILE), -(-height // TILE)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "tiles.hevc")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", args.input, "-vf",
                        f"pad={columns * TILE}:{rows * TILE},untile={columns}x{rows},format=yuv420p",
                        "-c:v", "libx265", "-crf", str(args.quality), "-preset", "fast",
                        "-x265-params", "keyint=1:info=0:log-level=error:repeat-headers=0", "-f", "hevc", raw], check=True)
        units = nal_units(open(raw, "rb").read())
    kinds = [(u[0] >> 1) & 0x3F for u in units]
    vps, sps, pps = (units[kinds.index(k)] for k in (32, 33, 34))
    tiles = [u for u, k in zip(units, kinds) if k < 32]
    if len(tiles) != columns * rows:
        sys.exit(f"heic-grid: x265 wrote {len(tiles)} pictures for {columns * rows} tiles")

    grid_id, first_tile = 1, 2
    tile_ids = list(range(first_tile, first_tile + len(tiles)))
    grid_data = struct.pack(">BBBBHH", 0, 0, rows - 1, columns - 1, width, height)
    tile_data = [struct.pack(">I", len(t)) + t for t in tiles]

    # Properties (1-based): hvcC, tile ispe, grid ispe, then the transforms.
    properties = [hvcc(vps, sps, pps), full_box("ispe", 0, 0, struct.pack(">II", TILE, TILE)),
                  full_box("ispe", 0, 0, struct.pack(">II", width, height))]
    grid_properties = [3]
    if args.crop:
        w, h = args.crop
        properties.append(box("clap", struct.pack(">iIiIiIiI", w, 1, h, 1, 0, 1, 0, 1)))
        grid_properties.append(0x80 | len(properties))
    if args.rotate:
        properties.append(box("irot", bytes([args.rotate // 90])))
        grid_properties.append(0x80 | len(properties))
    if args.mirror is not None:
        properties.append(box("imir", bytes([args.mirror])))
        grid_properties.append(0x80 | len(properties))
    ipma_entries = struct.pack(">HB", grid_id, len(grid_properties)) + bytes(grid_properties)
    for item in tile_ids:
        ipma_entries += struct.pack(">HBBB", item, 2, 0x81, 2)
    iprp = box("iprp", box("ipco", b"".join(properties)) + full_box("ipma", 0, 0, struct.pack(">I", 1 + len(tile_ids)) + ipma_entries))

    infe = [full_box("infe", 2, 0, struct.pack(">HH4s", grid_id, 0, b"grid") + b"\0")]
    infe += [full_box("infe", 2, 1, struct.pack(">HH4s", item, 0, b"hvc1") + b"\0") for item in tile_ids]  # flags 1: hidden
    iinf = full_box("iinf", 0, 0, struct.pack(">H", len(infe)) + b"".join(infe))
    iref = full_box("iref", 0, 0, box("dimg", struct.pack(">HH", grid_id, len(tile_ids)) + b"".join(struct.pack(">H", i) for i in tile_ids)))
    hdlr = full_box("hdlr", 0, 0, struct.pack(">I4s12s", 0, b"pict", b"") + b"\0")
    pitm = full_box("pitm", 0, 0, struct.pack(">H", grid_id))

    def iloc(base):
        entries, offset = b"", base
        for item, data in [(grid_id, grid_data)] + list(zip(tile_ids, tile_data)):
            entries += struct.pack(">HHHII", item, 0, 1, offset, len(data))
            offset += len(data)
        return full_box("iloc", 0, 0, struct.pack(">BBH", 0x44, 0x00, 1 + len(tile_ids)) + entries)

    ftyp = box("ftyp", b"heic" + struct.pack(">I", 0) + b"mif1heic")
    meta_without = lambda loc: full_box("meta", 0, 0, hdlr + pitm + loc + iinf + iref + iprp)
    header_length = len(ftyp) + len(meta_without(iloc(0))) + 8
    meta = meta_without(iloc(header_length))
    mdat = box("mdat", grid_data + b"".join(tile_data))
    with open(args.output, "wb") as out:
        out.write(ftyp + meta + mdat)


if __name__ == "__main__":
    main()
