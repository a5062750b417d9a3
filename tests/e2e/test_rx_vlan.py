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

Default mode (a veth's received frames taken at tc ingress, the tag put back
from the skb), on every kernel (tcx, or clsact on Debian's 6.1): byte for
byte as sent (802.1Q and 802.1ad outer tags, QinQ), although tc redirected
them into the veth; the original length counting the tag; snapshot lengths
cutting before, inside and after the tag; filters that see the tag (vlan
100, vlan 200, not vlan, QinQ's outer tag, offsets after the tag), each
keeping exactly what `tcpdump -r` keeps of the oracle's file; no warning; the
interface description names tc ingress and says no tag is missing; no XDP
program on gen0; -D says "received at: tc ingress" and "received VLAN tags:
restored from the skb (tc ingress)".

--xdp-mode native, on kernels with bpf_xdp_metadata_rx_vlan_tag (6.8; veth
implements it): the tags restored, no warning, the description says so; on
kernels without it: the one warning line naming the interface and the remedy
(for a veth, its peer's txvlan), the frames without their outer tag, and
nothing else changed.  --xdp-mode generic: the warning line; it misses the
tc-redirected frames where the kernel marks them redirected (6.4 on), and
sees them without their tags before.  With the peer's tx-vlan-offload off,
the frames arrive whole with --xdp-mode native.
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


def kernel_at_least(major, minor):
    version = tuple(int(v) for v in os.uname().release.split("-")[0].split(".")[:2])
    return version >= (major, minor)


# gen0's peer, cap0, is in the capture namespace: named by its ifindex.
PEER_REMEDY = "'ethtool -K PEER txvlan off' on its peer (ifindex "


def warning_lines(x):
    return [l for l in x.err_lines if "received VLAN tags missing on gen0 " in l]


def on_gen0(lab, binary, args):
    """xdpcap -i gen0 ARGS in the generator's namespace, where the frames arrive."""
    return N.Xdpcap(lab, binary, None, ns=lab.gen_ns, argv=[binary, "-i", lab.gen_if] + list(args))


def capture(lab, binary, tmp, name, pcap, args, oracle=False, while_running=None):
    """xdpcap -i gen0 -Q in ARGS while the corpus is sent; with oracle, tcpdump on gen0 beside it."""
    out = os.path.join(tmp, name + ".pcapng")
    ref = os.path.join(tmp, name + ".oracle.pcap")
    if oracle:
        t = lab.popen(lab.gen_ns, ["tcpdump", "-i", lab.gen_if, "-nn", "-U", "--immediate-mode", "-Q", "in",
                                   "-w", ref], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        end = time.monotonic() + N.scaled(10)
        while not os.path.exists(ref) or os.path.getsize(ref) < 24:
            N.check(t.poll() is None and time.monotonic() < end, "tcpdump oracle starts on gen0")
            time.sleep(0.05)
        time.sleep(0.3)
    x = on_gen0(lab, binary, ["-Q", "in", "-w", out] + args)
    x.wait_listening()
    if while_running:
        while_running(x)
    E.send(lab, pcap)
    time.sleep(0.5)
    N.check(x.stop(signal.SIGINT) == 0, f"xdpcap {' '.join(args)} exits 0", x.stderr)
    if oracle:
        t.send_signal(signal.SIGINT)
        t.wait(timeout=10)
        lab.forget(t)
    N.check_structure(out)
    rows = N.read_capture(out, tmp)
    return x, out, rows, [d for _c, _o, d in N.read_pcap(ref)] if oracle else None


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        frames = corpus()
        pcap = os.path.join(tmp, "tagged.pcap")
        N.write_frames(pcap, frames)
        E.setup_redirect(lab, tmp)
        restores = kernel_has_rx_vlan_kfunc()
        tcx = kernel_at_least(6, 6)
        N.log(f"  note  kernel has bpf_xdp_metadata_rx_vlan_tag: {restores}; tcx: {tcx}")

        # -- Default mode: tc ingress, the tag from the skb, on every kernel.
        def hooks(x):
            held = N.held_programs(x.proc.pid)
            N.expect("xdpcap_ingress" in held.values(), "while capturing, xdpcap holds its tc ingress program",
                     held)
            N.expect("xdp" not in lab.link_info(lab.gen_ns, lab.gen_if), "no XDP program on gen0 by default",
                     lab.link_info(lab.gen_ns, lab.gen_if).get("xdp"))
            if not tcx:
                clsact = lab.tc_filters(lab.gen_if, lab.gen_ns)
                N.expect(len(clsact) == 1 and clsact[0].startswith("ingress: "),
                         "without tcx: one xdpcap clsact filter, at gen0's ingress", clsact)

        x, out, rows, oracle = capture(lab, binary, tmp, "all", pcap, [], oracle=True, while_running=hooks)
        missing, extra, _dup = N.multiset_diff(frames, oracle)
        N.check(not missing and not extra, "the oracle (tcpdump on gen0) saw the frames as sent, tags included",
                f"missing {N.describe_frames(missing)}\nextra {N.describe_frames(extra)}")
        N.check_exact(frames, [r["data"] for r in rows],
                      f"default mode: the {len(frames)} received frames, which tc redirected into gen0, are "
                      "captured byte for byte as on the wire, 802.1Q and 802.1ad tags back in place")
        N.expect(all(r["len"] == len(r["data"]) for r in rows), "original length = captured length (tag counted)")
        N.expect(not [l for l in x.err_lines if l.startswith("xdpcap:")], "no warning, no xdpcap line at all",
                 x.stderr)
        hook = ("tcx" if tcx else "clsact") + " ingress, "
        descriptions = [i["description"] for i in N.pcapng_idbs(out)]
        N.expect(descriptions and all(hook in d and "XDP" not in d and "missing" not in d for d in descriptions),
                 f"the interface descriptions name '{hook.rstrip(', ')}' and no missing tags", descriptions)
        if not tcx:
            N.expect(lab.tc_filters(lab.gen_if, lab.gen_ns) == [], "after exit: no xdpcap clsact filter on gen0",
                     lab.tc_filters(lab.gen_if, lab.gen_ns))

        # Cuts before, inside and just after the tag, and further on.
        for snap in (12, 14, 16, 40):
            _x, _o, rows, _ = capture(lab, binary, tmp, f"snap{snap}", pcap, ["-s", str(snap)])
            N.expect(sorted(r["data"] for r in rows) == sorted(f[:snap] for f in frames) and
                     sorted(r["len"] for r in rows) == sorted(len(f) for f in frames),
                     f"-s {snap}: the first {snap} wire bytes and the full wire length")

        vid = lambda f: (f[15] | (f[14] & 0xf) << 8)  # noqa: E731
        filters = (("vlan 100", lambda f: f[12:14] == b"\x81\x00" and vid(f) == 100),
                   ("vlan 200", lambda f: f[12:14] == b"\x81\x00" and vid(f) == 200),
                   ("not vlan", lambda f: f[12:14] not in (b"\x81\x00", b"\x88\xa8")),
                   ("vlan 301", lambda f: f[12:14] == b"\x88\xa8" and vid(f) == 301),
                   ("vlan and udp src port 4004", lambda f: f[12:14] == b"\x81\x00" and
                    f[38:40] == (4004).to_bytes(2, "big")))

        def check_filter(expr, keep, rows, what, snap=None):
            # The oracle: libpcap's filter over the frames as tcpdump
            # captured them, tags in place; the predicate says which.
            kept = os.path.join(tmp, expr.replace(" ", "_") + ".kept.pcap")
            N.run(["tcpdump", "-r", os.path.join(tmp, "all.oracle.pcap"), "-w", kept, expr])
            want = [d for _c, _o, d in N.read_pcap(kept)]
            N.check(sorted(want) == sorted(f for f in frames if keep(f)) and want,
                    f"tcpdump -r keeps for '{expr}' the frames the test means", len(want))
            missing, extra, dup = N.multiset_diff([f[:snap] for f in want], [r["data"] for r in rows])
            N.expect(not missing and not extra and not dup and
                     sorted(r["len"] for r in rows) == sorted(len(f) for f in want),
                     f"{what}filter '{expr}' sees the received frames as on the wire: exactly the {len(want)} "
                     "tcpdump -r keeps" + (f", their first {snap} bytes and full length" if snap else ""),
                     f"got {len(rows)}, missing {len(missing)}, extra {len(extra)}")

        for expr, keep in filters:
            _x, _o, rows, _ = capture(lab, binary, tmp, expr.replace(" ", "_"), pcap, [expr])
            check_filter(expr, keep, rows, "")

        # -D says, per interface, where received frames are taken and what
        # becomes of their tags.
        listing = N.run(["ip", "netns", "exec", lab.gen_ns, binary, "-D"]).stdout
        line = next((l for l in listing.splitlines() if ".gen0 " in l), "")
        for want in ("received at: tc ingress", "received VLAN tags: restored from the skb (tc ingress)"):
            N.expect(want in line, f"-D shows for gen0 '{want}'", listing)

        # -- Native XDP reads the tag from the NIC's RX metadata where the
        # kernel has the kfunc; otherwise it says so in one line.
        x, out, rows, _ = capture(lab, binary, tmp, "native", pcap, ["--xdp-mode", "native"])
        got = [r["data"] for r in rows]
        descriptions = [i["description"] for i in N.pcapng_idbs(out)]
        if restores:
            N.check_exact(frames, got, "--xdp-mode native: the received frames byte for byte as on the wire, "
                                       "802.1Q and 802.1ad tags back in place")
            N.expect(all(r["len"] == len(r["data"]) for r in rows), "original length = captured length (tag counted)")
            N.expect(not warning_lines(x), "no warning about missing VLAN tags", x.stderr)
            N.expect(all("received VLAN tags restored from the NIC's RX metadata" in d for d in descriptions),
                     "the interface descriptions say the tags are restored", descriptions)
        else:
            N.check_exact([untagged(f) for f in frames], got,
                          "--xdp-mode native without the kfunc: the frames as XDP sees them, outer tag missing, "
                          "nothing else changed")
            lines = warning_lines(x)
            N.expect(len(lines) == 1 and PEER_REMEDY in lines[0] and "Linux 6.8" in lines[0],
                     "one warning line names gen0, the reason and the remedy (its peer's txvlan)", x.stderr)
            N.expect(all("received VLAN tags missing (the peer's tx-vlan-offload on;" in d for d in descriptions),
                     "the interface descriptions say the tags are missing", descriptions)
        N.expect(len(N.messages(x.err_lines)) == 0, "no other xdpcap line", x.stderr)
        # A cut inside the tag; where it is restored, a filter that sees it
        # (both kinds of outer tag), in the same run to save time.
        if restores:
            _x, _o, rows, _ = capture(lab, binary, tmp, "native_snap14_vlan", pcap,
                                      ["--xdp-mode", "native", "-s", "14", "vlan"])
            check_filter("vlan", lambda f: f[12:14] in (b"\x81\x00", b"\x88\xa8"), rows,
                         "--xdp-mode native -s 14: ", snap=14)
        else:
            view = [untagged(f) for f in frames]
            _x, _o, rows, _ = capture(lab, binary, tmp, "native_snap14", pcap, ["--xdp-mode", "native", "-s", "14"])
            N.expect(sorted(r["data"] for r in rows) == sorted(f[:14] for f in view) and
                     sorted(r["len"] for r in rows) == sorted(len(f) for f in view),
                     "--xdp-mode native -s 14: the first 14 bytes and the full length of the frames XDP has")

        # -- Generic XDP cannot read the NIC's metadata: it says so at start.
        # The kernel marks frames a tc program redirects (bpf_redirect sets
        # skb->redirected since 6.4) and generic XDP skips those; before,
        # it sees them, without their outer tag.
        g, out, rows, _ = capture(lab, binary, tmp, "generic", pcap, ["--xdp-mode", "generic"])
        lines = warning_lines(g)
        N.expect(len(lines) == 1 and "generic XDP mode" in lines[0] and PEER_REMEDY in lines[0],
                 "--xdp-mode generic: one warning line with the reason and the remedy", g.stderr)
        N.expect(len(N.messages(g.err_lines)) == 0 and all(len(l) <= 200 for l in lines), "no other xdpcap line, and "
                 "the warning is short", g.stderr)
        # -q: tcpdump has nothing to say here, and neither has xdpcap.
        q = on_gen0(lab, binary, ["--xdp-mode", "generic", "-q", "-w", os.path.join(tmp, "quiet.pcapng")])
        time.sleep(N.scaled(1.5))
        N.expect(q.stop(signal.SIGINT) == 0 and not warning_lines(q) and not N.messages(q.err_lines),
                 "--xdp-mode generic -q: no warning", q.err_lines)
        descriptions = [i["description"] for i in N.pcapng_idbs(out)]
        N.expect(descriptions and all("XDP generic mode" in d and "received VLAN tags missing" in d
                                      for d in descriptions),
                 "the interface descriptions name generic XDP mode and the missing tags", descriptions)
        seen = [r["data"] for r in rows]
        if kernel_at_least(6, 4):
            N.expect(seen == [], "--xdp-mode generic does not see frames a tc program redirects into the veth",
                     f"{len(seen)} seen")
        else:
            missing, extra, dup = N.multiset_diff([untagged(f) for f in frames], seen)
            N.expect(not missing and not extra and not dup,
                     "on this kernel --xdp-mode generic sees the tc-redirected frames, without their tags",
                     f"missing {len(missing)}, extra {len(extra)}, dup {len(dup)}")

        # The remedy the line names: with the peer's tx-vlan-offload off, the
        # peer puts the tag into the frame as it sends (here the frames tc
        # redirects out of cap0), and gen0 receives them whole.
        N.run(["ip", "netns", "exec", lab.cap_ns, "ethtool", "-K", lab.cap_if, "txvlan", "off",
               "tx-vlan-stag-hw-insert", "off"])
        x, _o, rows, _ = capture(lab, binary, tmp, "peer_txvlan_off", pcap, ["--xdp-mode", "native"])
        N.check_exact(frames, [r["data"] for r in rows],
                      "with the peer's txvlan off, --xdp-mode native captures every frame with its tags, on any "
                      "kernel")
        # Without the kfunc the warning stays: the peer is in another
        # namespace, whose txvlan xdpcap cannot read, and is assumed on.
        if restores:
            N.expect(not warning_lines(x), "no warning then", x.stderr)
        N.run(["ip", "netns", "exec", lab.cap_ns, "ethtool", "-K", lab.cap_if, "txvlan", "on",
               "tx-vlan-stag-hw-insert", "on"])


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("clang",))
