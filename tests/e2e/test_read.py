#!/usr/bin/python3
"""End-to-end: -r reads capture files as tcpdump -r does, and xdpcap's own as live capture printed them.

Usage (root): /usr/bin/python3 tests/e2e/test_read.py PATH/TO/xdpcap

  * A classic pcap written here (TCP connections with options, malformed
    IPv4/IPv6/UDP frames, HTTP requests and responses and SSH banners, ICMP
    and ICMPv6 messages of every type and error code, ARP and RARP, 802.3
    frames with STP, SNAP, the IP SAP and other SAPs, LLDP, and headers cut at
    every length): `xdpcap -r F` prints tcpdump -n -r's lines exactly,
    timestamps included, plain and with -S, -q, -e, the -t formats, the
    dumps, -c 5 and a filter; from standard input (-r -) too.
  * Every frame of every corpus here and in test_read_verbose.py cut at
    every byte (a snapshot length at each header boundary and inside every
    field), plain and with -v, -vv, -e, -q and -S: tcpdump's lines exactly,
    less the frames the man page names as printed differently (SCTP quoted
    in ICMP, LLDP-MED with -v).
  * xdpcap's own pcapng from a live capture with --drops and --print: -r
    prints exactly the lines --print printed live (the CPU interface, the
    direction, "Drop REASON"), and with a filter the lines it keeps.
  * -r IN -w OUT FILTER: a pcapng that tshark and tcpdump read, holding the
    packets tcpdump -r IN FILTER holds, each with its interface, direction
    and comment as in IN.
  * Records whose lengths cannot be (caplen 0, len below caplen, beyond
    262144): tcpdump's "[Invalid header: ...]" lines, numbered, untimed.
  * Bad input: one line and exit status 1.
  * -w OUT: a read that fails leaves an existing OUT as it was (the line
    says so); -r X -w X (also through a hard link) and a symbolic link at
    OUT are refused in one line; no temporary is left; a new OUT keeps the
    packets before the break.
  * A small pcap cut at every record boundary and inside every record's
    header and data: the lines tcpdump -n -r prints for the same cut file,
    then one line naming the file, "truncated" and the record's offset, exit
    1. An xdpcap pcapng (SHB, IDBs, EPBs with comments, ISBs, a second
    section) cut at every block boundary and inside every block, and with a
    bad block length: the lines of the packets before the break, one line,
    exit 1; the same blocks from another program: tcpdump's lines.
  * Escapes, BEL, CR, DEL, C1 controls and invalid UTF-8 in every string a
    pcapng holds, read with each verbosity: no control byte and no byte
    above 0x7e reaches standard output or standard error.
"""

import os
import pwd
import re
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402
import test_drops as D  # noqa: E402
import test_text_malformed as M  # noqa: E402
import test_text_tcp as T  # noqa: E402


def lines_of(cp):
    return [l for l in cp.stdout.splitlines() if l]


def ours(binary, args, stdin=None):
    cp = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        stdin=stdin, timeout=N.scaled(30))
    N.check(cp.returncode == 0, f"xdpcap {' '.join(args)} exits 0", (cp.returncode, cp.stderr[-300:]))
    return lines_of(cp), cp.stderr


def tcpdumps(args):
    return [l for l in N.run(["tcpdump", "-n"] + args).stdout.splitlines() if l]


def compare(label, got, want):
    diff = [(i, o, t) for i, (o, t) in enumerate(zip(got, want)) if o != t]
    N.expect(len(got) == len(want) and not diff, f"{label}: {len(want)} lines, each tcpdump's",
             f"{len(got)} ours, {len(want)} tcpdump's\n" +
             "\n".join(f"#{i}\n ours: {o}\n tcpd: {t}" for i, o, t in diff[:8]))


# HTTP's first line and SSH's banner, as tcpdump prints them by port: whole,
# without a line end, with a CR alone, in lower case, not text at all, and
# cut by the snapshot length (in the method, in the line, in the banner).
APPLICATION = [
    (41000, 80, b"GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n", None),
    (80, 41000, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", None),
    (41000, 80, b"get / HTTP/1.0\n", None),
    (41000, 80, b"\x16\x03\x01\x02\x00 binary", None),
    (41000, 80, b"POST /x HTTP/1.1\rX", None),
    (41000, 80, b"GET /no-line-end", None),
    (41000, 80, b"HTTP/1.1 20x Odd\r\n", None),
    (41000, 8080, b"OPTIONS * HTTP/1.1\r\n", None),
    (22, 80, b"GET / HTTP/1.1\r\n", None),
    (41000, 22, b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", None),
    (22, 41000, b"SSH-2.0-x\n", None),
    (41000, 22, b"SSH-2.0-no-line-end", None),
    (41000, 22, b"\x00\x00\x01\x0c\x0a\x14", None),
    (41000, 80, b"GET /index.html HTTP/1.1\r\n", 54 + 2),
    (41000, 80, b"GET /index.html HTTP/1.1\r\n", 54 + 10),
    (41000, 22, b"SSH-2.0-OpenSSH_9.2p1\r\n", 54 + 12),
    (41000, 22, b"SSH-2.0-OpenSSH_9.2p1\r\n", 54 + 2),
]


def icmp_frames():
    """(frame, cut) pairs: every destination-unreachable code quoting UDP, TCP,
    SCTP and GRE, cuts inside the quote and the echo header, redirects,
    router advertisements, time exceeded, parameter problem, timestamps,
    masks and unknown types."""
    a, b, c = bytes([198, 18, 72, 1]), bytes([198, 18, 72, 2]), bytes([198, 18, 72, 3])

    def ip4(src, dst, proto, payload):
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0x4242, 0, 64, proto, 0, src, dst)
        return h[:10] + struct.pack("!H", T.checksum(h)) + h[12:] + payload

    def icmp(kind, code, rest, body):
        m = struct.pack("!BBH", kind, code, 0) + rest + body
        return T.MAC_B + T.MAC_A + b"\x08\x00" + ip4(a, b, 1, m[:2] + struct.pack("!H", T.checksum(m)) + m[4:])

    udp_in = ip4(b, c, 17, struct.pack("!HHHH", 41000, 53, 16, 0) + b"abcdefgh")
    frames = [(icmp(3, code, b"\0\0\x05\xdc", udp_in), None) for code in range(17)]
    for inner in (ip4(b, c, 6, struct.pack("!HHIIBBHHH", 41000, 443, 1, 0, 0x50, 2, 1000, 0, 0)),
                  ip4(b, c, 132, struct.pack("!HHII", 41000, 9899, 0, 0)), ip4(b, c, 47, bytes(8))):
        frames.append((icmp(3, 3, bytes(4), inner), None))
    frames += [(icmp(3, 3, bytes(4), udp_in), cut) for cut in (42, 50, 54, 62, 64, 66, 70)]
    for kind, code in ((11, 0), (11, 1), (11, 7), (5, 0), (5, 1), (5, 2), (5, 9), (12, 0), (12, 2), (4, 0), (13, 0),
                       (14, 0), (9, 0), (10, 0), (15, 0), (16, 0), (17, 0), (18, 0), (40, 0)):
        frames.append((icmp(kind, code, c if kind == 5 else bytes(4), udp_in), None))
    frames += [(icmp(8, 0, b"\x12\x34\x00\x01", b"payload!"), cut) for cut in (35, 36, 38, 40, 41, 42)]
    frames.append((icmp(9, 0, struct.pack("!BBH", 2, 2, 3725), a + struct.pack("!I", 7) + b + struct.pack("!i", -1)),
                   None))
    frames.append((icmp(9, 0, struct.pack("!BBH", 2, 2, 75), a + struct.pack("!I", 7)), None))
    frames.append((icmp(14, 0, b"\0\x01\0\x02", struct.pack("!III", 1, 86399999, 999999999)), None))
    return frames


def icmp6_frames():
    """(frame, cut) pairs: ICMPv6 errors of every code quoting UDP, TCP, SCTP
    and a chain of extension headers, cut at every field; echo, MLD v1 and
    v2, neighbour discovery, redirects, home-agent messages, an unknown type
    (dumped in hex), IPv4-compatible and IPv4-mapped addresses."""
    a, b, c = (bytes.fromhex("20010db80072000000000000000000" + x) for x in ("01", "02", "03"))
    compat, mapped = bytes(12) + bytes([198, 18, 0, 1]), bytes(10) + b"\xff\xff" + bytes([198, 18, 0, 1])

    def ip6(src, dst, nh, payload):
        return struct.pack("!IHBB16s16s", 0x60000000, len(payload), nh, 64, src, dst) + payload

    def icmp6(kind, code, rest, body, src=a, dst=b):
        return T.MAC_B + T.MAC_A + b"\x86\xdd" + ip6(src, dst, 58, struct.pack("!BBH", kind, code, 0) + rest + body)

    udp_in = ip6(b, c, 17, struct.pack("!HHHH", 41000, 53, 16, 0) + b"abcdefgh")
    chain = bytes([60, 0]) + bytes(6) + bytes([43, 0]) + bytes(6) + bytes([44, 0, 0, 0]) + bytes(4) + \
        bytes([17, 0]) + bytes(6) + struct.pack("!HHHH", 41000, 9, 16, 0)
    frames = [(icmp6(1, code, bytes(4), udp_in), None) for code in range(8)]
    for inner in (ip6(b, c, 6, struct.pack("!HHIIBBHHH", 41000, 443, 1, 0, 0x50, 2, 1000, 0, 0)), ip6(b, c, 0, chain),
                  ip6(b, c, 132, struct.pack("!HHII", 41000, 9899, 0, 0))):
        frames.append((icmp6(1, 4, bytes(4), inner), None))
    frames += [(icmp6(1, 4, bytes(4), udp_in), cut) for cut in (54, 55, 58, 62, 70, 90, 100, 102, 104, 110)]
    frames.append((icmp6(2, 0, struct.pack("!I", 1280), udp_in), None))
    frames += [(icmp6(3, code, bytes(4), udp_in), None) for code in (0, 1, 5)]
    frames += [(icmp6(4, code, struct.pack("!I", 40), udp_in), None) for code in (0, 1, 2, 3, 9)]
    group = bytes.fromhex("ff0200000000000000000000000000fb")
    for kind, rest, body in ((128, struct.pack("!HH", 7, 9), b"ping"), (129, struct.pack("!HH", 7, 9), b"ping"),
                             (130, struct.pack("!HH", 1000, 0), bytes(16)),
                             (130, struct.pack("!HH", 1000, 0), bytes(16) + struct.pack("!BBH", 2, 125, 0)),
                             (130, struct.pack("!HH", 1000, 0), c + struct.pack("!BBH", 2, 125, 2) + a + b),
                             (130, struct.pack("!HH", 1000, 0), c + struct.pack("!BBH", 2, 125, 5) + a),
                             (130, struct.pack("!HH", 1000, 0), c[:10]), (131, bytes(4), group),
                             (132, bytes(4), group), (143, struct.pack("!HH", 0, 2), bytes(40)),
                             (133, bytes(4), b""), (134, bytes(12), b""), (135, bytes(4), c),
                             (136, bytes([0x60, 0, 0, 0]), compat), (137, bytes(4), c + mapped),
                             (144, struct.pack("!HH", 0x1234, 0), b""), (145, struct.pack("!HH", 0x1234, 0), b""),
                             (146, struct.pack("!HH", 0x1234, 0), b""), (141, bytes(4), b""),
                             (250, bytes(4), b"0123456789abcdefghij")):
        frames.append((icmp6(kind, 0, rest, body), None))
    frames.append((icmp6(135, 0, bytes(4), c), 70))
    frames.append((icmp6(128, 0, struct.pack("!HH", 7, 9), b"ping", src=compat, dst=mapped), None))
    frames += [(icmp6(128, 0, struct.pack("!HH", 7, 9), b"ping"), cut) for cut in (55, 57)]
    bad_version = bytearray(icmp6(128, 0, struct.pack("!HH", 7, 9), b"ping"))
    bad_version[14] = 0x40
    frames.append((bytes(bad_version), None))
    return frames


def arp_frames():
    """(frame, cut) pairs: ARP and RARP (ethertype 0x8035) of every operation
    tcpdump names and an unknown one (dumped), cut in the header, with a
    protocol other than IPv4 and with another hardware type."""
    m1, m2 = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")
    i1, i2 = bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])

    def arp(ethertype, op, proto=0x0800, htype=1):
        return b"\xff" * 6 + m1 + struct.pack("!HHHBBH", ethertype, htype, proto, 6, 4, op) + m1 + i1 + m2 + i2

    frames = []
    for ethertype in (0x0806, 0x8035):
        frames += [(arp(ethertype, op), None) for op in (1, 2, 3, 4, 8, 9, 10, 7)]
        frames += [(arp(ethertype, 3), 30), (arp(ethertype, 1, proto=0x86dd), None), (arp(ethertype, 1, htype=6), None)]
    return frames


def llc_frames():
    """(frame, cut) pairs: 802.3 frames with spanning-tree BPDUs (config, TCN,
    RSTP, cut, invalid, unknown versions and types), and IPv4 in SNAP and in
    the IP SAP."""
    stp_dst, src = bytes.fromhex("0180c2000000"), bytes.fromhex("020000000001")

    def dot3(dst, payload, pad=0):
        return dst + src + struct.pack("!H", len(payload)) + payload + bytes(pad)

    def bpdu(version, kind, flags, extra=b""):
        return struct.pack("!HBBB", 0, version, kind, flags) + bytes.fromhex("8000020000000001") + \
            struct.pack("!I", 4) + bytes.fromhex("8000020000000002") + struct.pack("!HHHHH", 0x8001, 256, 5120, 512,
                                                                                  3840) + extra

    ip = bytes.fromhex("450000240001000040110000c6120001c6120002")
    udp = struct.pack("!HHHH", 41000, 5555, 16, 0) + b"abcdefgh"
    stp = b"\x42\x42\x03"
    frames = [(dot3(stp_dst, stp + b), None) for b in (bpdu(0, 0, 0), bpdu(0, 0, 0x81), bpdu(2, 2, 0x3c, b"\0"),
                                                     bpdu(2, 2, 0x7e, b"\0"), struct.pack("!HBB", 0, 0, 0x80),
                                                     bpdu(0, 0, 0)[:20], bpdu(7, 0, 0), bpdu(0, 9, 0),
                                                     b"\x00\x01" + bpdu(0, 0, 0)[2:])]
    frames += [(dot3(stp_dst, stp + bpdu(0, 0, 0)), cut) for cut in (20, 22, 30)]
    # MSTP with two MSTIs, and SPB after it; malformed version lengths; cuts.
    msti = lambda n, flags: bytes([flags]) + struct.pack("!H", 0x8000 | n) + bytes.fromhex("020000000003") + \
        struct.pack("!IBBB", 20000, 0x80, 0x90, 19)  # noqa: E731
    mcid = b"\x00" + b"region-1".ljust(32, b"\x00") + struct.pack("!H", 7) + bytes(range(16))
    cist = struct.pack("!I", 200) + bytes.fromhex("8000020000000004") + b"\x14"
    mstis = msti(10, 0x7c) + msti(20, 0x3c)
    mstp = bpdu(3, 2, 0x7c, b"\x00" + struct.pack("!H", 64 + len(mstis)) + mcid + cist + mstis)
    spb = bpdu(4, 2, 0x3c, b"\x00" + struct.pack("!H", 64) + mcid + cist) + struct.pack("!H", 85) + \
        b"\x00" + b"aux".ljust(32, b"\x00") + struct.pack("!H", 3) + bytes(range(16, 32)) + \
        bytes([0xd4, 0, 0x21, 0x43]) + struct.pack("!H", 2) + bytes(8) + bytes(range(32, 52))
    frames += [(dot3(stp_dst, stp + b), None) for b in (mstp, spb)]
    bad_v1 = bytearray(mstp)
    bad_v1[35] = 1
    bad_v3 = bytearray(mstp)
    bad_v3[36:38] = struct.pack("!H", 400)
    frames += [(dot3(stp_dst, stp + bytes(b)), None) for b in (bad_v1, bad_v3, bpdu(0, 2, 0x3c, b"\x00"))]
    frames += [(dot3(stp_dst, stp + mstp), cut) for cut in (50, 52, 60, 120, 140)]
    frames += [(dot3(stp_dst, stp + spb), cut) for cut in (160, 200)]
    frames.append((dot3(stp_dst, stp + struct.pack("!HBB", 0, 0, 0x80), pad=20), None))
    frames += [(dot3(src, b"\xaa\xaa\x03\x00\x00\x00\x08\x00" + ip + udp), cut) for cut in (None, 24)]
    frames.append((dot3(src, b"\x06\x06\x03" + ip + udp), None))
    # Other SAPs and control fields: unnumbered commands (XID with and
    # without its format byte, TEST, SABME with poll), supervisory and
    # information frames, responses, unknown SAPs, cuts in the header.
    other = bytes.fromhex("0c0000007402")
    for llc in (b"\xf0\xf0\x03" + b"netbios!", b"\x44\x10\x34\x12payload", b"\x04\x05\xaf\x81\x01\x00",
                b"\x04\x04\xbf", b"\x04\x04\xaf\x82\x00", b"\x42\x43\xe3test", b"\x12\x12\x7f",
                b"\x04\x05\x01\x03", b"\x04\x04\x09\x10", b"\x05\x04\x05\x00", b"\x04\x04\x0e\x21data",
                b"\xaa\xab\x03\x00\x00\x00\x08\x00" + ip + udp, b"\x42\x42\x13" + bytes(20), b"\x04\x04\xaf\x81\x01"):
        frames.append((dot3(other, llc, pad=max(0, 46 - len(llc))), None))
    frames += [(dot3(other, b"\x44\x10\x34\x12payload"), cut) for cut in (14, 15, 16, 17, 18)]
    frames.append((dot3(other, b"\x44\x10"), None))
    return frames


def encapsulation_frames():
    """(frame, cut) pairs: what XDP load balancers and overlays carry. GRE
    (key, sequence, checksum, source routes, IPv4, IPv6, MPLS, Ethernet
    inside, unknown payload, version 1, a bad version), IPv4 and IPv6 in
    IPv4 and IPv6, VXLAN on both its ports, Geneve (options, flags,
    Ethernet and IPv4 inside, bad versions and lengths), MPLS over Ethernet,
    GRE and UDP (null labels, a stack, a guess by the first byte, an unknown
    payload dumped), an unknown ethertype and IP protocol, later fragments,
    and the nesting cut at every length."""
    m1, m2 = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")
    o1, o2 = bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])
    i1, i2 = bytes([198, 19, 0, 1]), bytes([198, 19, 0, 2])
    a6, b6 = bytes.fromhex("20010db8000000000000000000000001"), bytes.fromhex("20010db8000000000000000000000002")

    def ip4(src, dst, proto, payload, frag=0x4000, ident=1):
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, frag, 64, proto, 0, src, dst)
        return h[:10] + struct.pack("!H", T.checksum(h)) + h[12:] + payload

    def ip6(src, dst, nh, payload):
        return struct.pack("!IHBB16s16s", 0x60000000, len(payload), nh, 64, src, dst) + payload

    def eth(ethertype, payload, dst=m2, src=m1):
        return dst + src + struct.pack("!H", ethertype) + payload

    def udp(sport, dport, payload, length=None):
        return struct.pack("!HHHH", sport, dport, 8 + len(payload) if length is None else length, 0) + payload

    echo = ip4(i1, i2, 1, bytes.fromhex("0800f7fe00010001") + b"ping")
    echo6 = ip6(a6, b6, 58, bytes.fromhex("8000000000010001") + b"ping")
    syn = ip4(i1, i2, 6, T.tcp(41000, 80, 0x02, 1000, opts=T.SYN_OPTS))
    inner_frame = eth(0x0800, echo, dst=bytes.fromhex("020000000004"), src=bytes.fromhex("020000000003"))
    inner_arp = eth(0x0806, struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + m1 + i1 + bytes(6) + i2, dst=b"\xff" * 6)

    def gre(flags, proto, payload, fields=b""):
        return struct.pack("!HH", flags, proto) + fields + payload

    def outer4(proto, payload):
        return eth(0x0800, ip4(o1, o2, proto, payload))

    frames = [
        outer4(47, gre(0, 0x0800, echo)),
        outer4(47, gre(0x2000, 0x0800, syn, struct.pack("!I", 0x1234abcd))),
        outer4(47, gre(0x3000, 0x86dd, echo6, struct.pack("!II", 7, 42))),
        outer4(47, gre(0x8000, 0x0800, echo, struct.pack("!HH", 0xbeef, 0))),
        outer4(47, gre(0x4000, 0x0800, echo, struct.pack("!HH", 0, 4) + struct.pack("!HBB", 0x0800, 4, 8) + o1 + o2
                       + struct.pack("!HBB", 0xfffe, 2, 4) + b"\x00\x01\xfd\xe8" + struct.pack("!HBB", 0x0800, 3, 4)
                       + o1 + struct.pack("!HBB", 0x1234, 0, 0) + struct.pack("!HBB", 0, 0, 0))),
        outer4(47, gre(0, 0x6558, inner_frame)),
        outer4(47, gre(0, 0x6558, inner_arp)),
        outer4(47, gre(0, 0x8847, struct.pack("!I", (300 << 12) | 0x100 | 63) + echo)),
        outer4(47, gre(0, 0x88b5, b"data")),
        outer4(47, gre(0x3081, 0x880b, b"\xff\x03\x00\x21" + echo, struct.pack("!HHII", 20, 5, 9, 8))),
        outer4(47, gre(0x2001, 0x880b, b"", struct.pack("!HH", 0, 7))),
        outer4(47, gre(0x0005, 0x0800, echo)),
        outer4(47, b"\x00"),
        outer4(4, echo),
        outer4(41, echo6),
        eth(0x86dd, ip6(a6, b6, 4, echo)),
        eth(0x86dd, ip6(a6, b6, 41, echo6)),
        eth(0x86dd, ip6(a6, b6, 47, gre(0, 0x0800, echo))),
        outer4(17, udp(45149, 4789, bytes.fromhex("0800000000006400") + inner_frame)),
        outer4(17, udp(4789, 45150, bytes.fromhex("0800000000006400") + inner_arp)),
        outer4(17, udp(45151, 8472, bytes.fromhex("00000000000001ff") + inner_frame)),
        outer4(17, udp(45152, 4789, bytes.fromhex("08000000"))),
        outer4(17, udp(45153, 4789, bytes.fromhex("0800000000006400") + inner_frame, length=30)),
        outer4(17, udp(50525, 6081, struct.pack("!BBHI", 0, 0, 0x0800, 0x0b << 8) + echo)),
        outer4(17, udp(50526, 6081, struct.pack("!BBHI", 2, 0xc0, 0x6558, (0x123456 << 8) | 7) + bytes(8) + inner_frame)),
        outer4(17, udp(50527, 6081, struct.pack("!BBHI", 0, 0, 0x86dd, 5 << 8) + echo6)),
        outer4(17, udp(50528, 6081, struct.pack("!BBHI", 0, 0x20, 0x9999, 5 << 8) + b"xyz")),
        outer4(17, udp(50529, 6081, struct.pack("!BBHI", 0x40, 0, 0x0800, 5 << 8) + echo)),
        outer4(17, udp(50530, 6081, struct.pack("!BBHI", 4, 0, 0x0800, 5 << 8) + b"abcd")),
        outer4(17, udp(50531, 6081, b"\x00\x00\x08")),
        outer4(17, udp(6081, 50532, struct.pack("!BBHI", 0, 0, 0x0800, 5 << 8) + echo)),
        outer4(17, udp(58699, 6635, struct.pack("!I", (21 << 12) | 0x100 | 63) + echo)),
        outer4(17, udp(6635, 58700, struct.pack("!I", (22 << 12) | 0x100 | 63) + echo6)),
        eth(0x8847, struct.pack("!I", (100704 << 12) | 0x100 | 1) + echo),
        eth(0x8847, struct.pack("!II", (16 << 12) | (5 << 9) | 64, (0 << 12) | 0x100 | 64) + echo),
        eth(0x8847, struct.pack("!I", (2 << 12) | 0x100 | 64) + echo6),
        eth(0x8848, struct.pack("!I", (3 << 12) | 0x100 | 9) + echo),
        eth(0x8847, struct.pack("!I", (21 << 12) | 0x100 | 64) + b"\x99" * 20),
        eth(0x8847, struct.pack("!I", (21 << 12) | 64) + b"\x00\x01"),
        eth(0x8847, struct.pack("!I", (21 << 12) | 0x100 | 64)),
        eth(0x88b5, b"hello world, some payload!!"),
        eth(0x88cc, bytes(30)),
        outer4(253, b"x" * 20),
        eth(0x86dd, ip6(a6, b6, 253, b"x" * 20)),
        eth(0x86dd, ip6(a6, b6, 1, bytes.fromhex("0800f7fe00010001"))),
        outer4(58, bytes.fromhex("8000000000010001")),
        eth(0x0800, ip4(o1, o2, 17, b"x" * 24, frag=0x0010, ident=0x1234)),
        eth(0x0800, ip4(o1, o2, 47, b"x" * 24, frag=0x2010, ident=0x1234)),
        eth(0x0800, ip4(o1, o2, 17, udp(1000, 2000, b"x" * 16), frag=0x2000, ident=0x1234)),
    ]
    cases = [(f, None) for f in frames]
    nested = outer4(17, udp(45149, 4789, bytes.fromhex("0800000000006400") + eth(0x0800, ip4(i1, i2, 47, gre(
        0x2000, 0x8847, struct.pack("!II", 16 << 12, (17 << 12) | 0x100 | 9) + echo, struct.pack("!I", 5))))))
    cases += [(nested, cut) for cut in range(10, len(nested))]
    geneve = outer4(17, udp(50526, 6081, struct.pack("!BBHI", 1, 0, 0x6558, 7 << 8) + bytes(4) + inner_frame))
    cases += [(geneve, cut) for cut in range(40, 60)]
    return cases


def mptcp_frames():
    """(frame, cut) pairs: TCP segments with MPTCP options of every subtype
    (RFC 8684 and its version 0), right and malformed, on SYN, SYN-ACK and
    ACK, as tcpdump decodes them."""
    key, key2 = bytes.fromhex("9c9eabd1e46a33b2"), bytes.fromhex("0123456789abcdef")
    a6, b6 = bytes.fromhex("20010db8007400000000000000000001"), bytes.fromhex("20010db8007400000000000000000002")

    def mp(sub_etc, body):
        return T.opt(30, bytes([sub_etc]) + body)

    def seg(flags, option, ack=0):
        opts = option + bytes(-len(option) % 4)
        return (T.ipv4(T.A4, T.B4, T.tcp(41000, 443, flags, 7000, ack, opts=opts)), None)

    S, SA, A = T.SYN, T.SYN | T.ACK, T.ACK
    cases = [
        (S, mp(0x00, b"\x81" + key)), (S, mp(0x01, b"\x00")), (A, mp(0x01, b"\x01" + key + key2)),
        (A, mp(0x01, b"\x00" + key + key2 + b"\x00\x10")), (S, mp(0x05, b"\x00")), (A, mp(0x00, b"\x81" + key)),
        (S, mp(0x11, b"\x07" + bytes.fromhex("deadbeef0badcafe"))), (SA, mp(0x10, b"\x03" + key + b"\x00\x00\x00\x09")),
        (A, mp(0x10, b"\x00" + bytes(range(20)))), (A, mp(0x10, b"\x00" + key)),
        (A, mp(0x20, b"\x01" + struct.pack("!I", 77))), (A, mp(0x20, b"\x03" + key)),
        (A, mp(0x20, b"\x05" + struct.pack("!IIIH", 1, 2, 3, 100))),
        (A, mp(0x20, b"\x1d" + key + key2 + struct.pack("!IHH", 9, 1400, 0xbeef))),
        (A, mp(0x20, b"\x05" + struct.pack("!I", 1))), (S, mp(0x20, b"\x01" + struct.pack("!I", 1))),
        (A, mp(0x31, b"\x05" + bytes([198, 18, 0, 9]))), (A, mp(0x30, b"\x05" + bytes([198, 18, 0, 9]) + b"\x01\xbb")),
        (A, mp(0x30, b"\x05" + bytes([198, 18, 0, 9]) + key)),
        (A, mp(0x30, b"\x05" + bytes([198, 18, 0, 9]) + b"\x01\xbb" + key)), (A, mp(0x36, b"\x02" + a6)),
        (A, mp(0x30, b"\x02" + b6 + b"\x01\xbb" + key)), (A, mp(0x3f, b"\x02" + a6 + key)),
        (A, mp(0x30, b"\x05\x00")), (A, mp(0x40, b"\x01\x02\x03")), (A, mp(0x40, b"")), (A, mp(0x51, b"")),
        (A, mp(0x50, b"\x04")), (A, mp(0x50, b"\x04\x05")), (A, mp(0x60, b"\x00" + key)), (A, mp(0x60, b"\x00")),
        (A, mp(0x70, b"\x00" + key2)), (A, mp(0x80, b"\x00\x01")), (A, mp(0xf0, b"")), (A, T.opt(30, b"", 2)),
    ]
    frames = [seg(flags, option) for flags, option in cases]
    # Cut inside the option.
    syn = T.ipv4(T.A4, T.B4, T.tcp(41000, 443, S, 7000, opts=mp(0x00, b"\x81" + key)))
    frames += [(syn, cut) for cut in (55, 58, 60)]
    return frames


def lldp_frames():
    """(frame, cut) pairs: LLDP as switches send it (chassis and port IDs of
    each kind, TTL, descriptions, system name and capabilities, management
    addresses, IEEE 802.1 and 802.3 and IANA TLVs, LLDP-MED), malformed
    TLVs, cuts."""
    dst, src = bytes.fromhex("0180c200000e"), bytes.fromhex("020000007401")

    def tlv(kind, value):
        return struct.pack("!H", kind << 9 | len(value)) + value

    def org(oui, subtype, value):
        return tlv(127, oui + bytes([subtype]) + value)

    ieee1, ieee3, iana, tia = bytes.fromhex("0080c2"), bytes.fromhex("00120f"), bytes.fromhex("00005e"), \
        bytes.fromhex("0012bb")
    full = (tlv(1, b"\x04" + src) + tlv(2, b"\x05eth0") + tlv(3, struct.pack("!H", 120)) +
            tlv(4, b"uplink to core") + tlv(5, b"leaf-07.example") + tlv(6, b"Debian GNU/Linux 12\x00pad") +
            tlv(7, struct.pack("!HH", 0x14, 0x04)) +
            tlv(8, bytes([5, 1, 198, 18, 0, 7, 2]) + struct.pack("!I", 3) + b"\x00") +
            tlv(8, bytes([17, 2]) + bytes.fromhex("20010db8007400000000000000000007") + b"\x03" + struct.pack("!I", 9) +
                b"\x04\x2b\x06\x01\x02") +
            org(ieee1, 1, struct.pack("!H", 100)) + org(ieee1, 2, b"\x06" + struct.pack("!H", 200)) +
            org(ieee1, 3, struct.pack("!H", 100) + b"\x07servers") + org(ieee1, 4, b"\x04\x88\x8e\x01\x00") +
            org(ieee1, 7, b"\x03" + struct.pack("!I", 42)) +
            org(ieee3, 1, b"\x03" + struct.pack("!HH", 0x6c01, 30)) + org(ieee3, 2, b"\x0f\x01\x01") +
            org(ieee3, 3, b"\x01" + struct.pack("!I", 0)) + org(ieee3, 4, struct.pack("!H", 9216)) +
            org(iana, 1, b"https://example.com/mud") + org(bytes.fromhex("aabbcc"), 1, b"xyz") +
            tlv(9, b"reserved") + tlv(0, b""))
    # LLDP-MED and data centre bridging, which -v decodes in tcpdump only.
    med = tlv(1, b"\x04" + src) + org(tia, 1, b"\x00\x33\x03") + org(ieee1, 11, b"\x08\x00") + tlv(0, b"")
    frames = [(dst + src + b"\x88\xcc" + full, None), (dst + src + b"\x88\xcc" + med, None)]
    # Chassis and port IDs of each subtype, a network address chassis ID,
    # an unknown subtype, and the lengths tcpdump calls cut.
    for chassis in (b"\x01chassis", b"\x05\x01" + bytes([198, 18, 0, 7]), b"\x05\x02" + bytes(16),
                    b"\x05\x06" + src, b"\x05\x03abc", b"\x07local", b"\x09?", b"\x04" + src[:3], b"\x05\x01\x01",
                    b"\x01"):
        frames.append((dst + src + b"\x88\xcc" + tlv(1, chassis) + tlv(2, b"\x03" + src) + tlv(3, b"\x00") +
                       tlv(0, b""), None))
    frames.append((dst + src + b"\x88\xcc" + tlv(5, b"short") + tlv(7, b"\x00\x04") + tlv(0, b""), None))
    frames.append((dst + src + b"\x88\xcc" + tlv(8, b"\x09\x01\x01"), None))
    frames += [(dst + src + b"\x88\xcc" + full, cut) for cut in (15, 17, 20, 30, 60, 100)]
    return frames


def dns_frames():
    """(frame, cut) pairs: DNS over UDP (port 53 either way, mDNS on 5353) and
    TCP: queries with flags, opcodes and odd counts; responses with every
    record type tcpdump prints data for (A, AAAA, CNAME, NS, PTR, DNAME, MX,
    TXT, SRV, A6, URI, UNSPECA, OPT with each EDNS option), compression,
    rcodes (extended by OPT), EDNS bit labels, bad pointers and label types,
    names over 255 characters, a TCP length prefix that lies, messages too
    short, and one response cut at every length."""
    c, s = bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])

    def name(*labels):
        return b"".join(bytes([len(l)]) + l for l in labels) + b"\0"

    def header(ident, flags, qd=1, an=0, ns=0, ar=0):
        return struct.pack("!HHHHHH", ident, flags, qd, an, ns, ar)

    def question(qname, qtype=1, qclass=1):
        return qname + struct.pack("!HH", qtype, qclass)

    def rr(owner, rtype, data, rclass=1, ttl=300):
        return owner + struct.pack("!HHIH", rtype, rclass, ttl, len(data)) + data

    def udp_frame(payload, sport=41053, dport=53, src=c, dst=s):
        u = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(u), 1, 0x4000, 64, 17, 0, src, dst)
        return T.MAC_B + T.MAC_A + b"\x08\x00" + h[:10] + struct.pack("!H", T.checksum(h)) + h[12:] + u

    example = name(b"www", b"example", b"com")
    ptr = b"\xc0\x0c"
    opt = lambda options=b"", flags=0, ext=0, size=1232: b"\0" + struct.pack("!HHBBHH", 41, size, ext, 0, flags,
                                                                              len(options)) + options
    eopt = lambda code, data: struct.pack("!HH", code, len(data)) + data
    answer = header(0x1234, 0x8180, 1, 2) + question(example) + rr(ptr, 1, bytes([198, 51, 100, 7])) + \
        rr(ptr, 28, bytes.fromhex("20010db8000000000000000000000007"))
    messages = [
        header(0x1234, 0x0100) + question(example),
        header(0x1235, 0x0100, ar=1) + question(example, 28) + opt(),
        header(0x1236, 0x0110) + question(example, 255, 3),
        header(0x1237, 0x0000, 2) + question(example, 15) + question(name(b"example", b"org"), 16),
        header(0x1238, 0x0900, 1, 1, 1) + question(example),
        header(0x1239, 0x2100) + question(example, 6),
        header(0x123a, 0x0100, 0) ,
        header(0x123b, 0x0100) + question(example, 300),
        answer,
        header(0x1240, 0x8583, 1, 0, 1) + question(example) + rr(name(b"com"), 6, bytes(30)),
        header(0x1241, 0x8180, 1, 3) + question(example, 5) + rr(ptr, 5, name(b"web", b"example", b"net"))
        + rr(b"\xc0\x2d", 5, b"\x03cdn\xc0\x31") + rr(b"\xc0\x3f", 1, bytes([198, 51, 100, 9])),
        header(0x1242, 0x8180, 1, 4) + question(example, 15) + rr(ptr, 15, struct.pack("!H", 10) + name(b"mx", b"example", b"com"))
        + rr(ptr, 16, b"\x05hello\x00\x06wor\x01d\xff") + rr(ptr, 33, struct.pack("!HHH", 1, 2, 5060) + name(b"sip"))
        + rr(ptr, 2, ptr),
        header(0x1243, 0x8180, 1, 4) + question(example, 38) + rr(ptr, 38, b"\x40" + bytes(8) + name(b"a6"))
        + rr(ptr, 38, b"\x00" + bytes(16)) + rr(ptr, 38, b"\x81") + rr(ptr, 256, struct.pack("!HH", 1, 2) + b"http://x/"),
        header(0x1244, 0x8180, 1, 2) + question(example, 12) + rr(ptr, 12, ptr) + rr(ptr, 39, ptr),
        header(0x1245, 0x8180, 1, 1) + question(example, 104) + rr(ptr, 104, b"raw\x01text"),
        header(0x1246, 0x8180, 1, 1, 0, 1) + question(example) + rr(ptr, 1, bytes([198, 51, 100, 7]))
        + opt(eopt(8, b"\x00\x01\x18\x00\xc6\x33\x64") + eopt(10, bytes(range(8))) + eopt(11, b"\x00\x96")
              + eopt(9, b"\x00\x00\x0e\x10") + eopt(12, bytes(5)) + eopt(5, b"\x08\x0d\x63") + eopt(6, b"\x01\x09")
              + eopt(7, b"\x01") + eopt(3, b"ns1") + eopt(13, name(b"a")) + eopt(99, b"\xab"), flags=0x8000),
        header(0x1247, 0x8180, 1, 0, 0, 1) + question(example) + opt(eopt(8, b"\x00\x03\x00\x00") + eopt(10, bytes(9))
                                                                    + eopt(11, b"\x01")),
        header(0x1248, 0x8181, 1, 0, 0, 1) + question(example) + opt(ext=1),
        header(0x1249, 0x8187, 1, 0, 0, 1) + question(example) + opt(ext=0x10),
        header(0x124a, 0xfdbf, 1, 0),
        header(0x124b, 0x8180, 1, 1) + question(name(b"\x01\x7f\xe9ok", b"a b")) + rr(ptr, 1, bytes(4)),
        header(0x124c, 0x8180, 1, 1) + question(b"\x41\x08\xab\x00") + rr(ptr, 1, bytes(4)),
        header(0x124d, 0x0100) + question(b"\x42\x08\x00"),
        header(0x124e, 0x0100) + question(b"\x03abc\x80"),
        header(0x124f, 0x0100) + question(b"\x03abc\xc0\x20"),
        header(0x1250, 0x0100) + question(name(*[b"x" * 63] * 5)),
        header(0x1251, 0x8180, 1, 2) + question(example) + rr(ptr, 1, bytes([1, 2])) + rr(ptr, 1, bytes(4)),
        header(0x1252, 0x8180, 1, 1) + question(example) + rr(ptr, 1, bytes(4))[:-2],
        b"\x12\x53\x01",
        # OPT records in the answer section: tcpdump prints their options there.
        header(0x1254, 0x8180, 1, 3) + question(example)
        + opt(eopt(8, b"\x00\x01\x18\x00\xc6\x33\x64") + eopt(10, bytes(range(8))) + eopt(11, b"\x00\x96")
              + eopt(9, b"\x00\x00\x0e\x10") + eopt(12, bytes(5)) + eopt(5, b"\x08\x0d\x63\x00") + eopt(6, b"\x01\x09")
              + eopt(7, b"\x01\x02") + eopt(3, b"ns1") + eopt(13, name(b"a")) + eopt(99, b"\xab") + eopt(4, b""),
              flags=0x8000)
        + opt(eopt(8, b"\x00\x03\x00\x00") + eopt(8, b"\x00\x02\x40\x00" + bytes(8)) + eopt(10, bytes(9))
              + eopt(10, bytes(24)) + eopt(11, b"\x01") + eopt(9, b"\x01"))
        + opt(eopt(8, b"\x00\x02\x40\x00\x20\x01\x0d\xb8\x00\x00\x00\x00")),
        header(0x1255, 0x8180, 1, 1) + question(example) + opt(eopt(3, b"abcdef")[:-2]),
    ]
    frames = [(udp_frame(m), None) for m in messages]
    frames.append((udp_frame(answer, 53, 41053, s, c), None))
    frames.append((udp_frame(header(0, 0x0000, 1) + question(name(b"host", b"local"), 1, 0x8001), 5353, 5353), None))
    frames.append((udp_frame(header(0, 0x8400, 0, 1) + rr(name(b"host", b"local"), 1, bytes([198, 18, 0, 1]), 0x8001),
                             5353, 5353), None))

    def tcp_frame(payload, prefix=None):
        seg = struct.pack("!H", len(payload) if prefix is None else prefix) + payload
        return T.ipv4(c, s, T.tcp(41054, 53, 0x18, 1000, 2000, payload=seg))

    frames += [(tcp_frame(messages[0]), None), (tcp_frame(answer), None), (tcp_frame(answer, 7), None),
               (T.ipv4(c, s, T.tcp(41054, 53, 0x18, 1000, 2000, payload=b"\x00")), None)]
    cut = udp_frame(messages[15])
    frames += [(cut, n) for n in range(40, len(cut))]
    return frames


def header_cuts():
    """A TCP SYN with options over IPv4 and IPv6, and a UDP datagram, cut at
    every length: every truncation mark and its spacing."""
    syn = T.ipv4(T.A4, T.B4, T.tcp(41000, 5001, 0x02, 1000, opts=T.SYN_OPTS))
    syn6 = T.ipv6(T.A6, T.B6, T.tcp(41000, 5001, 0x02, 1000, opts=T.SYN_OPTS))
    u = struct.pack("!HHHH", 41000, 5555, 12, 0) + b"abcd"
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(u), 1, 0, 64, 17, 0, T.A4, T.B4)
    udp4 = T.MAC_B + T.MAC_A + b"\x08\x00" + h[:10] + struct.pack("!H", T.checksum(h)) + h[12:] + u
    return [(f, cut) for f in (syn, syn6, udp4) for cut in range(10, len(f))]


def write_cut_frames(path, frames):
    """A classic pcap of (frame, bytes captured or None for all)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        for i, (fr, cut) in enumerate(frames):
            kept = fr[:cut] if cut else fr
            f.write(struct.pack("<IIII", 1795431326, i, len(kept), len(fr)) + kept)


def classic_file(binary, tmp):
    path = os.path.join(tmp, "frames.pcap")
    app = [(T.ipv4(T.A4, T.B4, T.tcp(s, d, 0x18, 1000 + i, 2000, payload=p)), cut)
           for i, (s, d, p, cut) in enumerate(APPLICATION)]
    write_cut_frames(path, [(f, None) for f in T.corpus() + M.frames()] + app + icmp_frames() + icmp6_frames() + arp_frames() + llc_frames() + encapsulation_frames() + lldp_frames() + mptcp_frames() + dns_frames() + header_cuts())
    for flags in ([], ["-S"], ["-q"], ["-tt"], ["-ttt"], ["-tttt"], ["-ttttt"], ["-c", "5"], ["-e"], ["-e", "-q"], ["-x"], ["-X"], ["-XX"], ["-A"]):
        got, err = ours(binary, ["-r", path] + flags)
        compare(f"-r {' '.join(flags) or '(plain)'}", got, tcpdumps(["-r", path] + flags))
    N.expect(err.startswith(f"reading from file {path}, link-type EN10MB (Ethernet), snapshot length 262144"),
             "tcpdump's 'reading from file' line on standard error", err)
    got, _ = ours(binary, ["-r", path, "tcp[tcpflags] & tcp-syn != 0 or udp"])
    compare("-r with a filter", got, tcpdumps(["-r", path, "tcp[tcpflags] & tcp-syn != 0 or udp"]))
    with open(path, "rb") as f:
        got, _ = ours(binary, ["-r", "-"], stdin=f)
    compare("-r - (standard input)", got, tcpdumps(["-r", path]))


def own_file(binary, tmp, lab):
    D.setup_lab(lab)
    frames, _ = D.corpus()
    path = os.path.join(tmp, "live.pcapng")
    x = lab.xdpcap(binary, ["--drops", "-Q", "in", "-w", path, "--print", "--print-cpu"])
    x.wait_listening()
    pcap = os.path.join(tmp, "drops.pcap")
    N.write_frames(pcap, [f for f, _ in frames])
    lab.send(pcap, 0, gap_us=2000)
    time.sleep(N.scaled(0.5))
    N.check(x.stop() == 0, "the live capture exits 0")
    live = [l for l in bytes(x.out).decode().splitlines() if l]
    N.check(any(" In Drop NO_SOCKET IP " in l for l in live), "the live lines hold drops", live[:4])
    got, _ = ours(binary, ["-r", path, "--print-cpu"])
    N.expect(got == live, "-r --print-cpu prints xdpcap's own file as --print printed it live, interfaces, "
             "directions and drop reasons included",
             "\n".join(f" live: {a}\n   -r: {b}" for a, b in zip(live, got) if a != b)[:2000])
    plain = [re.sub(r"^(\S+) \S+@cpu\d+(?::drop)? In ", r"\1 ", line) for line in live]
    got, _ = ours(binary, ["-r", path])
    N.expect(got == plain and plain != live, "-r alone: the same lines without the CPU interface and direction",
             "\n".join(f" want: {a}\n   -r: {b}" for a, b in zip(plain, got) if a != b)[:2000])
    got, _ = ours(binary, ["-r", path, "--print-cpu", "udp port 7777"])
    N.expect(got == [l for l in live if ".7777: " in l] and len(got) == 8,
             "-r with a filter keeps the lines of the packets it keeps (4 received, 4 dropped)", got)
    return path


def filtered_copy(binary, tmp, own):
    out = os.path.join(tmp, "copy.pcapng")
    expr = "udp port 9 or udp port 7777"
    _, _ = ours(binary, ["-r", own, "-w", out, expr])
    want = N.run(["tcpdump", "-r", own, expr]).stdout.count("\n")
    N.expect(N.capinfos_count(out) == want == 18, "the copy holds what tcpdump -r IN FILTER holds",
             (N.capinfos_count(out), want))
    fields = ["frame.interface_name", "frame.packet_flags_direction", "frame.comment", "frame.len", "data.data",
              "udp.payload"]

    def rows(path, where):
        argv = ["tshark", "-n", "-r", path, "-Y", where, "-T", "fields"]
        for f in fields:
            argv += ["-e", f]
        return N.run(argv).stdout.splitlines()

    kept = rows(own, "udp.port == 9 or udp.port == 7777")
    N.expect(rows(out, "frame") == kept, "each packet of the copy keeps its interface, direction and comment",
             (rows(out, "frame")[:3], kept[:3]))
    N.expect(all(re.search(r"@cpu\d+(:drop)?\t", r) for r in kept), "the interfaces are the CPU interfaces",
             kept[:3])


def bad_input(binary, tmp):
    notcap = os.path.join(tmp, "not-a-capture")
    with open(notcap, "w") as f:
        f.write("hello, world\n")
    for args, want in ((["-r", notcap], "is not a capture file xdpcap can read"),
                       (["-r", os.path.join(tmp, "missing")], "cannot read"),
                       (["-r", notcap, "-i", "lo"], "not both"),
                       (["-r", notcap, "--drops"], "--drops applies to a live capture")):
        cp = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=N.scaled(10))
        N.expect(cp.returncode == 1 and cp.stderr.count("\n") == 1 and want in cp.stderr,
                 f"xdpcap {' '.join(args[:1] + args[2:])}: one line, exit 1", (cp.returncode, cp.stderr))


def copy_failures(binary, tmp):
    """-w OUT when the reading fails, or cannot be: an existing OUT is left as
    it was and the line says so; -r X -w X, also through a hard link, and a
    symbolic link at OUT are refused; no temporary is left behind."""
    frame = T.ipv4(T.A4, T.B4, T.tcp(41000, 80, 0x10, 1, 1))
    whole = os.path.join(tmp, "whole.pcap")
    write_cut_frames(whole, [(frame, None)] * 3)
    with open(whole, "rb") as f:
        data = f.read()
    cut = os.path.join(tmp, "cut.pcap")
    with open(cut, "wb") as f:
        f.write(data[:-10])
    d = os.path.join(tmp, "copies")
    os.mkdir(d)
    existing = os.path.join(d, "existing.pcapng")
    victim = os.path.join(tmp, "victim")
    for path, text in ((existing, "an older copy\n"), (victim, "not to be written\n")):
        with open(path, "w") as f:
            f.write(text)
    # Planted by another user, in a directory of its own.
    nobody = pwd.getpwnam("nobody")
    planted = os.path.join(tmp, "planted")
    os.mkdir(planted)
    os.chown(planted, nobody.pw_uid, nobody.pw_gid)
    link = os.path.join(planted, "link.pcapng")
    os.symlink(victim, link)
    os.lchown(link, nobody.pw_uid, nobody.pw_gid)
    same = os.path.join(d, "same.pcap")
    os.link(whole, same)
    cases = ((["-r", cut, "-w", existing], f"; {existing} is left as it was"),
             (["-r", whole, "-w", whole], f"-w {whole} is the file -r reads ({whole})"),
             (["-r", whole, "-w", same], f"-w {same} is the file -r reads ({whole})"),
             (["-r", whole, "-w", link], f"cannot write {link}: it is a symbolic link"))
    for args, want in cases:
        cp = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=N.scaled(10))
        msgs = N.messages(cp.stderr.splitlines())
        N.expect(cp.returncode == 1 and len(msgs) == 1 and want in msgs[0],
                 f"xdpcap {' '.join(args)}: one line ({want}), exit 1", (cp.returncode, cp.stderr))
    with open(existing, "rb") as f, open(victim, "rb") as g:
        N.expect(f.read() == b"an older copy\n", "the existing copy is untouched")
        N.expect(g.read() == b"not to be written\n", "the link's target is untouched")
    with open(whole, "rb") as f:
        N.expect(f.read() == data, "-r X -w X: X is untouched")
    # A new OUT keeps the packets before the break, whole and readable.
    fresh = os.path.join(tmp, "fresh.pcapng")
    cp = subprocess.run([binary, "-r", cut, "-w", fresh], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True, timeout=N.scaled(10))
    kept = subprocess.run(["tcpdump", "-n", "-r", fresh], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=N.scaled(10)) if os.path.exists(fresh) else None
    N.expect(cp.returncode == 1 and "truncated" in cp.stderr and kept is not None and kept.returncode == 0 and
             len(kept.stdout.splitlines()) == 2,
             "-r CUT -w NEW: the two packets before the break kept in NEW, exit 1",
             (cp.returncode, cp.stderr, kept and kept.stdout, kept and kept.stderr))
    os.unlink(fresh)
    N.expect(sorted(os.listdir(d)) == ["existing.pcapng", "same.pcap"] and os.listdir(planted) == ["link.pcapng"],
             "no temporary left", (os.listdir(d), os.listdir(planted)))


def documented_exception(frame):
    """Frames whose -v lines the man page says differ: SCTP quoted in an ICMP
    error (its ports are not decoded), LLDP-MED TLVs (shown in hex)."""
    if frame[12:14] == b"\x88\xcc":
        return b"\x00\x12\xbb" in frame
    inner = 14 + (frame[14] & 0x0f) * 4 + 8 if len(frame) > 14 else 0
    return frame[12:14] == b"\x08\x00" and len(frame) > inner + 9 and frame[23] == 1 and frame[inner + 9] == 132


def every_cut(binary, tmp):
    """Every frame of every corpus cut at every byte, with each printing option, against tcpdump."""
    import test_read_verbose as V
    app = [(T.ipv4(T.A4, T.B4, T.tcp(s, d, 0x18, 1000 + i, 2000, payload=p)), cut)
           for i, (s, d, p, cut) in enumerate(APPLICATION)]
    corpora = ([(f, None) for f in T.corpus() + M.frames()] + app + icmp_frames() + icmp6_frames() + arp_frames() +
               llc_frames() + encapsulation_frames() + lldp_frames() + mptcp_frames() + dns_frames() +
               [f for make in V.VERBOSE_FRAMES for f in make()])
    whole, seen = [], set()
    for frame, cut in corpora:
        if cut is None and frame not in seen and not documented_exception(frame):
            seen.add(frame)
            whole.append(frame)
    path = os.path.join(tmp, "every-cut.pcap")
    write_cut_frames(path, [(f, n) for f in whole for n in range(1, len(f))])
    N.log(f"  info  {len(whole)} frames cut at every byte: {sum(len(f) - 1 for f in whole)} packets")
    for flags in ([], ["-v"], ["-vv"], ["-e"], ["-q"], ["-S"]):
        got, _ = ours(binary, ["-r", path] + flags)
        compare(f"every cut, -r {' '.join(flags) or '(plain)'}", got, tcpdumps(["-r", path] + flags))


def invalid_headers(binary, tmp):
    """Records whose lengths cannot be: tcpdump's '[Invalid header: ...]' line,
    numbered, and without a time (the delta of -ttt skips them)."""
    path = os.path.join(tmp, "invalid.pcap")
    frame = T.ipv4(T.A4, T.B4, T.tcp(41000, 80, 0x10, 1, 1))
    records = [(frame, len(frame)), (b"", 0), (b"", 60), (frame, 10), (frame, 0), (frame, 300000),
               (frame, len(frame))]
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        for i, (data, orig) in enumerate(records):
            f.write(struct.pack("<IIII", 1795431326, i * 1000, len(data), orig) + data)
    for flags in ([], ["-#", "-ttt"], ["-v"]):
        got, _ = ours(binary, ["-r", path] + flags)
        want = tcpdumps(["-r", path] + flags)
        N.expect(sum("[Invalid header:" in l for l in want) == 5, "tcpdump calls five records invalid", want)
        compare(f"invalid headers, -r {' '.join(flags) or '(plain)'}", got, want)


def pcapng_block(kind, body):
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))


def pcapng_options(options):
    out = b""
    for code, value in options:
        out += struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)
    return out + (struct.pack("<HH", 0, 0) if options else b"")


def shb(options):
    return pcapng_block(0x0a0d0d0a, struct.pack("<IHHq", 0x1a2b3c4d, 1, 0, -1) + pcapng_options(options))


def idb(name, options=(), link_type=1):
    return pcapng_block(1, struct.pack("<HHI", link_type, 0, 262144) +
                        pcapng_options([(2, name), (9, b"\x09")] + list(options)))


def epb(interface, ns, frame, options=()):
    return pcapng_block(6, struct.pack("<IIIII", interface, ns >> 32, ns & 0xffffffff, len(frame), len(frame)) +
                        frame + b"\0" * (-len(frame) % 4) + pcapng_options(list(options)))


def isb(interface, options=()):
    return pcapng_block(5, struct.pack("<III", interface, 0, 0) + pcapng_options(list(options)))


def own_pcapng_blocks():
    """xdpcap's kind of file: two CPU interfaces of one device, then another
    device's; inbound packets, a drop, comments; statistics; a second section."""
    frames = T.corpus()[:7]
    t = 1795431326 * 10**9
    inbound = (2, struct.pack("<I", 1))
    return [
        shb([(2, b"x86_64"), (3, b"Linux 6.1"), (4, b"xdpcap 1.0")]),
        idb(b"veth0@cpu0"), idb(b"veth0@cpu1"),
        epb(0, t, frames[0], [inbound]),
        epb(1, t + 1000, frames[1], [inbound, (1, b"drop reason NO_SOCKET at __udp4_lib_rcv+0x8b1")]),
        isb(0, [(1, b"a statistics comment")]),
        epb(0, t + 2000, frames[2], [(1, b"proc curl:1234")]),
        idb(b"veth1@cpu0"),
        epb(2, t + 3000, frames[3], [inbound]),
        isb(2),
        shb([(4, b"xdpcap 1.0")]), idb(b"veth0@cpu3"),
        epb(0, t + 4000, frames[4], [inbound]),
        epb(0, t + 5000, frames[5]),
    ]


def broken_files(binary, tmp):
    """Files cut anywhere or with a broken block: the packets before the
    break as tcpdump prints them, then one line naming the file, what was
    wrong and where, and exit 1."""
    def read(path, flags=()):
        cp = subprocess.run([binary, "-r", path, "-n"] + list(flags), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, timeout=N.scaled(10))
        return lines_of(cp), cp.stderr, cp.returncode

    def expect_break(label, path, err, rc, what, offset):
        told = [l for l in err.splitlines() if not l.startswith("reading from file ")]
        N.expect(rc == 1 and len(told) == 1 and told[0].startswith(f"xdpcap: {path}: {what} at offset {offset}: "),
                 f"{label}: one line naming the file, '{what}' and offset {offset}, exit 1", (rc, err))

    # Classic pcap, against tcpdump.
    frames = T.corpus()[:5]
    whole = os.path.join(tmp, "whole.pcap")
    N.write_frames(whole, frames)
    data = open(whole, "rb").read()
    starts = [24]
    for f in frames:
        starts.append(starts[-1] + 16 + len(f))
    cuts = [(10, 0)] + [(b, None) for b in starts]
    cuts += [(b + 7, b) for b in starts[:-1]] + [(b + 16, b) for b in starts[:-1]]
    cuts += [(b + 16 + len(f) // 2, b) for b, f in zip(starts, frames)]
    cut = os.path.join(tmp, "cut.pcap")
    for at, record in cuts:
        with open(cut, "wb") as f:
            f.write(data[:at])
        got, err, rc = read(cut)
        want = [l for l in N.run(["tcpdump", "-n", "-r", cut], check_rc=False).stdout.splitlines() if l]
        compare(f"pcap cut at byte {at}", got, want)
        if record is None:
            N.expect(rc == 0, f"pcap cut at record boundary {at}: read whole, exit 0", (rc, err))
        else:
            expect_break(f"pcap cut at byte {at}", cut, err, rc, "truncated", record)
    # xdpcap's pcapng, against the whole file's lines.
    blocks = own_pcapng_blocks()
    data = b"".join(blocks)
    whole = os.path.join(tmp, "whole.pcapng")
    with open(whole, "wb") as f:
        f.write(data)
    full, err, rc = read(whole, ["--print-cpu"])
    N.check(rc == 0 and len(full) == 6, "the whole pcapng: six packets, exit 0", (rc, full, err))
    # Where each block ends, and the packets up to its end.
    ends, counted, at, seen = [], [], 0, 0
    for b in blocks:
        at += len(b)
        seen += struct.unpack("<I", b[:4])[0] == 6
        ends.append(at)
        counted.append(seen)
    cut = os.path.join(tmp, "cut.pcapng")
    for i, b in enumerate(blocks):
        start = ends[i] - len(b)
        before = counted[i - 1] if i else 0
        for at, n, broken in ((start + 5, before, True), (start + len(b) // 2, before, True),
                              (ends[i] - 1, before, True), (ends[i], counted[i], False)):
            with open(cut, "wb") as f:
                f.write(data[:at])
            got, err, rc = read(cut, ["--print-cpu"])
            N.expect(got == full[:n], f"pcapng cut at byte {at}: the {n} packets before the cut",
                     (got, full[:n], err))
            if broken:
                expect_break(f"pcapng cut at byte {at}", cut, err, rc, "truncated", start)
            else:
                N.expect(rc == 0, f"pcapng cut at block boundary {at}: exit 0", (rc, err))
    # The same blocks written by another program: tcpdump's lines at every cut.
    foreign = [shb([(4, b"Dumpcap (Wireshark) 4.0.17")]) if b[:4] == b"\x0a\x0d\x0d\x0a" else b for b in blocks]
    foreign_data = b"".join(foreign)
    for i, b in enumerate(foreign):
        start = sum(len(x) for x in foreign[:i])
        for at in (start + 5, start + len(b) // 2, start + len(b)):
            with open(cut, "wb") as f:
                f.write(foreign_data[:at])
            got, err, rc = read(cut)
            want = [l for l in N.run(["tcpdump", "-n", "-r", cut], check_rc=False).stdout.splitlines() if l]
            compare(f"another program's pcapng cut at byte {at}", got, want)
    # A block whose length cannot be, after two packets.
    bad = blocks[:5] + [struct.pack("<II", 6, 13) + blocks[5][8:]] + blocks[6:]
    with open(cut, "wb") as f:
        f.write(b"".join(bad))
    got, err, rc = read(cut, ["--print-cpu"])
    N.expect(got == full[:2], "a bad block length: the two packets before it", (got, err))
    expect_break("a bad block length", cut, err, rc, "bad block length", sum(len(b) for b in blocks[:5]))


# What a terminal would act on: escapes (colours, the title, clearing the
# screen), BEL, CR, DEL, C1 controls (CSI 0x9b) and bytes that are no UTF-8.
HOSTILE = b"\x1b]2;PWNED\x07\x1b[2J\x1b[31m\rX\x7f\x9b31m\x85\xff\xc3("


def escaped_strings(binary, tmp):
    """Every string a pcapng holds, hostile: none reaches the terminal raw."""
    frames = T.corpus()[:3]
    h = HOSTILE
    t = 1795431326 * 10**9
    blocks = [
        shb([(1, b"c" + h), (2, b"hw" + h), (3, b"os" + h), (4, b"xdpcap " + h)]),
        idb(b"eth0" + h, [(3, b"descr" + h), (1, b"c" + h), (4, b"\xc6\x12\x00\x01\xff\xff\xff\x00"),
                         (12, b"os" + h), (15, b"hw" + h)]),
        idb(h + b"@cpu1" + h),
        epb(0, t, frames[0], [(2, struct.pack("<I", 1)), (1, b"drop reason " + h + b" at x" + h)]),
        epb(1, t + 1000, frames[1], [(2, struct.pack("<I", 2)), (8, struct.pack("<II", 1, 1)),
                                     (1, b"proc " + h + b":1"), (1, h)]),
        isb(0, [(1, h)]),
        shb([(4, b"other" + h)]), idb(b"eth9" + h),
        epb(0, t + 2000, frames[2], [(1, b"drop reason " + h)]),
    ]
    path = os.path.join(tmp, "hostile.pcapng")
    with open(path, "wb") as f:
        f.write(b"".join(blocks))
    refused = os.path.join(tmp, "hostile-raw.pcapng")
    with open(refused, "wb") as f:
        f.write(blocks[0] + idb(b"raw" + h, link_type=101))

    def clean(out):
        return not re.search(rb"[\x00-\x09\x0b-\x1f\x7f-\xff]", out) and b"\n\n" not in out

    for args in ([], ["-v"], ["-vv"], ["-vvv"], ["--print-cpu"], ["--print-cpu", "-e", "-vv"], ["-q"]):
        cp = subprocess.run([binary, "-r", path, "-n"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=N.scaled(10))
        N.expect(cp.returncode == 0 and cp.stdout.count(b"\n") >= 3 and clean(cp.stdout) and clean(cp.stderr),
                 f"-r {' '.join(args) or '(plain)'}: no control byte, DEL or raw 8-bit byte from the file",
                 (cp.returncode, cp.stdout, cp.stderr))
    cp = subprocess.run([binary, "-r", path, "-n", "--print-cpu"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                        timeout=N.scaled(10))
    N.expect(b"eth0^[]2;PWNED^G^[[2J^[[31m^MX^?M-^[31mM-^EM-^?M-C( " in cp.stdout and
             b"Drop ^[]2;PWNED^G" in cp.stdout,
             "the interface's name and the drop reason are shown escaped as packet bytes are", cp.stdout)
    N.expect(b"(proc ^[]2;PWNED^G" in cp.stdout, "a process comment is shown escaped too", cp.stdout)
    cp = subprocess.run([binary, "-r", refused], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=N.scaled(10))
    N.expect(cp.returncode == 1 and b"(raw^[]2;PWNED" in cp.stderr and clean(cp.stderr),
             "a refused interface is named escaped", (cp.returncode, cp.stderr))


def recorded_selection(binary, tmp):
    """-k's names printed as recorded; --pid, --pname, --container, -Q and
    inbound/outbound select by what each packet records; files that record
    no direction get tcpdump's refusal."""
    frames = T.corpus()[:5]
    t = 1795431326 * 10**9
    inbound, outbound = (2, struct.pack("<I", 1)), (2, struct.pack("<I", 2))

    def owner(pid, tid, comment):
        return [(8, struct.pack("<II", pid, tid)), (1, comment)]

    packets = [
        epb(0, t, frames[0], [inbound] + owner(100, 100, b"proc curl:100")),
        epb(0, t + 1000, frames[1], [outbound] + owner(100, 101, b"proc curl:100, tid 101")),
        epb(0, t + 2000, frames[2], [inbound] + owner(200, 200, b"proc wget:200, container web")),
        epb(0, t + 3000, frames[3], [outbound]),
        epb(0, t + 4000, frames[4], [outbound, (1, b"drop reason NO_SOCKET")] + owner(300, 300, b"proc a:1:300")),
    ]
    path = os.path.join(tmp, "owners.pcapng")
    with open(path, "wb") as f:
        f.write(b"".join([shb([(4, b"xdpcap 1.0")]), idb(b"veth0@cpu0")] + packets))
    # -S: absolute sequence numbers, the same whichever packets come before.
    every, _ = ours(binary, ["-r", path, "-S"])
    N.check(len(every) == 5, "every packet of the hand-made file is printed", every)
    labels = ["(proc curl:100) ", "(proc curl:100, tid 101) ", "(proc wget:200, container web) ", None,
              "(proc a:1:300) Drop NO_SOCKET "]
    N.expect(all((l.split(" ", 1)[1].startswith(w) if w else "(proc" not in l) for l, w in zip(every, labels)),
             "each line names the process its packet records, right after the time", every)
    N.expect(ours(binary, ["-r", path, "-S", "-k"])[0] == every, "-k with -r prints the same lines")
    for args, kept in ((["--pid", "100"], [0, 1]), (["--pid", "300"], [4]), (["--pid", "7"], []),
                       (["--pname", "curl"], [0, 1]), (["--pname", "a:1"], [4]), (["--pname", "wget"], [2]),
                       (["--container", "web"], [2]), (["--pname", "curl", "--container", "web"], []),
                       (["-Q", "in"], [0, 2]), (["-Q", "out"], [1, 3, 4]), (["-Q", "inout"], [0, 1, 2, 3, 4]),
                       (["inbound"], [0, 2]), (["outbound"], [1, 3, 4]), (["not", "inbound"], [1, 3, 4]),
                       (["-Q", "out", "--pid", "100"], [1]), (["--pid", "100", "inbound"], [0])):
        got, _ = ours(binary, ["-r", path, "-S"] + args)
        N.expect(got == [every[i] for i in kept], f"-r {' '.join(args)} keeps packets {kept}", got)
    # A pcapng packet without a direction: the packets before it, then one line.
    nodir = os.path.join(tmp, "no-direction.pcapng")
    with open(nodir, "wb") as f:
        f.write(b"".join([shb([(4, b"xdpcap 1.0")]), idb(b"veth0@cpu0"), packets[0],
                          epb(0, t + 9000, frames[1])]))
    for args, what in ((["-Q", "in"], "-Q in"), (["inbound"], "inbound/outbound")):
        cp = subprocess.run([binary, "-r", nodir, "-S"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=N.scaled(10))
        N.expect(cp.returncode == 1 and lines_of(cp) == every[:1] and cp.stderr.splitlines()[-1] ==
                 f"xdpcap: {what} not supported on Ethernet when reading savefiles without a direction in "
                 "epb_flags (packet 2)", f"-r {' '.join(args)}: a packet without a direction ends the reading",
                 (cp.returncode, cp.stdout, cp.stderr))
    # Classic pcap records no direction: tcpdump's line, before any packet.
    pcap = os.path.join(tmp, "frames.pcap")
    theirs = N.run(["tcpdump", "-r", pcap, "inbound"], check_rc=False)
    for args, line in ((["inbound"], theirs.stderr.splitlines()[-1].replace("tcpdump:", "xdpcap:")),
                       (["-Q", "in"], "xdpcap: -Q in not supported on Ethernet when reading savefiles"),
                       (["-Q", "out", "udp"], "xdpcap: -Q out not supported on Ethernet when reading savefiles")):
        cp = subprocess.run([binary, "-r", pcap] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=N.scaled(10))
        N.expect(theirs.returncode == 1 and cp.returncode == 1 and cp.stdout == "" and
                 cp.stderr.splitlines()[1:] == [line],
                 f"-r FILE.pcap {' '.join(args)}: one line, as tcpdump's for inbound", (cp.returncode, cp.stderr, line))


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp:
        os.chmod(tmp, 0o755)
        classic_file(binary, tmp)
        invalid_headers(binary, tmp)
        every_cut(binary, tmp)
        bad_input(binary, tmp)
        copy_failures(binary, tmp)
        broken_files(binary, tmp)
        escaped_strings(binary, tmp)
        recorded_selection(binary, tmp)
        with N.NetLab(pairs=2) as lab:
            own = own_file(binary, tmp, lab)
        filtered_copy(binary, tmp, own)


if __name__ == "__main__":
    N.main(test)
