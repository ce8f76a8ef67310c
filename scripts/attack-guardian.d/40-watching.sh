# Sourced by scripts/attack-guardian.sh: everything the child can write is checked (issue 26,
# "Only Downloads is protected", "A name switches checking off", "Watching is lost by a swap",
# "A private mount", point 5).

for place in Desktop Documents Pictures; do
    make_card "$chome/$place/card-$place.png"
    attempt_card "a card saved in ~/$place" "$chome/$place/card-$place.png" 10
done
make_card "$chome/card-home.png"
attempt_card "a card saved in the home folder itself" "$chome/card-home.png" 10
as_child mkdir -p "$chome/a/new/folder"
make_card "$chome/a/new/folder/card.png"
attempt_card "a card saved in a folder made just before" "$chome/a/new/folder/card.png" 10

# The child points its own download folder elsewhere (browsers follow user-dirs.dirs).
as_child mkdir -p "$chome/.config"
as_child bash -c "echo 'XDG_DOWNLOAD_DIR=\"\$HOME/Music\"' > $chome/.config/user-dirs.dirs"
make_card "$chome/Music/card-music.png"
attempt_card "XDG_DOWNLOAD_DIR moved to ~/Music by the child, then a card saved there" "$chome/Music/card-music.png" 10
as_child rm -f "$chome/.config/user-dirs.dirs"

# Folders every account writes in: the child's files there are held like files in its home.
as_child mkdir -p "/tmp/sub-$child/deeper"
for place in /tmp /var/tmp /dev/shm "/tmp/sub-$child/deeper"; do
    make_card "$place/card-$child.png"
    attempt_card "a card saved in $place" "$place/card-$child.png" 10
    rm -f "$place/card-$child.png"
done
rm -rf "/tmp/sub-$child"
# A folder another account makes in /tmp, closed to the child (so the service skips it), and
# opens to everyone a moment later: the child's card saved in it is held all the same.
as_other mkdir -m 0755 "/tmp/opened-$other"
sleep 1
as_other chmod 1777 "/tmp/opened-$other"
make_card "/tmp/opened-$other/card-$child.png"
attempt_card "a card saved in a folder of another account's in /tmp that was opened (chmod 1777) after it was made" "/tmp/opened-$other/card-$child.png" 10
rm -rf "/tmp/opened-$other"
# Everyone's folders: the child's clean photo comes back as it was (bytes, mode, owner, mtime);
# another account's card is not the service's to move.
same_as_before() { [ "$(sha256sum < "$1" 2>/dev/null)" = "$2" ] && [ "$(stat -c '%s %a %U %Y' "$1" 2>/dev/null)" = "$3" ]; }
for place in /tmp /dev/shm; do
    as_child cp "$photo" "$place/photo-$child.png"
    as_child chmod 640 "$place/photo-$child.png"
    as_child touch -d '2020-01-02 03:04:05' "$place/photo-$child.png"
    before=$(stat -c '%s %a %U %Y' "$place/photo-$child.png"); sum=$(sha256sum < "$photo")
    sleep 3
    if same_as_before "$place/photo-$child.png" "$sum" "$before"; then
        attempt "the child's clean photo in $place is lost or changed by the check" held "back as it was"
    else
        attempt "the child's clean photo in $place is lost or changed by the check" through "$(ls -l "$place/photo-$child.png" 2>&1)"
    fi
    rm -f "$place/photo-$child.png"
    as_other cp "$work/card.png" "$place/card-$other.png"
    sleep 3
    if [ "$(stat -c %U "$place/card-$other.png" 2>/dev/null)" = "$other" ] && [ "$(sha256sum < "$place/card-$other.png" | cut -d' ' -f1)" = "$card_sha" ]; then
        attempt "the service moves another account's file out of $place" held "left where it is, $other's"
    else
        attempt "the service moves another account's file out of $place" through "it is gone or changed"
    fi
    rm -f "$place/card-$other.png"
done

# Removable media mounted for the child after the service started (as udisks does: a folder of
# root's in /media/<user>, the medium mounted with uid=<child>), then unmounted.
cuid=$(id -u "$child")
media_fs() { # PATH: mounts a medium at PATH (a FAT image where the kernel has vfat, else a tmpfs)
    mkdir -p "$1"
    if grep -qw vfat /proc/filesystems && command -v mkfs.vfat > /dev/null; then
        truncate -s 16M "$work/stick-$RANDOM.img" && local image=$(ls -t "$work"/stick-*.img | head -1)
        mkfs.vfat "$image" > /dev/null && mount -o loop,uid="$cuid",gid="$cuid" "$image" "$1"
    else
        mount -t tmpfs -o size=16m,uid="$cuid",gid="$cuid",mode=0755 tmpfs "$1"
    fi
}
for base in /media /run/media; do
    stick=$base/$child/STICK
    mkdir -p "$base/$child" && chmod 755 "$base/$child"
    media_fs "$stick" || { attempt "a card on a medium mounted at $stick" through "SET-UP: cannot mount a medium there"; continue; }
    sleep 0.5
    make_card "$stick/card.png"
    attempt_card "a card written onto a medium mounted at $stick after the service started" "$stick/card.png" 10
    if umount "$stick" 2>/dev/null; then attempt "the held card keeps the medium busy (umount fails)" held "unmounted"
    else attempt "the held card keeps the medium busy (umount fails)" through "$(umount "$stick" 2>&1)"; umount -l "$stick"; fi
    rmdir "$stick"
done

# The medium unmounted while a file on it is held: no worker can judge it (the launcher is down),
# so it stays held; the medium goes; the worker comes back: the clean photo must not be lost, nor
# put back anywhere else, and the guardian's history must say what became of it.
stick=/media/$child/STICK2
media_fs "$stick" && sleep 0.5
stop_launcher
# Bytes of its own (the photo's, then a random tail a PNG decoder ignores): the same bytes found
# clean before are let be without a hold.
as_child bash -c "cat '$photo' > '$stick/photo.png' && head -c 32 /dev/urandom >> '$stick/photo.png'"
if wait_gone_for_child_file() { local d=$((SECONDS + 15)); while [ $SECONDS -lt $d ]; do as_child test -r "$stick/photo.png" || return 0; sleep 0.2; done; return 1; }; wait_gone_for_child_file; then
    if umount "$stick" 2>/dev/null; then unmounted=yes; else unmounted=no; umount -l "$stick"; fi
    rmdir "$stick"
    start_launcher || setup_fail "launcher restart"
    # The service retries a worker every 30 s.
    found=
    for _ in $(seq 50); do
        out=$(timeout 10 "$q" list --user "$child" --all 2>&1)
        if grep -q "STICK2/photo.png" <<< "$out"; then found=yes; break; fi
        sleep 1
    done
    history=$(timeout 10 "$q" history --user "$child" 2>&1 | grep -i "no longer mounted" | head -1)
    if [ "$unmounted" = yes ] && [ -n "$found" ] && [ -n "$history" ]; then
        attempt "a medium unmounted while a photo on it is held: the photo is lost or silently gone" held "kept in the vault; history: ${history:0:120}"
    else
        attempt "a medium unmounted while a photo on it is held: the photo is lost or silently gone" through "unmounted=$unmounted in_vault=${found:-no} history='${history}'"
    fi
else
    attempt "a medium unmounted while a photo on it is held" through "SET-UP: the photo was not held while no worker ran"
    umount -l "$stick"; rmdir "$stick"
    start_launcher || setup_fail "launcher restart"
fi
rmdir "/media/$child" "/run/media/$child" 2>/dev/null

# The child's runtime folder (/run/user/<uid>, XDG_RUNTIME_DIR): its own, writable, a tmpfs logind
# mounts at its first login (after the service started) and unmounts after its last session.
# Made here as logind makes it (logind may not run on this machine).
runtime=/run/user/$cuid
if mountpoint -q "$runtime" 2>/dev/null; then
    attempt "a card saved in the child's runtime folder $runtime" through "SET-UP: $runtime is mounted already (a real session?)"
else
    mkdir -p /run/user && chmod 755 /run/user && mkdir -p "$runtime"
    if mount -t tmpfs -o size=16m,mode=0700,uid="$cuid",gid="$cuid",nosuid,nodev tmpfs "$runtime"; then
        sleep 0.5
        make_card "$runtime/card.png"
        attempt_card "a card saved in the child's runtime folder $runtime (logind's tmpfs, mounted after the service started)" "$runtime/card.png" 10
        as_child mkdir -p "$runtime/app/deeper"
        make_card "$runtime/app/deeper/card.png"
        attempt_card "a card saved in a folder the child made in its runtime folder" "$runtime/app/deeper/card.png" 10
        said=$(timeout 10 "$q" guardian status --user "$child" 2>&1)
        if grep -q "runtime folder.*not watched" <<< "$said"; then
            attempt "'guardian status' says the runtime folder is not watched while it is" through "$(grep -m1 'runtime folder' <<< "$said")"
        fi
        # The last session ends: logind unmounts it; the held cards stay held (nothing kept it busy).
        if umount "$runtime" 2>/dev/null; then attempt "a held card keeps the runtime folder busy (logout's umount fails)" held "unmounted"
        else attempt "a held card keeps the runtime folder busy (logout's umount fails)" through "$(umount "$runtime" 2>&1)"; umount -l "$runtime"; fi
    else
        attempt "a card saved in the child's runtime folder $runtime" through "SET-UP: cannot mount a tmpfs there"
    fi
    rmdir "$runtime" 2>/dev/null
fi

# A name the child chooses.
as_child mkdir -p "$chome/Downloads/.quarantine-holding" "$chome/Downloads/x/.quarantine-holding.3"
make_card "$chome/Downloads/.quarantine-holding/card.png"
attempt_card "a card in a folder the child named .quarantine-holding" "$chome/Downloads/.quarantine-holding/card.png" 10
make_card "$chome/Downloads/x/.quarantine-holding.3/card.png"
attempt_card "a card in a nested folder named .quarantine-holding.3" "$chome/Downloads/x/.quarantine-holding.3/card.png" 10

# A swap: Downloads renamed, a link in its place for 2 s, the real folder put back.
as_child bash -c "mv '$chome/Downloads' '$chome/Downloads.real' && ln -s /tmp '$chome/Downloads' && sleep 2 && rm '$chome/Downloads' && mv '$chome/Downloads.real' '$chome/Downloads'"
sleep 1
make_card "$chome/Downloads/after-swap.png"
attempt_card "Downloads swapped for a link for 2 s and put back, then a card saved in it" "$chome/Downloads/after-swap.png" 10

# The root pointed at a folder the child cannot read: the service must not move root's file.
secret=/root/attack-$child && mkdir -p "$secret" && chmod 700 "$secret"
"$q" testcard "$secret/root-card.png" > /dev/null
as_child bash -c "mv '$chome/Downloads' '$chome/Downloads.real' && ln -s '$secret' '$chome/Downloads'"
sleep 4
if [ -f "$secret/root-card.png" ] && [ "$(stat -c %U "$secret/root-card.png")" = root ]; then
    attempt "Downloads replaced by a link to a root-only folder: the service moves root's file" held "root's file untouched"
else
    attempt "Downloads replaced by a link to a root-only folder: the service moves root's file" through "root's file was moved or changed"
fi
as_child bash -c "rm -f '$chome/Downloads' && mv '$chome/Downloads.real' '$chome/Downloads'"
rm -rf "$secret"

# The child looks at a hidden item: 'quarantine show' saves the blurred preview it is handed in
# /tmp/quarantine-preview-UID; the service does not hold that copy of its own preview as a new
# picture of the child's (it did: the path 'show' printed was briefly gone).
preview_id=$(as_child timeout 10 "$q" list --json 2>/dev/null | python3 -c '
import json, sys
items = [json.loads(line) for line in sys.stdin if line.strip()]
print(next((str(item["id"]) for item in items if item.get("has_preview")), ""))' 2>/dev/null)
# Read as the child every millisecond or so, from the moment the copy appears, for 4 s: a hold
# and its put-back take milliseconds. Started before 'show' writes the copy.
copy=/tmp/quarantine-preview-$(id -u "$child")/item-${preview_id:-0}.jpg
rm -rf "/tmp/quarantine-preview-$(id -u "$child")"
as_child python3 -c '
import sys, time, os
path, missing, seen = sys.argv[1], 0, False
start = time.monotonic()
while not os.path.exists(path) and time.monotonic() < start + 10: time.sleep(0.001)
end = time.monotonic() + 4
while time.monotonic() < end:
    try:
        with open(path, "rb") as f: seen = seen or len(f.read(1)) == 1
    except OSError:
        missing += 1
    time.sleep(0.001)
print(missing if seen else "never")' "$copy" > "$work/preview-sampler.txt" 2>&1 &
sampler=$!
shown=$(as_child timeout 10 "$q" show "${preview_id:-0}" 2>/dev/null | sed -n 's/^  preview *//p')
wait "$sampler"; missing=$(cat "$work/preview-sampler.txt")
if [ -z "$preview_id" ] || [ "$shown" != "$copy" ] || [ "$missing" = never ]; then
    attempt "the child's copy of a preview ('quarantine show') is held by the service" through "SET-UP: no preview copy (item '${preview_id}', shown '${shown}', sampler '${missing}')"
elif [ "$missing" = 0 ]; then
    attempt "the child's copy of a preview ('quarantine show') is held by the service" held "$copy stayed readable for 4 s"
else
    attempt "the child's copy of a preview ('quarantine show') is held by the service" through "$copy could not be read ${missing} times in 4 s"
fi
rm -rf "/tmp/quarantine-preview-$(id -u "$child")"
# A private mount (a user namespace of the child's own): 45-private-mounts.sh.
