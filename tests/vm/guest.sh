#!/usr/bin/env bash
# guest.sh: run one shell command as root on Debian 12's stock kernel (6.1)
# under QEMU, without KVM (TCG emulation).
#
#   tests/vm/guest.sh [-t SECONDS] [-m MEMORY] [-c CPUS] [-w DIR]... -- 'COMMAND'
#
# The guest's root file system is this machine's /, shared read-only over
# virtio-9p with a tmpfs overlay on top, so everything installed here runs
# there and everything written there is thrown away, except in the -w
# directories, which are shared read-write at the same paths. The command
# runs in the current directory; the script exits with its status, 124 when
# the time limit ends the guest, 125 when the guest dies without a status.
#
# Needs qemu-system-x86, linux-image-amd64 and busybox-static (scripts/deps.sh
# installs them with XDPCAP_VM=1). The initramfs is built once per kernel and
# kept in $XDPCAP_VM_CACHE (default /var/tmp/xdpcap-vm).
set -uo pipefail

limit=900 memory=2G cpus=2 shares=()
while getopts "t:m:c:w:" opt; do
    case $opt in
        t) limit=$OPTARG ;;
        m) memory=$OPTARG ;;
        c) cpus=$OPTARG ;;
        w) shares+=("$(cd "$OPTARG" && pwd)") || exit 2 ;;
        *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
[ $# -eq 1 ] || { echo "guest.sh: give one command line after --" >&2; exit 2; }
command_line=$1

kernel=$(ls /boot/vmlinuz-6.1.* 2>/dev/null | sort -V | tail -n 1)
[ -n "$kernel" ] || { echo "guest.sh: no Debian 6.1 kernel in /boot (install linux-image-amd64)" >&2; exit 2; }
release=${kernel#/boot/vmlinuz-}
command -v qemu-system-x86_64 >/dev/null && [ -x /bin/busybox ] ||
    { echo "guest.sh: needs qemu-system-x86 and busybox-static" >&2; exit 2; }

cache=${XDPCAP_VM_CACHE:-/var/tmp/xdpcap-vm}
initrd=$cache/initrd-$release.gz
mkdir -p "$cache"

# The initramfs only has to reach the shared root: busybox, the virtio, 9p and
# overlay modules (with their dependencies, in load order) and /init.
build_initrd() {
    local tree
    tree=$(mktemp -d "$cache/tree.XXXXXX") || return 1
    mkdir -p "$tree"/{bin,dev,proc,sys,modules,ro,rw,root}
    cp /bin/busybox "$tree/bin/"
    for module in virtio_pci virtio_rng 9pnet_virtio 9p overlay; do
        modprobe -S "$release" --show-depends "$module"
    done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r path; do
        name=$(basename "$path"); name=${name%.xz}; name=${name%.zst}
        case $path in
            *.xz) xz -dc "$path" ;;
            *.zst) zstd -qdc "$path" ;;
            *) cat "$path" ;;
        esac > "$tree/modules/$name"
        echo "$name" >> "$tree/modules/order"
    done
    cat > "$tree/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc && mount -t sysfs sysfs /sys && mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules/order); do insmod "/modules/$m"; done
halt() { echo "guest: $*"; poweroff -f; }
opts=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o "$opts,ro,cache=loose" hostroot /ro || halt "cannot mount the host root"
mount -t tmpfs -o mode=0755 overlay /rw && mkdir /rw/upper /rw/work
mount -t overlay -o lowerdir=/ro,upperdir=/rw/upper,workdir=/rw/work overlay /root || halt "no overlay"
# Read-write shares: "tag path" lines in the control share.
mkdir /control && mount -t 9p -o "$opts,cache=mmap" control /control || halt "no control share"
while read -r tag path; do
    mkdir -p "/root$path" && mount -t 9p -o "$opts,cache=mmap" "$tag" "/root$path" || halt "cannot mount $path"
done < /control/shares
mkdir -p /root/run/xdpcap-guest && mount --move /control /root/run/xdpcap-guest
for fs in dev proc sys; do mount --move "/$fs" "/root/$fs"; done
exec switch_root /root /bin/bash /run/xdpcap-guest/start.sh
INIT
    chmod 755 "$tree/init"
    (cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1) > "$initrd.new" && mv "$initrd.new" "$initrd"
    local status=$?
    rm -rf "$tree"
    return $status
}
if [ ! -s "$initrd" ] || [ "$initrd" -ot "$0" ]; then
    build_initrd || { echo "guest.sh: cannot build the initramfs" >&2; exit 2; }
fi

control=$(mktemp -d "$cache/run.XXXXXX")
trap 'rm -rf "$control"' EXIT
: > "$control/shares"
qemu_shares=()
for i in "${!shares[@]}"; do
    echo "share$i ${shares[$i]}" >> "$control/shares"
    qemu_shares+=(-virtfs "local,path=${shares[$i]},mount_tag=share$i,security_model=none,multidevs=remap")
done
printf '%s\n' "$command_line" > "$control/command"
printf 'cd %q\n' "$PWD" > "$control/start.sh"
# PID 1 of the guest: what a booted system would have mounted, then the command.
cat >> "$control/start.sh" <<'START'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb
mount -t tmpfs -o mode=0755 tmpfs /run/lock 2>/dev/null
mkdir -p /run/netns /dev/pts /dev/shm
mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up
echo "guest: kernel $(uname -r), $(nproc) CPUs, up after $(cut -d' ' -f1 /proc/uptime) s"
read -r started _ < /proc/uptime
bash -c "$(cat /run/xdpcap-guest/command)" </dev/null
echo $? > /run/xdpcap-guest/status
read -r ended _ < /proc/uptime
echo "$started $ended" > /run/xdpcap-guest/clock
sync
poweroff -f
START

# clocksource=hpet: the guest's clock then follows QEMU's, the host's. The TSC,
# calibrated against the emulated PIT while the host is busy, can be far off
# (tsc=reliable keeps the watchdog from catching it), and then every time limit
# of the tests in the guest would be cut short.
qemu_started=$(date +%s.%N)
timeout -k 10 "$limit" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$cpus" -m "$memory" \
    -nodefaults -no-user-config -display none -no-reboot -serial stdio \
    -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyS0 quiet panic=-1 oops=panic mitigations=off tsc=reliable clocksource=hpet" \
    -device virtio-rng-pci \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$control,mount_tag=control,security_model=none,multidevs=remap" \
    "${qemu_shares[@]}" </dev/null
qemu_status=$?
# The guest's time limits are only as good as its clock: say what it kept.
if [ -s "$control/clock" ]; then
    read -r started ended < "$control/clock"
    awk -v guest="$started $ended" -v host="$qemu_started $(date +%s.%N)" 'BEGIN {
        split(guest, g, " "); split(host, h, " ")
        guest_s = g[2] - g[1]; host_s = h[2] - h[1]
        printf "guest.sh: the command took %.0f s by the guest'"'"'s clock, the guest %.0f s by the host'"'"'s\n", guest_s, host_s
        if (guest_s > host_s * 1.05 + 2) printf "guest.sh: the guest'"'"'s clock ran fast: %.1f times the host'"'"'s\n", guest_s / host_s
    }' >&2
fi
if [ "$qemu_status" = 124 ]; then
    echo "guest.sh: the guest ran out of time ($limit s)" >&2
    exit 124
fi
if [ ! -s "$control/status" ]; then
    echo "guest.sh: the guest ended without a status (qemu exit $qemu_status)" >&2
    exit 125
fi
exit "$(cat "$control/status")"
