#!/usr/bin/env bash
# build-deb.sh [OUTDIR]: builds the Debian binary package from a copy of the
# source tree (packaging/debian becomes debian/ there) and leaves xdpcap_*.deb,
# its .changes and .buildinfo in OUTDIR (default: the current directory).
# The tree itself is not written to, so builds may run side by side.
# Environment: DEB_BUILD_OPTIONS / DEB_BUILD_PROFILES as for dpkg-buildpackage
# (nocheck skips building and running the unit tests).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-.}" && cd "${1:-.}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The files git knows about (tracked, or new and not ignored), else the whole
# tree without build directories.
mkdir "$work/xdpcap"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
        tar --null -T - -cf -) | tar -C "$work/xdpcap" -xf -
else
    tar -C "$src" --exclude='./build*' --exclude=./debian -cf - . | tar -C "$work/xdpcap" -xf -
fi
rm -rf "$work/xdpcap/debian"
cp -a "$src/packaging/debian" "$work/xdpcap/debian"

(cd "$work/xdpcap" && dpkg-buildpackage -us -uc -b)
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
ls "$out"/xdpcap_*.deb
