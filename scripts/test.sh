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
# The guest (3) starts right after the build and runs beside the rest; the
# builds of the release check, the packages and the sanitizer build run at a
# lower priority (nice), so that the tests, which have time limits, keep
# the CPU they need and the builds fill the time the tests leave idle.
# Prints each stage's wall time ("stage NAME: N s"), then ends with one line:
# "N passed, N failed".
# Environment: FUZZ_SECONDS (default 60) per fuzzer; SKIP_SANITIZE=1 leaves out
# stage 2, SKIP_VM=1 stage 3.
set -uo pipefail
cd "$(dirname "$0")/.."

stage_times=()
# timed NAME COMMAND...: runs it, notes its wall time, returns its status.
timed() {
    local name=$1 start=$SECONDS status
    shift
    "$@"
    status=$?
    stage_times+=("stage $name: $((SECONDS - start)) s")
    return $status
}

# The guest stage runs in the background: stop it, and what it started,
# when the run ends early.
kill_tree() {
    local child
    for child in $(ps -o pid= --ppid "$1"); do kill_tree "$child"; done
    kill "$1" 2>/dev/null
}
fail_early() {
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
        meson setup --reconfigure build "${options[@]}" || fail_early "build configuration failed"
    else
        meson setup build "${options[@]}" || fail_early "build setup failed"
    fi
    scripts/build.sh || fail_early "build failed"
}
timed build build

# 3. Debian 12's own kernel (6.1) in a QEMU guest: the e2e tests that depend
#    most on the kernel (tests/vm/stage.sh), from the tree just built, in the
#    background; its output follows the other stages'. SKIP_VM=1 leaves it out.
#    Below the host's e2e tests in priority (nice 5), above the builds.
logs=()
vm_pid=
if [ "${SKIP_VM:-0}" != 1 ]; then
    vm_log=build/meson-logs/vm-stage.log
    mkdir -p build/meson-logs
    vm_start=$SECONDS
    nice -n 5 tests/vm/stage.sh build >"$vm_log" 2>&1 &
    vm_pid=$!
fi

timed tests meson test -C build --print-errorlogs --num-processes 2
logs+=(build/meson-logs/testlog.json)
# Each builds the tree once more: a release build, and the Debian and rpm
# packages (the Debian one installed and removed again).
timed packages nice -n 15 meson test -C build --print-errorlogs --logbase packaging --suite release --suite package
logs+=(build/meson-logs/packaging.json)

if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
    fuzz_seconds="${FUZZ_SECONDS:-60}"
    sanitize_build() {
        if [ ! -f build-sanitize/build.ninja ]; then
            CC=clang CXX=clang++ meson setup build-sanitize -Db_sanitize=address,undefined -Db_lundef=false \
                -Dwerror=true -Dfuzz=true -Dfuzz_seconds="$fuzz_seconds" || return 1
        else
            meson configure build-sanitize -Dwerror=true -Dfuzz_seconds="$fuzz_seconds" || return 1
        fi
        nice -n 15 meson compile -C build-sanitize
    }
    sanitize_tests() {
        meson test -C build-sanitize --print-errorlogs --num-processes 2 --logbase suites --suite unit --suite fuzz
        meson test -C build-sanitize --print-errorlogs --logbase capture e2e_capture_exact
    }
    timed sanitize-build sanitize_build || fail_early "sanitizer build failed"
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    timed sanitize-tests sanitize_tests
    logs+=(build-sanitize/meson-logs/suites.json build-sanitize/meson-logs/capture.json)
fi

# The guest stage, started above. A guest that ran out of time leaves a log
# with fewer tests, or none: the stage's own status counts as a failure then.
stage_failures=0
if [ -n "$vm_pid" ]; then
    wait "$vm_pid" || stage_failures=$((stage_failures + 1))
    stage_times+=("stage vm (6.1 guest, beside the stages after the build): $((SECONDS - vm_start)) s")
    echo "--- 6.1 guest (tests/vm/stage.sh) ---"
    cat "$vm_log"
    logs+=(build/meson-logs/vm.json)
fi
printf '%s\n' "${stage_times[@]}" "total: $SECONDS s"

# Count from meson's machine-readable logs. A skipped test counts as failed
# under CI, where the root tests must run.
summary=$(STAGE_FAILURES=$stage_failures /usr/bin/python3 - "${logs[@]}" <<'PY'
import json, os, sys
passed = skipped = 0
failed = int(os.environ.get("STAGE_FAILURES", "0"))
for path in sys.argv[1:]:
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        failed += 1  # a stage that wrote no log did not pass
        continue
    for line in open(path):
        result = json.loads(line)["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP" and not os.environ.get("CI"):
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
)
echo "$summary"
case "$summary" in
    *" 0 failed"*) exit 0 ;;
    *) exit 1 ;;
esac
