#!/usr/bin/env bash
# check_install.sh BUILD_DIR: `meson install` puts the binary, the man page,
# the shell completions and the Wireshark extcap link in place, and nothing
# looks for a BPF object at run time.
set -euo pipefail
build=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet
prefix=$(meson introspect "$build" --buildoptions | /usr/bin/python3 -c \
    'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
binary="$dest$prefix/sbin/xdpcap"
page="$dest$prefix/share/man/man8/xdpcap.8"
[ -x "$binary" ] || { echo "missing $binary"; exit 1; }
[ -f "$page" ] || { echo "missing $page"; exit 1; }
for f in "$dest$prefix/share/bash-completion/completions/xdpcap" "$dest$prefix/share/zsh/site-functions/_xdpcap"; do
    [ -f "$f" ] || { echo "missing $f"; exit 1; }
done
libdir=$(meson introspect "$build" --buildoptions | /usr/bin/python3 -c \
    'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
extcap="$dest$prefix/$libdir/wireshark/extcap/xdpcap"
[ "$(readlink -f "$extcap")" = "$(readlink -f "$binary")" ] || { echo "$extcap does not lead to $binary"; exit 1; }
if find "$dest" -name '*.o' | grep -q .; then
    echo "a BPF object was installed"; exit 1
fi
"$binary" --version | grep -q '^xdpcap ' || { echo "installed binary does not run"; exit 1; }
echo "installed: $binary, $page"
