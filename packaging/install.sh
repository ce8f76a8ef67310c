#!/usr/bin/env bash
# `make install` and `make uninstall`, for people who do not use packages.
#
#   packaging/install.sh install   PREFIX [BINARY]   (BINARY default .build/release/quarantine)
#   packaging/install.sh uninstall PREFIX
#
# install puts, under PREFIX (e.g. ~/.local or /usr/local):
#   bin/quarantine                              the program (stripped)
#   lib/quarantine/libonnxruntime.so.1.31.1     ONNX Runtime  } found by the program from its own
#   share/quarantine/models/*.onnx              the models    } path: BIN/../lib, BIN/../share
#   share/man/man1/quarantine.1
#   share/bash-completion/completions/quarantine, share/zsh/site-functions/_quarantine,
#   share/fish/vendor_completions.d/quarantine.fish
#   share/doc/quarantine/config.toml            the documented defaults (not read from there)
#   share/dbus-1/interfaces/io.github.quarantine.Analysis1.xml   the session-bus interface (docs/dbus.md)
#   share/dbus-1/services/io.github.quarantine.Analysis1.service starts the agent when an application
#                                               asks (the session bus reads PREFIX/share/dbus-1/services when
#                                               PREFIX/share is in XDG_DATA_DIRS, as /usr/local/share is by default)
#   lib/quarantine/pam_quarantine.so            the PAM session module; 'sudo quarantine guardian enable'
#                                               copies it into libpam's folder when it protects an account
# and writes the list of what it installed to share/quarantine/installed-files, which uninstall
# removes, file by file, then every folder it leaves empty up to PREFIX.
#
# Not installed: the systemd user unit ('quarantine service install' writes it, with this
# program's path, to ~/.config/systemd/user), and no configuration (the built-in defaults apply;
# copy share/doc/quarantine/config.toml to ~/.config/quarantine/config.toml to change them).
# The runtime and the models come from where 'make setup' put them, their sha256 checked.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"

die() { printf 'install: error: %s\n' "$*" >&2; exit 1; }
(($# >= 2)) || die "usage: $0 install|uninstall PREFIX [BINARY]"
ACTION=$1
PREFIX=${2%/}
[[ -n $PREFIX && $PREFIX == /* ]] || die "PREFIX must be an absolute path (got '$2'), e.g. make install PREFIX=\$HOME/.local"
MANIFEST="$PREFIX/share/quarantine/installed-files"

case $ACTION in
install)
  BINARY=${3:-$ROOT/.build/release/quarantine}
  [[ -x $BINARY ]] || die "no program at $BINARY: run 'make install' (it builds it)"
  if grep -q -E 'libswift|libFoundation|/opt/swift' <<< "$(ldd "$BINARY")"; then
    die "$BINARY needs the Swift runtime of the toolchain: 'make install' builds it with --static-swift-stdlib"
  fi
  DATA=${QUARANTINE_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/quarantine}
  files=()
  put() { # MODE SOURCE DEST (relative to PREFIX)
    install -D -m "$1" "$2" "$PREFIX/$3"; files+=("$3")
  }
  while read -r kind file sha _; do
    if [[ $kind == runtime ]]; then src="$DATA/lib/$file"; dest="lib/quarantine/$file"
    else src="$DATA/models/$file"; dest="share/quarantine/models/$file"; fi
    [[ -f $src ]] || die "$src is missing: run 'make setup' first"
    [[ $(sha256sum "$src" | cut -d' ' -f1) == "$sha" ]] || die "$src does not have the pinned sha256 $sha: remove it and run 'make setup'"
    put 0644 "$src" "$dest"
  done < <(python3 "$ROOT/scripts/pins.py")
  put 0755 "$BINARY" bin/quarantine
  PAM_MODULE="$(dirname "$BINARY")/pam_quarantine.so"
  [[ -f $PAM_MODULE ]] || die "no PAM module at $PAM_MODULE: 'make install' builds it (pam/build.sh $PAM_MODULE)"
  put 0644 "$PAM_MODULE" lib/quarantine/pam_quarantine.so
  strip --strip-unneeded --remove-section=.comment --remove-section=.note "$PREFIX/bin/quarantine"
  put 0644 "$ROOT/packaging/man/quarantine.1" share/man/man1/quarantine.1
  put 0644 "$ROOT/packaging/completions/quarantine.bash" share/bash-completion/completions/quarantine
  put 0644 "$ROOT/packaging/completions/quarantine.zsh" share/zsh/site-functions/_quarantine
  put 0644 "$ROOT/packaging/completions/quarantine.fish" share/fish/vendor_completions.d/quarantine.fish
  put 0644 "$ROOT/etc/quarantine/config.toml" share/doc/quarantine/config.toml
  put 0644 "$ROOT/packaging/dbus/io.github.quarantine.Analysis1.xml" share/dbus-1/interfaces/io.github.quarantine.Analysis1.xml
  service=$(mktemp)
  sed "s|@BINDIR@|$PREFIX/bin|g" "$ROOT/packaging/dbus/io.github.quarantine.Analysis1.service.in" > "$service"
  put 0644 "$service" share/dbus-1/services/io.github.quarantine.Analysis1.service
  rm -f "$service"
  files+=(share/quarantine/installed-files)
  printf '%s\n' "${files[@]}" > "$MANIFEST"
  echo "install: installed quarantine in $PREFIX ($("$PREFIX/bin/quarantine" --version | head -n1))"
  case ":$PATH:" in *":$PREFIX/bin:"*) ;; *) echo "install: $PREFIX/bin is not in PATH: add it, or run $PREFIX/bin/quarantine" ;; esac
  echo "install: the agent as a user service: $PREFIX/bin/quarantine service install"
  ;;
uninstall)
  [[ -f $MANIFEST ]] || die "nothing to uninstall: $MANIFEST is missing (was quarantine installed with PREFIX=$PREFIX?)"
  if [[ -x $PREFIX/bin/quarantine ]] && [[ -f ${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/quarantine.service ]] \
     && grep -q "ExecStart=$PREFIX/bin/quarantine " "${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/quarantine.service"; then
    echo "install: the user service still runs $PREFIX/bin/quarantine: 'quarantine service uninstall' removes it"
  fi
  mapfile -t files < "$MANIFEST"
  # What the program itself left beside the runtime and the models: the record of their hashes
  # and the models' optimised copies (ModelDigestRecord, OptimizedModelCopy), and partial copies.
  for d in lib/quarantine share/quarantine/models; do
    rm -f "$PREFIX/$d/.quarantine-verified" "$PREFIX/$d"/.quarantine-verified.?????? "$PREFIX/$d"/.*.onnx.*.ort "$PREFIX/$d"/.*.onnx.*.ort.*.part
  done
  for f in "${files[@]}"; do
    [[ -n $f && $f != /* && $f != *..* ]] || die "unexpected line '$f' in $MANIFEST"
    rm -f "$PREFIX/$f"
    # Every folder this left empty, up to (not including) the prefix.
    d=$(dirname "$f")
    while [[ $d != . ]]; do rmdir "$PREFIX/$d" 2>/dev/null || break; d=$(dirname "$d"); done
  done
  echo "install: removed quarantine from $PREFIX (your vault and configuration in your home stay)"
  ;;
*) die "usage: $0 install|uninstall PREFIX [BINARY]" ;;
esac
