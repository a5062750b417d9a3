#!/usr/bin/python3
"""End-to-end: capturing on a veth leaves its traffic as it flows without capture.

Usage (root): /usr/bin/python3 tests/e2e/test_veth_mode.py PATH/TO/xdpcap

Native XDP on a veth switches the driver to its NAPI path with a 256-entry
ring and takes segmentation offload from the peer: trafgen, sending through a
TX ring as fast as it can, then aborts ("Flushing TX_RING failed") on 6.16 and
later, or the ring drops, and the peer's TCP stops sending super-frames.  The
default mode (auto) receives on a veth at tc ingress (tcx, or a clsact filter
on kernels before 6.6), which leaves the traffic as it was.

trafgen sends 300 000 UDP frames from gen0 into cap0 (pinned to one CPU):
  * without capture: the baseline (all sent, gen0's TX counters);
  * beside the default capture on cap0: trafgen sends them all and exits 0,
    gen0's TX drop counter moves as without capture, gen0's offload features
    are unchanged while xdpcap runs, no XDP program is on cap0 (xdpcap holds
    its xdpcap_ingress program), xdpcap prints no warning, the interface
    descriptions name tc ingress ("tcx ingress and tcx egress", "clsact
    ingress and clsact egress" without tcx), and every frame is captured or
    counted as lost;
  * the control, --xdp-mode native: gen0's TSO goes off while it runs (this
    is what the check of the features would see), and on 6.16 and later,
    where veth's NAPI ring pushes back, trafgen no longer sends them all.

iperf3 sends UDP from gen0 to cap0 at a fixed rate (100 Mbit/s, divided by
the time scale under emulation) for 2 s, without capture and beside the
default capture: the client sends as many datagrams (within 2 %: iperf3's
pacing), the server loses none, and gen0's TX drop counter does not move.

iperf3 sends 16 MiB over TCP (4 MiB under emulation) from gen0 to cap0
beside the default capture and tcpdump, both on cap0 with the same filter
(the transfer's frames into cap0) and 64 MiB of buffer each (xdpcap's split
between its CPUs' rings): gen0 keeps TSO while xdpcap runs, tcpdump
(the oracle, dropping none) sees super-frames (longer than 1514 bytes), and
xdpcap, losing none, captures as many of them, and the same frames byte for
byte.

First, `-i any` (cap0 and lo): both taken at tc ingress, with clsact
filters before 6.6 (no tcx there), no XDP; gen0's frames on cap0, once;
nothing stays attached to either.
"""

import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

FRAMES = 300_000
EMULATED = float(os.environ.get("XDPCAP_TIME_SCALE", "1") or 1) > 1
TCP_SIZE = (4 << 20) if EMULATED else (16 << 20)
TCP_PORT = 5302
TCP_ORACLE_BUFFER_KIB = 65536
FEATURES = ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload",
            "tx-checksumming", "scatter-gather")


def udp_frame():
    """198.18.90.2.5000 > 198.18.90.1.7000, 18 bytes of data, gen0's MAC to cap0's."""
    return bytes.fromhex("02000000ca01" "020000009e01" "0800"
                         "4500002e000100004011" "0000" "c6125a02" "c6125a01"
                         "13881b58001a0000") + b"x" * 18


def features(lab):
    out = N.run(["ip", "netns", "exec", lab.gen_ns, "ethtool", "-k", lab.gen_if]).stdout
    got = {}
    for line in out.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in FEATURES:
            got[name.strip()] = value.split()[0] if value.split() else ""
    return got


def tx_counters(lab):
    out = N.run(["ip", "-n", lab.gen_ns, "-s", "link", "show", lab.gen_if]).stdout.splitlines()
    i = next(i for i, l in enumerate(out) if l.strip().startswith("TX:"))
    fields = out[i].split()[1:]
    values = out[i + 1].split()
    return dict(zip(fields, (int(v) for v in values)))


def trafgen(lab, conf, cpu):
    cp = subprocess.run(["ip", "netns", "exec", lab.gen_ns, "taskset", "-c", str(cpu), "trafgen", "--dev",
                         lab.gen_if, "--conf", conf, "-n", str(FRAMES)],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=N.scaled(60))
    return cp.returncode, cp.stdout


def send_beside(lab, conf, cpu, what):
    before = tx_counters(lab)
    rc, out = trafgen(lab, conf, cpu)
    after = tx_counters(lab)
    sent = after["packets"] - before["packets"]
    dropped = after["dropped"] - before["dropped"]
    N.log(f"  info  {what}: trafgen exit {rc}, gen0 sent {sent}, TX dropped {dropped}")
    return rc, out, sent, dropped


IPERF_PORT = 5301


def iperf3_udp(lab, what):
    """One fixed-rate UDP run: (datagrams the client sent, datagrams the server lost, gen0's TX drops)."""
    rate = int(100_000_000 / float(os.environ.get("XDPCAP_TIME_SCALE", "1") or 1))
    # A receive buffer that outlasts a scheduling delay of the server: what
    # is checked is the path through the veth, not the reader's CPU share.
    # iperf3 fails where the kernel cannot grant it (net.core.rmem_max).
    with open("/proc/sys/net/core/rmem_max") as f:
        window = min(4 << 20, int(f.read()))
    server = lab.popen(lab.cap_ns, ["iperf3", "-s", "-1", "-B", "198.18.90.1", "-p", str(IPERF_PORT), "-J"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(N.scaled(0.5))
    before = tx_counters(lab)
    client = N.run(["ip", "netns", "exec", lab.gen_ns, "iperf3", "-c", "198.18.90.1", "-B", "198.18.90.2", "-p",
                    str(IPERF_PORT), "-u", "-b", str(rate), "-l", "1000", "-t", "2", "-w", str(window), "-J"],
                   timeout=N.scaled(30), check_rc=False)
    after = tx_counters(lab)
    out, _ = server.communicate(timeout=N.scaled(30))
    lab.forget(server)
    N.check(client.returncode == 0 and server.returncode == 0, f"{what}: iperf3 client and server exit 0",
            (client.stdout[-300:], out[-300:]))
    client_report, server_report = json.loads(client.stdout), json.loads(out)
    N.check("sum" in client_report.get("end", {}) and "sum" in server_report.get("end", {}),
            f"{what}: iperf3 reports its counts", (client_report.get("error"), server_report.get("error")))
    sent = client_report["end"]["sum"]["packets"]
    lost = server_report["end"]["sum"]["lost_packets"]
    dropped = after["dropped"] - before["dropped"]
    N.log(f"  info  iperf3 UDP at {rate} bit/s, {what}: {sent} datagrams sent, {lost} lost, TX dropped {dropped}")
    return sent, lost, dropped


def kernel_at_least(major, minor):
    version = tuple(int(v) for v in os.uname().release.split("-")[0].split(".")[:2])
    return version >= (major, minor)


def epb_frames(path):
    """(caplen, origlen, data) of every EPB of a pcapng file."""
    frames = []
    for e, btype, body in N.pcapng_blocks(path):
        if btype == 6:
            caplen, origlen = struct.unpack(e + "II", body[12:20])
            frames.append((caplen, origlen, body[20:20 + caplen]))
    return frames


def tcp_super_frames(lab, binary, tmp, base_features):
    """A bulk TCP transfer into cap0, captured by xdpcap (default mode) and tcpdump side by side."""
    flt = f"tcp and dst host 198.18.90.1 and dst port {TCP_PORT}"
    dump_path = os.path.join(tmp, "tcpdump.pcap")
    # A 64 MiB buffer: the oracle must drop nothing; immediate mode and -U:
    # a frame not yet handed over when SIGINT comes would be missing from it.
    dump = lab.popen(lab.cap_ns, ["tcpdump", "-i", lab.cap_if, "-nn", "-B", str(TCP_ORACLE_BUFFER_KIB), "--immediate-mode", "-U",
                                  "-w", dump_path, flt],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = [dump.stderr.readline()]
    while first[-1] and "listening on" not in first[-1] and len(first) < 5:
        first.append(dump.stderr.readline())
    N.check("listening on" in first[-1], "tcpdump listens on cap0", first)
    path = os.path.join(tmp, "tcp.pcapng")
    # The same ring memory as the oracle's buffer (xdpcap's -B is per CPU):
    # a reader starved on a busy two-CPU host loses nothing in either.
    # -v: a failure shows which per-CPU counter moved.
    per_cpu_kib = TCP_ORACLE_BUFFER_KIB // (os.cpu_count() or 1)
    x = lab.xdpcap(binary, ["-v", "-B", str(per_cpu_kib), "-w", path, flt])
    x.wait_listening()
    during = features(lab)
    server = lab.popen(lab.cap_ns, ["iperf3", "-s", "-1", "-B", "198.18.90.1", "-p", str(TCP_PORT)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    time.sleep(N.scaled(0.5))
    client = N.run(["ip", "netns", "exec", lab.gen_ns, "iperf3", "-c", "198.18.90.1", "-B", "198.18.90.2", "-p",
                    str(TCP_PORT), "-n", str(TCP_SIZE)], timeout=N.scaled(60), check_rc=False)
    server.wait(timeout=N.scaled(30))
    lab.forget(server)
    time.sleep(N.scaled(1))
    N.check(x.stop(signal.SIGINT) == 0, "TCP: xdpcap exits 0", x.stderr)
    dump.send_signal(signal.SIGINT)
    dump_err = dump.communicate(timeout=N.scaled(30))[1]
    lab.forget(dump)
    N.check(client.returncode == 0 and server.returncode == 0, f"TCP: iperf3 sends {TCP_SIZE} bytes, exit 0",
            client.stdout[-300:])
    m = re.search(r"^(\d+) packets? dropped by kernel$", dump_err, re.M)
    N.check(m is not None and m.group(1) == "0", "TCP: tcpdump beside it drops none (the oracle is complete)",
            dump_err)
    st = N.final_stats(x.err_lines)
    N.expect(st is not None and st["dropped"] == 0, "TCP: xdpcap loses none", x.stderr)
    N.expect(during.get("tcp-segmentation-offload") == "on" and during == base_features,
             "TCP: gen0 keeps TSO (and its other offloads) while xdpcap runs",
             f"before {base_features}\nduring {during}")

    theirs = N.read_pcap(dump_path)
    ours = epb_frames(path)
    mtu_frame = 1514
    big_theirs = sum(1 for _c, length, _d in theirs if length > mtu_frame)
    big_ours = sum(1 for _c, length, _d in ours if length > mtu_frame)
    N.log(f"  info  TCP: tcpdump {len(theirs)} frames, {big_theirs} longer than {mtu_frame} bytes "
          f"(longest {max((l for _c, l, _d in theirs), default=0)}); xdpcap {len(ours)}, {big_ours}")
    N.expect(big_theirs > 0, "TCP: super-frames reach cap0 beside the default capture (tcpdump sees some)",
             big_theirs)
    N.expect(big_ours == big_theirs, f"TCP: xdpcap captures as many frames longer than {mtu_frame} bytes "
                                     "as tcpdump sees", (big_ours, big_theirs))
    N.expect(all(c == length for c, length, _d in ours), "TCP: xdpcap keeps every frame whole",
             [(c, length) for c, length, _d in ours if c != length][:5])
    N.expect(sorted(d for _c, _l, d in ours) == sorted(d for _c, _l, d in theirs),
             "TCP: and the same frames as tcpdump, byte for byte", (len(ours), len(theirs)))


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        conf = os.path.join(tmp, "udp.cfg")
        with open(conf, "w") as f:
            f.write("{ " + ", ".join(f"0x{b:02x}" for b in udp_frame()) + " }\n")
        cpu = N.cpus()[0]
        # First: cheap, and on 6.1 (clsact) whatever the traffic checks find.
        any_interface(lab, binary, tmp)
        base_features = features(lab)
        rc, out, sent, dropped = send_beside(lab, conf, cpu, "no capture")
        N.check(rc == 0 and sent == FRAMES and dropped == 0, f"without capture trafgen sends all {FRAMES} frames",
                out[-300:])

        path = os.path.join(tmp, "default.pcapng")
        x = lab.xdpcap(binary, ["-w", path, "udp dst port 7000"])
        x.wait_listening()
        during = features(lab)
        xdp_during = lab.xdp_state()
        held = sorted(N.held_programs(x.proc.pid).values())
        rc, out, sent, dropped = send_beside(lab, conf, cpu, "default capture")
        time.sleep(1)
        N.check(x.stop(signal.SIGINT) == 0, "xdpcap exits 0", x.stderr)
        N.expect(rc == 0 and "Flushing TX_RING failed" not in out, "beside the default capture trafgen exits 0",
                 out[-300:])
        N.expect(sent == FRAMES, f"and sends all {FRAMES} frames", sent)
        N.expect(dropped == 0, "gen0's TX drop counter does not move", dropped)
        N.expect(during == base_features, "gen0's offload features are unchanged while xdpcap runs",
                 f"before {base_features}\nduring {during}")
        N.expect(xdp_during == "" and "xdpcap_ingress" in held,
                 "the default attaches no XDP program to cap0 (xdpcap holds its xdpcap_ingress program)",
                 (xdp_during, held))
        N.expect(not [l for l in x.err_lines if l.startswith("xdpcap:")], "and prints no warning for a veth",
                 x.stderr)
        hooks = "tcx ingress and tcx egress" if kernel_at_least(6, 6) else "clsact ingress and clsact egress"
        descriptions = [i["description"] or "" for i in N.pcapng_idbs(path)]
        N.expect(descriptions and all(f", {hooks}, driver veth" in d and "XDP" not in d for d in descriptions),
                 f"the interface descriptions say the default receives at tc ingress ('{hooks}')", descriptions)
        captured = N.capinfos_count(path)
        st = N.final_stats(x.err_lines)
        lost = st["dropped"] if st else None
        N.expect(lost is not None and captured + lost == FRAMES,
                 "every frame is captured or counted as lost", f"captured {captured}, lost {lost}")

        # iperf3 at a fixed rate, without and beside the default capture.
        N.run(["ip", "-n", lab.cap_ns, "addr", "add", "198.18.90.1/24", "dev", lab.cap_if])
        N.run(["ip", "-n", lab.gen_ns, "addr", "add", "198.18.90.2/24", "dev", lab.gen_if])
        base_sent, base_lost, base_dropped = iperf3_udp(lab, "no capture")
        N.check(base_sent > 0 and base_lost == 0 and base_dropped == 0,
                "without capture iperf3 sends at its rate and loses nothing", (base_sent, base_lost, base_dropped))
        x = lab.xdpcap(binary, ["-w", os.devnull, "udp"])
        x.wait_listening()
        sent, lost, dropped = iperf3_udp(lab, "default capture")
        N.check(x.stop(signal.SIGINT) == 0, "xdpcap exits 0", x.stderr)
        N.expect(abs(sent - base_sent) <= base_sent * 0.02,
                 "beside the default capture iperf3 sends as many datagrams as without", (sent, base_sent))
        N.expect(lost == 0 and dropped == 0, "and the server loses none, gen0's TX drop counter does not move",
                 (lost, dropped))

        tcp_super_frames(lab, binary, tmp, base_features)

        # Control: native mode changes what the checks above look at.
        n = lab.xdpcap(binary, ["--xdp-mode", "native", "-w", os.devnull, "udp dst port 7000"])
        n.wait_listening()
        native = features(lab)
        if kernel_at_least(6, 16):
            rc, out, sent, dropped = send_beside(lab, conf, cpu, "native capture")
            N.expect(rc != 0 or sent < FRAMES or dropped > 0,
                     "control: beside --xdp-mode native trafgen does not send all its frames (6.16's backpressure)",
                     (rc, sent, dropped, out[-200:]))
        N.check(n.stop(signal.SIGINT) == 0, "xdpcap --xdp-mode native exits 0", n.stderr)
        N.expect(native.get("tcp-segmentation-offload") == "off" and
                 base_features.get("tcp-segmentation-offload") == "on",
                 "control: with --xdp-mode native gen0 loses TSO (the features check can see a change)",
                 f"before {base_features}\nnative {native}")
        N.expect(features(lab) == base_features, "and gets it back when xdpcap exits", features(lab))
        lab.assert_clean()


def any_interface(lab, binary, tmp):
    """-i any: cap0 and lo at tc ingress (clsact before 6.6), never XDP; gen0's frames on cap0; nothing left."""
    corpus = os.path.join(tmp, "any.pcap")
    frames = N.build_corpus(corpus, 20, kinds=("ipv4-udp",), seed=90)
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "lo", "up"])
    path = os.path.join(tmp, "any.pcapng")
    x = N.Xdpcap(lab, binary, ["-i", "any", "-w", path])
    x.wait_listening(timeout=30)
    mechanism = "tcx" if kernel_at_least(6, 6) else "clsact"
    filters = {dev: lab.tc_filters(dev) for dev in (lab.cap_if, "lo")}
    N.expect(lab.xdp_state() == "" and (mechanism == "tcx" or all(f for f in filters.values())),
             f"-i any: no XDP on cap0, a {mechanism} ingress program on cap0 and lo", (lab.xdp_state(), filters))
    N.log("  info  " + lab.send(corpus, N.cpus()[0], gap_us=300))
    time.sleep(0.5)
    N.check(x.stop(signal.SIGINT) == 0, "xdpcap -i any exits 0", x.stderr)
    idbs = N.pcapng_idbs(path)
    got = [d for d, idb in ((e["data"], idbs[e["if_id"]]) for e in N.pcapng_records(path)["epbs"])
           if idb["name"].startswith(lab.cap_if + "@")]
    N.check_exact(frames, got, "-i any: every frame from gen0 on cap0, once")
    N.expect(all(f", {mechanism} ingress and {mechanism} egress" in (i["description"] or "") for i in idbs
                 if i["name"].startswith(lab.cap_if + "@")),
             f"-i any: cap0's interface descriptions name {mechanism} ingress and egress", idbs)
    lab.assert_clean(what="nothing of xdpcap -i any remains attached to cap0 (XDP, tc)")
    lab.assert_clean(what="nor to lo", dev="lo")


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("trafgen", "ethtool", "iperf3"))
