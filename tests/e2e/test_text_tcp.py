#!/usr/bin/python3
"""End-to-end: TCP lines exactly as tcpdump prints them.

Usage (root): /usr/bin/python3 tests/e2e/test_text_tcp.py PATH/TO/xdpcap

Frames written by this test (TCP connections over IPv4 and IPv6 in both
port orders, the same port on both ends, every option kind tcpdump names,
unknown and malformed options, bad header lengths) are sent over the veth
pair to xdpcap --print -w FILE. Each line xdpcap prints, less its interface
and direction columns, must equal the line `tcpdump -n -r FILE` prints of the
same packet:

- by default, sequence and acknowledgement numbers relative to the
  connection's first (SACK blocks too), as tcpdump;
- with -S, absolute ones, against tcpdump -S;
- with -q, against tcpdump -q;
- with -s cut at every boundary inside the options (54 to 94 bytes), the
  truncation marks where tcpdump puts them.

MPTCP options are left out: tcpdump decodes their subtypes, xdpcap does not.
"""

import os
import re
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CPU = N.cpus()[0]
TS = r"\d\d:\d\d:\d\d\.\d{6}"
MAC_A = bytes.fromhex("020000007101")
MAC_B = bytes.fromhex("020000007102")
A4, B4 = bytes([198, 18, 71, 1]), bytes([198, 18, 71, 2])
A6 = bytes.fromhex("20010db8007100000000000000000001")
B6 = bytes.fromhex("20010db8007100000000000000000002")
FIN, SYN, RST, PSH, ACK, URG = 1, 2, 4, 8, 16, 32


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def tcp(sport, dport, flags, seq, ack=0, win=64240, opts=b"", payload=b"", doff=None, urg=0):
    doff = (20 + len(opts)) // 4 if doff is None else doff
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xffffffff, ack & 0xffffffff, doff << 4, flags, win, 0,
                       urg) + opts + payload


def ipv4(src, dst, segment):
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(segment), 0x4711, 0x4000, 64, 6, 0, src, dst)
    head = head[:10] + struct.pack("!H", checksum(head)) + head[12:]
    return MAC_B + MAC_A + b"\x08\x00" + head + segment


def ipv6(src, dst, segment):
    return MAC_B + MAC_A + b"\x86\xdd" + struct.pack("!IHBB16s16s", 0x60000000, len(segment), 6, 64, src, dst) \
        + segment


def opt(kind, data=b"", length=None):
    return bytes([kind, len(data) + 2 if length is None else length]) + data


NOP, EOL = b"\x01", b"\x00"
SYN_OPTS = opt(2, b"\x05\xb4") + opt(4) + opt(8, struct.pack("!II", 1948436430, 0)) + NOP + opt(3, b"\x07")
TS_OPTS = NOP + NOP + opt(8, struct.pack("!II", 1948436500, 3000000001))


def connection(make, a, b, sport, dport, isn_a, isn_b):
    """A handshake, data both ways, a SACK, FIN and RST: tcpdump's relative numbers."""
    f = [
        make(a, b, tcp(sport, dport, SYN, isn_a, 0, opts=SYN_OPTS)),
        make(b, a, tcp(dport, sport, SYN | ACK, isn_b, isn_a + 1, 65160, opts=SYN_OPTS)),
        make(a, b, tcp(sport, dport, ACK, isn_a + 1, isn_b + 1, 502, opts=TS_OPTS)),
        make(a, b, tcp(sport, dport, PSH | ACK, isn_a + 1, isn_b + 1, 502, opts=TS_OPTS, payload=b"x" * 100)),
        make(b, a, tcp(dport, sport, ACK, isn_b + 1, isn_a + 101, 509, opts=TS_OPTS)),
        make(b, a, tcp(dport, sport, PSH | ACK, isn_b + 1, isn_a + 101, 509, opts=TS_OPTS, payload=b"y" * 1000)),
        # A SACK for two blocks beyond a hole.
        make(a, b, tcp(sport, dport, ACK, isn_a + 101, isn_b + 1, 502,
                       opts=NOP + NOP + opt(5, struct.pack("!IIII", *((isn_b + d) & 0xffffffff
                                                            for d in (2001, 3001, 4001, 5001)))))),
        make(a, b, tcp(sport, dport, FIN | ACK, isn_a + 101, isn_b + 1001, 502)),
        make(b, a, tcp(dport, sport, FIN | ACK, isn_b + 1001, isn_a + 102, 509)),
        make(a, b, tcp(sport, dport, ACK | URG, isn_a + 102, isn_b + 1002, 502, urg=7)),
        make(b, a, tcp(dport, sport, RST, isn_b + 1002, 0, 0)),
    ]
    return f


def option_zoo():
    """Every option kind tcpdump names, unknown ones, and malformed ones, on ACKs of one connection."""
    a, b, sp, dp = A4, B4, 42000, 5002
    base = [ipv4(a, b, tcp(sp, dp, SYN, 5000, 0, opts=SYN_OPTS)),
            ipv4(b, a, tcp(dp, sp, SYN | ACK, 9000, 5001, opts=SYN_OPTS))]
    cases = [
        EOL + b"\0\0\0",
        NOP + NOP + NOP + EOL,
        opt(6, struct.pack("!I", 77)) + opt(7, struct.pack("!I", 78)) + NOP + NOP + NOP + NOP,
        opt(11, struct.pack("!I", 11)) + opt(12, struct.pack("!I", 12)) + opt(13, struct.pack("!I", 13)) + b"\0\0",
        opt(19, bytes(range(16))) + NOP + NOP,
        opt(20, b"\x5a\x09") + opt(28, b"\x00\x3c") + opt(28, b"\x00\x0b") + b"\0\0\0\0",
        opt(29, b"\x01\x02") + opt(29, b"\x03\x04" + bytes(range(10, 22))) + b"\0\0",
        opt(29, b"\x05") + b"\0",
        opt(34) + opt(34, bytes.fromhex("0102030405060708")) + b"\0\0",
        opt(34, b"\x01\x02\x03") + b"\0\0\0",
        opt(254, b"\xf9\x89") + opt(254, b"\xf9\x89" + bytes.fromhex("a1a2a3a4")) + b"\0\0",
        opt(254, b"\x12\x34\x00\x00"),
        opt(254, b"\x12") + b"\0",
        opt(99, b"\xde\xad\xbe") + opt(100) + b"\0\0\0",
        opt(2, b"\x05\xb4\x00", length=5) + b"\0\0\0",
        opt(5, b"\0" * 5) + b"\0",
        b"\x02\x01\0\0",
        b"\x02\x0a\x05\xb4",
        NOP + b"\x08",
        opt(8, struct.pack("!II", 1, 2)) + opt(253, b"\x01\x02") + b"\0\0",
    ]
    seq = [ipv4(a, b, tcp(sp, dp, ACK, 5001 + i, 9001, 502, opts=c)) for i, c in enumerate(cases)]
    seq.append(ipv4(a, b, tcp(sp, dp, ACK | PSH, 5100, 9001, 502, opts=opt(19, bytes(16)) + NOP + NOP,
                              payload=b"m" * 40)))
    # Header lengths: under 20, and beyond the segment.
    seq.append(ipv4(a, b, tcp(sp, dp, ACK, 5200, 9001, doff=4)))
    seq.append(ipv4(a, b, tcp(sp, dp, ACK, 5201, 9001, doff=15)))
    return base + seq


def corpus():
    frames = []
    frames += connection(ipv4, A4, B4, 41000, 5001, 4082233688, 3519022111)
    frames += connection(ipv4, A4, B4, 50000, 3000, 1000, 0xfffffff0)          # higher port first: reversed key
    frames += connection(ipv4, B4, A4, 6000, 6000, 77777, 88888)               # same ports, higher address first
    frames += connection(ipv6, A6, B6, 41001, 5001, 123456789, 987654321)
    frames += connection(ipv6, B6, A6, 7000, 7000, 1, 2)
    frames += option_zoo()
    return frames


def our_lines(x):
    out = []
    for line in bytes(x.out).decode("utf-8", "replace").splitlines():
        # One interface: tcpdump's line, nothing between the time and the decode.
        out.append(line if re.match(rf"^{TS} ", line) else "UNPARSED " + line)
    return out


def tcpdump_lines(path, flags):
    lines = N.run(["tcpdump", "-n", "-r", path] + flags).stdout.splitlines()
    return [l for l in lines if l and not l.startswith("\t")]


def capture_printed(lab, binary, tmp, pcap, count, label, xflags):
    """The frames of `pcap` sent to `xdpcap -c COUNT -w FILE --print XFLAGS`
    on cap0: (the xdpcap process, FILE)."""
    path = os.path.join(tmp, re.sub(r"[^\w.]", "_", label) + ".pcapng")
    x = lab.xdpcap(binary, ["-Q", "in", "-c", str(count), "-w", path, "--print"] + xflags)
    if "-q" in xflags:
        time.sleep(N.scaled(1.5))  # -q prints no start line to wait for
    else:
        x.wait_listening()
    lab.send(pcap, CPU, gap_us=300)
    rc = x.wait(30)
    N.expect(rc == 0, f"{label}: exits 0 after -c {count}", (rc, x.err_lines[-3:]))
    return x, path


def compare(lab, binary, tmp, pcap, count, label, xflags, tflags):
    x, path = capture_printed(lab, binary, tmp, pcap, count, label, xflags)
    ours, theirs = our_lines(x), tcpdump_lines(path, tflags)
    diff = [(i, o, t) for i, (o, t) in enumerate(zip(ours, theirs)) if o != t]
    N.expect(len(ours) == count and len(theirs) == count and not diff,
             f"{label}: every one of the {count} lines is tcpdump {' '.join(tflags) or '-n'}'s",
             f"{len(ours)} ours, {len(theirs)} tcpdump's\n" + "\n".join(f"#{i}\n ours: {o}\n tcpd: {t}"
                                                                     for i, o, t in diff[:12]))
    return ours


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        frames = corpus()
        pcap = os.path.join(tmp, "tcp.pcap")
        N.write_frames(pcap, frames)
        count = len(frames)
        ours = compare(lab, binary, tmp, pcap, count, "relative", [], [])
        N.expect(any("options [mss 1460,sackOK,TS val 1948436430 ecr 0,nop,wscale 7]" in l for l in ours)
                 and any(", ack 1, " in l for l in ours) and any("sack 2 {2001:3001}{4001:5001}" in l for l in ours),
                 "the SYN's options, a relative ack and relative SACK blocks are there", ours[:4])
        compare(lab, binary, tmp, pcap, count, "absolute", ["-S"], ["-S"])
        compare(lab, binary, tmp, pcap, count, "quick", ["-q"], ["-q"])
        # Cuts: the SYN-ACK of the first connection and an option-zoo frame.
        cut_frames = [frames[1], frames[-5], frames[-3]]
        cut_pcap = os.path.join(tmp, "cut.pcap")
        N.write_frames(cut_pcap, cut_frames)
        for snap in range(54, 96, 2):
            compare(lab, binary, tmp, cut_pcap, len(cut_frames), f"-s {snap}", ["-s", str(snap), "-S"], ["-S"])


if __name__ == "__main__":
    N.main(test)
