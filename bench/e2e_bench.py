#!/usr/bin/python3
"""End-to-end capture benchmark: xdpcap against tcpdump and xdpdump.

Run as root:  bench/e2e_bench.py --xdpcap build/src/xdpcap

It makes its own pair of network namespaces joined by a veth pair, sends
--frames UDP frames at top speed from the generator side with trafgen pinned
to one CPU, and captures them on the other side into /dev/shm, once with
nothing capturing and once with each tool, in interleaved rounds
(none, xdpcap, tcpdump, xdpdump, none, xdpcap, ...). It prints, per frame size,
the median over the rounds of:

  generator slowdown   generator wall time with the tool / without any tool
  consumer CPU/frame   user + sys of the capture process (wait4) / frames sent
  loss                 1 - frames in the file / frames sent

and the ratios xdpcap/tcpdump and xdpcap/xdpdump. Tools that are not
installed are left out. Capture processes run on one CPU, the generator (and
so the XDP program, which runs in its softirq) on another.

With --egress the frames are sent out of cap0 instead (trafgen through the
qdisc path, so they pass the TC egress hook and the packet taps), and the
tools are xdpcap -Q out and tcpdump -Q out, then xdpcap and tcpdump with
-Q inout; xdpdump, which sees received frames only, is left out.
"""

import argparse
import os
import secrets
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

SHM = "/dev/shm"


def run(*cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def udp_frame(size):
    """An Ethernet/IPv4/UDP frame of `size` bytes, 198.18.0.2 -> 198.18.0.1."""
    eth = bytes.fromhex("020000000001" "020000000002" "0800")
    ip_len = size - 14
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0x4000, 64, 17, 0,
                     bytes([198, 18, 0, 2]), bytes([198, 18, 0, 1]))
    csum = sum(struct.unpack("!10H", ip))
    csum = (csum & 0xFFFF) + (csum >> 16)
    csum = (csum & 0xFFFF) + (csum >> 16)
    ip = ip[:10] + struct.pack("!H", ~csum & 0xFFFF) + ip[12:]
    udp = struct.pack("!HHHH", 9, 9, ip_len - 20, 0)
    return eth + ip + udp + bytes(size - 42)


class Lab:
    """Two namespaces and a veth pair, removed on exit whatever happens."""

    def __init__(self):
        tag = f"xdpcapb-{os.getpid()}-{secrets.token_hex(3)}"
        self.cap_ns, self.gen_ns = tag + "-cap", tag + "-gen"

    def __enter__(self):
        try:
            run("ip", "netns", "add", self.cap_ns)
            run("ip", "netns", "add", self.gen_ns)
            run("ip", "link", "add", "cap0", "netns", self.cap_ns, "type", "veth",
                "peer", "name", "gen0", "netns", self.gen_ns)
            for ns, dev in ((self.cap_ns, "cap0"), (self.gen_ns, "gen0")):
                for key in ("all", "default", dev):
                    run("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1",
                        check=False)
                run("ip", "-n", ns, "link", "set", dev, "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for ns in (self.cap_ns, self.gen_ns):
            run("ip", "netns", "del", ns, check=False)


class Tool:
    """One capture tool: how to start it, when it is ready, how to count.
    `expected` is how many frames a lossless run writes (None: all sent)."""

    def __init__(self, name, argv, ready_text, output, expected=None):
        self.name, self.argv, self.ready_text, self.output = name, argv, ready_text, output
        self.expected = expected


class XdpPass:
    """Not a capture tool: a bare XDP_PASS program, the floor for kernel cost."""
    name = "xdp-pass"

    def __init__(self, obj):
        self.obj = obj


def egress_tools(args, out):
    tools = []
    for direction in ("out", "inout"):
        tools.append(Tool(f"xdpcap-{direction}", [os.path.abspath(args.xdpcap), "-i", "cap0", "-Q", direction, "-w",
                                                  f"{out}.xdpcap-{direction}.pcapng"] + args.xdpcap_args.split(),
                          "listening on", f"{out}.xdpcap-{direction}.pcapng"))
        if shutil.which("tcpdump") and not args.only_xdpcap:
            tools.append(Tool(f"tcpdump-{direction}", ["tcpdump", "-i", "cap0", "-Q", direction, "-w",
                                                       f"{out}.tcpdump-{direction}.pcap"],
                              "listening on", f"{out}.tcpdump-{direction}.pcap"))
    return tools


def tools_for(args, lab):
    tools = []
    out = os.path.join(SHM, f"xdpcap-bench-{os.getpid()}")
    if args.egress:
        return egress_tools(args, out)
    tools.append(Tool("xdpcap", [os.path.abspath(args.xdpcap), "-i", "cap0", "-w", out + ".xdpcap.pcapng"] + args.xdpcap_args.split(),
                      "listening on", out + ".xdpcap.pcapng"))
    if args.baseline:
        # Another build of xdpcap, for before/after figures of one change.
        tools.append(Tool("baseline", [os.path.abspath(args.baseline), "-i", "cap0", "-w", out + ".baseline.pcapng"]
                          + args.xdpcap_args.split(), "listening on", out + ".baseline.pcapng"))
    if args.filter_runs:
        # A filter that rejects every frame: no ring space, no userspace work.
        tools.append(Tool("xdpcap-reject", [os.path.abspath(args.xdpcap), "-i", "cap0", "-w",
                                            out + ".reject.pcapng", "ether", "proto", "0x1234"],
                          "listening on", out + ".reject.pcapng", expected=0))
        pass_obj = os.path.join(os.path.dirname(os.path.abspath(args.xdpcap)), "..", "bench", "xdp_pass.bpf.o")
        tools.append(XdpPass(os.path.normpath(pass_obj)))
    if shutil.which("tcpdump") and not args.only_xdpcap:
        tools.append(Tool("tcpdump", ["tcpdump", "-i", "cap0", "-w", out + ".tcpdump.pcap"],
                          "listening on", out + ".tcpdump.pcap"))
    if shutil.which("xdpdump") and not args.only_xdpcap:
        tools.append(Tool("xdpdump", ["xdpdump", "--load-xdp-program", "-i", "cap0", "-w", out + ".xdpdump.pcapng"],
                          "listening on", out + ".xdpdump.pcapng"))
    return tools


def count_frames(path):
    res = run("capinfos", "-M", "-c", "-T", "-r", path, check=False)
    for line in res.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and fields[-1].strip().isdigit():
            return int(fields[-1])
    raise RuntimeError(f"capinfos could not count {path}: {res.stderr.strip()}")


EGRESS = False  # set from --egress: send out of cap0 instead of into it


def generate(lab, conf, frames, gen_cpu):
    start = time.perf_counter()
    if EGRESS:
        # -q is --qdisc-path: trafgen's default bypass would skip TC egress and the taps.
        run("ip", "netns", "exec", lab.cap_ns, "taskset", "-c", str(gen_cpu), "trafgen", "--dev", "cap0", "--conf",
            conf, "--num", str(frames), "--cpus", "1", "-q")
    else:
        run("ip", "netns", "exec", lab.gen_ns, "taskset", "-c", str(gen_cpu), "trafgen", "--dev", "gen0", "--conf",
            conf, "--num", str(frames), "--cpus", "1", "-q")
    return time.perf_counter() - start


def measure(lab, tool, conf, frames, cap_cpu, gen_cpu):
    """Returns (generator seconds, consumer cpu seconds, frames captured, user seconds)."""
    if tool is None:
        return generate(lab, conf, frames, gen_cpu), 0.0, frames, 0.0
    if isinstance(tool, XdpPass):
        run("ip", "-n", lab.cap_ns, "link", "set", "dev", "cap0", "xdpdrv", "obj", tool.obj, "sec", "xdp")
        try:
            return generate(lab, conf, frames, gen_cpu), 0.0, frames, 0.0
        finally:
            run("ip", "-n", lab.cap_ns, "link", "set", "dev", "cap0", "xdpdrv", "off", check=False)
    proc = subprocess.Popen(["ip", "netns", "exec", lab.cap_ns, "taskset", "-c", str(cap_cpu)] + tool.argv,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ready = threading.Event()
    lines = []

    def read_stderr():
        for line in proc.stderr:
            lines.append(line)
            if tool.ready_text in line:
                ready.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        if not ready.wait(10):
            raise RuntimeError(f"{tool.name} did not start: {''.join(lines)}")
        time.sleep(0.3)
        seconds = generate(lab, conf, frames, gen_cpu)
        time.sleep(1.0)  # let the tool drain what is queued
        proc.send_signal(signal.SIGINT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        reader.join(5)
        cpu = usage.ru_utime + usage.ru_stime
        captured = count_frames(tool.output)
        drops = [line.split()[0] for line in lines if "dropped by kernel" in line]
        if drops:
            print(f"    {tool.name} says: {drops[0]} packets dropped by kernel", flush=True)
        return seconds, cpu, captured, usage.ru_utime
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        if os.path.exists(tool.output):
            os.unlink(tool.output)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xdpcap", default="build/src/xdpcap")
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="64,1500")
    parser.add_argument("--only-xdpcap", action="store_true", help="leave out the peer tools")
    parser.add_argument("--filter-runs", action="store_true",
                        help="add xdpcap with a filter that rejects everything, and a bare XDP_PASS program")
    parser.add_argument("--baseline", metavar="XDPCAP",
                        help="another xdpcap binary to measure in the same rounds (before/after a change)")
    parser.add_argument("--xdpcap-args", default="", help="extra xdpcap options, e.g. \"--ring-pages 1024\"")
    parser.add_argument("--egress", action="store_true",
                        help="send out of cap0 and compare -Q out and -Q inout with tcpdump's")
    args = parser.parse_args()
    global EGRESS
    EGRESS = args.egress
    if os.geteuid() != 0:
        sys.exit("e2e_bench.py: run as root")
    if not shutil.which("trafgen"):
        sys.exit("e2e_bench.py: trafgen (netsniff-ng) is needed")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        sys.exit("e2e_bench.py: needs two CPUs")
    # trafgen pins its worker to the first CPU by itself, so the capture tools get the second.
    gen_cpu, cap_cpu = cpus[0], cpus[1]

    with Lab() as lab, tempfile.TemporaryDirectory() as tmp:
        tools = tools_for(args, lab)
        print(f"# {args.frames} frames per run, {args.rounds} rounds, capture on CPU {cap_cpu}, "
              f"generator on CPU {gen_cpu}; tools: {', '.join(t.name for t in tools)}")
        for size in (int(s) for s in args.sizes.split(",")):
            conf = os.path.join(tmp, f"frame{size}.cfg")
            with open(conf, "w") as f:
                f.write("{ " + ", ".join(f"0x{b:02x}" for b in udp_frame(size)) + " }\n")
            results = {name: [] for name in ["none"] + [t.name for t in tools]}
            for round_no in range(args.rounds):
                for tool in [None] + tools:
                    name = tool.name if tool else "none"
                    results[name].append(measure(lab, tool, conf, args.frames, cap_cpu, gen_cpu))
                    gen_s, cpu_s, got, user_s = results[name][-1]
                    print(f"  {size:>5} B round {round_no + 1} {name:<8} generator {gen_s:.3f} s, "
                          f"consumer {cpu_s:.3f} s (user {user_s:.3f}), captured {got}", flush=True)
            base = statistics.median(r[0] for r in results["none"])
            summary = {}
            for tool in tools:
                runs = results[tool.name]
                expected = args.frames if getattr(tool, "expected", None) is None else tool.expected
                summary[tool.name] = (
                    statistics.median(r[0] for r in runs) / base,
                    statistics.median(r[1] for r in runs) / args.frames * 1e6,
                    statistics.median(1 - r[2] / expected if expected else float(r[2] != 0) for r in runs),
                )
            print(f"\n## {size}-byte frames (medians of {args.rounds} rounds; "
                  f"no-capture generator time {base:.3f} s)")
            print("| tool | generator slowdown | consumer CPU per frame | loss |")
            print("|---|---|---|---|")
            for name, (slow, cpu_us, loss) in summary.items():
                print(f"| {name} | {slow:.2f}x | {cpu_us:.3f} us | {loss * 100:.2f} % |")
            pairs = [("xdpcap", peer) for peer in ("baseline", "tcpdump", "xdpdump")]
            pairs += [(f"xdpcap-{d}", f"tcpdump-{d}") for d in ("out", "inout")]
            for ours, peer in pairs:
                if peer in summary and ours in summary:
                    x, p = summary[ours], summary[peer]
                    print(f"{ours}/{peer}: generator slowdown {x[0] / p[0]:.2f}, "
                          f"consumer CPU {x[1] / p[1]:.2f}" if p[1] else "")
            print(flush=True)


if __name__ == "__main__":
    main()
