#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite:
#   1. the normal build (./build, warnings as errors, with the benchmarks):
#      unit tests, man page checks, end-to-end captures on private veth pairs
#      (these need root), then a release build and the Debian package
#      (built, checked with lintian, installed and removed);
#   2. a clang AddressSanitizer + UndefinedBehaviorSanitizer build
#      (./build-sanitize): unit tests, one end-to-end capture, and bounded
#      libFuzzer runs of the record decoder and pcapng encoder;
#   3. end-to-end tests on Debian 12's own kernel (6.1) in a QEMU guest.
# After the build three things run side by side: the host's tests; the
# guest's (3), two at a time on two vCPUs, a little below them (nice 5); and
# at nice 15, filling the CPU the tests leave idle, the builds of the release
# check, the packages and the sanitizer tree (2), whose tests run last.
# Prints each stage's wall time ("stage NAME: N s"), then ends with one line:
# "N passed, N failed".
# Environment: FUZZ_SECONDS (default 60) per fuzzer; SKIP_SANITIZE=1 leaves out
# stage 2, SKIP_VM=1 stage 3.
set -uo pipefail
cd "$(dirname "$0")/.."

times_file=$(mktemp)
# timed NAME COMMAND...: runs it, notes its wall time, returns its status.
timed() {
    local name=$1 start=$SECONDS status
    shift
    "$@"
    status=$?
    echo "stage $name: $((SECONDS - start)) s (from $start s)" >>"$times_file"
    return $status
}

# The builds and the guest run in the background: stop them, and what they
# started, when the run ends early.
kill_tree() {
    local child
    for child in $(ps -o pid= --ppid "$1"); do kill_tree "$child"; done
    kill "$1" 2>/dev/null
}
fail_early() {
    [ -n "${lane_pid:-}" ] && kill_tree "$lane_pid"
    [ -n "${vm_pid:-}" ] && kill_tree "$vm_pid"
    echo "$1" >&2
    echo "0 passed, 1 failed"
    exit 1
}

timed deps scripts/deps.sh || fail_early "installing dependencies failed"
# Warnings are errors here (not by default, so that users and distributions
# with other compilers still get a build); the benchmarks are built too.
options=(-Dwerror=true -Dbench=true)
build() {
    if [ -f build/build.ninja ]; then
        # --reconfigure, not configure: an older build/ does not know the newer options yet.
        meson setup --reconfigure build "${options[@]}" || return 1
    else
        meson setup build "${options[@]}" || return 1
    fi
    scripts/build.sh
}
timed build build || fail_early "build failed"

fuzz_seconds="${FUZZ_SECONDS:-60}"
sanitize_build() {
    if [ ! -f build-sanitize/build.ninja ]; then
        CC=clang CXX=clang++ meson setup build-sanitize -Db_sanitize=address,undefined -Db_lundef=false \
            -Dwerror=true -Dfuzz=true -Dfuzz_seconds="$fuzz_seconds" || return 1
    else
        meson configure build-sanitize -Dwerror=true -Dfuzz_seconds="$fuzz_seconds" || return 1
    fi
    meson compile -C build-sanitize
}
# The build lane. Each package test builds the tree once more: a release
# build, and the Debian and rpm packages (the Debian one installed and
# removed again).
lane_log=build/meson-logs/build-lane.log
mkdir -p build/meson-logs
build_lane() {
    timed packages meson test -C build --print-errorlogs --logbase packaging --suite release --suite package
    if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
        timed sanitize-build sanitize_build || { echo "sanitizer build failed"; return 1; }
    fi
}
(renice -n 15 -p "$BASHPID" >/dev/null && build_lane) >"$lane_log" 2>&1 &
lane_pid=$!

# Debian 12's own kernel (6.1) in a QEMU guest: the e2e tests that depend
# most on that kernel (tests/vm/stage.sh), from the tree just built.
vm_pid=
vm_log=build/meson-logs/vm-stage.log
if [ "${SKIP_VM:-0}" != 1 ]; then
    (renice -n 5 -p "$BASHPID" >/dev/null && timed vm tests/vm/stage.sh build) >"$vm_log" 2>&1 &
    vm_pid=$!
fi

timed tests meson test -C build --print-errorlogs --num-processes 2
logs=(build/meson-logs/testlog.json build/meson-logs/packaging.json)
failed_stages=
wait "$lane_pid" || failed_stages+=" build-lane"
lane_pid=
echo "--- release check, packages, sanitizer build (nice 15, beside the tests) ---"
cat "$lane_log"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if [ "${SKIP_SANITIZE:-0}" != 1 ] && [ -f build-sanitize/build.ninja ]; then
    timed sanitize-suites meson test -C build-sanitize --print-errorlogs --num-processes 2 --logbase suites \
        --suite unit --suite fuzz
fi
# A guest that ran out of time leaves a log with fewer tests, or none:
# the stage's own status counts as a failure then.
if [ -n "$vm_pid" ]; then
    wait "$vm_pid" || failed_stages+=" vm"
    vm_pid=
    echo "--- 6.1 guest (tests/vm/stage.sh) ---"
    cat "$vm_log"
    logs+=(build/meson-logs/vm.json)
fi
# The sanitizer tree's capture last: alone, for its time limits.
if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
    [ -f build-sanitize/build.ninja ] &&
        timed sanitize-capture meson test -C build-sanitize --print-errorlogs --logbase capture e2e_capture_exact
    logs+=(build-sanitize/meson-logs/suites.json build-sanitize/meson-logs/capture.json)
fi
cat "$times_file"
rm -f "$times_file"
echo "total: $SECONDS s"
# Count from meson's machine-readable logs. A skipped test counts as failed
# under CI, where the root tests must run.
summary=$(FAILED_STAGES=$failed_stages /usr/bin/python3 - "${logs[@]}" <<'PY'
import json, os, sys
passed = skipped = 0
failed = 0
for stage in os.environ.get("FAILED_STAGES", "").split():
    failed += 1
    print(f"not passed: stage {stage}")
for path in sys.argv[1:]:
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        failed += 1  # a stage that wrote no log did not pass
        print(f"not passed: no results in {path}")
        continue
    for line in open(path):
        test = json.loads(line)
        result = test["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP" and not os.environ.get("CI"):
            skipped += 1
        else:
            failed += 1
            # Named again here, beside the count, where a truncated log still shows it.
            print(f"not passed: {test['name']} ({result}, {os.path.basename(path)})")
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
)
echo "$summary"
case "$summary" in
    *" 0 failed"*) exit 0 ;;
    *) exit 1 ;;
esac
