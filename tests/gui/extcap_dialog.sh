#!/usr/bin/env bash
# extcap_dialog.sh [XDPCAP [OUT.png]]: opens xdpcap's interface options
# dialog in Wireshark itself (under Xvfb) and saves a screenshot of it, to
# look at: every field must open valid (none in red) and Save must be
# enabled. Run as root from a build tree; it installs nothing and leaves
# nothing behind. Needs wireshark-qt, xvfb, xdotool, x11-apps and
# imagemagick (not part of the test command: the check is a human's).
set -euo pipefail
xdpcap=$(realpath "${1:-build/src/xdpcap}")
out=$(realpath -m "${2:-extcap-dialog.png}")
for tool in wireshark tshark Xvfb xdotool xwd convert; do
    command -v "$tool" >/dev/null || { echo "extcap_dialog.sh: $tool is missing" >&2; exit 1; }
done
ns="xdpcap-gui-$$"
home=$(mktemp -d)
display=":$((90 + $$ % 9))"
cleanup() {
    [ -n "${ws:-}" ] && kill "$ws" 2>/dev/null
    [ -n "${xvfb:-}" ] && kill "$xvfb" 2>/dev/null
    wait 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "$home"
}
trap cleanup EXIT
# A namespace whose only interface is lo: xdpcap offers xdpcap:lo alone.
ip netns add "$ns"
ip -n "$ns" link set lo up
mkdir -p "$home/wireshark/extcap"
ln -s "$xdpcap" "$home/wireshark/extcap/xdpcap"
run() { ip netns exec "$ns" env HOME="$home" XDG_CONFIG_HOME="$home" XDG_RUNTIME_DIR="$home" DISPLAY="$display" "$@"; }
# Every other capture source hidden: xdpcap:lo is the first row of the list.
hide=$(run tshark -D 2>/dev/null | sed -E 's/^[0-9]+\. ([^ ]+).*/\1/' | grep -vx 'xdpcap:lo' | paste -sd, -)
printf 'capture.devices_hide: %s\ngui.update.enabled: FALSE\n' "$hide" > "$home/wireshark/preferences"
Xvfb "$display" -screen 0 1280x900x24 >/dev/null 2>&1 & xvfb=$!
sleep 2
run wireshark >/dev/null 2>&1 & ws=$!
for _ in $(seq 60); do
    main=$(DISPLAY="$display" xdotool search --name "The Wireshark Network Analyzer" 2>/dev/null | head -1) && break
    sleep 0.5
done
[ -n "${main:-}" ] || { echo "extcap_dialog.sh: Wireshark's window did not appear" >&2; exit 1; }
DISPLAY="$display" xdotool windowmove "$main" 0 0 windowsize "$main" 900 650
sleep 2
# The gear left of the first interface row (Wireshark 4.0's welcome page).
DISPLAY="$display" xdotool mousemove 113 238 click 1
for _ in $(seq 40); do
    dialog=$(DISPLAY="$display" xdotool search --name "Interface Options" 2>/dev/null | head -1) && break
    sleep 0.5
done
[ -n "${dialog:-}" ] || {
    DISPLAY="$display" xwd -root -silent | convert xwd:- "$out"
    echo "extcap_dialog.sh: no options dialog opened; the whole screen is in $out" >&2
    exit 1
}
sleep 2
DISPLAY="$display" xwd -id "$dialog" -silent | convert xwd:- "$out"
echo "extcap_dialog.sh: the dialog is in $out"
