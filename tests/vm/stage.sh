#!/usr/bin/env bash
# stage.sh BUILD_DIR: the end-to-end tests that matter most on Debian 12's own
# kernel (6.1: no tcx, perf_event_paranoid 3, the tracing program type: trace mode), run
# in a guest booted by guest.sh from the already built tree. meson's JSON log
# comes back as BUILD_DIR/meson-logs/vm.json, for the test command's count.
# Emulation is 10 to 50 times slower: the tests get a time multiplier, and
# meson a timeout multiplier, never a looser check. One test at a time
# (XDPCAP_VM_JOBS=2: two, on the two vCPUs; under emulation that finished no
# sooner). Kept here only the tests whose subject differs on 6.1; e2e_directions
# and e2e_multi_iface are left to the host: -Q's choice of hooks and several
# -i are the program's own, and the clsact attach they would meet here is
# e2e_veth_mode's and e2e_capture_exact's subject. So are e2e_redirects (a
# CNI's redirects reach tc the same way since 5.10), e2e_super_frames (GSO and
# GRO frames are built by the stack alike, and emulation cannot send them
# fast enough to make many) and e2e_bad_input_more (its locked-memory cases
# are the perf rings' own): the guest's time goes to what only it can show.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
# meson runs them in this order: first the four that run alone (is_parallel:
# false), then the longest, so that none is left running alone at the end.
tests=(e2e_trace e2e_veth_mode e2e_drops e2e_fault_iface_moved
       e2e_filter e2e_bad_input e2e_capture_exact
       e2e_rx_vlan e2e_fault_two_captures e2e_privileges
       e2e_process e2e_sigkill e2e_nic_metadata)
scale=${XDPCAP_VM_TIME_SCALE:-10}
mkdir -p "$build/meson-logs"
rm -f "$build/meson-logs/vm.json"
jobs=${XDPCAP_VM_JOBS:-1}
tests/vm/guest.sh -t "${XDPCAP_VM_LIMIT:-2400}" -c 2 -m 3G -w "$build/meson-logs" -- \
    "export CI=${CI:-} XDPCAP_TIME_SCALE=$scale XDPCAP_STEP_TIMES=1; meson test -C $build --no-rebuild --logbase vm \
     --num-processes $jobs --timeout-multiplier $scale --print-errorlogs ${tests[*]} 2>&1 | cat"
status=$?
[ -s "$build/meson-logs/vm.json" ] || { echo "stage.sh: the guest wrote no test log (status $status)" >&2; exit 1; }
exit $status
