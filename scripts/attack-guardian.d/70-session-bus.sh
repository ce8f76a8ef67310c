# Sourced by scripts/attack-guardian.sh: the child's own session bus (issue 31). On the protected
# account 'quarantine agent' is the session forwarder: io.github.quarantine.Analysis1 tells the
# mode the guardian service says (descriptive; simple only while a guardian sets adult mode),
# never disabled, whatever the child's own configuration asks; analysis is not offered there.
# (A program of the child's own can still take the name once the child stops the forwarder: the
# bus is the child's; docs/dbus.md. Tests/CLITests/guarded_bus.sh shows it.)

cat > "$work/session-bus.sh" <<'EOF'
q=$1
ask() { gdbus call --session --dest io.github.quarantine.Analysis1 --object-path /io/github/quarantine/Analysis1 --method "$@" 2>&1; }
mkdir -p ~/.config/quarantine
printf 'mode = "adult"\n[agent]\napp_analysis = false\n' > ~/.config/quarantine/config.toml
"$q" agent 2> /dev/null & pid=$!
gdbus wait --session --timeout 60 io.github.quarantine.Analysis1
echo "policy: $(ask org.freedesktop.DBus.Properties.Get io.github.quarantine.Analysis1 AnalysisPolicy)"
echo "analyze: $(ask io.github.quarantine.Analysis1.AnalyzeImage 3 3</etc/hostname)"
kill $pid; wait $pid
EOF
chmod 644 "$work/session-bus.sh"
session_bus() { as_child env -i HOME="$chome" PATH=/usr/bin:/bin dbus-run-session -- bash "$work/session-bus.sh" "$q" 2>&1; }

answer=$(session_bus)
if grep -q "^policy: (<'descriptive'>,)" <<< "$answer" && grep -q "Error.NotOffered" <<< "$answer"; then
    attempt "the child's own configuration (adult, app_analysis = false) makes its session bus tell applications 'disabled'" held "descriptive from the guardian service; analysis NotOffered"
else
    attempt "the child's own configuration (adult, app_analysis = false) makes its session bus tell applications 'disabled'" through "$(head -3 <<< "$answer" | tr '\n' ' ')"
fi
# The forwarder tells what the guardian service says: a guardian sets adult mode, then child again.
if "$q" mode adult --user "$child" < /dev/null > "$work/mode.log" 2>&1; then
    answer=$(session_bus)
    "$q" mode child --user "$child" < /dev/null >> "$work/mode.log" 2>&1
    if grep -q "^policy: (<'simple'>,)" <<< "$answer"; then
        attempt "the forwarder does not follow the guardian service (adult mode set by a guardian)" held "simple while adult"
    else
        attempt "the forwarder does not follow the guardian service (adult mode set by a guardian)" through "$(head -1 <<< "$answer")"
    fi
    answer=$(session_bus)
    if grep -q "^policy: (<'descriptive'>,)" <<< "$answer"; then
        attempt "after child mode is set again the child's applications still get simple" held "descriptive again"
    else
        attempt "after child mode is set again the child's applications still get simple" through "$(head -1 <<< "$answer")"
    fi
else
    echo "SETUP PROBLEM (70-session-bus): 'quarantine mode adult --user $child' failed: $(cat "$work/mode.log")"
fi
