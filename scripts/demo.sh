#!/usr/bin/env bash
# Installs, builds, and runs a real capture where it works anywhere: a veth
# pair between two network namespaces of its own, with ping, UDP and ARP
# traffic sent through it. Leaves the capture in ./demo.pcapng and removes
# the namespaces on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh

tag="xdpcap-demo-$$"
cap_ns="$tag-cap"
gen_ns="$tag-gen"
out="$PWD/demo.pcapng"
capture_pid=""
cleanup() {
    [ -n "$capture_pid" ] && kill "$capture_pid" 2>/dev/null || true
    ip netns del "$cap_ns" 2>/dev/null || true
    ip netns del "$gen_ns" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

ip netns add "$cap_ns"
ip netns add "$gen_ns"
ip link add cap0 netns "$cap_ns" type veth peer name gen0 netns "$gen_ns"
ip -n "$cap_ns" addr add 198.18.0.1/24 dev cap0
ip -n "$gen_ns" addr add 198.18.0.2/24 dev gen0
ip -n "$cap_ns" addr add 2001:db8::1/64 dev cap0 nodad
ip -n "$gen_ns" addr add 2001:db8::2/64 dev gen0 nodad
ip -n "$cap_ns" link set cap0 up
ip -n "$gen_ns" link set gen0 up

echo "== capturing on cap0 (namespace $cap_ns) into $out"
ip netns exec "$cap_ns" build/src/xdpcap -i cap0 -w "$out" &
capture_pid=$!
sleep 1

echo "== sending traffic from $gen_ns: ping over IPv4 and IPv6, pinned to each CPU"
for cpu in $(seq 0 $(($(nproc) - 1))); do
    ip netns exec "$gen_ns" taskset -c "$cpu" ping -q -c 3 -i 0.2 198.18.0.1 >/dev/null
    ip netns exec "$gen_ns" taskset -c "$cpu" ping -q -c 3 -i 0.2 2001:db8::1 >/dev/null
done
sleep 0.5
kill -INT "$capture_pid"
wait "$capture_pid"
capture_pid=""

echo "== what tshark sees: one interface per CPU, both directions (1 in, 2 out), in time order"
tshark -r "$out" -T fields -E header=y -e frame.number -e frame.interface_name -e frame.packet_flags_direction \
    -e frame.interface_queue -e frame.len -e _ws.col.Protocol -e _ws.col.Info 2>/dev/null | head -40
echo "== capinfos"
capinfos -c -I "$out" 2>/dev/null | grep -E "Number of packets|Name =|Description =" || capinfos "$out"
