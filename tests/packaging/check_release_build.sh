#!/usr/bin/env bash
# check_release_build.sh SOURCE_DIR BUILD_DIR: the tree builds as a
# distribution or a user would build a release (warnings as errors here, so
# that a new warning fails the test rather than somebody's build), the
# benchmarks stay out unless asked for, and `meson install` puts a binary
# without debug information in place.
# The release tree lives in BUILD_DIR/release-check, reused between runs.
set -euo pipefail
src=$1
dir=$2/release-check
if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" -Dwerror=true >/dev/null
else
    rm -rf "$dir"
    meson setup "$dir" "$src" --buildtype=release -Dwerror=true >/dev/null
fi
meson compile -C "$dir"
if [ -e "$dir/bench/micro_bench" ]; then
    echo "FAIL: bench/micro_bench was built without -Dbench=true"; exit 1
fi
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$dir" --destdir "$dest" --no-rebuild --quiet
binary=$(find "$dest" -type f -name xdpcap -perm -u+x)
[ -n "$binary" ] || { echo "FAIL: no xdpcap installed"; exit 1; }
if readelf -S "$binary" | grep -q '\.debug_'; then
    echo "FAIL: the installed release binary has debug sections"; exit 1
fi
"$binary" --version | grep -q '^xdpcap ' || { echo "FAIL: the release binary does not run"; exit 1; }
echo "release build: $(stat -c %s "$binary") bytes installed, no debug sections, no benchmarks"
