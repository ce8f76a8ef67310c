# Sourced by scripts/attack-guardian.sh: what 'guardian enable' writes and advises (issue 26,
# point 5 and "No deployment without the sandbox").

if grep -q "setpriv" "$work/enable.log"; then
    attempt "guardian enable, where systemd is not PID 1, advises running the service without its sandbox" through "$(grep -o 'setpriv.*' "$work/enable.log" | head -c 80)"
else
    attempt "guardian enable, where systemd is not PID 1, advises running the service without its sandbox" held
fi

# A hostile download folder in the child's user-dirs.dirs before enable: a control character,
# and a folder outside the home.
for bad in 'XDG_DOWNLOAD_DIR="$HOME/Down\tloads\x01"' 'XDG_DOWNLOAD_DIR="/var/lib/quarantine"'; do
    victim=qav$RANDOM
    useradd -m -s /bin/bash "$victim" || continue
    vhome=$(getent passwd "$victim" | cut -d: -f6)
    runuser -u "$victim" -- mkdir -p "$vhome/.config"
    printf '%b\n' "$bad" > "$vhome/.config/user-dirs.dirs"; chown "$victim" "$vhome/.config/user-dirs.dirs"
    out=$(printf '1357\n1357\n' | "$q" guardian enable --user "$victim" --pin-stdin 2>&1); status=$?
    if [ $status != 0 ] && [ $status != 3 ]; then
        attempt "guardian enable with $bad in the child's user-dirs.dirs" held "refused: $(tail -1 <<< "$out")"
    elif python3 -c "import tomllib,sys; d=tomllib.load(open(sys.argv[1],'rb')); f=d['watch']['incoming']; sys.exit(0 if all(x.startswith(sys.argv[2] + '/') or x == sys.argv[2] for x in f) and all(c.isprintable() for x in f for c in x) else 1)" "/etc/quarantine/$victim.toml" "$vhome" 2>/dev/null; then
        attempt "guardian enable with $bad in the child's user-dirs.dirs" held "valid configuration, folders inside the home"
    else
        attempt "guardian enable with $bad in the child's user-dirs.dirs" through "$(grep -A2 '\[watch\]' "/etc/quarantine/$victim.toml" | tr '\n' ' ' | cat -v)"
    fi
    "$q" guardian disable --user "$victim" > /dev/null 2>&1
    userdel -r "$victim" 2>/dev/null
    rm -rf "/var/lib/quarantine/$victim" "/etc/quarantine/$victim.toml" "/etc/systemd/system/quarantine-guardian@$victim.service.d"
done
