#!/usr/bin/python3
"""End-to-end: received frames whose VLAN tag the NIC took out (rx-vlan-offload)
are captured as the wire carried them, or the loss is said in one line.

Usage (root): /usr/bin/python3 tests/e2e/test_rx_vlan.py PATH/TO/xdpcap

The state of a NIC with rx-vlan-offload on is built as in test_egress_vlan.py:
tagged frames sent into inj1 are received on inj0, whose receive path moves
the outer tag into skb metadata, and a tc program redirects them out of cap0,
so they reach gen0 with the tag outside the frame.  xdpcap captures on gen0
(-Q in).  tcpdump on gen0, which puts the tag back from the packet socket's
auxiliary data, is the oracle.

On kernels with bpf_xdp_metadata_rx_vlan_tag (6.8; veth implements it):
byte for byte as sent (802.1Q and 802.1ad outer tags), the original length
counting the tag, snapshot lengths cutting before, inside and after the tag,
and filters that see the tag (vlan 100, vlan 200, not vlan, QinQ's outer tag,
offsets after the tag), each keeping exactly what `tcpdump -r` keeps of the
oracle's file; no warning; the interface description says the tags are restored; and
--xdp-mode generic warns.  On kernels without it (Debian's 6.1): the one
warning line naming the interface and the remedy (for a veth, its peer's
txvlan), the frames without their outer tag, and nothing else changed.  On
both: with the peer's tx-vlan-offload off, the frames arrive whole.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402
import test_egress_vlan as E  # noqa: E402


def corpus():
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
    from scapy.packet import Raw
    frames = E.tagged_frames()
    # QinQ: the outer 802.1ad tag goes into metadata, the inner stays.
    for i in range(3):
        frames.append(bytes(Ether(src="02:00:5e:00:79:%02x" % i, dst="02:00:00:00:9e:01")
                            / Dot1AD(vlan=300 + i, prio=5) / Dot1Q(vlan=100) / IP(src="198.18.79.1", dst="198.19.79.1")
                            / UDP(sport=6000 + i, dport=9) / Raw(b"q" * (25 + i))))
    return frames


def untagged(frame):
    """The frame without its outer tag, as an XDP program sees it without metadata."""
    if frame[12:14] in (b"\x81\x00", b"\x88\xa8"):
        return frame[:12] + frame[16:]
    return frame


def kernel_has_rx_vlan_kfunc():
    with open("/proc/kallsyms") as f:
        return any(line.rstrip().endswith(" bpf_xdp_metadata_rx_vlan_tag") for line in f)


# gen0's peer, cap0, is in the capture namespace: named by its ifindex.
PEER_REMEDY = "'ethtool -K PEER txvlan off' on its peer (ifindex "


def warning_lines(x):
    return [l for l in x.err_lines if "VLAN tags of frames received on gen0 will be missing" in l]


def on_gen0(lab, binary, args):
    """xdpcap -i gen0 ARGS in the generator's namespace, where the frames arrive."""
    return N.Xdpcap(lab, binary, None, ns=lab.gen_ns, argv=[binary, "-i", lab.gen_if] + list(args))


def capture(lab, binary, tmp, name, pcap, args):
    out = os.path.join(tmp, name + ".pcapng")
    ref = os.path.join(tmp, name + ".oracle.pcap")
    oracle = lab.popen(lab.gen_ns, ["tcpdump", "-i", lab.gen_if, "-nn", "-U", "--immediate-mode", "-Q", "in",
                                    "-w", ref], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + N.scaled(10)
    while not os.path.exists(ref) or os.path.getsize(ref) < 24:
        N.check(oracle.poll() is None and time.monotonic() < end, "tcpdump oracle starts on gen0")
        time.sleep(0.05)
    time.sleep(0.3)
    # Native: auto picks generic mode on a veth (the default's line is checked below).
    x = on_gen0(lab, binary, ["-Q", "in", "--xdp-mode", "native", "-w", out] + args)
    x.wait_listening()
    E.send(lab, pcap)
    time.sleep(0.5)
    N.check(x.stop(signal.SIGINT) == 0, f"xdpcap {' '.join(args)} exits 0", x.stderr)
    oracle.send_signal(signal.SIGINT)
    oracle.wait(timeout=10)
    lab.forget(oracle)
    N.check_structure(out)
    return x, out, N.read_capture(out, tmp), [d for _c, _o, d in N.read_pcap(ref)]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        frames = corpus()
        pcap = os.path.join(tmp, "tagged.pcap")
        N.write_frames(pcap, frames)
        E.setup_redirect(lab, tmp)
        restores = kernel_has_rx_vlan_kfunc()
        N.log(f"  note  kernel has bpf_xdp_metadata_rx_vlan_tag: {restores}")

        x, out, rows, oracle = capture(lab, binary, tmp, "all", pcap, [])
        missing, extra, _dup = N.multiset_diff(frames, oracle)
        N.check(not missing and not extra, "the oracle (tcpdump on gen0) saw the frames as sent, tags included",
                f"missing {N.describe_frames(missing)}\nextra {N.describe_frames(extra)}")
        got = [r["data"] for r in rows]
        descriptions = [i["description"] for i in N.pcapng_idbs(out)]
        if restores:
            N.check_exact(frames, got, f"the {len(frames)} received frames are captured byte for byte as on the "
                                       "wire, 802.1Q and 802.1ad tags back in place")
            N.expect(all(r["len"] == len(r["data"]) for r in rows), "original length = captured length (tag counted)")
            N.expect(not warning_lines(x), "no warning about missing VLAN tags", x.stderr)
            N.expect(all("received VLAN tags restored from the NIC's RX metadata" in d for d in descriptions),
                     "the interface descriptions say the tags are restored", descriptions)
        else:
            N.check_exact([untagged(f) for f in frames], got,
                          "without the kfunc: the frames as XDP sees them, outer tag missing, nothing else changed")
            lines = warning_lines(x)
            N.expect(len(lines) == 1 and PEER_REMEDY in lines[0] and "Linux 6.8" in lines[0],
                     "one warning line names gen0, the reason and the remedy (its peer's txvlan)", x.stderr)
            N.expect(all("received VLAN tags missing (the peer's tx-vlan-offload on;" in d for d in descriptions),
                     "the interface descriptions say the tags are missing", descriptions)

        # Cuts before, inside and just after the tag, and further on.
        for snap in (12, 14, 16, 40):
            _x, _o, rows, _ = capture(lab, binary, tmp, f"snap{snap}", pcap, ["-s", str(snap)])
            view = frames if restores else [untagged(f) for f in frames]
            N.expect(sorted(r["data"] for r in rows) == sorted(f[:snap] for f in view) and
                     sorted(r["len"] for r in rows) == sorted(len(f) for f in view),
                     f"-s {snap}: the first {snap} wire bytes and the full wire length")

        if restores:
            vid = lambda f: (f[15] | (f[14] & 0xf) << 8)  # noqa: E731
            for expr, keep in (("vlan 100", lambda f: f[12:14] == b"\x81\x00" and vid(f) == 100),
                               ("vlan 200", lambda f: f[12:14] == b"\x81\x00" and vid(f) == 200),
                               ("not vlan", lambda f: f[12:14] not in (b"\x81\x00", b"\x88\xa8")),
                               ("vlan 301", lambda f: f[12:14] == b"\x88\xa8" and vid(f) == 301),
                               ("vlan and udp src port 4004", lambda f: f[12:14] == b"\x81\x00" and
                                f[38:40] == (4004).to_bytes(2, "big"))):
                _x, _o, rows, _ = capture(lab, binary, tmp, expr.replace(" ", "_"), pcap, [expr])
                # The oracle: libpcap's filter over the frames as tcpdump
                # captured them, tags in place; the predicate says which.
                kept = os.path.join(tmp, expr.replace(" ", "_") + ".kept.pcap")
                N.run(["tcpdump", "-r", os.path.join(tmp, "all.oracle.pcap"), "-w", kept, expr])
                want = [d for _c, _o, d in N.read_pcap(kept)]
                N.check(sorted(want) == sorted(f for f in frames if keep(f)) and want,
                        f"tcpdump -r keeps for '{expr}' the frames the test means", len(want))
                missing, extra, dup = N.multiset_diff(want, [r["data"] for r in rows])
                N.expect(not missing and not extra and not dup,
                         f"filter '{expr}' sees the received frames as on the wire: exactly the {len(want)} "
                         "tcpdump -r keeps", f"got {len(rows)}, missing {len(missing)}, extra {len(extra)}")

        # Generic mode cannot read the NIC's metadata: it says so at start.
        g = on_gen0(lab, binary, ["-Q", "in", "--xdp-mode", "generic", "-w", os.path.join(tmp, "generic.pcapng")])
        g.wait_listening()
        N.check(g.stop(signal.SIGINT) == 0, "xdpcap --xdp-mode generic exits 0", g.stderr)
        lines = warning_lines(g)
        N.expect(len(lines) == 1 and "generic XDP mode" in lines[0] and PEER_REMEDY in lines[0],
                 "--xdp-mode generic: one warning line with the reason and the remedy", g.stderr)

        # The remedy the line names: with the peer's tx-vlan-offload off, the
        # peer puts the tag into the frame as it sends (here the frames tc
        # redirects out of cap0), and gen0 receives them whole.
        N.run(["ip", "netns", "exec", lab.cap_ns, "ethtool", "-K", lab.cap_if, "txvlan", "off",
               "tx-vlan-stag-hw-insert", "off"])
        _x, _o, rows, _ = capture(lab, binary, tmp, "peer_txvlan_off", pcap, [])
        N.check_exact(frames, [r["data"] for r in rows],
                      "with the peer's txvlan off, every frame is captured with its tags, on any kernel")
        N.run(["ip", "netns", "exec", lab.cap_ns, "ethtool", "-K", lab.cap_if, "txvlan", "on",
               "tx-vlan-stag-hw-insert", "on"])

        # The default on a veth is generic mode: one line says what that costs,
        # instead of the VLAN warning, and the frames come untagged.
        d = on_gen0(lab, binary, ["-Q", "in", "-w", os.path.join(tmp, "default.pcapng")])
        d.wait_listening()
        E.send(lab, pcap)
        time.sleep(0.5)
        N.check(d.stop(signal.SIGINT) == 0, "xdpcap with the default mode exits 0", d.stderr)
        veth_lines = [l for l in d.err_lines if N.VETH_GENERIC_WARNING.match(l)]
        N.expect(len(veth_lines) == 1 and veth_lines[0].startswith("xdpcap: warning: gen0 is a veth: ") and
                 not warning_lines(d),
                 "default mode on a veth: one line names gen0, the missing tags, the tc-redirected frames and "
                 "--xdp-mode native, and no second VLAN warning", d.stderr)
        N.expect(len(N.messages(d.err_lines)) == 0, "no other xdpcap line", d.stderr)
        # These frames reach gen0 through a tc BPF redirect. Generic XDP skips
        # frames marked as redirected; 6.18 marks them, Debian's 6.1 does not,
        # and there they come without their tags.
        seen = [r["data"] for r in N.read_capture(os.path.join(tmp, "default.pcapng"), tmp)]
        if restores:
            N.expect(seen == [], "generic mode does not see frames a tc program redirects into the veth "
                     "(the line says they can be missed)", f"{len(seen)} seen")
        else:
            missing, extra, dup = N.multiset_diff([untagged(f) for f in frames], seen)
            N.expect(not missing and not extra and not dup,
                     "on this kernel generic mode sees the tc-redirected frames, without their tags",
                     f"missing {len(missing)}, extra {len(extra)}, dup {len(dup)}")

        # -D says, per interface, whether received tags are kept.
        listing = N.run(["ip", "netns", "exec", lab.gen_ns, binary, "-D"]).stdout
        line = next((l for l in listing.splitlines() if ".gen0 " in l), "")
        want = ("received VLAN tags: missing (generic XDP mode, which leaves a veth's traffic as it was; "
                "restored with --xdp-mode native)") if restores else "received VLAN tags: missing"
        N.expect(want in line, f"-D shows for gen0 '{want}'", listing)


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("clang",))
