#!/bin/bash
# Runs a command with the guardian unit's view of /tmp, /var/tmp and removable media, as systemd
# builds it (root; a test and attack-guardian helper, never a deployment):
#   PrivateTmp=yes        a private, empty /tmp and /var/tmp of its own
#   BindPaths=/tmp:/run/quarantine/host/tmp /var/tmp:/run/quarantine/host/var-tmp
#                         the host's folders at the side paths the service looks for
#   a slave mount namespace, as systemd's: media the host mounts later appear inside
# A folder of /tmp that an argument names (attack-guardian's copy of the binary) is bound into the
# private /tmp, so the command can still be run.
# Usage: SERVICE_WRAPPER=scripts/unit-tmp-binds.sh scripts/attack-guardian.sh BINARY PHOTO 40-
exec unshare -m --propagation slave bash -c '
keep=()
for arg in "$@"; do case $arg in /tmp/?*/*) keep+=("$(dirname "$arg")") ;; esac; done
mkdir -p /run/quarantine/host/tmp /run/quarantine/host/var-tmp || exit 70
mount --bind /tmp /run/quarantine/host/tmp && mount --bind /var/tmp /run/quarantine/host/var-tmp || exit 70
mount -t tmpfs -o mode=1777 tmpfs /tmp && mount -t tmpfs -o mode=1777 tmpfs /var/tmp || exit 70
for folder in "${keep[@]}"; do mkdir -p "$folder" && mount --bind "/run/quarantine/host/tmp/${folder#/tmp/}" "$folder" || exit 70; done
exec "$@"' _ "$@"
