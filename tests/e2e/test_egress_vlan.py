#!/usr/bin/python3
"""End-to-end: sent frames whose VLAN tag is held in skb metadata are captured
as they appear on the wire, and `vlan` filters see the tag.

Usage (root): /usr/bin/python3 tests/e2e/test_egress_vlan.py PATH/TO/xdpcap

A transmit-offloaded tag (an 802.1Q device on a veth) is the usual case, but
this kernel may lack 802.1Q devices, so the test builds the same state with
what every BPF kernel has: a second veth pair inj0 (capture namespace) <->
inj1 (generator namespace), and on inj0 a tc ingress program that redirects
every frame out of cap0.  The receive path moves a frame's 802.1Q tag into
skb metadata, so the tagged frames sent into inj1 leave cap0 with their tag
outside the packet data, exactly like offloaded ones.  tcpdump on gen0 (which
rebuilds the tag from the packet socket's auxiliary data) is the oracle.

Checks: xdpcap -Q out writes the tagged frames byte for byte as sent and as
tcpdump saw them on gen0, with their original length 4 bytes longer than the
untagged data; -s 40 keeps the first 40 wire bytes; the filters `vlan 100`,
`vlan 200` and `not vlan` keep exactly the frames of that tag.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

def tagged_frames():
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw
    frames = []
    for i in range(12):
        vid = 100 if i % 3 else 200
        eth = Ether(src="02:00:5e:00:77:%02x" % i, dst="02:00:00:00:9e:01")
        payload = IP(src=f"198.18.78.{i + 1}", dst="198.19.78.1") / UDP(sport=4000 + i, dport=9) / Raw(
            bytes([i]) * (20 + 37 * i))
        frames.append(bytes(eth / Dot1Q(vlan=vid, prio=i % 8) / payload))
    # Untagged ones too, so that "not vlan" has something to keep.
    for i in range(4):
        frames.append(bytes(Ether(src="02:00:5e:00:78:%02x" % i, dst="02:00:00:00:9e:01")
                            / IP(src="198.18.78.100", dst="198.19.78.1") / UDP(sport=5000 + i, dport=9)
                            / Raw(b"u" * (30 + i))))
    return frames


def setup_redirect(lab, tmp):
    N.run(["ip", "-n", lab.cap_ns, "link", "add", "inj0", "type", "veth", "peer", "name", "inj1",
           "netns", lab.gen_ns])
    for ns, dev in ((lab.cap_ns, "inj0"), (lab.gen_ns, "inj1")):
        N.NetLab.sysctl(ns, f"net.ipv6.conf.{dev}.disable_ipv6", "1")
        N.run(["ip", "-n", ns, "link", "set", "dev", dev, "up"])
    ifindex = N.run(["ip", "netns", "exec", lab.cap_ns, "cat", f"/sys/class/net/{lab.cap_if}/ifindex"]).stdout.strip()
    obj = N.build_bpf_object("redirect_to.bpf.c", tmp, [f"TARGET_IFINDEX={int(ifindex)}"])
    N.run(["ip", "netns", "exec", lab.cap_ns, "tc", "qdisc", "add", "dev", "inj0", "clsact"])
    N.run(["ip", "netns", "exec", lab.cap_ns, "tc", "filter", "add", "dev", "inj0", "ingress", "bpf", "da",
           "obj", obj, "sec", "tc"])


def send(lab, pcap):
    p = lab.popen(lab.gen_ns, [N.PYTHON, N.SENDER, "--iface", "inj1", "--cpu", str(N.cpus()[0]), "--pcap", pcap,
                               "--gap-us", "500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _out, err = p.communicate(timeout=30)
    lab.forget(p)
    N.check(p.returncode == 0, "frames sent into inj1", err)


def capture(lab, binary, tmp, name, pcap, args):
    out = os.path.join(tmp, name + ".pcapng")
    ref = os.path.join(tmp, name + ".oracle.pcap")
    oracle = lab.popen(lab.gen_ns, ["tcpdump", "-i", lab.gen_if, "-nn", "-U", "--immediate-mode", "-w", ref],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + 10
    while not os.path.exists(ref) or os.path.getsize(ref) < 24:
        N.check(oracle.poll() is None and time.monotonic() < end, "tcpdump oracle starts on gen0")
        time.sleep(0.05)
    time.sleep(0.3)
    x = lab.xdpcap(binary, ["-Q", "out", "-w", out] + args)
    x.wait_listening()
    send(lab, pcap)
    time.sleep(0.5)
    N.check(x.stop(signal.SIGINT) == 0, f"xdpcap {' '.join(args)} exits 0", x.stderr)
    oracle.send_signal(signal.SIGINT)
    oracle.wait(timeout=10)
    lab.forget(oracle)
    N.check_structure(out)
    return N.read_capture(out, tmp), [d for _c, _o, d in N.read_pcap(ref)]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        frames = tagged_frames()
        pcap = os.path.join(tmp, "tagged.pcap")
        N.write_frames(pcap, frames)
        setup_redirect(lab, tmp)

        rows, oracle = capture(lab, binary, tmp, "all", pcap, [])
        got = [r["data"] for r in rows]
        missing, extra, dup = N.multiset_diff(frames, oracle)
        N.check(not missing and not extra, "the oracle (tcpdump on gen0) saw the frames as sent, tags included",
                f"missing {N.describe_frames(missing)}\nextra {N.describe_frames(extra)}")
        missing, extra, dup = N.multiset_diff(frames, got)
        N.expect(not missing and not extra and not dup,
                 f"-Q out: the {len(frames)} frames leaving cap0 are captured byte for byte as on the wire, "
                 "VLAN tags back in place",
                 f"missing {len(missing)}: {N.describe_frames(missing)}\nextra {len(extra)}: "
                 f"{N.describe_frames(extra)}")
        N.expect(all(r["len"] == len(r["data"]) for r in rows), "original length = captured length (tag counted)")

        rows, _ = capture(lab, binary, tmp, "snap", pcap, ["-s", "40"])
        want = sorted(f[:40] for f in frames)
        N.expect(sorted(r["data"] for r in rows) == want and
                 sorted(r["len"] for r in rows) == sorted(len(f) for f in frames),
                 "-s 40: the first 40 wire bytes (tag included) and the full wire length")

        for expr, keep in (("vlan 100", lambda f: f[12:14] == b"\x81\x00" and (f[15] | (f[14] & 0xf) << 8) == 100),
                           ("vlan 200", lambda f: f[12:14] == b"\x81\x00" and (f[15] | (f[14] & 0xf) << 8) == 200),
                           ("not vlan", lambda f: f[12:14] != b"\x81\x00")):
            rows, _ = capture(lab, binary, tmp, expr.replace(" ", "_"), pcap, [expr])
            want = [f for f in frames if keep(f)]
            missing, extra, dup = N.multiset_diff(want, [r["data"] for r in rows])
            N.expect(not missing and not extra and not dup and want,
                     f"filter '{expr}' on egress keeps exactly the {len(want)} frames of that tag",
                     f"got {len(rows)}, missing {len(missing)}, extra {len(extra)}")


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("clang",))
