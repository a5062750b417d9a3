#!/usr/bin/python3
"""What capturing on a veth does to its traffic, per XDP mode.

Run as root:  bench/veth_modes.py --xdpcap build/src/xdpcap [--rounds 3]

It makes a pair of network namespaces joined by a veth pair (cap0 with
198.18.91.1, gen0 with 198.18.91.2) and, with nothing capturing on cap0,
with tcpdump, and with xdpcap in native and in generic mode, in interleaved
rounds, measures from gen0 to cap0:

  trafgen      300 000 UDP frames through trafgen's TX ring: exit status,
               frames sent, gen0's TX drops
  iperf3 UDP   3 s unlimited: datagrams sent by the client, loss at the server
  iperf3 TCP   3 s: throughput, and the largest frame the capture file holds
               (above 1514 bytes: segmentation-offload super-frames seen)
  features     gen0's tcp-segmentation-offload while the capture runs

Needs trafgen (netsniff-ng), iperf3, ethtool and tcpdump. Prints one table.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

NS_CAP, NS_GEN = f"vm-cap-{os.getpid()}", f"vm-gen-{os.getpid()}"
CAP_ADDR, GEN_ADDR = "198.18.91.1", "198.18.91.2"
FRAMES = 300_000


def run(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def in_ns(ns, *argv, **kw):
    return run("ip", "netns", "exec", ns, *argv, **kw)


def setup():
    run("ip", "netns", "add", NS_CAP)
    run("ip", "netns", "add", NS_GEN)
    run("ip", "-n", NS_CAP, "link", "add", "cap0", "address", "02:00:00:00:ca:01", "type", "veth", "peer", "name",
        "gen0", "address", "02:00:00:00:9e:01", "netns", NS_GEN)
    run("ip", "-n", NS_CAP, "addr", "add", f"{CAP_ADDR}/24", "dev", "cap0")
    run("ip", "-n", NS_GEN, "addr", "add", f"{GEN_ADDR}/24", "dev", "gen0")
    run("ip", "-n", NS_CAP, "link", "set", "cap0", "up")
    run("ip", "-n", NS_GEN, "link", "set", "gen0", "up")
    time.sleep(1)


def teardown():
    run("ip", "netns", "del", NS_CAP, check=False)
    run("ip", "netns", "del", NS_GEN, check=False)


def tx(dev="gen0"):
    out = run("ip", "-n", NS_GEN, "-s", "-j", "link", "show", dev).stdout
    stats = json.loads(out)[0]["stats64"]["tx"]
    return stats["packets"], stats["dropped"]


def tso():
    out = in_ns(NS_GEN, "ethtool", "-k", "gen0").stdout
    return next(l.split(":")[1].split()[0] for l in out.splitlines() if l.startswith("tcp-segmentation-offload"))


def start_capture(tool, xdpcap, path):
    if tool == "none":
        return None
    if tool == "tcpdump":
        argv = ["tcpdump", "-i", "cap0", "-w", path, "-s", "65535", "--immediate-mode"]
    else:
        argv = [xdpcap, "-i", "cap0", "--xdp-mode", tool.split("-")[1], "-w", path]
    p = subprocess.Popen(["ip", "netns", "exec", NS_CAP] + argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(2)
    return p


def stop_capture(p):
    if p:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)


def largest_frame(path):
    if not os.path.exists(path):
        return 0
    cp = subprocess.run(["tshark", "-r", path, "-T", "fields", "-e", "frame.len"], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
    return max((int(x) for x in cp.stdout.split() if x.isdigit()), default=0)


def measure(tool, xdpcap, tmp, conf):
    r = {}
    path = os.path.join(tmp, f"{tool}.pcapng")
    p = start_capture(tool, xdpcap, path)
    r["tso"] = tso()
    before = tx()
    cp = in_ns(NS_GEN, "taskset", "-c", "0", "trafgen", "--dev", "gen0", "--conf", conf, "-n", str(FRAMES),
               check=False)
    after = tx()
    r["trafgen_exit"] = cp.returncode
    r["trafgen_sent"] = after[0] - before[0]
    r["tx_dropped"] = after[1] - before[1]
    server = subprocess.Popen(["ip", "netns", "exec", NS_CAP, "iperf3", "-s", "-1", "-J"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.5)
    client = json.loads(in_ns(NS_GEN, "iperf3", "-c", CAP_ADDR, "-u", "-b", "0", "-t", "3", "-J", check=False).stdout)
    server.wait(timeout=30)
    r["udp_sent"] = client["end"]["sum"]["packets"]
    r["udp_lost_pct"] = client["end"]["sum"].get("lost_percent", 0.0)
    server = subprocess.Popen(["ip", "netns", "exec", NS_CAP, "iperf3", "-s", "-1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    client = json.loads(in_ns(NS_GEN, "iperf3", "-c", CAP_ADDR, "-t", "3", "-J", check=False).stdout)
    server.wait(timeout=30)
    r["tcp_gbps"] = client["end"]["sum_received"]["bits_per_second"] / 1e9
    stop_capture(p)
    r["largest"] = largest_frame(path) if p else 0
    if os.path.exists(path):
        os.unlink(path)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xdpcap", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    xdpcap = os.path.abspath(args.xdpcap)
    tools = ["none", "tcpdump", "xdpcap-native", "xdpcap-generic"]
    results = {t: [] for t in tools}
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        conf = os.path.join(tmp, "udp.cfg")
        frame = (bytes.fromhex("02000000ca01020000009e0108004500002e000100004011" "0000" "c6125b02c6125b01"
                               "13881b58001a0000") + b"x" * 18)
        with open(conf, "w") as f:
            f.write("{ " + ", ".join(f"0x{b:02x}" for b in frame) + " }\n")
        try:
            setup()
            for rnd in range(args.rounds):
                for tool in tools:
                    results[tool].append(measure(tool, xdpcap, tmp, conf))
                    print(f"round {rnd + 1} {tool:<15} {results[tool][-1]}", flush=True)
        finally:
            teardown()
    med = lambda xs: statistics.median(xs)  # noqa: E731
    print("\n| capture on cap0 | trafgen exits 0 | trafgen frames sent | gen0 TX drops | iperf3 UDP datagrams sent "
          "| UDP loss | iperf3 TCP | largest frame captured | gen0 TSO during |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tool in tools:
        rs = results[tool]
        print(f"| {tool} | {sum(r['trafgen_exit'] == 0 for r in rs)}/{len(rs)} | {med([r['trafgen_sent'] for r in rs]):.0f} "
              f"| {med([r['tx_dropped'] for r in rs]):.0f} | {med([r['udp_sent'] for r in rs]):.0f} "
              f"| {med([r['udp_lost_pct'] for r in rs]):.1f} % | {med([r['tcp_gbps'] for r in rs]):.2f} Gbit/s "
              f"| {med([r['largest'] for r in rs]) if tool != 'none' else '-'} | {rs[-1]['tso']} |")


if __name__ == "__main__":
    sys.exit(main())
