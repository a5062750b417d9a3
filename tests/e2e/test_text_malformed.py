#!/usr/bin/python3
"""End-to-end: malformed IPv4, IPv6 and UDP headers reported as tcpdump reports them.

Usage (root): /usr/bin/python3 tests/e2e/test_text_malformed.py PATH/TO/xdpcap

Frames with a UDP length beyond the datagram or under 8, an IPv4 total
length beyond the frame or of 0, a short IPv4 header length, the wrong IP
version behind ethertype IPv4, an IPv6 payload length beyond the frame, and
are sent over the veth pair to xdpcap --print -w FILE; each line, less the
interface and direction columns, must be the line `tcpdump -n -r FILE`
prints. A first fragment whose UDP length covers the later ones has no bad
length either (xdpcap adds its fragment note, which tcpdump prints with -v).

Cuts by the snapshot length, at every header length, are compared with
tcpdump in test_read.py.
"""

import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402
from test_text_tcp import checksum, compare  # noqa: E402

ETHER = bytes.fromhex("020000007202") + bytes.fromhex("020000007201")
A4, B4 = bytes([198, 18, 72, 1]), bytes([198, 18, 72, 2])
A6 = bytes.fromhex("20010db8007200000000000000000001")
B6 = bytes.fromhex("20010db8007200000000000000000002")


def ipv4(total, proto, payload, version_ihl=0x45, frag=0x4000, options=b""):
    head = struct.pack("!BBHHHBBH4s4s", version_ihl, 0, total, 0x4712, frag, 64, proto, 0, A4, B4) + options
    head = head[:10] + struct.pack("!H", checksum(head)) + head[12:]
    return ETHER + b"\x08\x00" + head + payload


def udp(ulen, data=b""):
    return struct.pack("!HHHH", 41000, 5005, ulen, 0) + data


def frames():
    return [
        ipv4(20 + 8 + 4, 17, udp(92, b"abcd")),                       # UDP, bad length 84 > 4
        ipv4(200, 17, udp(12, b"abcd")),                              # truncated-ip - 168 bytes missing!
        ipv4(0, 17, udp(12, b"abcd")),                                # bad-len 0
        ipv4(10, 17, udp(12, b"abcd")),                               # bad-len 10
        ipv4(20 + 8 + 4, 17, udp(4, b"abcd")),                        # truncated-udplength 4
        ipv4(20 + 6, 17, udp(12)[:6] + b"\0" * 20),                   # truncated-udp 6
        ipv4(40, 17, udp(20, b"x" * 12), version_ihl=0x44),           # bad-hlen 16
        ipv4(40, 17, udp(20, b"x" * 12), version_ihl=0x55),           # IP5 (invalid)
        ipv4(40, 17, udp(20, b"x" * 12), version_ihl=0x65),           # IP6, wrong link-layer encapsulation
        ETHER + b"\x86\xdd" + struct.pack("!IHBB16s16s", 0x60000000, 300, 17, 64, A6, B6)
        + struct.pack("!HHHH", 41001, 5006, 300, 0) + b"zz",          # truncated-ip6 - 290 bytes missing!
        ETHER + b"\x86\xdd" + struct.pack("!IHBB16s16s", 0x60000000, 12, 17, 64, A6, B6)
        + struct.pack("!HHHH", 41001, 5006, 40, 0) + b"zzzz",         # UDP, bad length 32 > 4 over IPv6
    ]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        sent = frames()
        pcap = os.path.join(tmp, "malformed.pcap")
        N.write_frames(pcap, sent)
        ours = compare(lab, binary, tmp, pcap, len(sent), "malformed", [], [])
        N.expect(any("UDP, bad length 84 > 4" in l for l in ours)
                 and any("truncated-ip - 168 bytes missing!" in l for l in ours)
                 and any(l.endswith("IP bad-len 0") for l in ours)
                 and any("truncated-ip6 - 290 bytes missing!" in l for l in ours),
                 "the bad UDP length, the missing IPv4 and IPv6 bytes and the zero IPv4 length are named", ours)
        fragment = os.path.join(tmp, "fragment.pcap")
        N.write_frames(fragment, [ipv4(20 + 8 + 4, 17, udp(92, b"abcd"), frag=0x2000)])
        x = lab.xdpcap(binary, ["-Q", "in", "-c", "1"])
        x.wait_listening()
        lab.send(fragment, N.cpus()[0])
        N.expect(x.wait(20) == 0, "fragment: exits 0 after -c 1", x.err_lines[-3:])
        line = bytes(x.out).decode("utf-8", "replace")
        theirs = N.run(["tcpdump", "-n", "-r", fragment]).stdout
        N.expect(line.endswith("UDP, length 84\n") and theirs.endswith("UDP, length 84\n"),
                 "a first fragment: 'UDP, length 84', no bad length, as tcpdump", (line, theirs))


if __name__ == "__main__":
    N.main(test)
