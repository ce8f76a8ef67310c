# Sourced by scripts/attack-guardian.sh: held at once, judged after (issue 26, "Files that never
# settle", "Starved").

d=$chome/Downloads
# A writer kept open for 40 s.
as_child bash -c "exec 3>'$d/open.png'; cat '$work/card.png' >&3; sleep 40" &
writer=$!
sleep 0.5
attempt_card "a card whose writer stays open" "$d/open.png" 15
kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null

# A temporary name whose mtime keeps changing.
make_card "$d/churn.crdownload"
as_child bash -c "for i in \$(seq 150); do touch '$d/churn.crdownload' 2>/dev/null || exit 0; sleep 0.2; done" &
toucher=$!
attempt_card "a card under a temporary name whose mtime keeps changing" "$d/churn.crdownload" 15
kill "$toucher" 2>/dev/null; wait "$toucher" 2>/dev/null

# A file that keeps growing through an open descriptor.
as_child bash -c "exec 3>'$d/growing.png'; cat '$work/card.png' >&3; for i in \$(seq 200); do printf x >&3; sleep 0.2; done" &
grower=$!
sleep 0.5
attempt_card "a card that keeps growing through an open descriptor" "$d/growing.png" 15
kill "$grower" 2>/dev/null; wait "$grower" 2>/dev/null

# A folder deeper than PATH_MAX (4096 bytes).
deep=$(as_child python3 - "$d" <<'PY'
import os, sys
os.chdir(sys.argv[1])
name = "d" * 200
depth = 0
while depth < 25:
    os.mkdir(name); os.chdir(name); depth += 1
print(os.getcwd() if len(os.getcwd()) < 4096 else "deep")
PY
)
as_child python3 - "$d" "$work/card.png" <<'PY'
import os, sys, shutil
os.chdir(sys.argv[1])
for _ in range(25): os.chdir("d" * 200)
shutil.copyfile(sys.argv[2], "deep-card.png")
PY
sleep 8
still=$(as_child python3 - "$d" "$card_sha" <<'PY'
import os, sys, hashlib
os.chdir(sys.argv[1])
for _ in range(25): os.chdir("d" * 200)
try: print(hashlib.sha256(open("deep-card.png", "rb").read()).hexdigest() == sys.argv[2])
except OSError: print(False)
PY
)
[ "$still" = True ] && attempt "a card in a folder deeper than PATH_MAX" through "readable after 8 s" || attempt "a card in a folder deeper than PATH_MAX" held
as_child rm -rf "$d/$(printf 'd%.0s' $(seq 200))"

# A flood of 2,000 small PNGs, then the card.
as_child mkdir -p "$d/flood"
as_child python3 - "$d/flood" <<'PY'
import sys, zlib, struct
def png(seed):
    raw = b"".join(b"\x00" + bytes([(seed + x) % 256, x % 256, seed % 256] * 1) * 1 for x in range(8))
    def chunk(t, b): return struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
    ihdr = struct.pack(">IIBBBBB", 1, 8, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
for i in range(2000):
    open(f"{sys.argv[1]}/f{i}.png", "wb").write(png(i))
PY
make_card "$d/after-flood.png"
attempt_card "2,000 small PNGs, then the card" "$d/after-flood.png" 10

# Three PNGs with 64 GiB sparse tails, then the card.
for i in 1 2 3; do as_child bash -c "cp '$photo' '$d/sparse$i.png' && truncate -s 64G '$d/sparse$i.png'"; done
make_card "$d/after-sparse.png"
attempt_card "three 64 GiB sparse PNGs, then the card" "$d/after-sparse.png" 10
# Held is not enough: the card must be judged, not wait behind the sparse files for good (their hash
# once kept the service's threads busy for over ten minutes, and nothing after them was judged).
# 6 min: the 2,000 files of the flood above are judged first, which takes minutes on a busy machine.
start=$SECONDS
if wait_vaulted "$d/after-sparse.png" 360; then
    attempt "three 64 GiB sparse PNGs do not stall the queue" held "the card after them in the vault after $((SECONDS - start)) s"
else
    attempt "three 64 GiB sparse PNGs do not stall the queue" through "the card after them not in the vault after 360 s"
fi
as_child rm -rf "$d/flood" "$d"/sparse*.png
