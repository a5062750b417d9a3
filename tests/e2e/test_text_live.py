#!/usr/bin/python3
"""End-to-end: every protocol the text view decodes, printed live as tcpdump prints it.

Usage (root): /usr/bin/python3 tests/e2e/test_text_live.py PATH/TO/xdpcap

The frames test_read.py and test_read_verbose.py compare through -r (ICMP and
ICMPv6 messages, ARP and RARP, 802.3 with LLC and STP, LLDP, GRE, IP in IP,
VXLAN, Geneve, MPLS, MPTCP, DNS, HTTP and SSH, IP options and extension
headers) are sent over the veth pair to a live `xdpcap --print -w FILE`, plain
and with -v, -vv, -e, -q and -S. Each packet's text, with -v's continuation
lines, must be byte for byte, timestamp included, what `tcpdump -n -r FILE`
prints for it: one interface, so no interface or direction column. The frames the man page names as printed differently (SCTP
quoted in ICMP, LLDP-MED with -v) are left out, as in test_read.py.
"""

import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402
import test_read as R  # noqa: E402
import test_read_verbose as V  # noqa: E402
import test_text_tcp as T  # noqa: E402

TS = r"\d\d:\d\d:\d\d\.\d{6}"


def corpus():
    app = [(T.ipv4(T.A4, T.B4, T.tcp(s, d, 0x18, 1000 + i, 2000, payload=p)), cut)
           for i, (s, d, p, cut) in enumerate(R.APPLICATION)]
    frames = (app + R.icmp_frames() + R.icmp6_frames() + R.arp_frames() + R.llc_frames() +
              R.encapsulation_frames() + R.lldp_frames() + R.mptcp_frames() + R.dns_frames() +
              [f for make in V.VERBOSE_FRAMES for f in make()])
    seen, whole = set(), []
    for frame, cut in frames:
        # Cuts are -r's (the file's snapshot length); a frame needs its
        # Ethernet header to be sent at all.
        if cut is None and len(frame) >= 14 and frame not in seen and not R.documented_exception(frame):
            seen.add(frame)
            whole.append(frame)
    return whole


def packets(lines, prefix):
    """One text per packet: its first line less `prefix` (a regex), and the
    continuation lines -v breaks it into."""
    out = []
    for line in lines:
        m = re.match(prefix, line)
        if m:
            out.append(line[m.end():])
        elif out:
            out[-1] += "\n" + line
        else:
            out.append("UNPARSED " + line)
    return out


def compare(lab, binary, tmp, pcap, count, flags):
    label = " ".join(flags) or "plain"
    x, path = T.capture_printed(lab, binary, tmp, pcap, count, label, flags)
    # A packet's first line starts with its time; nothing is cut from either.
    first_line = rf"^(?={TS} )"
    ours = packets(bytes(x.out).decode("utf-8", "replace").splitlines(), first_line)
    theirs = packets(N.run(["tcpdump", "-n", "-r", path] + flags).stdout.splitlines(), first_line)
    diff = [(i, o, t) for i, (o, t) in enumerate(zip(ours, theirs)) if o != t]
    N.expect(len(ours) == count and len(theirs) == count and not diff,
             f"{label}: each of the {count} packets printed live as tcpdump {' '.join(['-n'] + flags)} prints it",
             f"{len(ours)} ours, {len(theirs)} tcpdump's\n" +
             "\n".join(f"#{i}\n ours: {o}\n tcpd: {t}" for i, o, t in diff[:8]))


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        frames = corpus()
        pcap = os.path.join(tmp, "corpus.pcap")
        N.write_frames(pcap, frames)
        N.log(f"  info  {len(frames)} frames")
        for flags in ([], ["-v"], ["-vv"], ["-e"], ["-q"], ["-S"]):
            compare(lab, binary, tmp, pcap, len(frames), flags)


if __name__ == "__main__":
    N.main(test)
