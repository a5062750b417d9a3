#!/usr/bin/python3
"""End-to-end: the decoded text view says what tcpdump says of the same frames.

Usage (root): /usr/bin/python3 tests/e2e/test_text_decode.py PATH/TO/xdpcap

Frames (the shared corpus: IPv4 UDP/TCP/ICMP, IPv6 UDP/ICMPv6, ARP, 802.1Q;
plus TCP SYN, SYN-ACK, FIN, RST, ARP reply, ICMP echo reply, ICMPv6 neighbor
solicitation, IPv6 extension headers, 802.1ad and an unknown ethertype) are
sent over the veth pair, and:

- plain text mode (with tcpdump's habitual -n): one line per frame, in order; for each, the fields tcpdump
  -n -r prints of the same frame (addresses, ports, TCP flags, seq, ack,
  win, lengths, ARP who-has/tell/is-at, ICMP type, id, seq) are the same;
- -e -XX -# with -w FILE --print: pcapng in FILE and the lines on stdout,
  numbered 1..N; the link-level fields match tcpdump -e and the hex+ASCII
  dump of every frame is byte for byte tcpdump -XX's;
- -q: TCP as "tcp LENGTH", as tcpdump -q;
- -s 20: no crash, exit 0, one line per frame, every line marks the cut
  ("[|...]");
- -l: one write(2) per packet line (seen with strace);
- --print with its reader gone: the file still gets every frame, exit 0;
- a ping to cap0: requests "In", replies "Out";
- -w - --print: refused in one line.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CPU = N.cpus()[0]
TS = r"\d\d:\d\d:\d\d\.\d{6}"

# (name, pattern): each is searched in tcpdump's line and in ours, and the
# groups must be equal. The first that matches tcpdump's line applies.
FIELDS = [
    ("tcp", re.compile(r"(IP6?) (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\], (?:seq (\d+)(?::(\d+))?, )?"
                       r"(?:ack (\d+), )?win (\d+)(?:, urg \d+)?(?:, options \[[^\]]*\])?, length (\d+)")),
    ("udp", re.compile(r"(IP6?) (\S+)\.(\d+) > (\S+)\.(\d+): UDP, length (\d+)")),
    ("icmp-echo", re.compile(r"(IP6?) (\S+) > (\S+): (ICMP6?),? (echo request|echo reply), id (\d+), seq (\d+), "
                             r"length (\d+)")),
    ("icmp6-nd", re.compile(r"IP6 (\S+) > (\S+): ICMP6, (neighbor solicitation, who has|neighbor advertisement, "
                            r"tgt is) (\S+), length (\d+)")),
    ("arp-request", re.compile(r"ARP, Request who-has (\S+)(?: \(\S+\))? tell (\S+), length (\d+)")),
    ("arp-reply", re.compile(r"ARP, Reply (\S+) is-at (\S+), length (\d+)")),
    ("ipv6-ext", re.compile(r"IP6 (\S+) > (\S+): (HBH )?(DSTOPT )?(\d+) > (\d+): UDP, length (\d+)")),
    ("unknown", re.compile(r"ethertype Unknown \((0x[0-9a-f]{4})\), length (\d+)")),
]
# With -e: the link-level header, in both.
LINK = re.compile(r"((?:[0-9a-f]{2}:){5}[0-9a-f]{2}) > ((?:[0-9a-f]{2}:){5}[0-9a-f]{2}), "
                  r"ethertype (\S+) \((0x[0-9a-f]{4})\), length (\d+)")
VLAN = re.compile(r"vlan (\d+), p (\d+), ethertype (\S+)")


def extra_frames():
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import ICMPv6ND_NS, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop
    from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
    from scapy.packet import Raw

    m1, m2 = "02:00:00:00:d1:01", "02:00:00:00:d1:02"
    a, b = "198.18.90.1", "198.18.90.2"
    a6, b6 = "2001:db8:90::1", "2001:db8:90::2"
    e = Ether(src=m1, dst=m2)
    frames = [
        e / IP(src=a, dst=b) / TCP(sport=41000, dport=5001, flags="S", seq=1000, window=64240),
        e / IP(src=b, dst=a) / TCP(sport=5001, dport=41000, flags="SA", seq=7000, ack=1001, window=65160),
        e / IP(src=a, dst=b) / TCP(sport=41000, dport=5001, flags="FA", seq=1001, ack=7001, window=502),
        e / IP(src=a, dst=b) / TCP(sport=41000, dport=5001, flags="R", seq=1002, window=0),
        e / IP(src=a, dst=b) / TCP(sport=41000, dport=5001, flags="PA", seq=1001, ack=7001, window=502)
        / Raw(b"some data\r\n"),
        e / ARP(op=2, hwsrc=m2, psrc=b, hwdst=m1, pdst=a),
        e / IP(src=b, dst=a) / ICMP(type=0, id=9, seq=4) / Raw(b"x" * 24),
        e / IPv6(src=a6, dst="ff02::1:ff00:2") / ICMPv6ND_NS(tgt=b6),
        e / IPv6(src=a6, dst=b6) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / UDP(sport=41001, dport=5002)
        / Raw(b"zz"),
        Ether(src=m1, dst=m2, type=0x88a8) / Dot1AD(vlan=300, prio=5) / Dot1Q(vlan=30, prio=1)
        / IP(src=a, dst=b) / UDP(sport=41002, dport=5003) / Raw(b"q" * 20),
        Ether(src=m1, dst=m2, type=0x88b5) / Raw(b"\x00" * 46),
    ]
    return [bytes(f) for f in frames]


def our_decode(line):
    """Our line without its time (and -# number): one interface, so nothing
    else comes before the decode."""
    m = re.match(rf"^(?:\s*\d+  )?{TS} (.*)$", line)
    return m.group(1) if m else None


def tcpdump_lines(path, flags):
    cp = N.run(["tcpdump", "-n", "-r", path] + flags)
    return cp.stdout


def packets_of(text):
    """tcpdump or our output split per packet: the first line and the rest."""
    packets = []
    for line in text.split("\n"):
        if line.startswith("\t") and packets:
            packets[-1][1].append(line)
        elif line:
            packets.append([line, []])
    return packets


def compare_fields(ours, theirs, what):
    """Per packet: the same kind and the same fields; every kind recognised."""
    N.expect(len(ours) == len(theirs), f"{what}: as many lines as tcpdump prints", (len(ours), len(theirs)))
    bad, unknown = [], []
    for i, (o, t) in enumerate(zip(ours, theirs)):
        t = t.split(" ", 1)[1]  # tcpdump's timestamp
        o = our_decode(o)
        if o is None:
            bad.append((i, "no prefix", o, t))
            continue
        kind = next(((name, p) for name, p in FIELDS if p.search(t)), None)
        if kind is None:
            unknown.append(t)
            continue
        mo, mt = kind[1].search(o), kind[1].search(t)
        if not mo or mo.groups() != mt.groups():
            bad.append((i, kind[0], o, t))
    N.expect(not unknown, f"{what}: tcpdump's every line is of a kind this test compares", unknown[:5])
    N.expect(not bad, f"{what}: every line has tcpdump's fields", "\n".join(map(repr, bad[:8])))


def capture(lab, binary, args, pcap, count, stdout=None):
    x = lab.xdpcap(binary, args + ["-c", str(count)], stdout=stdout)
    x.wait_listening()
    lab.send(pcap, CPU, gap_us=300)
    rc = x.wait(20)
    N.expect(rc == 0, f"{' '.join(args) or 'plain'}: exits 0 after -c {count}", (rc, x.err_lines[-3:]))
    return x


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, 42, seed=11) + extra_frames()
        N.write_frames(corpus, frames)
        count = len(frames)

        # Plain text mode against tcpdump -n -S of the frames sent.
        x = capture(lab, binary, ["-n"], corpus, count)
        # Both dump what they cannot decode (the unknown ethertype): first lines only.
        ours = [p[0] for p in packets_of(bytes(x.out).decode("utf-8", "replace"))]
        N.log(f"  info  first lines: {ours[:2]}")
        theirs = [p[0] for p in packets_of(tcpdump_lines(corpus, []))]
        compare_fields(ours, theirs, "plain")
        vlan_lines = [l for l in ours if VLAN.search(l)]
        N.expect(len(vlan_lines) == sum(1 for f in frames if f[12:14] in (b"\x81\x00", b"\x88\xa8")),
                 "every tagged frame shows its VLAN tag", vlan_lines[:3])

        # -e -XX -# with -w FILE --print: the lines on stdout, the frames in FILE.
        path = os.path.join(tmp, "print.pcapng")
        x = capture(lab, binary, ["-e", "-XX", "-#", "-w", path, "--print"], corpus, count)
        ours = packets_of(bytes(x.out).decode("utf-8", "replace"))
        theirs = packets_of(tcpdump_lines(path, ["-e", "-XX"]))
        N.expect(len(ours) == count and len(theirs) == count, "--print: one packet per frame on stdout and in FILE",
                 (len(ours), len(theirs)))
        numbers = [int(p[0][:5]) if p[0][:5].strip().isdigit() else None for p in ours]
        N.expect(numbers == list(range(1, count + 1)) and all(p[0][5:7] == "  " for p in ours),
                 "-#: packets numbered 1..N as '%5u  '", numbers[:5])
        links_bad = []
        for o, t in zip(ours, theirs):
            lo, lt = LINK.search(o[0]), LINK.search(t[0])
            if not lo or not lt or lo.groups() != lt.groups():
                links_bad.append((o[0], t[0]))
            elif lt.group(3).startswith("802.1Q") and [v.groups() for v in VLAN.finditer(o[0])] != \
                    [v.groups() for v in VLAN.finditer(t[0])]:
                links_bad.append((o[0], t[0]))
        N.expect(not links_bad, "-e: MAC addresses, ethertype, length and VLAN tags as tcpdump -e prints them",
                 "\n".join(map(repr, links_bad[:5])))
        dumps_bad = [(o, t) for o, t in zip(ours, theirs) if o[1] != t[1]]
        N.expect(not dumps_bad, "-XX: every dump byte for byte as tcpdump -XX's",
                 "\n".join(map(repr, dumps_bad[:2])))
        N.expect(N.capinfos_count(path) == count, "--print: FILE holds every frame", N.capinfos_count(path))

        # -q: tcpdump's quick output.
        x = lab.xdpcap(binary, ["-q", "-c", str(count)])
        x.wait_listening()  # -q keeps the start line, as tcpdump -q
        lab.send(corpus, CPU, gap_us=300)
        rc = x.wait(20)
        N.expect(rc == 0, "-q: exits 0", (rc, x.err_lines[-3:]))
        ours = bytes(x.out).decode("utf-8", "replace").splitlines()
        theirs = [p[0].split(" ", 1)[1] for p in packets_of(tcpdump_lines(corpus, ["-q"]))]
        quick_bad = []
        for o, t in zip(ours, theirs):
            mt = re.search(r"(\S+ > \S+: tcp \d+)", t)
            if mt and mt.group(1) not in o:
                quick_bad.append((o, t))
        N.expect(len(ours) == count and not quick_bad and any(" tcp " in l for l in ours),
                 "-q: TCP as 'tcp LENGTH', as tcpdump -q", "\n".join(map(repr, quick_bad[:5])) or len(ours))

        # -s 20: every frame cut inside its network header.
        x = capture(lab, binary, ["-s", "20"], corpus, count)
        ours = [p[0] for p in packets_of(bytes(x.out).decode("utf-8", "replace"))]
        N.log(f"  info  -s 20: {ours[:3]}")
        N.expect(len(ours) == count, "-s 20: one line per frame", len(ours))
        decoded = [our_decode(l) or "" for l in ours]
        # The unknown ethertype is dumped (its captured 6 bytes), as tcpdump does.
        unmarked = [l for l, d in zip(ours, decoded)
                    if not re.search(r"\[\|\w+\]$", d) and "ethertype Unknown" not in d]
        N.expect(not unmarked, "-s 20: every line ends with a truncation mark [|proto]", unmarked[:5])

        # --print whose reader is gone before the first line: the lines
        # stop, the file still gets every frame, exit 0 without a complaint.
        path = os.path.join(tmp, "gone.pcapng")
        x = lab.xdpcap(binary, ["-w", path, "--print", "-c", str(count)], stdout=subprocess.PIPE)
        x.wait_listening()
        x.stdout_pipe.close()
        lab.send(corpus, CPU, gap_us=300)
        rc = x.wait(20)
        N.expect(rc == 0 and not N.messages(x.err_lines),
                 "--print, reader gone: exit 0, no error line", (rc, x.err_lines))
        N.expect(N.capinfos_count(path) == count, "--print, reader gone: FILE still holds every frame",
                 N.capinfos_count(path))

        # Real traffic both ways, with --print-cpu: a ping's requests come In,
        # its replies go Out, each line naming its CPU interface.
        N.run(["ip", "-n", lab.cap_ns, "addr", "add", "198.18.91.1/24", "dev", lab.cap_if])
        N.run(["ip", "-n", lab.gen_ns, "addr", "add", "198.18.91.2/24", "dev", lab.gen_if])
        x = lab.xdpcap(binary, ["-c", "4", "--print-cpu", "icmp"])
        x.wait_listening()
        N.run(["ip", "netns", "exec", lab.gen_ns, "ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.91.1"])
        rc = x.wait(20)
        lines = bytes(x.out).decode("utf-8", "replace").splitlines()
        ins = [l for l in lines if re.search(rf"^{TS} cap0@cpu\d+ In IP 198\.18\.91\.2 > 198\.18\.91\.1: ICMP echo request, id \d+, "
                                             r"seq \d+, length 64$", l)]
        outs = [l for l in lines if re.search(rf"^{TS} cap0@cpu\d+ Out IP 198\.18\.91\.1 > 198\.18\.91\.2: ICMP echo reply, id \d+, "
                                              r"seq \d+, length 64$", l)]
        N.expect(rc == 0 and len(ins) == 2 and len(outs) == 2,
                 "ping: two 'In ... echo request' and two 'Out ... echo reply' lines", lines)

        # The default format, tcpdump beside it on the same pings: one
        # interface, so no interface or direction column; every line equals
        # tcpdump's but for the time, which each tool takes on its own.
        t = lab.popen(lab.cap_ns, ["tcpdump", "-i", lab.cap_if, "-n", "-l", "--immediate-mode", "-c", "4", "icmp"],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        x = lab.xdpcap(binary, ["-c", "4", "icmp"])
        x.wait_listening()
        time.sleep(N.scaled(1.0))  # tcpdump says nothing when it is ready
        N.run(["ip", "netns", "exec", lab.gen_ns, "ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.91.1"])
        rc = x.wait(20)
        try:
            theirs_out, _ = t.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            t.kill()
            theirs_out, _ = t.communicate()
        ours = bytes(x.out).decode("utf-8", "replace").splitlines()
        theirs = theirs_out.splitlines()
        after_time = lambda ls: [re.sub(rf"^{TS} ", "", l) for l in ls]
        N.expect(rc == 0 and len(ours) == 4 and all(re.match(rf"^{TS} IP ", l) for l in ours)
                 and after_time(ours) == after_time(theirs),
                 "ping, default format: each line is tcpdump's, byte for byte after the time", (ours, theirs))

        # -L: tcpdump's lines, the one link type xdpcap captures.
        # Both write them on standard error.
        ours_l = N.run(["ip", "netns", "exec", lab.cap_ns, binary, "-L", "-i", lab.cap_if])
        theirs_l = N.run(["ip", "netns", "exec", lab.cap_ns, "tcpdump", "-L", "-i", lab.cap_if])
        N.expect(ours_l.stdout == theirs_l.stdout == "" and ours_l.stderr.splitlines() ==
                 theirs_l.stderr.splitlines()[:2] and ours_l.stderr.splitlines()[1:] == ["  EN10MB (Ethernet)"],
                 "-L: tcpdump -L's heading and its EN10MB line", (ours_l.stderr, theirs_l.stderr))

        # --immediate-mode -l -K -N: taken, and the lines are the same.
        x = lab.xdpcap(binary, ["--immediate-mode", "-l", "-K", "-N", "-c", "4", "icmp"])
        x.wait_listening()
        N.run(["ip", "netns", "exec", lab.gen_ns, "ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.91.1"])
        rc = x.wait(20)
        again = bytes(x.out).decode("utf-8", "replace").splitlines()
        ping_id = lambda ls: [re.sub(r"id \d+,", "id ID,", l) for l in after_time(ls)]
        N.expect(rc == 0 and ping_id(again) == ping_id(ours),
                 "--immediate-mode -l -K -N: the same four lines", (again, ours))

        # -l: every packet line is its own write(2) on standard output.
        few = os.path.join(tmp, "few.pcap")
        N.write_frames(few, frames[:10])
        trace = os.path.join(tmp, "writes.strace")
        x = N.Xdpcap(lab, None, [], argv=["strace", "-f", "-qq", "-e", "trace=write", "-s", "4096", "-o", trace,
                                          binary, "-i", lab.cap_if, "-l", "-c", "10"])
        x.wait_listening()
        lab.send(few, CPU, gap_us=300)
        rc = x.wait(20)
        with open(trace) as f:
            writes = [m.group(1) for m in re.finditer(r'write\(1, "(.*)"\.{0,3}, \d+\) = \d+', f.read())]
        N.expect(rc == 0 and len(writes) == 10 and all(w.endswith("\\n") and w.count("\\n") == 1 for w in writes),
                 "-l: ten packets, ten writes of one line each", (rc, writes[:3], len(writes)))

        # -w - --print: stdout carries pcapng.
        rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if, "-w", "-", "--print"])
        N.expect(rc == 1 and len(err) == 1 and err[0].startswith("xdpcap: ") and "-w -" in err[0],
                 "-w - --print: refused in one line, exit 1", (rc, err))
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("strace",))
