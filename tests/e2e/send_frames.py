#!/usr/bin/python3
"""Send every frame of a classic pcap file, byte for byte, out of one interface.

Run inside the generator namespace:

    ip netns exec GENNS /usr/bin/python3 send_frames.py --iface gen0 --cpu N[,M...] \
        --pcap FILE [--gap-us U]

The process pins itself to CPU N first: a frame sent from a process running on
CPU k is received (and seen by XDP) on CPU k on the peer veth.  With several
CPUs, frame i is sent from the i-th of them (cyclically): the process moves
before each frame.  Standard library only, so that it starts fast.
"""

import argparse
import os
import socket
import struct
import sys
import time

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": "<",  # microseconds, little endian
    b"\xa1\xb2\xc3\xd4": ">",  # microseconds, big endian
    b"\x4d\x3c\xb2\xa1": "<",  # nanoseconds, little endian
    b"\xa1\xb2\x3c\x4d": ">",  # nanoseconds, big endian
}
LINKTYPE_ETHERNET = 1


def read_pcap(path):
    """Return the list of frames (bytes) of a classic pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24 or data[:4] not in PCAP_MAGICS:
        raise ValueError(f"{path}: not a classic pcap file")
    endian = PCAP_MAGICS[data[:4]]
    _vmaj, _vmin, _zone, _sigfigs, _snaplen, linktype = struct.unpack(
        endian + "HHiIII", data[4:24])
    if linktype != LINKTYPE_ETHERNET:
        raise ValueError(f"{path}: link type {linktype}, expected 1 (Ethernet)")
    frames = []
    off = 24
    while off < len(data):
        if off + 16 > len(data):
            raise ValueError(f"{path}: truncated record header at offset {off}")
        _sec, _frac, caplen, origlen = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        if off + caplen > len(data):
            raise ValueError(f"{path}: truncated record at offset {off}")
        if caplen != origlen:
            raise ValueError(f"{path}: record at offset {off} is truncated "
                             f"({caplen} of {origlen} bytes)")
        frames.append(data[off:off + caplen])
        off += caplen
    return frames


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iface", required=True)
    ap.add_argument("--cpu", required=True, help="CPU, or comma-separated CPUs to take turns")
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--gap-us", type=float, default=0.0,
                    help="pause between two frames, in microseconds")
    args = ap.parse_args()

    cpus = [int(c) for c in args.cpu.split(",")]

    def pin(cpu):
        os.sched_setaffinity(0, {cpu})
        if os.sched_getaffinity(0) != {cpu}:
            print(f"send_frames: could not pin to CPU {cpu}", file=sys.stderr)
            return False
        return True

    if not pin(cpus[0]):
        return 1

    frames = read_pcap(args.pcap)
    # Protocol 0: this socket only sends, it receives nothing.
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((args.iface, 0))
    gap = args.gap_us / 1e6
    for i, frame in enumerate(frames):
        if len(cpus) > 1 and i > 0 and not pin(cpus[i % len(cpus)]):
            return 1
        n = s.send(frame)
        if n != len(frame):
            print(f"send_frames: frame {i}: sent {n} of {len(frame)} bytes",
                  file=sys.stderr)
            return 1
        if gap > 0 and i + 1 < len(frames):
            time.sleep(gap)
    s.close()
    cpu_now = os.sched_getaffinity(0)
    print(f"send_frames: sent {len(frames)} frames on {args.iface} "
          f"from CPU {args.cpu} (affinity {sorted(cpu_now)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
