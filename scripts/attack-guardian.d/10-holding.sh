# Sourced by scripts/attack-guardian.sh: the holding area and the moves of the privileged process
# (issue 26 points 1, 3, 6; "Other names of the same bytes"; "A name switches checking off").

# A clean photo's parent folder swapped for a link to /etc (then to root's own /root) the moment the
# file is held, before its clean verdict puts it back: nothing may be written where the link points.
for target in /etc /root; do
    name="qattack-$child-$(basename "$target").png"
    as_child mkdir -p "$chome/Downloads/swap"
    as_child cp "$photo" "$chome/Downloads/swap/.$name.tmp"
    as_child bash -c "mv '$chome/Downloads/swap/.$name.tmp' '$chome/Downloads/swap/$name'
        for _ in \$(seq 20000); do [ -e '$chome/Downloads/swap/$name' ] || break; done
        mv '$chome/Downloads/swap' '$chome/Downloads/swap.moved' && ln -s '$target' '$chome/Downloads/swap'" 2> /dev/null
    sleep 4
    if [ -e "$target/$name" ]; then
        attempt "a folder swapped for a link to $target after the hold, before the put-back" through "the service wrote $target/$name"
        rm -f "$target/$name"
    else
        back=$(find "$chome" -name "$name" -not -path '*/.quarantine-held-*' 2> /dev/null | head -1)
        attempt "a folder swapped for a link to $target after the hold, before the put-back" held "nothing in $target; the photo is back at ${back:-nowhere yet}"
    fi
    as_child rm -rf "$chome/Downloads/swap" "$chome/Downloads/swap.moved"
done

# Another name made before the file settles (in a folder the watcher leaves out), read after the hold.
as_child mkdir -p "$chome/.cache/chromium"
as_child bash -c "'$q' testcard '$chome/Downloads/linked.png' > /dev/null && ln '$chome/Downloads/linked.png' '$chome/.cache/chromium/other-name.png'"
if wait_gone_for_child "$chome/Downloads/linked.png" 10 && wait_gone_for_child "$chome/.cache/chromium/other-name.png" 5; then
    attempt "a hard link made before the card settled, read through the other name" held "$(stat -c '%U %a' "$chome/.cache/chromium/other-name.png" 2> /dev/null)"
else
    attempt "a hard link made before the card settled, read through the other name" through "the child reads the card through the other name"
fi
as_child rm -f "$chome/.cache/chromium/other-name.png"

# Folders named like holding folders, made by the child beforehand: never used, checking goes on.
as_child mkdir -p "$chome/.quarantine-held-0" "$chome/.quarantine-held-ffffffffffffffff" "$chome/Downloads/.quarantine-holding"
make_card "$chome/Downloads/precreated.png"
if wait_gone_for_child "$chome/Downloads/precreated.png" 10; then
    used=$(find "$chome/.quarantine-held-0" "$chome/.quarantine-held-ffffffffffffffff" "$chome/Downloads/.quarantine-holding" -type f 2> /dev/null | wc -l)
    if [ "$used" = 0 ]; then attempt "folders named like the holding folder made by the child beforehand" held "none of them used"
    else attempt "folders named like the holding folder made by the child beforehand" through "$used file(s) put in the child's folders"; fi
else
    attempt "folders named like the holding folder made by the child beforehand" through "the card stayed readable"
fi
as_child rm -rf "$chome/.quarantine-held-0" "$chome/.quarantine-held-ffffffffffffffff" "$chome/Downloads/.quarantine-holding"

# The service's own holding folder renamed by the child, and a link to /etc put under its name.
holding=$(find "$chome" -maxdepth 1 -name '.quarantine-held-*' -user quarantine -type d | head -1)
if [ -z "$holding" ]; then
    attempt "the service's holding folder renamed by the child" through "no holding folder of the service's in the home"
else
    as_child mv "$holding" "$chome/renamed-holding" && as_child ln -s /etc "$holding"
    make_card "$chome/Downloads/after-rename.png"
    as_child cp "$photo" "$chome/Downloads/clean-after-rename.png"
    ok=held detail=""
    wait_gone_for_child "$chome/Downloads/after-rename.png" 10 || { ok=through; detail="the card stayed readable"; }
    grep -qE '^[0-9a-f]{6,16}$' <<< "$(ls /etc)" && { ok=through; detail="a held file appeared in /etc"; }
    for _ in $(seq 50); do [ -e "$chome/Downloads/clean-after-rename.png" ] && break; sleep 0.2; done
    [ -e "$chome/Downloads/clean-after-rename.png" ] || detail="${detail:+$detail; }the clean photo did not come back within 10 s"
    holds=$(grep -c "checked without holding\|cannot be held" "$work/service.log")
    attempt "the service's holding folder renamed by the child, a link to /etc in its place" $ok "${detail:-card hidden, photo back, $holds failed hold(s) in the log}"
    as_child rm -f "$holding" "$chome/Downloads/clean-after-rename.png"
fi

# A full filesystem: a small tmpfs in the home (a USB stick, say) filled by the child, the card
# saved into the last bytes. Held by a copy into the service's own state: unreadable for the child.
mkdir -p "$chome/stick" && chown "$child:" "$chome/stick"
if mount -t tmpfs -o size=1m,uid="$(id -u "$child")",gid="$(id -g "$child")",mode=0755 tmpfs "$chome/stick" 2> /dev/null; then
    # Restarted so that its walk of the home meets the new mount; up once it answers.
    restart_service || true
    for _ in $(seq 100); do service_alive && break; sleep 0.1; done
    card_size=$(stat -c %s "$work/card.png")
    as_child bash -c "head -c \$(( $(df --output=avail -B1 "$chome/stick" | tail -1) - $card_size - 8192 )) /dev/zero > '$chome/stick/filler' 2> /dev/null; true"
    if as_child cp "$work/card.png" "$chome/stick/card.png" 2> /dev/null; then
        as_child bash -c "cat /dev/zero > '$chome/stick/filler2' 2> /dev/null; true"
        attempt_card "a card saved into the last bytes of a full tmpfs in the home (held by a copy into the service's state)" "$chome/stick/card.png" 15
        [ "$(df --output=avail -B1 "$chome/stick" | tail -1)" -lt 65536 ] || echo "note: the tmpfs was not full when the card arrived"
    else
        attempt "a card saved onto a full tmpfs in the home" held "the card did not fit (nothing to read)"
    fi
    umount -l "$chome/stick"
else
    echo "note: a tmpfs could not be mounted here: the full-filesystem attempt was not made"
fi
rm -rf "$chome/stick"

# A card with a sparse tail larger than the service's disk, in /dev/shm (a tmpfs: held by a copy
# into the service's state, which cannot fit). A PNG decoder stops at the card's IEND: the child
# would see the card if it stayed readable. Nor may the copy fill the disk of /var/lib.
shm_card=/dev/shm/huge-$RANDOM.png
before_used=$(du -s -B1 /var/lib/quarantine | cut -f1)
as_child bash -c "cp '$work/card.png' '$shm_card' && truncate -s 1T '$shm_card'"
# Only the card's own bytes are read (cat would read the terabyte of zeros after them).
card_size=$(stat -c %s "$work/card.png")
shm_sees_card() { [ "$(as_child head -c "$card_size" -- "$shm_card" 2>/dev/null | sha256sum | cut -d' ' -f1)" = "$card_sha" ]; }
ok=held detail=""
start=$SECONDS
for _ in $(seq 100); do shm_sees_card || break; sleep 0.1; done
if shm_sees_card; then ok=through; detail="the child still reads the card after 10 s"; fi
sleep 3
after_used=$(du -s -B1 /var/lib/quarantine | cut -f1)
[ $((after_used - before_used)) -gt $((512 << 20)) ] && { ok=through; detail="${detail:+$detail; }the service's state grew by $(((after_used - before_used) >> 20)) MiB"; }
attempt "a card with a 1 TiB sparse tail in /dev/shm (its copy cannot fit)" $ok "${detail:-unreadable after $((SECONDS - start - 3)) s, /var/lib/quarantine grew by less than 512 MiB}"
rm -f "$shm_card" 2>/dev/null; as_child rm -f "$shm_card" 2>/dev/null
