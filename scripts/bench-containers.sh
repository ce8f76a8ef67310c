#!/usr/bin/env bash
# make bench, the containers of issue 30: a 500-photo zip album and a 300-page PDF of photos (one
# photo per page, drawn over a third of the page), each judged by 'quarantine scan' (release build,
# one worker: a container is walked one entry at a time), against the floor measured in the same
# run: the same photos as plain files in a folder, scanned with one worker (their decode and
# inference). The PDF judges two pictures per page (the page, and the photo drawn on its own), so
# its floor is twice the photos'. Peak memory is the process's maximum resident size. Also: the
# zip bombs of the tests, timed (each must be refused in well under a second beyond start-up).
# The files are made from testdata/photos into .build/bench/containers at each run.
set -euo pipefail
cd "$(dirname "$0")/.."
Q=${Q:-.build/release/quarantine}
OUT=.build/bench/containers
mkdir -p "$OUT"
echo "bench: containers..." >&2
photos=(testdata/photos/*.jpg)
rm -rf "$OUT/album" && mkdir -p "$OUT/album"
for i in $(seq 0 499); do cp "${photos[$((i % ${#photos[@]}))]}" "$OUT/album/photo-$i.jpg"; done
python3 - "$OUT" <<'PY'
import os, sys, zipfile
out = sys.argv[1]
album = sorted(os.listdir(os.path.join(out, "album")), key=lambda n: int(n.split("-")[1].split(".")[0]))
with zipfile.ZipFile(os.path.join(out, "album.zip"), "w", zipfile.ZIP_STORED) as z:
    for name in album: z.write(os.path.join(out, "album", name), "album/" + name)
# make_containers.py makes its whole fixture set when run: its pdf() writer is taken from its source.
src = open("Tests/Fixtures/make_containers.py").read()
start, end = src.index("def jpeg_size"), src.index("documents('card', card)")
namespace = {"struct": __import__("struct"), "os": os, "path": lambda n: os.path.join(out, n)}
exec(src[start:end], namespace)
pages = [(open(os.path.join(out, "album", name), "rb").read(), (72, 300, 400, 400)) for name in album[:300]]
namespace["pdf"]("photos.pdf", pages)
os.makedirs(os.path.join(out, "pages"), exist_ok=True)
for name in album[:300]:
    dst = os.path.join(out, "pages", name)
    if not os.path.exists(dst): os.link(os.path.join(out, "album", name), dst)
PY
measure() { # file... -> "seconds peak_kb"
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$OUT/time.out" "$Q" scan --workers 1 "$@" > /dev/null 2>&1 || true
    end=$(date +%s.%N)
    echo "$(python3 -c "print(round($end - $start, 2))") $(tail -1 "$OUT/time.out")"
}
read -r floor_zip floor_zip_kb < <(measure "$OUT/album")
read -r zip zip_kb < <(measure "$OUT/album.zip")
read -r floor_pdf floor_pdf_kb < <(measure "$OUT/pages")
read -r pdf pdf_kb < <(measure "$OUT/photos.pdf")
# The bombs: made by the tests' fixture script; the time beyond start-up (an empty file's scan).
fixtures=$OUT/fixtures
if [[ ! -s $fixtures/bomb-entry.zip ]]; then
    "$Q" testcard "$OUT/card.jpg" > /dev/null
    python3 Tests/Fixtures/make_containers.py "$OUT/card.jpg" testdata/photos/astronaut__q50.jpg "$fixtures" > /dev/null
fi
: > "$OUT/empty"
read -r startup startup_kb < <(measure "$OUT/empty")
read -r bomb1 bomb1_kb < <(measure "$fixtures/bomb-entry.zip")
read -r bomb2 bomb2_kb < <(measure "$fixtures/bomb.tar.gz")
read -r bomb3 bomb3_kb < <(measure "$fixtures/bomb-nested.zip")
python3 - "$floor_zip" "$zip" "$zip_kb" "$floor_pdf" "$pdf" "$pdf_kb" "$startup" "$startup_kb" "$bomb1" "$bomb1_kb" "$bomb2" "$bomb2_kb" "$bomb3" "$bomb3_kb" <<'PY' | tee "$OUT/results.md"
import sys
a = sys.argv[1:]
fz, z, zkb, fp, p, pkb, s, skb = float(a[0]), float(a[1]), int(a[2]), float(a[3]), float(a[4]), int(a[5]), float(a[6]), int(a[7])
print("| container (same run, 1 worker) | floor s | quarantine s | ratio | peak MB |")
print("| --- | ---: | ---: | ---: | ---: |")
print(f"| 500-photo zip album (stored) | {fz:.2f} (500 files) | {z:.2f} | {z / fz:.2f} | {zkb / 1024:.0f} |")
print(f"| 300-page PDF, a photo on each page | {2 * fp:.2f} (2 x 300 files) | {p:.2f} | {p / (2 * fp):.2f} | {pkb / 1024:.0f} |")
print()
print(f"start-up and model load alone: {s:.2f} s, {skb / 1024:.0f} MB")
for name, t, kb in [("bomb-entry.zip (one entry expanding 1000x)", a[8], a[9]), ("bomb.tar.gz (256 MiB of zeros)", a[10], a[11]),
                    ("bomb-nested.zip (zips of zips, 5 deep)", a[12], a[13])]:
    print(f"{name}: refused in {max(0.0, float(t) - s):.2f} s beyond start-up, peak {int(kb) / 1024:.0f} MB")
PY
