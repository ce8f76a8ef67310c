# Sourced by scripts/attack-guardian.sh: a wrong /etc/quarantine/CHILD.toml (issue 29). The
# service never stops over it and never lowers protection: it keeps the last good settings (or
# child-mode defaults), keeps hiding cards, and 'guardian status' names the file's line.

conf=/etc/quarantine/$child.toml
cp "$conf" "$work/good.toml"
# 0 once 'guardian status' output matches REGEX (within 60 s: a debug build on a loaded machine
# takes a while to start or to re-read).
status_matches() {
    local deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ]; do
        status_text=$("$q" guardian status --user "$child" 2>&1)
        grep -qE "$1" <<< "$status_text" && return 0
        sleep 0.5
    done
    return 1
}
# start_service, then wait until this start watches (the driver's check also matches the log of
# earlier starts, which service.log keeps).
start_and_wait() {
    local mark
    mark=$(wc -l < "$work/service.log")
    start_service || return 1
    for _ in $(seq 600); do grep -q "notice: watching" <<< "$(tail -n +"$((mark + 1))" "$work/service.log")" && return 0; sleep 0.1; done
    return 1
}
# A value a key does not take, a text that is not TOML, a number that overflowed (it trapped).
for bad in '[agent]\nsettle_ms = "soon"' 'mode = "adult"\n[' '[analysis]\nmax_megapixels = 9223372036854775807'; do
    cp "$work/good.toml" "$conf"; printf '%b\n' "$bad" >> "$conf"
    what="$child.toml ending in $(printf '%b' "$bad" | tr '\n' ' ')"
    kill -HUP "$service_pid" 2>/dev/null
    status_matches "configuration error: $conf:[0-9]+:.*previous settings"
    if ! service_alive; then attempt "the service, running, re-reads $what" through "it is down"; stop_service; start_and_wait; continue; fi
    if grep -qE "configuration error: $conf:[0-9]+:.*previous settings" <<< "$status_text" && grep -q "child mode" <<< "$status_text"; then
        attempt "the service, running, re-reads $what" held "still child mode; status: $(grep -o "configuration error: [^;]*" <<< "$status_text" | head -1)"
    else
        attempt "the service, running, re-reads $what" through "status does not say so, or not child mode: $(tr '\n' ' ' <<< "$status_text" | head -c 200)"
    fi
    card=$chome/Downloads/config-running-$RANDOM.png
    make_card "$card"
    attempt_card "a card while $what (running)" "$card" 10
    # Started on the wrong file (a reboot, a restart by the unit): it starts, and protects.
    stop_service
    if start_and_wait && service_alive && status_matches "configuration error: $conf:[0-9]+:.*protecting with" && grep -q "child mode" <<< "$status_text"; then
        attempt "the service starts on $what" held "$(grep -oE 'protecting with [a-z -]+' <<< "$status_text" | head -1)"
        card=$chome/Downloads/config-start-$RANDOM.png
        make_card "$card"
        attempt_card "a card after a start on $what" "$card" 10
    else
        attempt "the service starts on $what" through "it did not start, or status does not say why: $(tail -2 "$work/service.log" | tr '\n' ' ')"
        cp "$work/good.toml" "$conf"; stop_service; start_and_wait
    fi
done
# Deleted (its defaults would be adult mode): the last good settings stay, running and at a start.
rm -f "$conf"
kill -HUP "$service_pid" 2>/dev/null
if status_matches "configuration error: $conf: is missing" && grep -q "child mode" <<< "$status_text"; then
    attempt "the service, running, re-reads a deleted $child.toml" held "still child mode"
else
    attempt "the service, running, re-reads a deleted $child.toml" through "$(tr '\n' ' ' <<< "$status_text" | head -c 200)"
fi
stop_service
if start_and_wait && service_alive && status_matches "is missing.*protecting with the last good" && grep -q "child mode" <<< "$status_text"; then
    attempt "the service starts without $child.toml" held "the last good settings, child mode"
    card=$chome/Downloads/config-deleted-$RANDOM.png
    make_card "$card"
    attempt_card "a card after a start without $child.toml" "$card" 10
else
    attempt "the service starts without $child.toml" through "it did not start, or not on the last good settings: $(tail -2 "$work/service.log" | tr '\n' ' ')"
    cp "$work/good.toml" "$conf"; stop_service; start_and_wait
fi
# Mended: the problem goes away.
cp "$work/good.toml" "$conf"
kill -HUP "$service_pid" 2>/dev/null
cleared=
for _ in $(seq 120); do
    status_text=$("$q" guardian status --user "$child" 2>&1)
    if grep -q "child mode" <<< "$status_text" && ! grep -q "configuration error" <<< "$status_text"; then cleared=1; break; fi
    sleep 0.5
done
if [ -n "$cleared" ]; then attempt "a mended $child.toml clears the problem" held
else attempt "a mended $child.toml clears the problem" through "status still names it: $(tr '\n' ' ' <<< "$status_text" | head -c 200)"; fi
