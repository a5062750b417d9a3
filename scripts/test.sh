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
# Ends with one line: "N passed, N failed".
# Environment: FUZZ_SECONDS (default 60) per fuzzer; SKIP_SANITIZE=1 leaves out
# stage 2, SKIP_VM=1 stage 3.
set -uo pipefail
cd "$(dirname "$0")/.."

fail_early() {
    echo "$1" >&2
    echo "0 passed, 1 failed"
    exit 1
}

scripts/deps.sh || fail_early "installing dependencies failed"
# Warnings are errors here (not by default, so that users and distributions
# with other compilers still get a build); the benchmarks are built too.
options=(-Dwerror=true -Dbench=true)
if [ -f build/build.ninja ]; then
    # --reconfigure, not configure: an older build/ does not know the newer options yet.
    meson setup --reconfigure build "${options[@]}" || fail_early "build configuration failed"
else
    meson setup build "${options[@]}" || fail_early "build setup failed"
fi
scripts/build.sh || fail_early "build failed"

meson test -C build --print-errorlogs --num-processes 2
logs=(build/meson-logs/testlog.json)
# Each builds the tree once more: a release build, and the Debian package,
# installed and removed again.
meson test -C build --print-errorlogs --logbase packaging --suite release --suite package
logs+=(build/meson-logs/packaging.json)

if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
    fuzz_seconds="${FUZZ_SECONDS:-60}"
    if [ ! -f build-sanitize/build.ninja ]; then
        CC=clang CXX=clang++ meson setup build-sanitize -Db_sanitize=address,undefined -Db_lundef=false \
            -Dwerror=true -Dfuzz=true -Dfuzz_seconds="$fuzz_seconds" || fail_early "sanitizer build setup failed"
    else
        meson configure build-sanitize -Dwerror=true -Dfuzz_seconds="$fuzz_seconds"
    fi
    meson compile -C build-sanitize || fail_early "sanitizer build failed"
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    meson test -C build-sanitize --print-errorlogs --num-processes 2 --logbase suites --suite unit --suite fuzz
    meson test -C build-sanitize --print-errorlogs --logbase capture e2e_capture_exact
    logs+=(build-sanitize/meson-logs/suites.json build-sanitize/meson-logs/capture.json)
fi

# 3. Debian 12's own kernel (6.1) in a QEMU guest: the e2e tests that depend
#    most on the kernel (tests/vm/stage.sh). SKIP_VM=1 leaves it out.
# A guest that ran out of time leaves a log with fewer tests, or none:
# the stage's own status counts as a failure then.
stage_failures=0
if [ "${SKIP_VM:-0}" != 1 ]; then
    tests/vm/stage.sh build || stage_failures=$((stage_failures + 1))
    logs+=(build/meson-logs/vm.json)
fi

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
