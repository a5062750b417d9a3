#!/usr/bin/python3
"""What `xdpcap -i any` costs with many interfaces.

Run as root:  bench/any_scale.py --xdpcap build/src/xdpcap [--pairs 200] [--rounds 3]

Makes a capture namespace holding v0..vN-1 (their peers in a second
namespace) and lo, then, per round, runs `xdpcap -i any -w FILE` and measures:

  attach     from the start to the 'listening on any' line: every interface
             looked up, its programs loaded and attached, its rings mapped
  resident   xdpcap's VmRSS once listening, and VmRSS after one frame on
             every interface (the rings are touched)
  fds        descriptors xdpcap holds
  detach     from SIGINT to the exit: every interface detached, the rings
             drained, the statistics written

and the same with one interface (-i v0) for comparison. Prints one table;
the median of the rounds.
"""

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

NS_CAP, NS_GEN = f"as-cap-{os.getpid()}", f"as-gen-{os.getpid()}"

SEND_ALL = r"""
import socket, sys
for i in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((f"p{i}", 0))
    s.send(b"\xff" * 6 + bytes([2, 0, 0, 0, i >> 8, i & 0xff]) + b"\x88\xb5" + bytes(46))
    s.close()
"""


def run(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def setup(pairs, tmp):
    run("ip", "netns", "add", NS_CAP)
    run("ip", "netns", "add", NS_GEN)
    for ns in (NS_CAP, NS_GEN):
        run("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1")
    cap, gen = os.path.join(tmp, "cap"), os.path.join(tmp, "gen")
    with open(cap, "w") as f:
        f.writelines(f"link add v{i} type veth peer name p{i} netns {NS_GEN}\n" for i in range(pairs))
        f.writelines(f"link set v{i} up\n" for i in range(pairs))
        f.write("link set lo up\n")
    with open(gen, "w") as f:
        f.writelines(f"link set p{i} up\n" for i in range(pairs))
    run("ip", "-n", NS_CAP, "-batch", cap)
    run("ip", "-n", NS_GEN, "-batch", gen)
    time.sleep(1)


def teardown():
    for ns in (NS_CAP, NS_GEN):
        run("ip", "netns", "delete", ns, check=False)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def one(xdpcap, args, pairs, tmp):
    out = os.path.join(tmp, "out.pcapng")
    start = time.monotonic()
    p = subprocess.Popen(["ip", "netns", "exec", NS_CAP, xdpcap, *args, "-w", out], stderr=subprocess.PIPE,
                         text=True)
    for line in p.stderr:
        if line.startswith("listening on"):
            break
    attach = time.monotonic() - start
    rss = rss_kib(p.pid)
    fds = len(os.listdir(f"/proc/{p.pid}/fd"))
    run("ip", "netns", "exec", NS_GEN, sys.executable, "-c", SEND_ALL, str(pairs))
    time.sleep(0.5)
    rss_after = rss_kib(p.pid)
    stop = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.stderr.read()
    p.wait()
    detach = time.monotonic() - stop
    return {"attach": attach, "rss": rss, "rss_after": rss_after, "fds": fds, "detach": detach}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xdpcap", required=True)
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    xdpcap = os.path.abspath(a.xdpcap)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            setup(a.pairs, tmp)
            rows = {}
            for name, args in ((f"-i any ({a.pairs} veths + lo)", ["-i", "any"]), ("-i v0", ["-i", "v0"])):
                rounds = [one(xdpcap, args, a.pairs, tmp) for _ in range(a.rounds)]
                rows[name] = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        finally:
            teardown()
    print(f"{os.cpu_count()} CPUs, median of {a.rounds} rounds")
    print(f"{'capture':28} {'attach s':>9} {'detach s':>9} {'RSS MiB':>8} {'RSS after':>10} {'fds':>6}")
    for name, r in rows.items():
        print(f"{name:28} {r['attach']:9.2f} {r['detach']:9.2f} {r['rss'] / 1024:8.1f} "
              f"{r['rss_after'] / 1024:10.1f} {r['fds']:6.0f}")


if __name__ == "__main__":
    main()
