#!/usr/bin/python3
"""End-to-end: kernel filters keep exactly the frames libpcap's filter keeps.

Usage (root): /usr/bin/python3 tests/e2e/test_filter.py PATH/TO/xdpcap

A corpus of ~260 unique frames (build_corpus plus hand-made frames: IPv4 and
IPv6 TCP with various ports and SYN / SYN-ACK / ACK / FIN / RST, IPv4 with
options, UDP 53/9/67/123/other, first and non-first IPv4 fragments, ICMP,
ICMPv6, ARP requests and replies, 802.1Q VLAN 100 and 200 with IPv4/IPv6/ARP
inside, QinQ (0x88a8 and 0x8100 outer), non-IP EtherTypes and 802.3/LLC,
broadcasts, frames cut short inside their IP/TCP headers, 20..1514 bytes) is
written once to a classic pcap.  In one NetLab, for each expression in turn,
`xdpcap -v -w F.pcapng EXPR` captures while the corpus is sent, then SIGINT.
The expected frames are libpcap's own selection: `tcpdump -r sent.pcap -w
sel.pcap EXPR`.  Checks per expression: exit 0; the multiset of captured frames
(read back by libpcap, tcpdump -r F -w x.pcap) equals the selection, byte-exact;
"N packets captured" and "N packets received by filter" equal the selection's
size and "N packets seen on the interface" the number sent; every IDB carries
the expression as if_filter (libpcap string); the ISBs' isb_filteraccept sum to
the number kept and isb_ifrecv to the number sent.  Then the same with the
expression in a file (-F, with line breaks inside), and, in a lab with MTU 9000,
9014-byte frames filtered on a byte beyond the first 4 KiB ('ip[5000] ==
0xab': half of them carry 0xab there; frames ending right before / at that
offset too).  Also `-d` prints the compiled filter and exits 0, headed by
each hook it would run on: on the veth cap0 tc ingress and tc egress (-Q in:
tc ingress alone; --xdp-mode native: XDP; --drops: skb:kfree_skb too),
without -i every hook.  Further
cases: `ip protochain 17` and IPv6 protochain over extension-header and AH
frames; `inbound` (every frame) and `not outbound and udp` (libpcap cannot
read direction from a file, so the reference is all frames / `udp`); and
`ip broadcast` with 198.18.0.1/15 on cap0, against the same test spelt out.  Nothing stays
attached to cap0.
"""

import os
import re
import signal
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CPU = N.cpus()[0]
CORPUS_BASE = 140          # frames from build_corpus(); hand-made ones are added

EXPRESSIONS = [
    "udp",
    "tcp port 80",
    "host 198.18.0.5",
    "net 198.18.1.0/24",
    "ip6 and icmp6",
    "arp",
    "vlan 100",
    "vlan and udp",
    "tcp[tcpflags] & tcp-syn != 0",
    "tcp[tcpflags] & (tcp-syn|tcp-ack) == (tcp-syn|tcp-ack)",
    "ip[2:2] > 500",
    "greater 1000",
    "less 100",
    "not ip and not ip6",
    "ether broadcast",
    "src portrange 1000-2000 or dst port 53",
    "ip6 and tcp dst port 443",
    "vlan 100 and vlan 200 and udp",
    "icmp or (arp and ether dst ff:ff:ff:ff:ff:ff)",
    "udp port 53",
    "ip[0] & 0xf != 5 or ether proto 0x88b5 or llc",
    "ip protochain 17",
    "ip6 protochain 6 or ip6 protochain 17",
    "ip6 protochain 17",
]

# Frames with long IPv6 header chains, filled in by extra_frames().
LONG_CHAINS = []

# Ancillary loads: at XDP every frame is inbound. Each with the expression
# libpcap selects the same frames with when reading a file (where it refuses
# inbound/outbound): None keeps all.
DIRECTION_CASES = [
    ("inbound", None),
    ("not outbound and udp", "udp"),
]

# `ip broadcast` takes the netmask of cap0's IPv4 address (a /15 here); the
# reference spells out the all-zeros / all-ones host part.
BROADCAST_ADDR = "198.18.0.1/15"
BROADCAST_REF = "ip and (ip[16:4] & 0x1ffff = 0 or ip[16:4] & 0x1ffff = 0x1ffff)"

# -F: a file with line breaks (and a tab) inside the expression.
# With tcpdump's '#' comments, which run to the end of their line.
FILTER_FILE_TEXT = "# DNS, HTTPS and VLAN 200\nudp port 53  # resolver\n  or (tcp\n\tand port 443)\nor vlan 200#tagged\n"
FILTER_FILE_EXPR = "udp port 53 or (tcp and port 443) or vlan 200"

JUMBO = 9014
JUMBO_EXPR = "ip[5000] == 0xab"
JUMBO_OFF = 14 + 5000      # frame offset of ip[5000] (untagged IPv4)


# --------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------

def extra_frames():
    """Hand-made frames that give each expression something to keep and to drop."""
    from scapy.layers.l2 import ARP, LLC, Dot1AD, Dot1Q, Dot3, Ether
    from scapy.layers.inet import ICMP, IP, IPOption, TCP, UDP
    from scapy.layers.inet6 import (ICMPv6EchoReply, ICMPv6EchoRequest, ICMPv6ND_NS,
                                    IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                    IPv6ExtHdrHopByHop, IPv6ExtHdrRouting)
    from scapy.layers.ipsec import AH
    from scapy.packet import Raw

    frames = []
    seq = [0x7000]

    def mac(n):
        return "02:00:5f:%02x:%02x:%02x" % ((n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)

    def add(pkt, size=0):
        """Append pkt with a unique marker payload, padded (as payload) to size."""
        seq[0] += 1
        tag = N.MARKER + struct.pack("!I", seq[0])
        base = len(bytes(pkt))
        room = max(size - base, len(tag))
        fill = (tag + bytes((seq[0] * 3 + i) & 0xff for i in range(room)))[:room]
        frames.append(bytes(pkt / Raw(load=fill)))

    def eth(dst="02:00:00:00:ca:01", **kw):
        return Ether(src=mac(seq[0] + 1), dst=dst, **kw)

    # IPv4 TCP: a handshake to port 80, other ports, other flags.
    a, b = "198.18.0.5", "198.19.0.1"
    add(eth() / IP(src=a, dst=b) / TCP(sport=40001, dport=80, flags="S"))
    add(eth() / IP(src=b, dst=a) / TCP(sport=80, dport=40001, flags="SA"))
    add(eth() / IP(src=a, dst=b) / TCP(sport=40001, dport=80, flags="A"), 1514)
    add(eth() / IP(src=a, dst=b) / TCP(sport=40001, dport=80, flags="PA"), 700)
    add(eth() / IP(src="198.18.1.10", dst="198.19.2.2") / TCP(sport=1500, dport=443, flags="S"))
    add(eth() / IP(src="198.19.2.2", dst="198.18.1.10") / TCP(sport=443, dport=1500, flags="SA"))
    add(eth() / IP(src="198.18.1.200", dst="198.19.2.3") / TCP(sport=2000, dport=22, flags="PA"), 600)
    add(eth() / IP(src="198.18.2.1", dst="198.18.1.1") / TCP(sport=2001, dport=8080, flags="FA"))
    add(eth() / IP(src="198.18.3.3", dst="198.19.3.3") / TCP(sport=999, dport=80, flags="R"), 1001)
    add(eth() / IP(src="198.18.3.4", dst="198.19.3.4") / TCP(sport=1000, dport=25, flags="S"), 999)
    # IPv4 with options (IHL 6): the port is found behind the options.
    add(eth() / IP(src="198.18.0.6", dst="198.18.0.5", options=[IPOption(b"\x01\x01\x01\x00")])
        / TCP(sport=41000, dport=80, flags="S"))
    # IPv6 TCP.
    a6, b6 = "2001:db8::5", "2001:db8:1::1"
    add(eth() / IPv6(src=a6, dst=b6) / TCP(sport=40002, dport=443, flags="S"))
    add(eth() / IPv6(src=b6, dst=a6) / TCP(sport=443, dport=40002, flags="SA"))
    add(eth() / IPv6(src=a6, dst=b6) / TCP(sport=40002, dport=443, flags="A"), 1514)
    add(eth() / IPv6(src=a6, dst=b6) / TCP(sport=40003, dport=80, flags="A"), 1200)
    add(eth() / IPv6(src=a6, dst=b6) / TCP(sport=1234, dport=53, flags="S"))
    # UDP, IPv4 and IPv6, port 53 / 9 / others.
    add(eth() / IP(src="198.18.0.7", dst="198.19.0.53") / UDP(sport=33333, dport=53), 80)
    add(eth() / IP(src="198.19.0.53", dst="198.18.0.7") / UDP(sport=53, dport=33333), 512)
    add(eth() / IP(src="198.18.0.5", dst="198.19.0.9") / UDP(sport=1000, dport=9), 1514)
    add(eth() / IP(src="198.18.1.5", dst="198.19.0.9") / UDP(sport=2000, dport=123), 300)
    add(eth() / IP(src="198.18.1.6", dst="198.19.0.9") / UDP(sport=2001, dport=5000), 501 + 14)
    add(eth() / IP(src="198.18.1.7", dst="198.19.0.9") / UDP(sport=999, dport=5001), 500 + 14)
    add(eth() / IPv6(src=a6, dst=b6) / UDP(sport=40000, dport=53), 100)
    add(eth() / IPv6(src=a6, dst=b6) / UDP(sport=1024, dport=5353), 101)
    add(eth("ff:ff:ff:ff:ff:ff") / IP(src="198.18.0.8", dst="198.19.255.255")
        / UDP(sport=68, dport=67), 342)
    # IPv4 fragments: the first one has the UDP header, the next one does not.
    add(eth() / IP(src="198.18.0.9", dst="198.19.0.53", id=77, flags="MF", frag=0)
        / UDP(sport=1500, dport=53, len=2000), 1514)
    add(eth() / IP(src="198.18.0.9", dst="198.19.0.53", id=77, frag=185, proto=17)
        / Raw(load=struct.pack("!HHHH", 1500, 53, 8, 0)), 600)
    # ICMP and ICMPv6.
    add(eth() / IP(src="198.18.0.5", dst="198.19.0.1") / ICMP(type=0, id=1, seq=1))
    add(eth() / IP(src="198.18.1.3", dst="198.19.0.1") / ICMP(type=3, code=3), 128)
    add(eth() / IPv6(src=a6, dst=b6) / ICMPv6EchoReply(id=2, seq=2), 1000)
    add(eth() / IPv6(src=b6, dst=a6) / ICMPv6EchoRequest(id=3, seq=3))
    add(eth("33:33:ff:00:00:05") / IPv6(src=b6, dst="ff02::1:ff00:5", hlim=255)
        / ICMPv6ND_NS(tgt=a6))
    # ARP: request (broadcast), reply (unicast), gratuitous.
    add(eth("ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=mac(1), psrc="198.18.0.5", pdst="198.18.0.6"))
    add(eth() / ARP(op=2, hwsrc=mac(2), psrc="198.18.0.6", hwdst=mac(1), pdst="198.18.0.5"))
    add(eth("ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=mac(3), psrc="198.18.1.9", pdst="198.18.1.9"), 64)
    # 802.1Q VLAN 100 and 200.
    add(eth() / Dot1Q(vlan=100) / IP(src="198.18.0.10", dst="198.19.0.53") / UDP(sport=3000, dport=53))
    add(eth() / Dot1Q(vlan=100) / IP(src="198.18.0.5", dst="198.19.0.80")
        / TCP(sport=3001, dport=80, flags="S"), 800)
    add(eth() / Dot1Q(vlan=200) / IP(src="198.18.1.11", dst="198.19.0.9") / UDP(sport=3002, dport=9), 1514)
    add(eth() / Dot1Q(vlan=200) / IPv6(src=a6, dst=b6) / UDP(sport=3003, dport=53))
    add(eth("ff:ff:ff:ff:ff:ff") / Dot1Q(vlan=100) / ARP(op=1, hwsrc=mac(4), psrc="198.18.0.11",
                                                      pdst="198.18.0.12"))
    add(eth() / Dot1Q(vlan=200, prio=5) / IP(src="198.18.0.12", dst="198.19.0.2") / ICMP(), 90)
    # QinQ: 802.1ad outer 100, inner 200; 0x8100 outer 100 inner 200; and the reverse.
    add(eth() / Dot1AD(vlan=100) / Dot1Q(vlan=200) / IP(src="198.18.0.13", dst="198.19.0.53")
        / UDP(sport=3004, dport=53))
    add(eth() / Dot1Q(vlan=100) / Dot1Q(vlan=200) / IP(src="198.18.1.14", dst="198.19.0.9")
        / UDP(sport=3005, dport=9), 1000)
    add(eth() / Dot1Q(vlan=200) / Dot1Q(vlan=100) / IP(src="198.18.0.15", dst="198.19.0.80")
        / TCP(sport=1999, dport=80, flags="S"))
    add(eth() / Dot1Q(vlan=100) / Dot1Q(vlan=200) / IPv6(src=a6, dst=b6) / TCP(sport=3006, dport=443,
                                                                              flags="SA"))
    # Neither IPv4 nor IPv6 nor ARP.
    add(eth(type=0x88b5), 60)
    add(eth("ff:ff:ff:ff:ff:ff", type=0x88b5), 1514)
    add(Dot3(src=mac(5), dst="02:00:00:00:ca:01") / LLC(dsap=0x42, ssap=0x42, ctrl=3), 60)
    add(eth(type=0x86dd - 1), 200)
    # Header chains for protochain: IPv6 extension headers, AH in IPv4.
    add(eth() / IPv6(src=a6, dst=b6) / IPv6ExtHdrHopByHop() / UDP(sport=3010, dport=53), 120)
    add(eth() / IPv6(src=a6, dst=b6) / IPv6ExtHdrDestOpt() / IPv6ExtHdrFragment(nh=6)
        / TCP(sport=3011, dport=80, flags="S"))
    add(eth() / IPv6(src=a6, dst=b6) / IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting()
        / IPv6ExtHdrDestOpt() / UDP(sport=3012, dport=9), 300)
    add(eth() / IP(src="198.18.0.16", dst="198.19.0.9") / AH(nh=17, payloadlen=4, icv=b"\0" * 12)
        / UDP(sport=3013, dport=9), 200)
    add(eth() / IP(src="198.18.0.17", dst="198.19.0.9") / AH(nh=6, payloadlen=4, icv=b"\0" * 12)
        / TCP(sport=3014, dport=80, flags="S"))
    # Long chains: 100 destination-options headers before UDP, and 175 (the
    # most a 1514-byte frame holds) before TCP.
    for count, l4 in ((100, UDP(sport=3015, dport=9)), (175, TCP(sport=3016, dport=80, flags="S"))):
        chain = IPv6(src=a6, dst=b6)
        for _ in range(count):
            chain = chain / IPv6ExtHdrDestOpt()
        add(eth() / chain / l4)
        LONG_CHAINS.append(frames[-1])

    # Frames cut short: every load past the end must reject, as in libpcap.
    def cut(pkt, n):
        frames.append(bytes(pkt)[:n])
    cut(eth() / IP(src="198.18.0.5", dst="198.19.0.80", id=901) / TCP(sport=1500, dport=80, flags="S"), 38)
    cut(eth() / IP(src="198.18.0.5", dst="198.19.0.53", id=902) / UDP(sport=1500, dport=53), 36)
    cut(eth() / IP(src="198.18.1.1", dst="198.19.0.53", id=903) / UDP(sport=1600, dport=53), 20)
    cut(eth() / IPv6(src=a6, dst=b6, fl=904) / TCP(sport=1500, dport=443, flags="S"), 56)
    cut(eth() / IPv6(src=a6, dst=b6, fl=905) / TCP(sport=1500, dport=443, flags="S"), 67)
    cut(eth() / Dot1Q(vlan=100) / IP(src="198.18.0.5", dst="198.19.0.53", id=906)
        / UDP(sport=1500, dport=53), 40)
    return frames


def build_all(tmp):
    base = N.build_corpus(os.path.join(tmp, "base.pcap"), CORPUS_BASE)
    frames = base + extra_frames()
    N.check(len(set(frames)) == len(frames), f"corpus of {len(frames)} unique frames")
    N.check(max(map(len, frames)) <= 1514, "no frame longer than 1514 bytes")
    path = os.path.join(tmp, "sent.pcap")
    N.write_frames(path, frames)
    N.check([r[2] for r in N.read_pcap(path)] == frames, "sent.pcap round-trips")
    # libpcap follows the long chains: the oracle keeps them, so the live
    # 'ip6 protochain 17' case below must capture the 100-header one.
    sel = os.path.join(tmp, "long_chains.pcap")
    N.run(["tcpdump", "-nn", "-r", path, "-w", sel, "ip6 protochain 17"])
    kept = [r[2] for r in N.read_pcap(sel)]
    N.check(LONG_CHAINS[0] in kept and LONG_CHAINS[1] not in kept,
            "tcpdump -r keeps the frame with 100 extension headers before UDP for 'ip6 protochain 17' "
            "(and not the one before TCP)")
    N.log(f"  info  corpus: {len(frames)} frames, {min(map(len, frames))}.."
          f"{max(map(len, frames))} bytes")
    return path, frames


def jumbo_frames():
    """IPv4/UDP frames for MTU 9000: 0xab at ip[5000] in half of the 9014-byte ones."""
    out = []
    for i in range(16):
        f = bytearray(N.jumbo_frame(0x61000 + i, JUMBO))
        f[JUMBO_OFF] = 0xab if i % 2 == 0 else 0x10 + i
        if i % 4 == 1:
            f[14 + 3000] = 0xab   # the right byte, wrong offset (inside the first 4 KiB)
        out.append(bytes(f))
    # Frames that end right before ip[5000] (load past the end: rejected) and at it.
    for i, size in enumerate((JUMBO_OFF, JUMBO_OFF + 1, JUMBO_OFF + 2, 6000, 1514, 60)):
        f = bytearray(N.jumbo_frame(0x62000 + i, size))
        if size > JUMBO_OFF:
            f[JUMBO_OFF] = 0xab
        if size >= JUMBO_OFF:
            f[JUMBO_OFF - 1] = 0xab
        out.append(bytes(f))
    return out


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------

def describe(frames, limit=8):
    from scapy.layers.l2 import Ether
    out = []
    for f in frames[:limit]:
        try:
            summ = Ether(f).summary()
        except Exception as e:  # scapy may not parse a cut frame
            summ = f"(scapy: {e!r})"
        out.append(f"len {len(f)}: {summ}\n          {f[:64].hex()}")
    if len(frames) > limit:
        out.append(f"... and {len(frames) - limit} more")
    return "\n".join(out)


def pcapng_filter_info(path):
    """(if_filter values of the IDBs, ISB dicts) from the pcapng block walker."""
    e, blocks, tail, problems = N.pcapng_walk(path)
    if problems or tail is not None:
        raise N.TestFailure(f"{path}: pcapng walk: problems {problems}, tail {tail}")
    filters, isbs = [], []
    for _off, btype, body in blocks:
        if btype == N.PCAPNG_IDB:
            val = None
            for code, v in N.parse_options(e, body[8:]):
                if code == 11:
                    val = v
            filters.append(val)
        elif btype == N.PCAPNG_ISB:
            isbs.append(N.parse_isb(e, body))
    return filters, isbs


def stderr_number(err_lines, what):
    vals = [N.stderr_count([l], what) for l in err_lines]
    vals = [v for v in vals if v is not None]
    return vals[-1] if vals else None


def run_case(lab, binary, tmp, sent_path, sent, label, xargs, tcpdump_filter, want_filter,
             normalize=False):
    """One capture with a filter; compare with libpcap's selection of sent_path."""
    idx = len(os.listdir(tmp))
    out = os.path.join(tmp, f"cap{idx}.pcapng")
    N.log(f"  --    {label}")
    x = lab.xdpcap(binary, ["-v", "-w", out] + xargs)
    x.wait_listening()
    lab.send(sent_path, CPU, gap_us=20)
    time.sleep(0.3)
    rc = x.stop(signal.SIGINT)
    ok = N.expect(rc == 0, f"{label}: xdpcap exits 0", f"exit status {rc}; stderr {x.err_lines}")

    sel = os.path.join(tmp, f"sel{idx}.pcap")
    N.run(["tcpdump", "-nn", "-r", sent_path, "-w", sel] + tcpdump_filter)
    want = [r[2] for r in N.read_pcap(sel)]
    if not os.path.isfile(out):
        N.expect(False, f"{label}: output file written")
        return len(want)
    got = [r[2] for r in N.tcpdump_convert(out, os.path.join(tmp, f"got{idx}.pcap"))]

    missing, extra, dup = N.multiset_diff(want, got)
    detail = []
    if missing:
        detail.append(f"{len(missing)} frame(s) libpcap keeps but xdpcap did not capture:\n"
                      + describe(missing))
    if extra:
        detail.append(f"{len(extra)} frame(s) captured that libpcap's filter rejects"
                      + (" (or never sent)" if any(f not in sent for f in extra) else "")
                      + ":\n" + describe(extra))
    if dup:
        detail.append(f"{len(dup)} frame(s) captured more than once:\n" + describe(dup))
    ok &= N.expect(not detail and len(got) == len(want),
                   f"{label}: captured frames == libpcap's selection ({len(want)} of "
                   f"{len(sent)}), byte-exact", "\n".join(detail)
                   or f"want {len(want)}, got {len(got)}")

    captured = stderr_number(x.err_lines, "captured")
    received = stderr_number(x.err_lines, "received by filter")
    seen = stderr_number(x.err_lines, "seen on the interface")
    ok &= N.expect((captured, received, seen) == (len(want), len(want), len(sent)),
                   f"{label}: stderr: {len(want)} captured, {len(want)} received by filter, "
                   f"{len(sent)} seen on the interface",
                   f"captured {captured}, received by filter {received}, seen {seen}\n"
                   + "\n".join(x.err_lines))

    filters, isbs = pcapng_filter_info(out)
    norm = (lambda s: " ".join(s.split())) if normalize else (lambda s: s)
    bad = [f for f in filters
           if f is None or f[:1] != b"\x00"
           or norm(f[1:].decode("utf-8", "replace")) != norm(want_filter)]
    ok &= N.expect(filters and not bad,
                   f"{label}: every IDB ({len(filters)}) has if_filter = libpcap string "
                   f"{want_filter!r}" + (" (whitespace normalized)" if normalize else ""),
                   [f if f is None else f[:1] + f[1:] for f in filters])
    acc = [i.get("filteraccept") for i in isbs]
    recv = [i.get("ifrecv") for i in isbs]
    ok &= N.expect(len(isbs) == len(filters) and None not in acc and None not in recv
                   and sum(acc) == len(want) and sum(recv) == len(sent),
                   f"{label}: one ISB per IDB, isb_filteraccept sums to {len(want)}, "
                   f"isb_ifrecv to {len(sent)}",
                   f"{len(isbs)} ISBs for {len(filters)} IDBs; filteraccept {acc}, ifrecv {recv}")
    if ok:
        N.log(f"  info  {label}: {len(want)} of {len(sent)} kept")
    return len(want)


def test(binary):
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp:
        sent_path, sent = build_all(tmp)
        caps = os.path.join(tmp, "caps")
        os.mkdir(caps)

        # -d: prints the compiled program, attaches nothing.
        cp = N.run([binary, "-d", "tcp port 80"], check_rc=False, timeout=10)
        N.expect(cp.returncode == 0 and cp.stdout.strip(),
                 "-d 'tcp port 80' exits 0 and prints the compiled filter",
                 f"exit {cp.returncode}; stdout {cp.stdout[:500]!r}; stderr {cp.stderr[:500]!r}")

        hooks = re.findall(r"^eBPF run at (.*) \(\d+ instructions\):$", cp.stdout, re.M)
        N.expect(hooks == ["XDP", "tc ingress, on a veth or where the driver refuses native XDP", "tc egress"],
                 "-d without -i: the eBPF of every hook a capture could take, each named", hooks)

        with N.NetLab() as lab:
            for args, want in ((["-i", lab.cap_if], ["tc ingress", "tc egress"]),
                               (["-i", lab.cap_if, "-Q", "in"], ["tc ingress"]),
                               (["-i", lab.cap_if, "-Q", "out", "--xdp-mode", "native"], ["tc egress"]),
                               (["-i", lab.cap_if, "--xdp-mode", "native"], ["XDP", "tc egress"]),
                               (["-i", lab.cap_if, "--drops"], ["tc ingress", "tc egress", "skb:kfree_skb (--drops)"])):
                cp = N.run(["ip", "netns", "exec", lab.cap_ns, binary, "-d"] + args + ["tcp port 80"],
                           check_rc=False, timeout=10)
                hooks = re.findall(r"^eBPF run at (.*) \(\d+ instructions\):$", cp.stdout, re.M)
                N.expect(cp.returncode == 0 and hooks == want,
                         f"-d {' '.join(args)}: the eBPF of {', '.join(want)}, each named", (hooks, cp.stderr))
            for expr in EXPRESSIONS:
                run_case(lab, binary, caps, sent_path, sent, repr(expr), [expr], [expr], expr)
            ffile = os.path.join(tmp, "filter.txt")
            with open(ffile, "w") as f:
                f.write(FILTER_FILE_TEXT)
            run_case(lab, binary, caps, sent_path, sent, f"-F {FILTER_FILE_TEXT!r}",
                     ["-F", ffile], ["-F", ffile], FILTER_FILE_EXPR, normalize=True)
            for expr, ref in DIRECTION_CASES:
                run_case(lab, binary, caps, sent_path, sent, repr(expr), [expr],
                         [ref] if ref else [], expr)
            N.run(["ip", "-n", lab.cap_ns, "addr", "add", BROADCAST_ADDR, "dev", lab.cap_if])
            n = run_case(lab, binary, caps, sent_path, sent, f"'ip broadcast' with {BROADCAST_ADDR}",
                         ["ip broadcast"], [BROADCAST_REF], "ip broadcast")
            N.expect(n > 0, f"some frames are IPv4 broadcasts in {BROADCAST_ADDR} ({n})")
            N.run(["ip", "-n", lab.cap_ns, "addr", "del", BROADCAST_ADDR, "dev", lab.cap_if])
            lab.assert_clean()
        N.log(f"  info  {len(EXPRESSIONS) + len(DIRECTION_CASES) + 2} filtered captures in "
              f"{time.monotonic() - t0:.1f} s")

        jpath = os.path.join(tmp, "jumbo.pcap")
        jframes = jumbo_frames()
        N.write_frames(jpath, jframes)
        with N.NetLab(mtu=9000) as lab:
            n = run_case(lab, binary, caps, jpath, jframes, f"MTU 9000: {JUMBO_EXPR!r}",
                         [JUMBO_EXPR], [JUMBO_EXPR], JUMBO_EXPR)
            # 8 of the 16 9014-byte frames, and those of 5015, 5016 and 6000 bytes.
            N.expect(n == 11, f"libpcap keeps the 11 jumbo frames with 0xab at ip[5000] ({n})")
            lab.assert_clean()
        N.log(f"  info  total {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    N.main(test)
