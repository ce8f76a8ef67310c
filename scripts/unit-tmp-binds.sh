#!/bin/bash
# Runs a command with the guardian unit's view of /tmp, /var/tmp and removable media, as systemd
# builds it (root; a test and attack-guardian helper, never a deployment):
#   PrivateTmp=yes        a private, empty /tmp and /var/tmp of its own
#   BindPaths=/tmp:/run/quarantine/host/tmp /var/tmp:/run/quarantine/host/var-tmp
#                         the host's folders at the side paths the service looks for
#   a slave mount namespace, as systemd's: media the host mounts later appear inside
# Usage: SERVICE_WRAPPER=scripts/unit-tmp-binds.sh scripts/attack-guardian.sh BINARY PHOTO 40-
exec unshare -m --propagation slave bash -c '
mkdir -p /run/quarantine/host/tmp /run/quarantine/host/var-tmp || exit 70
mount --bind /tmp /run/quarantine/host/tmp && mount --bind /var/tmp /run/quarantine/host/var-tmp || exit 70
mount -t tmpfs -o mode=1777 tmpfs /tmp && mount -t tmpfs -o mode=1777 tmpfs /var/tmp || exit 70
exec "$@"' _ "$@"
