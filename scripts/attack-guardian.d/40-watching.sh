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

for place in /tmp /dev/shm; do
    make_card "$place/card-$child.png"
    attempt_card "a card saved in $place" "$place/card-$child.png" 10
    rm -f "$place/card-$child.png"
done
# /dev/shm is everyone's: the child's clean photo comes back as it was; another account's card is
# not the service's to move.
as_child cp "$photo" "/dev/shm/photo-$child.png"
before=$(stat -c '%s %a %U' "/dev/shm/photo-$child.png"); sum=$(sha256sum < "$photo")
sleep 3
if [ "$(sha256sum < "/dev/shm/photo-$child.png" 2>/dev/null)" = "$sum" ] && [ "$(stat -c '%s %a %U' "/dev/shm/photo-$child.png")" = "$before" ]; then
    attempt "the child's clean photo in /dev/shm is lost or changed by the check" held "back as it was"
else
    attempt "the child's clean photo in /dev/shm is lost or changed by the check" through "$(ls -l /dev/shm/photo-$child.png 2>&1)"
fi
rm -f "/dev/shm/photo-$child.png"
as_other cp "$work/card.png" "/dev/shm/card-$other.png"
sleep 3
if [ "$(stat -c %U "/dev/shm/card-$other.png" 2>/dev/null)" = "$other" ]; then
    attempt "the service moves another account's file out of /dev/shm" held "left where it is, $other's"
else
    attempt "the service moves another account's file out of /dev/shm" through "it is gone or changed"
fi
rm -f "/dev/shm/card-$other.png"

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
# A private mount (a user namespace of the child's own): 45-private-mounts.sh.
