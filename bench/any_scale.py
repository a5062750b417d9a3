#!/usr/bin/python3
"""What `xdpcap -i any` costs with many interfaces.

Run as root:  bench/any_scale.py --xdpcap build/src/xdpcap [--pairs 200] [--rounds 3]

Makes a capture namespace holding v0..vN-1 (their peers in a second
namespace) and lo, then, per round, runs `xdpcap -i any -w FILE` and measures:

  attach     from the start to the 'listening on any' line: every interface
             looked up, its programs loaded and attached, its rings mapped
  rings      the kernel memory of the perf rings xdpcap maps: VmPin, where
             perf charges every page of a ring, touched or not, past the
             user's perf_event_mlock_kb allowance (512 KiB by default)
  resident   xdpcap's VmRSS once listening, and VmRSS after one frame on
             every interface (the rings are touched)
  fds        descriptors xdpcap holds
  ns/frame   xdpcap's CPU time per frame while 300 000 frames of 64 bytes
             arrive over every veth in turn (-i v0: all on v0), written to
             FILE: the consumer's per-packet cost with that many interfaces
  detach     from SIGINT to the exit: every interface detached, the rings
             drained, the statistics written
  join       (-i any only) a veth pair j0 <-> q0 created during the capture:
             from `ip link add` to xdpcap's "j0 joined the capture" line
             (its programs loaded and attached, its rings mapped), and to
             the timestamp of the first frame captured on j0 (a frame is
             sent out of q0 every 2 ms from its creation on)

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
import threading
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


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kib(pid):
    return status_kib(pid, "VmRSS")


def cpu_ns(pid):
    """CPU time of every thread of `pid` so far (schedstat: nanoseconds)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


# argv[2] frames of 64 bytes, one out of each of p0..p(argv[1]-1) in turn.
SEND_SPREAD = r"""
import socket, sys
socks = []
for i in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((f"p{i}", 0))
    socks.append(s)
frame = b"\xff" * 6 + bytes([2, 0, 0, 0, 0xff, 0xfd]) + b"\x88\xb5" + bytes(50)
count = len(socks)
for n in range(int(sys.argv[2])):
    socks[n % count].send(frame)
"""
SPREAD_FRAMES = 300_000


def consumer_ns_per_frame(pid, interfaces):
    """xdpcap's CPU time per frame while SPREAD_FRAMES frames come in over
    `interfaces` veths in turn (each frame on another interface than the one
    before), drained."""
    before = cpu_ns(pid)
    run("ip", "netns", "exec", NS_GEN, sys.executable, "-c", SEND_SPREAD, str(interfaces), str(SPREAD_FRAMES))
    time.sleep(0.5)
    return (cpu_ns(pid) - before) / SPREAD_FRAMES


# Out of q0 every 2 ms for argv[1] seconds, from as soon as it exists.
SEND_JOIN = r"""
import socket, sys, time
end = time.monotonic() + float(sys.argv[1])
s = None
while time.monotonic() < end:
    try:
        if s is None:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind(("q0", 0))
        s.send(b"\xff" * 6 + bytes([2, 0, 0, 0, 0xff, 0xfe]) + b"\x88\xb5" + bytes(46))
    except OSError:
        s = None
    time.sleep(0.002)
"""


def join(lines, tmp):
    """Seconds from j0's creation to its 'joined' line, and to its first frame's timestamp."""
    sender = subprocess.Popen(["ip", "netns", "exec", NS_GEN, sys.executable, "-c", SEND_JOIN, "3"])
    time.sleep(0.2)
    batch = os.path.join(tmp, "join")
    with open(batch, "w") as f:
        f.write(f"link add j0 type veth peer name q0 netns {NS_GEN}\nlink set j0 up\n")
    created_wall, created = time.time(), time.monotonic()
    run("ip", "-n", NS_CAP, "-batch", batch)
    run("ip", "-n", NS_GEN, "link", "set", "q0", "up")
    attached = None
    while time.monotonic() - created < 10 and attached is None:
        attached = next((t - created for t, l in list(lines) if l.startswith("xdpcap: j0 joined")), None)
        time.sleep(0.005)
    sender.wait()
    return created_wall, attached


def first_frame(out, created_wall):
    fields = subprocess.run(["tshark", "-r", out, "-Y", 'frame.interface_name contains "j0@"', "-T", "fields",
                             "-e", "frame.time_epoch"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True).stdout.split()
    return min(float(t) for t in fields) - created_wall if fields else None


def one(xdpcap, args, pairs, tmp, joins):
    out = os.path.join(tmp, "out.pcapng")
    start = time.monotonic()
    p = subprocess.Popen(["ip", "netns", "exec", NS_CAP, xdpcap, *args, "-w", out], stderr=subprocess.PIPE,
                         text=True)
    for line in p.stderr:
        if line.startswith("listening on"):
            break
    attach = time.monotonic() - start
    lines = []
    reader = threading.Thread(target=lambda: [lines.append((time.monotonic(), l)) for l in p.stderr], daemon=True)
    reader.start()
    rss = rss_kib(p.pid)
    rings = status_kib(p.pid, "VmPin")
    fds = len(os.listdir(f"/proc/{p.pid}/fd"))
    run("ip", "netns", "exec", NS_GEN, sys.executable, "-c", SEND_ALL, str(pairs))
    time.sleep(0.5)
    rss_after = rss_kib(p.pid)
    per_frame = consumer_ns_per_frame(p.pid, pairs if joins else 1)
    created_wall, attached = join(lines, tmp) if joins else (None, None)
    stop = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.wait()
    reader.join()
    detach = time.monotonic() - stop
    if joins:
        run("ip", "-n", NS_CAP, "link", "del", "j0", check=False)
    frame = first_frame(out, created_wall) if joins else None
    return {"attach": attach, "rss": rss, "rss_after": rss_after, "rings": rings, "fds": fds, "detach": detach,
            "per_frame": per_frame,
            "joined": attached, "first_frame": frame}


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def seconds(value):
    return f"{value:9.2f}" if value is not None else f"{'-':>9}"


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
                rounds = [one(xdpcap, args, a.pairs, tmp, args == ["-i", "any"]) for _ in range(a.rounds)]
                rows[name] = {k: median(r[k] for r in rounds) for k in rounds[0]}
        finally:
            teardown()
    print(f"{os.cpu_count()} CPUs, median of {a.rounds} rounds")
    print(f"{'capture':28} {'attach s':>9} {'detach s':>9} {'RSS MiB':>8} {'RSS after':>10} {'rings MiB':>10} "
          f"{'fds':>6} {'joined s':>9} {'1st frame':>9} {'ns/frame':>9}")
    for name, r in rows.items():
        print(f"{name:28} {r['attach']:9.2f} {r['detach']:9.2f} {r['rss'] / 1024:8.1f} "
              f"{r['rss_after'] / 1024:10.1f} {r['rings'] / 1024:10.1f} {r['fds']:6.0f} {seconds(r['joined'])} "
              f"{seconds(r['first_frame'])} {r['per_frame']:9.0f}")


if __name__ == "__main__":
    main()
