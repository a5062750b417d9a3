#!/usr/bin/env bash
# run_fuzzer.sh FUZZER SEED_DIR SECONDS
# A bounded libFuzzer run. New inputs go to a scratch directory so the seed
# corpus in the repository only changes by hand; a crash fails the test and
# leaves its input next to the build for adding to the corpus. libFuzzer's
# own exit code for a crash is 77, which meson reads as "skipped": ask for 1.
set -euo pipefail
fuzzer=$1 seeds=$2 seconds=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
artifacts="$(dirname "$fuzzer")/crashes-$(basename "$fuzzer")"
mkdir -p "$artifacts"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
exec "$fuzzer" -error_exitcode=1 -timeout_exitcode=1 -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$artifacts/" "$scratch" "$seeds"
