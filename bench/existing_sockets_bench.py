#!/usr/bin/python3
"""How long `xdpcap -k` takes to start with many sockets already open.

Run (root):  bench/existing_sockets_bench.py build/src/xdpcap [--sockets 10000] [--rounds 5] [--max-seconds S]

In a network namespace of its own (lo up), a helper opens SOCKETS sockets
and holds them: a third bound UDP sockets, the rest TCP connections over lo
(both ends) and their listener. Then, RUNS times each, without and with the
helper's sockets, it starts `xdpcap -i lo -k -w /dev/null` in that
namespace and times it from exec to its "listening on" line (the owners of
every existing socket are learned before it), then stops it with SIGINT.
Prints the median start-up of each and their difference, and the CPU
time (user + sys) of each run. With
--max-seconds, exits 1 when the start-up with the sockets took longer.
"""

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import time

HELPER = r"""
import resource, socket, sys
n = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 100, n + 100))
held = []
udp = n // 3
for _ in range(udp):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    held.append(s)
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(4096)
held.append(l)
address = l.getsockname()
for _ in range((n - udp - 1) // 2):
    c = socket.create_connection(address)
    a, _ = l.accept()
    held += [c, a]
print(len(held), flush=True)
sys.stdin.readline()
"""


def start_up(binary, ns):
    """(seconds to "listening on", CPU seconds of the whole run)"""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    x = subprocess.Popen(["ip", "netns", "exec", ns, binary, "-i", "lo", "-k", "-w", "/dev/null"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = None
    for line in x.stderr:
        if "listening on" in line:
            took = time.monotonic() - began
            break
    x.send_signal(signal.SIGINT)
    rest = x.communicate(timeout=30)[1]
    if took is None or x.returncode != 0:
        sys.exit(f"xdpcap did not start: {rest.strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("xdpcap")
    ap.add_argument("--sockets", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-seconds", type=float)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("existing_sockets_bench: run as root")
    binary = os.path.abspath(args.xdpcap)
    ns = f"xdpcap-bench-socks-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    helper = None
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        without = [start_up(binary, ns) for _ in range(args.rounds)]
        resource.setrlimit(resource.RLIMIT_NOFILE, (args.sockets + 200, args.sockets + 200))
        helper = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-S", "-c", HELPER, str(args.sockets)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        opened = int(helper.stdout.readline())
        with_sockets = [start_up(binary, ns) for _ in range(args.rounds)]
    finally:
        if helper:
            helper.stdin.close()
            helper.wait(timeout=30)
        subprocess.run(["ip", "netns", "del", ns], check=False)
    a, b = (statistics.median(t for t, _ in runs) for runs in (without, with_sockets))
    ca, cb = (statistics.median(c for _, c in runs) for runs in (without, with_sockets))
    print(f"start-up, median of {args.rounds}: {a:.3f} s without, {b:.3f} s with {opened} sockets open "
          f"(+{b - a:.3f} s); slowest with them {max(t for t, _ in with_sockets):.3f} s")
    print(f"CPU (user + sys) of a start and stop: {ca:.3f} s without, {cb:.3f} s with them (+{cb - ca:.3f} s)")
    if args.max_seconds is not None and b > args.max_seconds:
        print(f"over the bound of {args.max_seconds} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
