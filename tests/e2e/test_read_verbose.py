#!/usr/bin/python3
"""End-to-end: -v, -vv and -vvv print what tcpdump -n -v, -vv and -vvv print.

Usage (root): /usr/bin/python3 tests/e2e/test_read_verbose.py PATH/TO/xdpcap

  * A classic pcap of frames written here: IPv4 headers with every option
    tcpdump names (record route, source routes, timestamps of each kind,
    router alert, security, unknown and malformed ones, cut by the capture
    at every byte), ECN and fragment flags, bad header checksums; TCP, UDP,
    ICMP and ICMPv6 with right and wrong checksums, over source routes and
    IPv6 routing headers (the checksum's destination); IPv6 traffic class,
    flow label, hop-by-hop and destination options (jumbo payload, router
    alert, padding, unknown), routing headers, fragments, AH; ICMP errors
    with their quoted packets and RFC 4884 MPLS extensions; neighbour
    discovery with every option tcpdump decodes; TCP resets with data.
    With the frames of test_read.py (TCP, HTTP, ICMP, ICMPv6, ARP, 802.3,
    the encapsulations, LLDP, DNS, header cuts) too, but for the protocols
    whose -v detail xdpcap does not print (named in VERBOSE_LEFT_OUT below):
    `xdpcap -r F -v` (and -vv, -vvv, with -e, -q, -S) prints tcpdump's lines
    exactly.
  * A pcapng of xdpcap's whose packets carry epb_flags "checksum not ready"
    (sent with checksum offload): xdpcap says the sum is offloaded where
    tcpdump says it is wrong; the same packets without the flag match
    tcpdump, and so do they in another program's pcapng, flag or not.
  * Captured live with -vv --print: -r prints the file as --print did, and
    tcpdump -vv's lines after the interface and direction.
"""

import os
import re
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402
import test_read as R  # noqa: E402
import test_text_malformed as M  # noqa: E402
import test_text_tcp as T  # noqa: E402

A4, B4, C4, D4 = (bytes([198, 18, 73, i]) for i in (1, 2, 3, 4))
A6, B6, C6 = (bytes.fromhex("20010db80073000000000000000000" + x) for x in ("01", "02", "03"))


def csum(data):
    return T.checksum(data)


def udp(sport, dport, payload):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def with_transport_checksum(proto, src, dst, segment, final_dst=None):
    """The segment with its checksum over the pseudo-header of src and dst
    (or the source route's final destination)."""
    at = {6: 16, 17: 6, 58: 2, 1: 2}[proto]
    seg = segment[:at] + b"\0\0" + segment[at + 2:]
    if proto == 1:
        return seg[:at] + struct.pack("!H", csum(seg)) + seg[at + 2:]
    d = final_dst or dst
    if len(src) == 4:
        pseudo = src + d + struct.pack("!BBH", 0, proto, len(seg))
    else:
        pseudo = src + d + struct.pack("!IxxxB", len(seg), proto)
    value = csum(pseudo + seg)
    if proto == 17 and value == 0:
        value = 0xffff
    return seg[:at] + struct.pack("!H", value) + seg[at + 2:]


def ip4(proto, payload, src=A4, dst=B4, opts=b"", tos=0, ttl=64, frag=0x4000, ident=0x4242, bad_sum=False,
        total=None):
    hl = 20 + len(opts)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | hl // 4, tos, total if total is not None else hl + len(payload), ident,
                    frag, ttl, proto, 0, src, dst) + opts
    s = csum(h) ^ (0x1111 if bad_sum else 0)
    return T.MAC_B + T.MAC_A + b"\x08\x00" + h[:10] + struct.pack("!H", s) + h[12:] + payload


def ip6(nh, payload, src=A6, dst=B6, flow=0x60000000, plen=None):
    return T.MAC_B + T.MAC_A + b"\x86\xdd" + struct.pack(
        "!IHBB16s16s", flow, len(payload) if plen is None else plen, nh, 64, src, dst) + payload


def ip_option_frames():
    """(frame, cut): IPv4 options tcpdump names, right and malformed, and a
    frame with options cut at every byte."""
    data = with_transport_checksum(17, A4, B4, udp(41000, 5555, b"abcd"))
    ts = lambda flags, ptr, body: bytes([68, 4 + len(body), ptr, flags]) + body  # noqa: E731
    option_lists = [
        b"\x01\x01\x01\x00",
        bytes([7, 11, 8]) + C4 + D4,                                # record route, one hop recorded
        bytes([7, 11, 4]) + bytes(8),                               # none recorded yet
        bytes([7, 11, 12]) + C4 + D4,                               # full
        bytes([7, 10, 4]) + C4 + b"\0\0\0\0\0" + b"\x00",          # bad length
        bytes([7, 11, 3]) + C4 + D4,                                # bad pointer
        bytes([7, 11, 0]) + C4 + D4,                                # zero pointer
        bytes([7, 2]) + b"\x01\x00",                                # too short for a route
        ts(0, 5, struct.pack("!II", 1000, 0)) + bytes(4),           # timestamps only
        ts(0x31, 13, C4 + struct.pack("!I", 77) + D4 + struct.pack("!I", 0)),  # with addresses, 3 hops missed
        ts(3, 5, C4 + struct.pack("!I", 0)) + bytes(4),             # prespecified
        ts(2, 5, bytes(8)),                                         # bad type
        ts(0, 4, bytes(6)) + b"\x00\x00",                           # bad length and pointer
        bytes([68, 3, 5]) + b"\x00",                                # too short for timestamps
        bytes([131, 11, 4]) + C4 + D4,                              # loose source route
        bytes([137, 7, 4]) + C4 + b"\x01",                          # strict source route
        bytes([148, 4, 0, 0]),                                      # router alert
        bytes([148, 4, 0, 9]),                                      # with a value
        bytes([148, 3, 0, 1]),                                      # bad length
        bytes([130, 11]) + bytes(9) + b"\x00",                      # security
        bytes([82, 12]) + bytes(10),                                # traceroute
        bytes([99, 4, 1, 2]),                                       # unknown
        bytes([7, 1, 0, 0]),                                        # a length below 2
        bytes([7, 40, 4, 0]),                                       # longer than the header
    ]
    frames = []
    for opts in option_lists:
        opts += bytes(-len(opts) % 4)
        route_end = None
        if opts[0] in (131, 137):
            route_end = opts[opts[1] - 4:opts[1]]
        seg = with_transport_checksum(17, A4, B4, udp(41000, 5555, b"abcd"), final_dst=route_end)
        frames.append((ip4(17, seg, opts=opts), None))
    # TCP over a loose source route: the checksum covers the last hop.
    syn = T.tcp(41000, 80, T.SYN, 1000, opts=T.SYN_OPTS)
    frames.append((ip4(6, with_transport_checksum(6, A4, B4, syn, final_dst=D4),
                       opts=bytes([131, 11, 4]) + C4 + D4 + b"\x00"), None))
    # Cut at every byte of the header and options.
    whole = ip4(17, data, opts=bytes([7, 11, 8]) + C4 + D4 + b"\x00" + bytes([68, 12, 5, 0]) + bytes(8))
    frames += [(whole, cut) for cut in range(34, 14 + 44 + 1)]
    return frames


def ip_header_frames():
    """(frame, cut): ECN, TTL 0, fragment flags and offsets, bad header
    checksums, over TCP, UDP and ICMP with right and wrong sums."""
    good_udp = with_transport_checksum(17, A4, B4, udp(41000, 5555, b"abcd"))
    bad_udp = good_udp[:6] + b"\x12\x34" + good_udp[8:]
    zero_udp = udp(41000, 5555, b"abcd")
    syn = with_transport_checksum(6, A4, B4, T.tcp(41000, 80, T.SYN, 1000, opts=T.SYN_OPTS))
    ack = with_transport_checksum(6, A4, B4, T.tcp(41000, 80, T.ACK, 1001, 5001))
    bad_syn = syn[:16] + b"\xbe\xef" + syn[18:]
    echo = with_transport_checksum(1, A4, B4, struct.pack("!BBHHH", 8, 0, 0, 7, 1) + b"ping")
    bad_echo = echo[:2] + b"\x00\x01" + echo[4:]
    frames = [(ip4(17, good_udp, tos=t), None) for t in (0, 1, 2, 3, 0xb8)]
    frames += [(ip4(17, good_udp, ttl=0), None), (ip4(17, good_udp, frag=0), None),
               (ip4(17, good_udp, frag=0x2000), None), (ip4(17, good_udp, frag=0xe000), None),
               (ip4(17, good_udp, frag=0x0010), None), (ip4(17, good_udp, frag=0x2010), None),
               (ip4(17, good_udp, bad_sum=True), None), (ip4(17, bad_udp), None), (ip4(17, zero_udp), None),
               (ip4(6, syn), None), (ip4(6, bad_syn), None), (ip4(6, ack), None), (ip4(6, syn), 40),
               (ip4(1, echo), None), (ip4(1, bad_echo), None), (ip4(1, bad_echo, frag=0x2000), None),
               (ip4(6, syn, frag=0x2000), None), (ip4(17, bad_udp, frag=0x2000), None),
               (ip4(99, b"opaque", frag=0), None), (ip4(47, bytes(4)), None)]
    # A UDP length shorter and longer than the IP payload.
    short = bytearray(good_udp)
    short[4:6] = struct.pack("!H", 10)
    frames += [(ip4(17, with_transport_checksum(17, A4, B4, bytes(short))), None),
               (ip4(17, good_udp, total=20 + 10), None)]
    # Resets with data, short and long, with bytes that need escaping.
    for payload in (b"no route", b"connection reset by peer, go away now", b"\x00\x7f\x80\xff\tA"):
        rst = with_transport_checksum(6, A4, B4, T.tcp(41000, 80, T.RST | T.ACK, 1001, 5001, payload=payload))
        frames.append((ip4(6, rst), None))
    frames.append((ip4(6, with_transport_checksum(6, A4, B4, T.tcp(41000, 80, T.RST, 1001, payload=b"abcdef"))), 60))
    return frames


def icmp_error_frames():
    """(frame, cut): errors quoting IPv4 packets (whole, cut, with options,
    quoting errors), with and without RFC 4884 extensions."""
    inner_udp = ip4(17, with_transport_checksum(17, B4, C4, udp(41000, 53, b"abcdefgh")), src=B4, dst=C4)[14:]
    inner_tcp = ip4(6, T.tcp(41000, 443, T.SYN, 1), src=B4, dst=C4)[14:]

    def icmp(kind, code, rest, body, **kw):
        return ip4(1, with_transport_checksum(1, A4, B4, struct.pack("!BBH", kind, code, 0) + rest + body), **kw)

    frames = [(icmp(3, 3, bytes(4), inner_udp), None), (icmp(3, 1, bytes(4), inner_tcp), None),
              (icmp(11, 0, bytes(4), inner_udp), None), (icmp(12, 0, b"\x14\0\0\0", inner_udp), None),
              (icmp(5, 1, C4, inner_tcp), None), (icmp(4, 0, bytes(4), inner_udp), None)]
    frames += [(icmp(3, 3, bytes(4), inner_udp), cut) for cut in (42, 44, 46, 50, 60, 62, 66, 70)]
    # An error quoting an error.
    nested = icmp(3, 3, bytes(4), inner_udp)[14:]
    frames.append((icmp(11, 0, bytes(4), nested), None))
    # RFC 4884: the quote padded to 128 bytes, then the extension structure.
    quote = inner_udp + bytes(128 - len(inner_udp))
    label = struct.pack("!I", (16001 << 12) | (5 << 9) | 0x100 | 1)
    obj = struct.pack("!HBB", 8, 1, 1) + label
    ext = b"\x20\x00\x00\x00" + obj
    ext = ext[:2] + struct.pack("!H", csum(ext)) + ext[4:]
    other = struct.pack("!HBB", 12, 2, 3) + bytes(8)
    ext2 = b"\x20\x00\x00\x00" + obj + other
    ext2 = ext2[:2] + struct.pack("!H", csum(ext2)) + ext2[4:]
    for rest, tail in ((b"\x00\x20\x00\x00", ext), (bytes(4), ext), (b"\x00\x20\x00\x00", ext2),
                       (bytes(4), b"\x10\x00\x00\x00" + obj), (b"\x00\x20\x00\x00", b"\x20\x00\x12\x34" + obj)):
        frames.append((icmp(11, 0, rest, quote + tail), None))
        frames.append((icmp(3, 4, rest, quote + tail), None))
    frames.append((icmp(11, 0, b"\x00\x20\x00\x00", quote + ext), 14 + 20 + 8 + 130))
    return frames


def ipv6_frames():
    """(frame, cut): traffic class and flow label, hop-by-hop and
    destination options, routing headers, fragments and AH, with the
    checksums they change."""
    frames = []
    seg = with_transport_checksum(17, A6, B6, udp(41000, 5555, b"abcd"))
    for flow in (0x60000000, 0x6b800000, 0x600abcde, 0x6fffffff):
        frames.append((ip6(17, seg, flow=flow), None))
    bad = seg[:6] + b"\x12\x34" + seg[8:]
    frames.append((ip6(17, bad), None))
    syn = with_transport_checksum(6, A6, B6, T.tcp(41000, 80, T.SYN, 1000, opts=T.SYN_OPTS))
    frames.append((ip6(6, syn), None))
    frames.append((ip6(6, syn[:16] + b"\0\1" + syn[18:]), None))
    # Hop-by-hop: router alert and padding (MLD), jumbo variants, unknown.
    mld = with_transport_checksum(58, A6, B6, struct.pack("!BBHHH", 131, 0, 0, 0, 0) + bytes.fromhex(
        "ff0200000000000000000000000000fb"))
    for opts in (bytes([5, 2, 0, 0, 1, 0]), bytes([0, 0, 5, 2, 0, 0]), bytes([1, 4, 0, 0, 0, 0]),
                 bytes([0x3e, 4, 1, 2, 3, 4]), bytes([5, 3, 0, 0, 0, 0]), bytes([1, 5, 0, 0, 0, 0])):
        frames.append((ip6(0, bytes([58, 0]) + opts + mld), None))
    jumbo = lambda value: bytes([0xc2, 4]) + struct.pack("!I", value)  # noqa: E731
    frames.append((ip6(0, bytes([17, 0]) + jumbo(70000) + seg, plen=0), None))
    frames.append((ip6(0, bytes([17, 0]) + jumbo(70000) + seg), None))
    frames.append((ip6(0, bytes([17, 0]) + jumbo(100) + seg, plen=0), None))
    frames.append((ip6(0, bytes([17, 0]) + bytes([1, 4, 0, 0, 0, 0]) + seg, plen=0), None))
    # Destination options, then UDP; routing headers (type 0, segment
    # routing), a routing header of unknown type.
    frames.append((ip6(60, bytes([17, 0]) + bytes([0, 1, 2, 0, 0, 0x4d, 0]) + b"\x00" + seg), None))
    frames.append((ip6(60, bytes([17, 1]) + bytes([0xc9, 16]) + C6 + bytes(6) + seg), None))
    rt0 = bytes([17, 2, 0, 1, 0, 0, 0, 0]) + C6
    frames.append((ip6(43, rt0 + with_transport_checksum(17, A6, B6, udp(41000, 5555, b"abcd"), final_dst=C6)), None))
    srh = bytes([17, 4, 4, 1, 1, 0, 0, 7]) + C6 + B6
    frames.append((ip6(43, srh + with_transport_checksum(17, A6, B6, udp(41000, 5555, b"abcd"), final_dst=C6)), None))
    frames.append((ip6(43, bytes([17, 0, 9, 0, 0, 0, 0, 0]) + seg), None))
    frames.append((ip6(43, bytes([17, 1, 0, 1, 0, 0, 0, 0]) + C6[:8] + seg), None))
    frames += [(ip6(43, srh + seg), cut) for cut in (55, 56, 58, 59, 60, 62, 63, 70, 78)]
    # Fragments: the first (checksum not checked), a later one.
    frames.append((ip6(44, bytes([17, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef]) + seg), None))
    frames.append((ip6(44, bytes([17, 0, 0, 0x18, 0xde, 0xad, 0xbe, 0xef]) + b"rest"), None))
    frames += [(ip6(44, bytes([17, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef]) + seg), cut) for cut in (56, 58, 60, 62)]
    # AH over IPv4 and IPv6, before TCP, UDP and ICMP.
    ah = lambda nh, n=4, reserved=0: bytes([nh, n]) + struct.pack("!HII", reserved, 0x100, 7) + bytes(n * 4 - 4)  # noqa
    frames.append((ip6(51, ah(17) + seg), None))
    frames.append((ip6(51, ah(6, reserved=3) + syn), None))
    frames.append((ip4(51, ah(17) + with_transport_checksum(17, A4, B4, udp(41000, 5555, b"abcd"))), None))
    frames.append((ip4(51, ah(1) + with_transport_checksum(1, A4, B4, struct.pack("!BBHHH", 8, 0, 0, 7, 1))), None))
    frames += [(ip4(51, ah(17) + udp(1, 2, b"")), cut) for cut in (35, 36, 38, 42, 46, 50)]
    return frames


def nd_frames():
    """(frame, cut): neighbour discovery with every option tcpdump decodes,
    right and wrong checksums."""
    mac = bytes.fromhex("020000007301")

    def icmp6(kind, code, rest, body, good=True, dst=B6):
        m = with_transport_checksum(58, A6, dst, struct.pack("!BBH", kind, code, 0) + rest + body)
        if not good:
            m = m[:2] + b"\xab\xcd" + m[4:]
        return ip6(58, m, dst=dst)

    sll = bytes([1, 1]) + mac
    tll = bytes([2, 1]) + mac
    prefix = bytes([3, 4, 64, 0xc0]) + struct.pack("!III", 2592000, 604800, 0) + bytes.fromhex(
        "20010db8007300000000000000000000")
    prefix_inf = bytes([3, 4, 48, 0x20]) + struct.pack("!III", 0xffffffff, 0xffffffff, 0) + C6
    mtu = bytes([5, 1, 0, 0]) + struct.pack("!I", 1500)
    rdnss = bytes([25, 5, 0, 0]) + struct.pack("!I", 600) + C6 + B6
    dnssl = bytes([31, 3, 0, 0]) + struct.pack("!I", 600) + b"\x07example\x03com\x00" + bytes(3)
    route = bytes([24, 2, 48, 0x08]) + struct.pack("!I", 1800) + C6[:8]
    route3 = bytes([24, 3, 64, 0x18]) + struct.pack("!I", 0xffffffff) + C6
    interval = bytes([7, 1, 0, 0]) + struct.pack("!I", 30000)
    home = bytes([8, 1, 0, 0]) + struct.pack("!HH", 10, 1800)
    unknown = bytes([99, 1]) + bytes(6)
    redirected = bytes([4, 2]) + bytes(6) + b"quoted!!"
    frames = [(icmp6(133, 0, bytes(4), sll), None), (icmp6(133, 0, bytes(4), b""), None),
              (icmp6(134, 0, struct.pack("!BBHII", 64, 0xc8, 1800, 30000, 1000),
                     sll + mtu + prefix + prefix_inf + rdnss + dnssl + route + route3 + interval + home), None),
              (icmp6(134, 0, struct.pack("!BBHII", 255, 0x1a, 0, 0, 0), unknown + mtu), None),
              (icmp6(135, 0, bytes(4), C6 + sll), None), (icmp6(135, 0, bytes(4), C6 + sll, good=False), None),
              (icmp6(136, 0, bytes([0xe0, 0, 0, 0]), C6 + tll), None), (icmp6(136, 0, bytes(4), C6), None),
              (icmp6(137, 0, bytes(4), C6 + B6 + tll + redirected), None),
              (icmp6(135, 0, bytes(4), C6 + bytes([1, 0]) + bytes(6)), None),
              (icmp6(135, 0, bytes(4), C6 + bytes([1, 2]) + mac), None),
              (icmp6(128, 0, struct.pack("!HH", 7, 1), b"ping"), None),
              (icmp6(128, 0, struct.pack("!HH", 7, 1), b"ping", good=False), None),
              (icmp6(1, 9, bytes(4), bytes(48)), None), (icmp6(250, 0, bytes(4), b"0123456789"), None),
              (icmp6(145, 0, struct.pack("!HH", 0x1234, 0), C6 + B6), None),
              (icmp6(147, 0, struct.pack("!HH", 0x1234, 0xc000), mtu), None)]
    frames += [(icmp6(134, 0, struct.pack("!BBHII", 64, 0, 1800, 0, 0), sll + prefix), cut)
               for cut in (60, 70, 76, 78, 80, 86, 90, 100)]
    return frames


VERBOSE_FRAMES = (ip_option_frames, ip_header_frames, icmp_error_frames, ipv6_frames, nd_frames)

def quotes_sctp(frame):
    """An ICMP or ICMPv6 error quoting SCTP, whose header tcpdump decodes
    (with -v it prints the quote) and the text view does not."""
    if frame[12:14] == b"\x08\x00" and len(frame) > 51 and frame[23] == 1:
        return frame[14 + 20 + 8 + 9] == 132
    if frame[12:14] == b"\x86\xdd" and len(frame) > 68 and frame[20] == 58:
        return frame[14 + 40 + 8 + 6] == 132
    return False


# Frames of test_read.py left out of the -v comparison, and why (their plain
# lines are compared in test_read.py).
VERBOSE_LEFT_OUT = {
    "SCTP quoted by ICMP errors: not decoded": quotes_sctp,
    "LLDP-MED and 802.1's data centre bridging TLVs: shown in hex": lambda f: f[12:14] == b"\x88\xcc" and (
        bytes.fromhex("0012bb") in f or bytes.fromhex("0080c20b") in f),
}


def read_frames():
    app = [(T.ipv4(T.A4, T.B4, T.tcp(s, d, 0x18, 1000 + i, 2000, payload=p)), cut)
           for i, (s, d, p, cut) in enumerate(R.APPLICATION)]
    frames = [(f, None) for f in T.corpus() + M.frames()] + app + R.icmp_frames() + R.icmp6_frames() + \
        R.arp_frames() + R.llc_frames() + R.encapsulation_frames() + R.lldp_frames() + R.mptcp_frames() + R.dns_frames() + \
        R.header_cuts()
    return [(f, cut) for f, cut in frames if not any(left_out(f) for left_out in VERBOSE_LEFT_OUT.values())]


def verbose_file(binary, tmp):
    path = os.path.join(tmp, "verbose.pcap")
    frames = [f for make in VERBOSE_FRAMES for f in make()] + read_frames()
    R.write_cut_frames(path, frames)
    # -K: no checksum verified, so none named right or wrong, as tcpdump -K.
    for flags in (["-v"], ["-vv"], ["-vvv"], ["-v", "-e"], ["-v", "-q"], ["-vv", "-S"], ["-v", "-x"], ["-vv", "-K"]):
        got, _ = R.ours(binary, ["-r", path] + flags)
        R.compare(f"-r {' '.join(flags)}", got, R.tcpdumps(["-r", path] + flags))


def write_pcapng(path, frames, flags, application=b"xdpcap 0.0 (test)"):
    """A pcapng with one Ethernet interface and `frames`, each with epb_flags
    `flags`, its section written by `application`."""
    def block(kind, body):
        body += bytes(-len(body) % 4)
        return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    userappl = struct.pack("<HH", 4, len(application)) + application + bytes(-len(application) % 4)
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + userappl + struct.pack("<HH", 0, 0))
    out += block(1, struct.pack("<HHI", 1, 0, 262144))
    for i, frame in enumerate(frames):
        opts = struct.pack("<HHI", 2, 4, flags) + struct.pack("<HH", 0, 0)
        body = struct.pack("<IIIII", 0, 0, i, len(frame), len(frame)) + frame + bytes(-len(frame) % 4) + opts
        out += block(6, body)
    with open(path, "wb") as f:
        f.write(out)


def checksum_not_ready(binary, tmp):
    """Sent with checksum offload, a TCP, UDP or ICMPv6 sum holds only the
    pseudo-header's: no error for xdpcap; without the flag, tcpdump's lines."""
    syn = T.tcp(41000, 80, T.SYN, 1000, opts=T.SYN_OPTS)
    partial = syn[:16] + struct.pack("!H", 0x1c46) + syn[18:]
    u = udp(41000, 5555, b"abcd")
    u = u[:6] + b"\x55\x55" + u[8:]
    good = with_transport_checksum(6, A4, B4, syn)
    frames = [ip4(6, partial), ip4(17, u), ip6(17, u), ip4(6, good)]
    plain, offloaded = os.path.join(tmp, "plain.pcapng"), os.path.join(tmp, "offloaded.pcapng")
    write_pcapng(plain, frames, 2)
    write_pcapng(offloaded, frames, 2 | 1 << 9)
    got, _ = R.ours(binary, ["-r", plain, "-vv"])
    want = R.tcpdumps(["-r", plain, "-vv"])
    N.expect(["(incorrect -> 0x" in "".join(got[0:2]), "[bad udp cksum" in "".join(got[2:4])] == [True, True],
             "without the flag, wrong sums are wrong", got)
    R.compare("-vv of sent packets without the flag", got, want)
    got, _ = R.ours(binary, ["-r", plain, "-vv", "-K"])
    N.expect(not any("incorrect" in l or "bad udp" in l for l in got), "-K: no sum called wrong", got)
    R.compare("-vv -K: no checksum verified", got, R.tcpdumps(["-r", plain, "-vv", "-K"]))
    got, _ = R.ours(binary, ["-r", offloaded, "-vv"])
    text = "\n".join(got)
    N.expect("incorrect" not in text and "bad udp cksum" not in text, "with the flag, no sum is called wrong", text)
    N.expect(text.count("(offloaded)") == 1 and text.count("[udp sum offloaded]") == 2,
             "each offloaded sum is named as such", text)
    N.expect(text.count("(correct)") == 1, "a right sum is still right", text)
    # Another program's pcapng: its flags and directions are not xdpcap's to
    # show; the lines are tcpdump's.
    foreign = os.path.join(tmp, "foreign.pcapng")
    write_pcapng(foreign, frames, 2 | 1 << 9, application=b"Dumpcap (Wireshark) 4.0.17")
    got, _ = R.ours(binary, ["-r", foreign, "-vv"])
    R.compare("-vv of another program's pcapng", got, R.tcpdumps(["-r", foreign, "-vv"]))


def live(binary, tmp, lab):
    """Captured live with -vv --print: the lines -r prints of the file
    written, each tcpdump -vv's after the interface and direction."""
    sent = []
    for make in VERBOSE_FRAMES:
        sent += [f for f, cut in make() if cut is None and f not in sent]
    pcap, path = os.path.join(tmp, "sent.pcap"), os.path.join(tmp, "live.pcapng")
    N.write_frames(pcap, sent)
    x = lab.xdpcap(binary, ["-Q", "in", "-vv", "-w", path, "--print", "--print-cpu", "-c", str(len(sent))])
    x.wait_listening()
    lab.send(pcap, 0, gap_us=1000)
    rc = x.wait(N.scaled(30))
    N.check(rc == 0, f"the live capture exits 0 after -c {len(sent)}", (rc, x.err_lines[-3:]))
    printed = [line for line in bytes(x.out).decode().splitlines() if line]
    got, _ = R.ours(binary, ["-r", path, "-vv", "--print-cpu"])
    N.expect(got == printed, "-r -vv --print-cpu prints the live capture's file as --print -vv printed it live",
             "\n".join(f" live: {a}\n   -r: {b}" for a, b in zip(printed, got) if a != b)[:2000])
    column = re.compile(r"^(\S+) \S+@cpu\d+ In ")
    plain = [column.sub(r"\1 ", line) for line in got]
    N.expect(sum(1 for a, b in zip(plain, got) if a != b) == len(sent), "each packet's first line names its CPU "
             "and direction", got[:2])
    R.compare("live -vv, interface and direction aside", plain, R.tcpdumps(["-r", path, "-vv"]))
    got, _ = R.ours(binary, ["-r", path, "-vv"])
    R.compare("-r -vv of the live capture's file, as tcpdump", got, R.tcpdumps(["-r", path, "-vv"]))


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp:
        os.chmod(tmp, 0o755)
        verbose_file(binary, tmp)
        checksum_not_ready(binary, tmp)
        with N.NetLab() as lab:
            live(binary, tmp, lab)


if __name__ == "__main__":
    N.main(test)
