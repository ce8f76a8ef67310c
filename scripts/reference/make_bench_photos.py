#!/usr/bin/env python3
"""Create <repo>/testdata/bench/: large benchmark images derived from the scikit-image photos.

  bench_NNNN.jpg     --count of them (default 60), 4000x3000, JPEG quality 90
  bench_png_NN.png   --png-count of them (default 6), 3000x2000, PNG

Image i is always the same bytes (with the pinned Pillow): source = the i-th photo
in a fixed cycle, a pseudo-random crop (random.Random seeded with i) of 55-100% of the
largest region with the target aspect ratio, mirrored for some i, upscaled BICUBIC.
So the images differ from each other (content, crop, flip) but are reproducible.

Idempotent: testdata/bench/.manifest.json records each file's sha256; files already
there with that sha256 are kept, missing ones are made, bench_* files beyond the
requested counts are removed. Run it through `scripts/reference/testdata.sh bench`.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_testdata as td  # noqa: E402

GENERATOR = "make_bench_photos v1"
JPEG_SIZE = (4000, 3000)
PNG_SIZE = (3000, 2000)


def recipe(kind: str, i: int) -> tuple[str, tuple[float, float, float], bool]:
    """(source member, (scale, fx, fy), mirror) for image i of this kind."""
    names = sorted(td.SOURCES)
    rng = random.Random(f"{kind}-{i}")
    src = names[(i * 7 + (3 if kind == "png" else 0)) % len(names)]  # 7 is coprime with 17
    return src, (rng.uniform(0.55, 1.0), rng.random(), rng.random()), rng.random() < 0.5


def render(data: bytes, size: tuple[int, int], crop: tuple[float, float, float], mirror: bool, fmt: str) -> bytes:
    from PIL import Image

    im = Image.open(io.BytesIO(data))
    im.load()
    im = im.convert("RGB")
    im.info = {}
    w, h = im.size
    tw, th = size
    if w * th > h * tw:
        cw, ch = h * tw / th, float(h)
    else:
        cw, ch = float(w), w * th / tw
    scale, fx, fy = crop
    cw, ch = cw * scale, ch * scale
    x0, y0 = (w - cw) * fx, (h - ch) * fy
    out = im.resize((tw, th), Image.Resampling.BICUBIC, box=(x0, y0, x0 + cw, y0 + ch))
    if mirror:
        out = out.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    buf = io.BytesIO()
    if fmt == "jpg":
        out.save(buf, format="JPEG", quality=90, subsampling=2, optimize=False, progressive=False)
    else:
        out.save(buf, format="PNG", compress_level=6, optimize=False)
    return buf.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=td.REPO / "testdata" / "bench")
    ap.add_argument("--count", type=int, default=60, help="4000x3000 JPEGs (default 60)")
    ap.add_argument("--png-count", type=int, default=6, help="3000x2000 PNGs (default 6)")
    args = ap.parse_args()

    out: Path = args.out
    wanted = {f"bench_{i:04d}.jpg": ("jpg", i) for i in range(args.count)}
    wanted.update({f"bench_png_{i:02d}.png": ("png", i) for i in range(args.png_count)})

    mpath = out / ".manifest.json"
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, ValueError):
        manifest = {}
    if manifest.get("generator") != GENERATOR or manifest.get("pillow") != td.PILLOW_VERSION:
        manifest = {"generator": GENERATOR, "pillow": td.PILLOW_VERSION, "files": {}}
    files: dict[str, str] = manifest["files"]

    if out.is_dir():
        for p in sorted(out.glob("bench_*")):
            if p.name not in wanted:
                p.unlink()
                files.pop(p.name, None)
    todo = [n for n in wanted if not ((out / n).is_file() and files.get(n) == td.sha256_file(out / n))]

    if todo:
        import PIL

        if PIL.__version__ != td.PILLOW_VERSION:
            td.fail(f"Pillow {PIL.__version__} found, {td.PILLOW_VERSION} pinned; run scripts/reference/testdata.sh bench")
            return 1
        whl = td.fetch_wheel(td.cache_dir())
        if not whl:
            return 1
        needed = {recipe(*wanted[n])[0] for n in todo}
        sources = td.read_sources(whl, needed)
        out.mkdir(parents=True, exist_ok=True)
        for n in todo:
            kind, i = wanted[n]
            src, crop, mirror = recipe(kind, i)
            if src not in sources:
                td.fail(f"{out / n} not made: source skimage/data/{src} unavailable")
                continue
            data = render(sources[src], JPEG_SIZE if kind == "jpg" else PNG_SIZE, crop, mirror, kind)
            tmp = out / f".{n}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, out / n)
            files[n] = hashlib.sha256(data).hexdigest()
            print(f"bench: {n} <- {src} crop={crop[0]:.2f}@({crop[1]:.2f},{crop[2]:.2f}) mirror={mirror}", flush=True)

    manifest["files"] = {n: files[n] for n in sorted(files) if n in wanted}
    out.mkdir(parents=True, exist_ok=True)
    mpath.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    present = [n for n in wanted if (out / n).is_file()]
    total = sum((out / n).stat().st_size for n in present)
    print(f"bench: {out} holds {len(present)}/{len(wanted)} files ({args.count} JPEG {JPEG_SIZE[0]}x{JPEG_SIZE[1]}, "
          f"{args.png_count} PNG {PNG_SIZE[0]}x{PNG_SIZE[1]}), {total / 1e6:.1f} MB; made {len(todo)}")
    return 1 if td.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
