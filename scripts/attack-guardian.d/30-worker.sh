# Sourced by scripts/attack-guardian.sh: the analysis worker's confinement (issue 26, point 4 and
# "A worker that cannot reach what it does not need"), read from the running service's worker as
# root, plus what its user may and may not read.

# The worker: the worker launcher's child running 'analysis-worker' for this service (started
# with the service; a card makes sure one runs). Without a launcher, the service's own child.
worker_pid() { pgrep -P "${launcher_pid:-$service_pid}" -f 'analysis-worker' | head -1; }
w=$(worker_pid)
if [ -z "$w" ]; then
    # An idle worker ends after agent.worker_idle_seconds; a card starts one (its models load in
    # 1 to 10 s depending on the machine's load).
    make_card "$chome/Downloads/worker-wakeup.png"
    for _ in $(seq 150); do w=$(worker_pid); [ -n "$w" ] && break; sleep 0.2; done
    # Its request done (the card in the vault), so what it holds is what it keeps between requests.
    for _ in $(seq 100); do [ -n "$(as_guardian "$q" list --user "$child" --json 2>/dev/null | grep worker-wakeup)" ] && break; sleep 0.2; done
    sleep 1
fi
status_field() { awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "/proc/$w/status" 2>/dev/null; }
quarantine_uid=$(id -u quarantine) quarantine_gid=$(getent group quarantine | cut -d: -f3)

if [ -z "$w" ]; then
    attempt "the analysis worker runs and can be inspected" through "no analysis-worker child of the service $service_pid"
else
    # Uid: real effective saved fs. None may be quarantine: not even the saved one (a worker that
    # kept it could take it back past seccomp); the launcher stops it, not the service.
    read -r ruid euid suid fsuid <<< "$(status_field Uid)"
    worker_user=$(id -nu "$euid" 2>/dev/null)
    if [ "$ruid" != "$quarantine_uid" ] && [ "$euid" != "$quarantine_uid" ] && [ "$suid" != "$quarantine_uid" ] && [ "$fsuid" != "$quarantine_uid" ]; then
        attempt "the analysis worker runs as quarantine, the owner of every account's database, PIN hash and vault" held "uid $(id -nu "$euid" 2>/dev/null || echo "$euid") (real $ruid, effective $euid, fs $fsuid)"
    else
        attempt "the analysis worker runs as quarantine, the owner of every account's database, PIN hash and vault" through "Uid: $ruid $euid $suid $fsuid (quarantine is $quarantine_uid)"
    fi
    read -r rgid egid sgid fsgid <<< "$(status_field Gid)"
    groups=$(status_field Groups)
    if [ "$rgid" != "$quarantine_gid" ] && [ "$egid" != "$quarantine_gid" ] && [ "$sgid" != "$quarantine_gid" ] && [ "$fsgid" != "$quarantine_gid" ] && [ -z "$groups" ]; then
        attempt "the analysis worker keeps the quarantine group or supplementary groups" held "Gid: $rgid $egid $sgid $fsgid, no other groups"
    else
        attempt "the analysis worker keeps the quarantine group or supplementary groups" through "Gid: $rgid $egid $sgid $fsgid; Groups: $groups"
    fi
    seccomp=$(status_field Seccomp) nnp=$(status_field NoNewPrivs)
    if [ "$seccomp" = 2 ] && [ "$nnp" = 1 ]; then
        attempt "the analysis worker runs without its seccomp filter or no_new_privs" held "Seccomp: 2, NoNewPrivs: 1"
    else
        attempt "the analysis worker runs without its seccomp filter or no_new_privs" through "Seccomp: $seccomp, NoNewPrivs: $nnp"
    fi
    caps="$(status_field CapEff) $(status_field CapPrm) $(status_field CapAmb) $(status_field CapInh)"
    if [ "$caps" = "0000000000000000 0000000000000000 0000000000000000 0000000000000000" ]; then
        attempt "the analysis worker keeps a capability (the service's DAC override, CAP_SETUID)" held "none effective, permitted, ambient or inheritable"
    else
        attempt "the analysis worker keeps a capability (the service's DAC override, CAP_SETUID)" through "CapEff/Prm/Amb/Inh: $caps"
    fi
    # Its descriptors: 0-2, its socket (3), pipes and event descriptors of its threads; no file
    # or folder (no database, vault, runtime folder, nothing of the child's) between requests.
    fds=$(ls -l "/proc/$w/fd" 2>/dev/null | awk 'NR > 1 { print $9 " -> " $11 }')
    leaks=$(grep -E -- "-> /" <<< "$fds" | grep -vE -- "-> /dev/(null|pts/|tty)")
    if [ -n "$fds" ] && [ -z "$leaks" ]; then
        attempt "the analysis worker holds a descriptor to a database, the vault, the runtime folder or the child's files between requests" held "$(tr '\n' ' ' <<< "$fds" | head -c 160)"
    else
        attempt "the analysis worker holds a descriptor to a database, the vault, the runtime folder or the child's files between requests" through "$(tr '\n' ' ' <<< "${leaks:-$fds}" | head -c 200)"
    fi
    # The child cannot signal it.
    if as_child kill -0 "$w" 2>/dev/null; then
        attempt "the child signals the analysis worker" through "kill -0 $w as $child worked"
    else
        attempt "the child signals the analysis worker" held
    fi
    # The service's user (quarantine) cannot signal its worker any more (nor trace it): the worker
    # launcher stops it for the service (35-launcher.sh checks that it does).
    if runuser -u quarantine -- kill -0 "$w" 2>/dev/null; then
        attempt "the guardian service's user signals its worker (a user the worker could become again)" through "kill -0 $w as quarantine worked"
    else
        attempt "the guardian service's user signals its worker (a user the worker could become again)" held "refused by the kernel: another user"
    fi
    # Nor can another worker of its user do what the kernel lets a same-uid process do to it:
    # lower its file limit (prlimit), or renice it, through the worker's own user.
    if [ -n "$worker_user" ] && [ "$euid" != "$quarantine_uid" ]; then
        if runuser -u "$worker_user" -- prlimit --pid "$service_pid" --nofile=16:16 2>/dev/null; then
            attempt "the worker's user lowers the service's descriptor limit (prlimit)" through "prlimit --pid $service_pid as $worker_user worked"
        else
            attempt "the worker's user lowers the service's descriptor limit (prlimit)" held "refused by the kernel: another user"
        fi
    fi
fi

# The worker's user is the account's own (quarantine-w<uid>, made by guardian enable), not one
# shared with the workers of every other protected account.
own_worker=quarantine-w$(id -u "$child")
if [ -n "$w" ] && [ "${worker_user:-}" = "$own_worker" ]; then
    attempt "the analysis workers of different protected accounts share one user" held "this account's: $own_worker"
else
    attempt "the analysis workers of different protected accounts share one user" through "the worker runs as ${worker_user:-?}, not $own_worker"
fi

# The worker's user cannot read the account's state: database (PIN hash), vault, configuration.
reader=${worker_user:-$own_worker}
if id "$reader" > /dev/null 2>&1 && [ "$reader" != quarantine ]; then
    state=/var/lib/quarantine/$child
    for target in "$state/audit.sqlite3" "$state" "/var/lib/quarantine"; do
        if runuser -u "$reader" -- ls -l "$target" > /dev/null 2>&1 || runuser -u "$reader" -- head -c1 "$target" > /dev/null 2>&1; then
            attempt "the worker's user reads $target" through "runuser -u $reader could read it"
        else
            attempt "the worker's user reads $target" held "$reader"
        fi
    done
else
    attempt "the analysis workers have a user of their own" through "no such user $reader (guardian enable runs systemd-sysusers)"
fi

# What the worker said of itself at start (its hello, logged by the service): its user, and that
# Landlock took the file system away once its models were loaded (it reads only the descriptors
# the service passes; its models came through a descriptor too).
said=$(grep -o 'analysis worker confined: .*' "$work/service.log" | tail -1)
if grep -q "Landlock ABI [0-9]*: no file-system access" <<< "$said"; then
    attempt "the analysis worker keeps file-system access after loading its models (Landlock)" held "${said#analysis worker confined: }"
else
    attempt "the analysis worker keeps file-system access after loading its models (Landlock)" through "${said:-the service logged no 'analysis worker confined' line}"
fi
