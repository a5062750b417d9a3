#!/usr/bin/python3
"""How long -r takes on files crafted to find per-file costs that grow faster than the file.

Run (no root needed):  bench/read_bench.py build/src/xdpcap [--count 100000] [--max-seconds S]

Writes three pcapng files of xdpcap's kind (its shb_userappl, so that
interface names and drop reasons are shown) into a temporary directory and
times `xdpcap -r FILE -n --print-cpu` on each, its lines going to /dev/null:

  * interfaces: COUNT interface description blocks, each of another device
    (every line's prefix is a column then), a packet on the last one;
  * drop reasons: one interface, COUNT packets whose comments name COUNT
    distinct drop reasons;
  * comments: one interface, COUNT packets with COUNT distinct comments.

Prints the seconds each took. With --max-seconds, exits 1 when one took
longer (the unit suite runs it so, with a bound far above the time a linear
reader takes and far below a quadratic one's).
"""

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time


def block(kind, body):
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def options(pairs):
    out = b""
    for code, value in pairs:
        out += struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)
    return out + struct.pack("<HH", 0, 0)


SHB = block(0x0a0d0d0a, struct.pack("<IHHq", 0x1a2b3c4d, 1, 0, -1) + options([(4, b"xdpcap bench")]))
# An Ethernet frame of IPv4 UDP, 198.18.0.1.5000 > 198.18.0.2.7777.
FRAME = (bytes.fromhex("020000000002020000000001" "0800") +
         bytes.fromhex("4500001c000100004011" "0000" "c6120001c6120002") +
         struct.pack("!HHHH", 5000, 7777, 8, 0))


def idb(name):
    return block(1, struct.pack("<HHI", 1, 0, 262144) + options([(2, name)]))


def epb(interface, i, comment):
    ns = 1795431326 * 10**9 + i * 1000
    body = struct.pack("<IIIII", interface, ns >> 32, ns & 0xffffffff, len(FRAME), len(FRAME)) + FRAME
    body += b"\0" * (-len(body) % 4) + options([(2, struct.pack("<I", 1)), (1, comment)])
    return block(6, body)


def files(count):
    yield "interfaces", b"".join([SHB] + [idb(b"d%d@cpu0" % i) for i in range(count)] +
                                 [epb(count - 1, 0, b"x")])
    yield "drop reasons", b"".join([SHB, idb(b"eth0@cpu0:drop")] +
                                   [epb(0, i, b"drop reason R%d at f+0x1" % i) for i in range(count)])
    yield "comments", b"".join([SHB, idb(b"eth0@cpu0")] + [epb(0, i, b"comment %d" % i) for i in range(count)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xdpcap")
    parser.add_argument("--count", type=int, default=100000)
    parser.add_argument("--max-seconds", type=float)
    args = parser.parse_args()
    slow = []
    with tempfile.TemporaryDirectory(prefix="xdpcap-read-bench-") as tmp:
        os.chmod(tmp, 0o755)
        for name, data in files(args.count):
            path = os.path.join(tmp, name.replace(" ", "-") + ".pcapng")
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, 0o644)
            start = time.monotonic()
            cp = subprocess.run([args.xdpcap, "-r", path, "-n", "--print-cpu"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
            seconds = time.monotonic() - start
            print(f"{args.count} {name:<13} {len(data) / 1e6:5.1f} MB  {seconds:6.2f} s", flush=True)
            if cp.returncode != 0:
                print(f"xdpcap -r exited {cp.returncode}: {cp.stderr.strip()}", file=sys.stderr)
                return 1
            if args.max_seconds is not None and seconds > args.max_seconds:
                slow.append(name)
    if slow:
        print(f"slower than {args.max_seconds} s: {', '.join(slow)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
