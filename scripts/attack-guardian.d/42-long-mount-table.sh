# Sourced by scripts/attack-guardian.sh: a medium mounted on a machine whose mount table is longer
# than a page. A desktop with snaps, flatpaks or containers has 40-100 mounts; a medium mounted
# last is listed last in /proc/self/mountinfo, and Foundation's file readers stop after a /proc
# file's first 4 KiB (session 51: the guardian read 22 of 80 extra mounts and never saw the stick).
fillers=$work/fillers
mkdir -p "$fillers"
mounted_fillers=0
for i in $(seq 80); do
    mkdir -p "$fillers/f$i" && mount -t tmpfs -o size=64k filler "$fillers/f$i" && mounted_fillers=$((mounted_fillers + 1))
done
table_bytes=$(wc -c < /proc/self/mountinfo)
stick=/media/$child/STICK3
mkdir -p "/media/$child" && chmod 755 "/media/$child"
if [ "$mounted_fillers" -lt 80 ] || [ "$table_bytes" -le 8192 ]; then
    attempt "a card on a medium mounted after 80 other mounts" through "SET-UP: $mounted_fillers fillers mounted, mount table $table_bytes bytes"
elif mkdir -p "$stick" && mount -t tmpfs -o size=16m,uid="$(id -u "$child")",gid="$(id -u "$child")",mode=0755 stick "$stick"; then
    sleep 0.5
    make_card "$stick/card.png"
    attempt_card "a card on a medium mounted after 80 other mounts (mount table $table_bytes bytes)" "$stick/card.png" 10
    umount "$stick" 2>/dev/null || umount -l "$stick"
    rmdir "$stick"
else
    attempt "a card on a medium mounted after 80 other mounts" through "SET-UP: cannot mount a medium at $stick"
fi
for i in $(seq 80); do umount "$fillers/f$i" 2>/dev/null || umount -l "$fillers/f$i" 2>/dev/null; done
rm -rf "$fillers"
rmdir "/media/$child" 2>/dev/null
