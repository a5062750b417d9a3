#!/usr/bin/python3
"""End-to-end: frames that tc programs move into a veth are captured there,
each exactly once, byte for byte, and tc programs already on the veth hide
none of them.

Usage (root): /usr/bin/python3 tests/e2e/test_redirects.py PATH/TO/xdpcap

An eBPF CNI moves a container's traffic with tc programs instead of sending
it through the stack, so a capture on the container's veth must see frames
that arrive by a redirect as well as those that arrive by the wire.  Three
kinds of redirect into cap0 (the captured veth, its peer gen0), 20 distinct
frames each, injected on the far end of an extra veth pair whose near end
runs a tc ingress program (tc_redirect.bpf.c, loaded with iproute2's tc):
  1. bpf_redirect(gen0, 0) in the generator namespace: out of gen0, into cap0;
  2. bpf_redirect_peer(gen0, 0) in the generator namespace: straight into
     cap0's ingress;
  3. bpf_redirect(cap0, BPF_F_INGRESS) in the capture namespace (the ifindex
     is looked up in the skb's own namespace).
Then tc programs attached to cap0's ingress before xdpcap starts: one that
drops every frame (TC_ACT_SHOT) and one that redirects every frame out of
another veth; 20 frames sent from gen0 must still be captured on cap0.

On kernels with tcx (6.6+), the same two programs attached to cap0's tcx
ingress through a BPF link before xdpcap starts, as Cilium attaches there:
xdpcap's program goes before them (BPF_F_BEFORE), and they still run.

Oracle: tcpdump -i cap0, run beside each capture, sees all 20 frames (its
packet socket tap sees redirected frames and runs before tc ingress): this
proves the frames reached cap0.  Checks: xdpcap -i cap0 -w FILE (defaults)
exits 0, its file holds each of the 20 frames exactly once, byte for byte as
sent (a redirect does not change the bytes), and its statistics count none
dropped; for the tc programs on cap0, that they ran (the drop counter of the
clsact qdisc, the other veth's transmit counter).
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

COUNT = 20
CAP_MAC = "02:00:00:00:ca:01"
SOURCE = "tc_redirect.bpf.c"
# ACTION values of tc_redirect.bpf.c.
REDIRECT, REDIRECT_PEER, REDIRECT_INGRESS, SHOT = 1, 2, 3, 4


def frames(case):
    """COUNT IPv4/UDP frames to cap0's MAC, unique by case and number (marker in the payload)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    out = []
    for i in range(COUNT):
        marker = b"XDPCAPT-REDIR-%d-%02d." % (case, i)
        out.append(bytes(Ether(src="02:00:5e:52:%02x:%02x" % (case, i), dst=CAP_MAC)
                         / IP(src=f"198.18.82.{case}", dst=f"198.19.82.{i + 1}", id=case * 100 + i)
                         / UDP(sport=40000 + i, dport=9)
                         / Raw(marker + bytes((case + i + k) & 0xff for k in range(7 * i + 30 * case)))))
    return out


def ifindex(lab, ns, dev):
    return int(lab.link_info(ns, dev)["ifindex"])


def add_veth(lab, ns, a, b):
    """A veth pair a <-> b, both in ns, up and silent (no IPv6)."""
    N.run(["ip", "-n", ns, "link", "add", a, "type", "veth", "peer", "name", b])
    for dev in (a, b):
        N.NetLab.sysctl(ns, f"net.ipv6.conf.{dev}.disable_ipv6", "1")
        N.run(["ip", "-n", ns, "link", "set", "dev", dev, "up"])
    end = time.monotonic() + N.scaled(5)
    for dev in (a, b):
        while "LOWER_UP" not in lab.link_info(ns, dev).get("flags", []):
            N.check(time.monotonic() < end, f"{dev} comes up")
            time.sleep(0.02)


def attach(ns, dev, obj):
    """obj's program on dev's tc ingress (clsact, direct action), as a CNI loads it."""
    N.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "clsact"])
    N.run(["ip", "netns", "exec", ns, "tc", "filter", "add", "dev", dev, "ingress", "bpf", "da",
           "obj", obj, "sec", "tc"])
    shown = N.run(["ip", "netns", "exec", ns, "tc", "filter", "show", "dev", dev, "ingress"]).stdout
    N.check("tc_redirect" in shown and "direct-action" in shown,
            f"the program is attached to {dev}'s tc ingress", shown)


def build(tmp, name, action, target=None):
    # One directory per object: build_bpf_object names it after the source.
    d = os.path.join(tmp, name)
    os.mkdir(d)
    defines = [f"ACTION={action}"] + ([f"TARGET_IFINDEX={target}"] if target is not None else [])
    return N.build_bpf_object(SOURCE, d, defines)


def send(lab, ns, dev, pcap):
    p = lab.popen(ns, [N.PYTHON, N.SENDER, "--iface", dev, "--cpu", str(N.cpus()[0]), "--pcap", pcap,
                       "--gap-us", "500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _out, err = p.communicate(timeout=N.scaled(30))
    except subprocess.TimeoutExpired:
        N.kill_process(p)
        raise N.TestFailure(f"sender on {dev} timed out")
    finally:
        lab.forget(p)
    N.check(p.returncode == 0, f"{COUNT} frames sent into {dev}", err.strip())


def capture(lab, binary, tmp, tag, name, sent, ns, dev):
    """Send `sent` into dev (in ns) while tcpdump and xdpcap capture on cap0; check both."""
    pcap = os.path.join(tmp, tag + ".pcap")
    N.write_frames(pcap, sent)
    ref = os.path.join(tmp, tag + ".tcpdump.pcap")
    out = os.path.join(tmp, tag + ".pcapng")
    oracle = lab.popen(lab.cap_ns, ["tcpdump", "-i", lab.cap_if, "-nn", "-U", "--immediate-mode", "-w", ref],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + N.scaled(10)
    # Its file header is written once the capture is active.
    while (not os.path.exists(ref) or os.path.getsize(ref) < 24) and oracle.poll() is None \
            and time.monotonic() < end:
        time.sleep(0.05)
    N.check(oracle.poll() is None and os.path.exists(ref) and os.path.getsize(ref) >= 24,
            "tcpdump oracle starts on cap0", oracle.stderr.read().decode() if oracle.poll() is not None else None)
    time.sleep(N.scaled(0.3))
    x = lab.xdpcap(binary, ["-w", out])
    x.wait_listening()
    send(lab, ns, dev, pcap)
    time.sleep(N.scaled(0.5))
    rc = x.stop(signal.SIGINT)
    oracle.send_signal(signal.SIGINT)
    oracle.wait(timeout=N.scaled(10))
    lab.forget(oracle)
    N.log("  info  xdpcap stderr: " + " | ".join(x.err_lines))

    seen = [d for _c, _o, d in N.read_pcap(ref)]
    N.check_exact(sent, seen, f"{name}: the oracle (tcpdump -i cap0) sees each of the {COUNT} frames "
                              "exactly once, as sent")
    N.expect(rc == 0, f"{name}: xdpcap exits 0", x.stderr)
    recs = N.pcapng_records(out)
    N.expect(not recs["problems"], f"{name}: xdpcap's file is well-formed pcapng", recs["problems"])
    got = [e["data"] for e in recs["epbs"]]
    N.check_exact(sent, got, f"{name}: xdpcap captures each of the {COUNT} frames exactly once, byte for byte "
                             f"({len(got)} captured)")
    N.expect(all(e["caplen"] == e["origlen"] for e in recs["epbs"]), f"{name}: no frame cut")
    st = N.final_stats(x.err_lines)
    N.expect(st is not None and st["dropped"] == 0, f"{name}: xdpcap's statistics count none dropped",
             st["lines"] if st else x.stderr)


def tx_packets(ns, dev):
    lines = N.run(["ip", "-n", ns, "-s", "link", "show", "dev", dev]).stdout.splitlines()
    i = next(i for i, l in enumerate(lines) if l.strip().startswith("TX:"))
    return int(lines[i + 1].split()[1])


def clsact_drops(ns, dev):
    """Packets dropped by dev's clsact qdisc (its filters' TC_ACT_SHOT), -1 if unknown."""
    cp = N.run(["ip", "netns", "exec", ns, "tc", "-s", "-j", "qdisc", "show", "dev", dev])
    for q in json.loads(cp.stdout or "[]"):
        if q.get("kind") == "clsact":
            return int(q.get("drops", -1))
    return -1


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        gen0 = ifindex(lab, lab.gen_ns, lab.gen_if)
        cap0 = ifindex(lab, lab.cap_ns, lab.cap_if)

        # The three kinds of redirect into cap0: frames injected on injN arrive at tcN's tc ingress.
        kinds = [
            (1, "bpf_redirect(gen0)", REDIRECT, lab.gen_ns, gen0),
            (2, "bpf_redirect_peer(gen0)", REDIRECT_PEER, lab.gen_ns, gen0),
            (3, "bpf_redirect(cap0, BPF_F_INGRESS)", REDIRECT_INGRESS, lab.cap_ns, cap0),
        ]
        for n, name, action, ns, target in kinds:
            N.log(f"  --    kind {n}: {name} from tc ingress of tc{n} "
                  f"({'generator' if ns == lab.gen_ns else 'capture'} namespace)")
            add_veth(lab, ns, f"tc{n}", f"inj{n}")
            attach(ns, f"tc{n}", build(tmp, f"kind{n}", action, target))
            capture(lab, binary, tmp, f"kind{n}", name, frames(n), ns, f"inj{n}")

        # tc programs on cap0's own ingress, attached before xdpcap starts.
        add_veth(lab, lab.cap_ns, "sink0", "sink1")
        sink0 = ifindex(lab, lab.cap_ns, "sink0")
        for n, name, action, target in ((4, "TC_ACT_SHOT on cap0", SHOT, None),
                                        (5, "bpf_redirect(sink0) on cap0", REDIRECT, sink0)):
            N.log(f"  --    {name}, attached before xdpcap starts; frames sent from gen0")
            attach(lab.cap_ns, lab.cap_if, build(tmp, f"cap0-{n}", action, target))
            tx_before = tx_packets(lab.cap_ns, "sink0")
            capture(lab, binary, tmp, f"cap0-{n}", name, frames(n), lab.gen_ns, lab.gen_if)
            if action == SHOT:
                drops = clsact_drops(lab.cap_ns, lab.cap_if)
                N.expect(drops >= COUNT, f"{name}: the program ran (cap0's clsact counts {drops} drops)")
            else:
                moved = tx_packets(lab.cap_ns, "sink0") - tx_before
                N.expect(moved >= COUNT, f"{name}: the program ran (sink0 sent {moved} frames)")
            N.run(["ip", "netns", "exec", lab.cap_ns, "tc", "qdisc", "del", "dev", lab.cap_if, "clsact"])

        if kernel_has_tcx():
            tcx_before_xdpcap(lab, binary, tmp, sink0)
        else:
            N.log("  info  no tcx before Linux 6.6: the clsact cases above are the ones a CNI has here")
        lab.assert_clean()


def kernel_has_tcx():
    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
    return (major, minor) >= (6, 6)


def tcx_before_xdpcap(lab, binary, tmp, sink0):
    """A CNI's program on cap0's tcx ingress (as Cilium attaches on 6.6+),
    there before xdpcap: xdpcap's goes before it, and sees every frame."""
    stats = N.run(["sysctl", "-n", "kernel.bpf_stats_enabled"]).stdout.strip()
    N.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"])
    try:
        for n, name, action, target in ((6, "TC_ACT_SHOT on cap0's tcx", SHOT, None),
                                        (7, "bpf_redirect(sink0) on cap0's tcx", REDIRECT, sink0)):
            N.log(f"  --    {name}, attached before xdpcap starts; frames sent from gen0")
            program = N.TcxProgram(lab.cap_ns, lab.cap_if, build(tmp, f"cap0-{n}", action, target),
                                   ifindex(lab, lab.cap_ns, lab.cap_if))
            try:
                tx_before = tx_packets(lab.cap_ns, "sink0")
                capture(lab, binary, tmp, f"cap0-{n}", name, frames(n), lab.gen_ns, lab.gen_if)
                runs = program.run_count()
                N.expect(runs >= COUNT, f"{name}: the program ran after xdpcap's ({runs} runs)")
                if action == REDIRECT:
                    moved = tx_packets(lab.cap_ns, "sink0") - tx_before
                    N.expect(moved >= COUNT, f"{name}: it moved the frames (sink0 sent {moved})")
            finally:
                program.close()
    finally:
        N.run(["sysctl", "-qw", f"kernel.bpf_stats_enabled={stats}"])


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("clang", "tc"))
