#!/usr/bin/env bash
# Installs everything xdpcap needs to build, test and benchmark on Debian 12.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: run as root (apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
packages=(
    # build
    clang llvm bpftool libbpf-dev libpcap-dev libssl-dev libcxxopts-dev meson ninja-build pkg-config g++
    # tests and verifiers
    libgtest-dev libbenchmark-dev tshark tcpdump iproute2 libcap2-bin python3 python3-scapy
    groff-base man-db iputils-ping util-linux bash-completion zsh strace
    # a disk full on ext4 (a loop-mounted image): mkfs.ext4
    e2fsprogs
    # a sender at top speed (trafgen) and at a fixed rate (iperf3) beside a capture on veth, the peer's offload features
    netsniff-ng ethtool iperf3
    # --drops: a firewall rule that drops (NETFILTER_DROP)
    nftables
    # packages: Debian (built, checked, installed) and rpm (built)
    build-essential debhelper lintian rpm
    # trace mode behind a libxdp dispatcher (xdp-loader)
    xdp-tools
    # the kernel-6.1 guest stage (tests/vm): Debian's own kernel under QEMU
    qemu-system-x86 linux-image-amd64 busybox-static
    # --container: a podman container from a local busybox image
    podman runc
    # process attribution of a server already running, and of -- curl;
    # --tls-keys: an HTTP/2 server over TLS (nghttpd) beside openssl s_server;
    # --tls-keylog and --tls-keys' uprobes: a client of another TLS library
    lighttpd curl nghttp2-server openssl gnutls-bin
)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
