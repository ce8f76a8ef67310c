#!/usr/bin/env python3
"""Create <repo>/testdata/photos/: benign natural photos plus deterministic variants.

Sources: the natural photographs shipped inside scikit-image's wheel (pinned
version, every member checked against a pinned sha256). skimage is never
imported: the wheel is fetched with `pip download` and read with zipfile.

Outputs (all listed, with their sha256, in testdata.sha256 beside this script):
  <name>.<png|jpg>          the wheel member, byte for byte
  <name>__half.png          downscaled to 50% (LANCZOS), PNG
  <name>__x2_q90.jpg        upscaled to 200% (BICUBIC), JPEG quality 90
  <name>__q50.jpg           original size, re-encoded as JPEG quality 50
  (variants hold pixels only: no ICC profile, EXIF or text chunks; grey sources stay grey)
  coffee__4032x3024_q90.jpg coffee, centre 4:3 region upscaled to 4032x3024, JPEG q90

Bytes are only reproducible with the pinned Pillow (its wheel bundles libjpeg-turbo
and zlib), so run it through testdata.sh, which uses <repo>/.venv-testdata.

Idempotent: when every file is present with its pinned sha256 it returns at once
without importing Pillow or touching the network. Every problem is printed as one
line starting with "testdata: FAIL"; the exit status is 1 if there was any.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MANIFEST = HERE / "testdata.sha256"

PILLOW_VERSION = "11.3.0"  # keep in step with requirements-testdata.txt
SKIMAGE_VERSION = "0.26.0"

# Natural photographs in scikit-image 0.26.0's wheel (skimage/data/<name>) and their
# sha256. Left out on purpose: synthetic or binary patterns (chessboard_*, color,
# horse, logo, phantom), text/document images (text, page), the tiny ones
# (microaneurysms 102x102, multipage*.tif, no_time_for_that_tiny.gif) and non-images.
SOURCES = {
    "astronaut.png": "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5",
    "brick.png": "7966caf324f6ba843118d98f7a07746d22f6a343430add0233eca5f6eaaa8fcf",
    "camera.png": "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a",
    "cell.png": "8d23a7fb81f7cc877cd09f330357fc7f595651306e84e17252f6e0a1b3f61515",
    "chelsea.png": "596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb",
    "clock_motion.png": "f029226b28b642e80113d86622e9b215ee067a0966feaf5e60604a1e05733955",
    "coffee.png": "cc02f8ca188b167c775a7101b5d767d1e71792cf762c33d6fa15a4599b5a8de7",
    "coins.png": "f8d773fc9cfa6f4d8e5942dc34d0a0788fcaed2a4fefbbed0aef5398d7ef4cba",
    "grass.png": "b6b6022426b38936c43a4ac09635cd78af074e90f42ffa8227ac8b7452d39f89",
    "gravel.png": "c48615b451bf1e606fbd72c0aa9f8cc0f068ab7111ef7d93bb9b0f2586440c12",
    "hubble_deep_field.jpg": "3a19c5dd8a927a9334bb1229a6d63711b1c0c767fb27e2286e7c84a3e2c2f5f4",
    "ihc.png": "f8dd1aa387ddd1f49d8ad13b50921b237df8e9b262606d258770687b0ef93cef",
    "moon.png": "78739619d11f7eb9c165bb5d2efd4772cee557812ec847532dbb1d92ef71f577",
    "motorcycle_left.png": "db18e9c4157617403c3537a6ba355dfeafe9a7eabb6b9b94cb33f6525dd49179",
    "motorcycle_right.png": "5fc913ae870e42a4b662314bc904d1786bcad8e2f0b9b67dba5a229406357797",
    "retina.jpg": "38a07f36f27f095e818aea7b96d34202c05176d30253c66733f2e00379e9e0e6",
    "rocket.jpg": "c2dd0de7c538df8d111e479619b129464d0269d0ae5fd18ca91d33a7fdfea95c",
}

LARGE_SOURCE = "coffee.png"
LARGE_NAME = "coffee__4032x3024_q90.jpg"
LARGE_SIZE = (4032, 3024)

FAILURES: list[str] = []


def fail(msg: str) -> None:
    FAILURES.append(msg)
    print(f"testdata: FAIL {msg}", flush=True)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def stem(name: str) -> str:
    return name.rsplit(".", 1)[0]


# ---------------------------------------------------------------- the plan
# name -> (source member, recipe). Order is stable (sorted sources, fixed variants).
def plan() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for src in sorted(SOURCES):
        s = stem(src)
        out[src] = (src, "original")
        out[f"{s}__half.png"] = (src, "half")
        out[f"{s}__x2_q90.jpg"] = (src, "x2_q90")
        out[f"{s}__q50.jpg"] = (src, "q50")
    out[LARGE_NAME] = (LARGE_SOURCE, "large")
    return out


# ---------------------------------------------------------------- recipes (Pillow)
def _open(data: bytes):
    from PIL import Image

    im = Image.open(io.BytesIO(data))
    im.load()
    if im.mode not in ("L", "RGB"):
        im = im.convert("RGB")
    # Variants carry pixels only: no ICC profile, EXIF, dpi or comments from the source
    # (Pillow would otherwise copy e.g. the ICC profile into the PNGs but not the JPEGs).
    im.info = {}
    return im


def _png(im) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format="PNG", compress_level=6, optimize=False)
    return buf.getvalue()


def _jpeg(im, quality: int) -> bytes:
    buf = io.BytesIO()
    # Explicit everything: baseline, no optimisation, 4:2:0 for colour, no metadata.
    im.save(buf, format="JPEG", quality=quality, subsampling=2, optimize=False, progressive=False)
    return buf.getvalue()


def build(recipe: str, data: bytes) -> bytes:
    if recipe == "original":
        return data
    from PIL import Image

    R = Image.Resampling
    im = _open(data)
    w, h = im.size
    if recipe == "half":
        return _png(im.resize((max(1, w // 2), max(1, h // 2)), R.LANCZOS))
    if recipe == "x2_q90":
        return _jpeg(im.resize((w * 2, h * 2), R.BICUBIC), 90)
    if recipe == "q50":
        return _jpeg(im, 50)
    if recipe == "large":
        tw, th = LARGE_SIZE
        # Centre region of the source with the target's 4:3 aspect ratio.
        if w * th > h * tw:
            cw, ch = h * tw / th, float(h)
        else:
            cw, ch = float(w), w * th / tw
        box = ((w - cw) / 2, (h - ch) / 2, (w + cw) / 2, (h + ch) / 2)
        return _jpeg(im.resize((tw, th), R.BICUBIC, box=box), 90)
    raise ValueError(recipe)


# ---------------------------------------------------------------- the wheel
def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "quarantine" / "wheels"


def find_wheel(cdir: Path) -> Path | None:
    hits = sorted(glob.glob(str(cdir / f"scikit_image-{SKIMAGE_VERSION}-*.whl")))
    return Path(hits[0]) if hits else None


def fetch_wheel(cdir: Path) -> Path | None:
    whl = find_wheel(cdir)
    if whl:
        return whl
    cdir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", f"scikit-image=={SKIMAGE_VERSION}", "-d", str(cdir)]
    print(f"testdata: downloading scikit-image=={SKIMAGE_VERSION} wheel into {cdir}", flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    whl = find_wheel(cdir)
    if r.returncode != 0 or not whl:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        fail(f"could not download scikit-image=={SKIMAGE_VERSION} wheel with pip ({last})")
        return None
    return whl


def read_sources(whl: Path, members: set[str]) -> dict[str, bytes]:
    got: dict[str, bytes] = {}
    try:
        z = zipfile.ZipFile(whl)
    except zipfile.BadZipFile:
        fail(f"{whl} is not a valid wheel; delete it and run again")
        return got
    with z:
        names = set(z.namelist())
        for m in sorted(members):
            arc = f"skimage/data/{m}"
            if arc not in names:
                fail(f"{arc} missing from {whl.name}")
                continue
            data = z.read(arc)
            if sha256_bytes(data) != SOURCES[m]:
                fail(f"{arc} in {whl.name} has sha256 {sha256_bytes(data)}, pinned {SOURCES[m]}")
                continue
            got[m] = data
    return got


# ---------------------------------------------------------------- manifest
def load_manifest() -> dict[str, str]:
    pins: dict[str, str] = {}
    if MANIFEST.exists():
        for line in MANIFEST.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                digest, name = line.split(None, 1)
                pins[name.strip().removeprefix("photos/")] = digest
    return pins


def write_manifest(pins: dict[str, str]) -> None:
    lines = [
        "# sha256 of every file make_testdata.py writes to <repo>/testdata/",
        f"# (scikit-image {SKIMAGE_VERSION} wheel members + variants made with Pillow {PILLOW_VERSION}).",
        "# Check by hand: (cd testdata && sha256sum -c ../scripts/reference/testdata.sha256)",
    ]
    lines += [f"{pins[n]}  photos/{n}" for n in sorted(pins)]
    MANIFEST.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "testdata" / "photos")
    ap.add_argument("--update-manifest", action="store_true",
                    help="pin the sha256 of whatever is produced (maintainers only)")
    ap.add_argument("--prune", action="store_true",
                    help="delete files in the output folder that this script does not make")
    args = ap.parse_args()

    out: Path = args.out
    wanted = plan()
    pins = load_manifest()

    todo = []
    for name in wanted:
        p = out / name
        if not (p.is_file() and name in pins and sha256_file(p) == pins[name]):
            todo.append(name)

    extra = sorted(p.name for p in out.iterdir() if p.name not in wanted) if out.is_dir() else []
    for name in extra:
        if args.prune:
            (out / name).unlink()
            print(f"testdata: removed stray {out / name}")
        else:
            fail(f"{out / name} is not made by make_testdata.py (golden.py would pick it up); "
                 "delete it or rerun with --prune")

    if not todo:
        if not FAILURES:
            print(f"testdata: all {len(wanted)} files in {out} present with pinned sha256")
        return 1 if FAILURES else 0

    try:
        import PIL
    except ImportError:
        fail("Pillow is not importable; run scripts/reference/testdata.sh (it sets up .venv-testdata)")
        return 1
    if PIL.__version__ != PILLOW_VERSION:
        fail(f"Pillow {PIL.__version__} found, {PILLOW_VERSION} pinned: the encoded bytes would differ; "
             "run scripts/reference/testdata.sh")
        return 1

    whl = fetch_wheel(cache_dir())
    if not whl:
        return 1
    sources = read_sources(whl, {wanted[n][0] for n in todo})

    out.mkdir(parents=True, exist_ok=True)
    made = 0
    for name in todo:
        src, recipe = wanted[name]
        if src not in sources:
            fail(f"{out / name} not made: its source skimage/data/{src} is unavailable")
            continue
        data = build(recipe, sources[src])
        digest = sha256_bytes(data)
        if name not in pins:
            if args.update_manifest:
                pins[name] = digest
            else:
                fail(f"{out / name}: no pinned sha256 in {MANIFEST.name} "
                     "(maintainers: rerun with --update-manifest)")
                continue
        elif digest != pins[name]:
            if args.update_manifest:
                pins[name] = digest
            else:
                fail(f"{out / name}: produced sha256 {digest}, pinned {pins[name]} "
                     f"(is Pillow {PILLOW_VERSION} from the manylinux wheel in use?)")
                continue
        tmp = out / f".{name}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, out / name)
        made += 1

    if args.update_manifest:
        write_manifest({n: pins[n] for n in wanted if n in pins})
        print(f"testdata: wrote {MANIFEST}")
    total = sum((out / n).stat().st_size for n in wanted if (out / n).exists())
    print(f"testdata: made {made} of {len(todo)} missing/stale files; {out} holds "
          f"{sum((out / n).exists() for n in wanted)}/{len(wanted)} files, {total / 1e6:.1f} MB")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
