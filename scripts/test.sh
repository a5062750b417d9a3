#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (unit tests,
# man page checks, and the end-to-end captures, which need root).
# Ends with one line: "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
if ! scripts/deps.sh || ! scripts/build.sh; then
    echo "0 passed, 1 failed"
    exit 1
fi

status=0
meson test -C build --print-errorlogs --num-processes 2 "$@" || status=$?

# Count from meson's machine-readable log. A skipped test counts as failed
# under CI, where the root tests must run.
summary=$(/usr/bin/python3 - build/meson-logs/testlog.json <<'PY'
import json, os, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
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
    *" 0 failed"*) exit "$status" ;;
    *) exit 1 ;;
esac
