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

--variant NAME=ARGS (repeatable) adds xdpcap with extra options as one more
tool in the same rounds, e.g. --variant "generic=--xdp-mode generic"; the
ratios xdpcap/NAME and NAME/tcpdump are printed too. --peers picks the peer
tools (default tcpdump,xdpdump; "" for none).

With --tcp-bulk MIB, instead of trafgen frames, one TCP transfer of MIB MiB
(iperf3 -n, client in the generator namespace at 198.18.0.2, server in the
capture namespace at 198.18.0.1, both pinned to the generator's CPU, so the
kernel's share of the capture slows the transfer and the consumer has the
other CPU) runs per tool and round, all tools with -s 262144 (xdpdump left
out). The sender's segmentation offload makes most frames super-frames. It
prints the medians of:

  throughput           iperf3's received bits per second, and the
                       slowdown: throughput without a tool / with it
  consumer CPU/MiB     user + sys of the capture process / MiB in the file
                       (sum of the captured lengths)
  loss                 1 - frames in the file / skbs cap0 counted (rx + tx)
  whole                frames in the file with captured length == length

and, with --bpf-stats, the BPF run time per MiB captured. --bulk-after MIB
runs the same transfers after the frame rounds, so that one run shows the
per-frame figures and bulk TCP's CPU per MiB side by side (the floor, which
writes no file, is left out of the transfers).

--idle also starts and stops each tool once a round with no traffic (its
fixed cost: loading programs, opening rings) and prints the consumer CPU net
of it, per frame sent and per frame written (a tool that loses frames does no
work for them), and the spread of the generator slowdown or throughput over
the rounds.

--floor adds the minimal sampler (build/bench/min_sampler: a native XDP
program that only calls bpf_perf_event_output with the frame and a 16-byte
header, drained by libbpf's perf buffer woken at a quarter of the ring, as
xdpcap's rings are) as the floor for the kernel side. It writes no file: its
captured count is the "N samples" it prints. The ratios NAME/floor of the
generator slowdown are printed for xdpcap, each variant and the baseline.

--rate PPS has trafgen send PPS frames a second rather than as fast as it
can: a rate every tool keeps up with compares their cost per frame without
one of them skipping the frames it lost.

--warm writes and deletes a file as large as a lossless capture of the run,
in the output directory (--dir), just before each tool starts. On a virtual
machine that hands freed memory back to its host (free page reporting: see
/sys/module/page_reporting), a page the guest touches again first costs a
fault in the host; without --warm every tool pays that on each page of its
file, which at 1500 bytes costs more than the tools themselves.

--discard has every tool write to /dev/null instead, and counts what each
says it captured ("N packets captured"): the tools' own CPU, without the
file system's cost per byte written, which on such a machine depends on
whether the host still backs the pages a tool happens to get.

--dir DIR puts the files in DIR instead of /dev/shm, e.g. on a disk's file
system, whose page cache takes large writes in large folios where tmpfs
(without huge=) allocates, charges and lists every 4 KiB page on its own.

--write-floor, after each run that wrote a file, writes a file of the same
size into the same directory from one buffer (1 MiB writes, pinned to the
capture CPU) and takes that process's CPU time: what the file system alone
costs for the bytes the tool wrote. It prints its median per frame for each
tool, and as a share of tcpdump's consumer CPU: a tool's consumer CPU cannot
go below its own bytes' floor, so a consumer target below it is out of reach
for any consumer that writes those bytes.
"""

import argparse
import json
import mmap
import os
import re
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

OUT_DIR = "/dev/shm"  # set from --dir: where the tools write their files
TCP_CAP_ADDR, TCP_GEN_ADDR = "198.18.0.1", "198.18.0.2"


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

    def __init__(self, addresses=False):
        tag = f"xdpcapb-{os.getpid()}-{secrets.token_hex(3)}"
        self.cap_ns, self.gen_ns = tag + "-cap", tag + "-gen"
        # Only for --tcp-bulk: with its address cap0 would answer the UDP
        # frames (ICMP), which the tools would then capture on the way out.
        self.addresses = addresses

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
            if self.addresses:
                run("ip", "-n", self.cap_ns, "addr", "add", f"{TCP_CAP_ADDR}/24", "dev", "cap0")
                run("ip", "-n", self.gen_ns, "addr", "add", f"{TCP_GEN_ADDR}/24", "dev", "gen0")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for ns in (self.cap_ns, self.gen_ns):
            run("ip", "netns", "del", ns, check=False)


class Tool:
    """One capture tool: how to start it, when it is ready, how to count.
    `expected` is how many frames a lossless run writes (None: all sent).
    Without an output file, its count is the first number in the line that
    `count_pattern` matches."""

    def __init__(self, name, argv, ready_text, output, expected=None, count_pattern=r"(\d+) samples"):
        self.name, self.argv, self.ready_text, self.output = name, argv, ready_text, output
        self.expected = expected
        self.count_pattern = count_pattern

    def discarding(self):
        """The same tool writing to /dev/null, counted from what it prints."""
        if not self.output:
            return self
        argv = ["/dev/null" if arg == self.output else arg for arg in self.argv]
        return Tool(self.name, argv, self.ready_text, None, self.expected, r"(\d+) packets captured")


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
        if shutil.which("tcpdump") and "tcpdump" in args.peers:
            tools.append(Tool(f"tcpdump-{direction}", ["tcpdump", "-i", "cap0", "-Q", direction, "-w",
                                                       f"{out}.tcpdump-{direction}.pcap"],
                              "listening on", f"{out}.tcpdump-{direction}.pcap"))
    return tools


def variant(text):
    name, sep, extra = text.partition("=")
    if not sep or not name or name in ("none", "xdpcap", "baseline", "tcpdump", "xdpdump"):
        raise argparse.ArgumentTypeError(f"{text!r}: NAME=ARGS, with a NAME of its own")
    return name, extra.split()


def tools_for(args, lab, bulk=False):
    """The tools of a run; `bulk`: of the TCP transfers, with whole super-frames."""
    tools = []
    out = os.path.join(OUT_DIR, f"xdpcap-bench-{os.getpid()}")
    if args.egress:
        return egress_tools(args, out)
    snap = ["-s", "262144"] if bulk else []
    tools.append(Tool("xdpcap", [os.path.abspath(args.xdpcap), "-i", "cap0", "-w", out + ".xdpcap.pcapng"] + snap
                      + args.xdpcap_args.split(), "listening on", out + ".xdpcap.pcapng"))
    for name, extra in args.variant:
        tools.append(Tool(name, [os.path.abspath(args.xdpcap), "-i", "cap0", "-w", f"{out}.{name}.pcapng"] + snap
                          + args.xdpcap_args.split() + extra, "listening on", f"{out}.{name}.pcapng"))
    if args.baseline:
        # Another build of xdpcap, for before/after figures of one change.
        tools.append(Tool("baseline", [os.path.abspath(args.baseline), "-i", "cap0", "-w", out + ".baseline.pcapng"]
                          + snap + args.xdpcap_args.split(), "listening on", out + ".baseline.pcapng"))
    if args.filter_runs:
        # A filter that rejects every frame: no ring space, no userspace work.
        tools.append(Tool("xdpcap-reject", [os.path.abspath(args.xdpcap), "-i", "cap0", "-w",
                                            out + ".reject.pcapng", "ether", "proto", "0x1234"],
                          "listening on", out + ".reject.pcapng", expected=0))
        pass_obj = os.path.join(os.path.dirname(os.path.abspath(args.xdpcap)), "..", "bench", "xdp_pass.bpf.o")
        tools.append(XdpPass(os.path.normpath(pass_obj)))
    if args.floor and not bulk:
        # The floor: every frame and a 16-byte header into the perf ring, nothing else. No file: it counts.
        sampler = os.path.join(os.path.dirname(os.path.abspath(args.xdpcap)), "..", "bench", "min_sampler")
        tools.append(Tool("floor", [os.path.normpath(sampler), "cap0"], "listening on", None))
    if shutil.which("tcpdump") and "tcpdump" in args.peers:
        tools.append(Tool("tcpdump", ["tcpdump", "-i", "cap0", "-w", out + ".tcpdump.pcap"] + snap,
                          "listening on", out + ".tcpdump.pcap"))
    if shutil.which("xdpdump") and "xdpdump" in args.peers and not bulk:
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
RATE = 0  # set from --rate: frames a second trafgen sends at (0: as fast as it can)
WARM = False  # set from --warm
WRITE_FLOOR = False  # set from --write-floor
LAST_WRITE_ALONE = [0.0]  # CPU seconds of the last run's bytes written alone

# Writes argv[2] bytes to the new file argv[1] and prints the CPU seconds of
# the writes alone (the file system's cost), then deletes the file.
WRITE_ALONE = r"""
import os, resource, sys
path, left = sys.argv[1], int(sys.argv[2])
chunk = memoryview(b"\x5a" * (1 << 20))
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
try:
    before = resource.getrusage(resource.RUSAGE_SELF)
    while left > 0:
        left -= os.write(fd, chunk[:min(left, len(chunk))])
    after = resource.getrusage(resource.RUSAGE_SELF)
finally:
    os.close(fd)
    os.unlink(path)
print(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
"""


def write_alone(nbytes, cpu):
    """CPU seconds the file system takes to be written nbytes in OUT_DIR."""
    path = os.path.join(OUT_DIR, f"xdpcap-bench-floor-{os.getpid()}")
    out = run("taskset", "-c", str(cpu), sys.executable, "-c", WRITE_ALONE, path, str(nbytes)).stdout
    return float(out.strip())


def warm_memory(nbytes):
    """Writes nbytes to a file in OUT_DIR and deletes it: the pages it freed
    are the ones the next tool's file gets, before the guest reports them
    back to the host as free."""
    path = os.path.join(OUT_DIR, f"xdpcap-bench-warm-{os.getpid()}")
    chunk = b"\0" * (1 << 20)
    try:
        with open(path, "wb") as f:
            for _ in range(0, nbytes, len(chunk)):
                f.write(chunk)
    finally:
        os.unlink(path)


def generate(lab, conf, frames, gen_cpu):
    start = time.perf_counter()
    if EGRESS:
        # -q is --qdisc-path: trafgen's default bypass would skip TC egress and the taps.
        run("ip", "netns", "exec", lab.cap_ns, "taskset", "-c", str(gen_cpu), "trafgen", "--dev", "cap0", "--conf",
            conf, "--num", str(frames), "--cpus", "1", "-q")
    else:
        run("ip", "netns", "exec", lab.gen_ns, "taskset", "-c", str(gen_cpu), "trafgen", "--dev", "gen0", "--conf",
            conf, "--num", str(frames), "--cpus", "1", "-q", *([f"-b", f"{RATE}pps"] if RATE else []))
    return time.perf_counter() - start


class Running:
    """A capture tool started in the capture namespace on `cap_cpu`, ready
    when the `with` body runs; stop() interrupts it and returns its rusage.
    Its output file is deleted on leaving the block."""

    def __init__(self, lab, tool, cap_cpu):
        self.lab, self.tool, self.cap_cpu = lab, tool, cap_cpu
        self.lines = []

    def __enter__(self):
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.lab.cap_ns, "taskset", "-c", str(self.cap_cpu)]
                                     + self.tool.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ready = threading.Event()

        def read_stderr():
            for line in self.proc.stderr:
                self.lines.append(line)
                if self.tool.ready_text in line:
                    ready.set()

        self.reader = threading.Thread(target=read_stderr, daemon=True)
        self.reader.start()
        try:
            if not ready.wait(10):
                raise RuntimeError(f"{self.tool.name} did not start: {''.join(self.lines)}")
            time.sleep(0.3)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def stop(self, quiet=False):
        time.sleep(1.0)  # let the tool drain what is queued
        self.proc.send_signal(signal.SIGINT)
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.reader.join(5)
        drops = [line.split()[0] for line in self.lines if "dropped by kernel" in line]
        if drops and not quiet:
            print(f"    {self.tool.name} says: {drops[0]} packets dropped by kernel", flush=True)
        return usage

    def __exit__(self, *exc):
        if self.proc.returncode is None:
            self.proc.kill()
            self.proc.wait()
        if self.tool.output and os.path.exists(self.tool.output):
            os.unlink(self.tool.output)

    def counted(self):
        """Frames a tool without an output file says it took."""
        for line in self.lines:
            m = re.match(self.tool.count_pattern, line)
            if m:
                return int(m.group(1))
        raise RuntimeError(f"{self.tool.name} printed no count: {''.join(self.lines)}")


# Nanoseconds of BPF run time (kernel.bpf_stats_enabled) during the last
# measure(): every program the tool's process holds, tail calls included
# (the kernel counts a tail call's time in the program that made it).
LAST_BPF_NS = [0]
BPF_STATS = [False]


def bpf_run_ns(pid):
    """Run time summed over the programs whose fds process `pid` holds (their fdinfo)."""
    times = {}
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if "prog_id" in fields and "run_time_ns" in fields:
            times[int(fields["prog_id"])] = int(fields["run_time_ns"])
    return sum(times.values())


def measure(lab, tool, conf, frames, cap_cpu, gen_cpu, frame_size):
    """Returns (generator seconds, consumer cpu seconds, frames captured, user seconds)."""
    if tool is None:
        return generate(lab, conf, frames, gen_cpu), 0.0, frames, 0.0
    if isinstance(tool, XdpPass):
        run("ip", "-n", lab.cap_ns, "link", "set", "dev", "cap0", "xdpdrv", "obj", tool.obj, "sec", "xdp")
        try:
            return generate(lab, conf, frames, gen_cpu), 0.0, frames, 0.0
        finally:
            run("ip", "-n", lab.cap_ns, "link", "set", "dev", "cap0", "xdpdrv", "off", check=False)
    if WARM and tool.output:
        # A lossless file's size, with room for the block around each frame.
        warm_memory(frames * (frame_size + 64))
    with Running(lab, tool, cap_cpu) as running:
        before = bpf_run_ns(running.proc.pid) if BPF_STATS[0] else 0
        seconds = generate(lab, conf, frames, gen_cpu)
        LAST_BPF_NS[0] = bpf_run_ns(running.proc.pid) - before if BPF_STATS[0] else 0
        usage = running.stop()
        got = count_frames(tool.output) if tool.output else running.counted()
        written = os.path.getsize(tool.output) if WRITE_FLOOR and tool.output else 0
    # After the block: the tool's file is gone, and its memory with it.
    LAST_WRITE_ALONE[0] = write_alone(written, cap_cpu) if written else 0.0
    return seconds, usage.ru_utime + usage.ru_stime, got, usage.ru_utime


def idle_wakeups(lab, tool, cap_cpu, seconds=10.0):
    """Voluntary context switches per second of the tool capturing nothing."""
    if isinstance(tool, XdpPass):
        return 0.0

    def switches(pid):
        with open(f"/proc/{pid}/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("voluntary_ctxt_switches"))

    with Running(lab, tool, cap_cpu) as running:
        before = switches(running.proc.pid)
        time.sleep(seconds)
        after = switches(running.proc.pid)
        running.stop(quiet=True)
        return (after - before) / seconds


def idle_cpu(lab, tool, cap_cpu):
    """user + sys of the tool started and stopped as in a run, with no traffic."""
    if isinstance(tool, XdpPass):
        return 0.0
    with Running(lab, tool, cap_cpu) as running:
        usage = running.stop(quiet=True)
        return usage.ru_utime + usage.ru_stime


def frame_lengths(path):
    """(frames, frames whole, captured bytes, largest length) of a pcap or
    pcapng file, from its record headers."""
    frames = whole = captured = largest = 0
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        magic = m[:4]
        if magic == b"\x0a\x0d\x0d\x0a":  # pcapng: walk the blocks
            order = "<" if m[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
            pos = 0
            while pos + 12 <= len(m):
                btype, blen = struct.unpack_from(order + "II", m, pos)
                if btype == 0x0A0D0D0A:
                    order = "<" if m[pos + 8:pos + 12] == b"\x4d\x3c\x2b\x1a" else ">"
                    btype, blen = struct.unpack_from(order + "II", m, pos)
                if blen < 12:
                    raise RuntimeError(f"{path}: bad block at {pos}")
                if btype == 6:  # enhanced packet block
                    cap_len, orig_len = struct.unpack_from(order + "II", m, pos + 20)
                    frames += 1
                    whole += cap_len == orig_len
                    captured += cap_len
                    largest = max(largest, orig_len)
                pos += blen
        else:  # pcap: a 24-byte header, then 16-byte record headers
            order = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<",
                     b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}[magic]
            pos = 24
            while pos + 16 <= len(m):
                cap_len, orig_len = struct.unpack_from(order + "II", m, pos + 8)
                frames += 1
                whole += cap_len == orig_len
                captured += cap_len
                largest = max(largest, orig_len)
                pos += 16 + cap_len
    return frames, whole, captured, largest


def cap0_packets(lab):
    """rx + tx packets of cap0: skbs, so a super-frame counts once."""
    stats = json.loads(run("ip", "-n", lab.cap_ns, "-s", "-j", "link", "show", "cap0").stdout)[0]["stats64"]
    return stats["rx"]["packets"] + stats["tx"]["packets"]


def transfer(lab, mib, gen_cpu):
    """One iperf3 -n transfer from gen0 to cap0; returns its received bits per second."""
    server = subprocess.Popen(["ip", "netns", "exec", lab.cap_ns, "taskset", "-c", str(gen_cpu), "iperf3", "-s",
                               "-1", "-B", TCP_CAP_ADDR], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if ":5201 " in run("ip", "netns", "exec", lab.cap_ns, "ss", "-Htln").stdout:
                break
            time.sleep(0.1)
        out = run("ip", "netns", "exec", lab.gen_ns, "taskset", "-c", str(gen_cpu), "iperf3", "-c", TCP_CAP_ADDR,
                  "-n", f"{mib}M", "-J").stdout
        server.wait(timeout=30)
        return json.loads(out)["end"]["sum_received"]["bits_per_second"]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def measure_tcp(lab, tool, mib, cap_cpu, gen_cpu):
    """Returns (bits per second, consumer cpu seconds, skbs on cap0, frames, whole, captured bytes, largest);
    the BPF run time in LAST_BPF_NS."""
    if tool is None:
        return transfer(lab, mib, gen_cpu), 0.0, 0, 0, 0, 0, 0
    with Running(lab, tool, cap_cpu) as running:
        before = cap0_packets(lab)
        bpf_before = bpf_run_ns(running.proc.pid) if BPF_STATS[0] else 0
        bps = transfer(lab, mib, gen_cpu)
        LAST_BPF_NS[0] = bpf_run_ns(running.proc.pid) - bpf_before if BPF_STATS[0] else 0
        usage = running.stop()
        skbs = cap0_packets(lab) - before
        return (bps, usage.ru_utime + usage.ru_stime, skbs) + frame_lengths(tool.output)


def tcp_bulk(args, mib, lab, tools, cap_cpu, gen_cpu):
    results = {name: [] for name in ["none"] + [t.name for t in tools]}
    bpf_ns = {name: [] for name in results}
    for round_no in range(args.rounds):
        for tool in [None] + tools:
            name = tool.name if tool else "none"
            LAST_BPF_NS[0] = 0
            results[name].append(measure_tcp(lab, tool, mib, cap_cpu, gen_cpu)
                                 + (idle_cpu(lab, tool, cap_cpu) if tool and args.idle else 0.0,))
            bpf_ns[name].append(LAST_BPF_NS[0])
            bps, cpu_s, skbs, frames, whole, captured, largest, idle = results[name][-1]
            print(f"  TCP {mib} MiB round {round_no + 1} {name:<8} {bps / 1e9:.2f} Gbit/s, consumer "
                  f"{cpu_s:.3f} s" + (f" (idle run {idle:.3f} s)" if args.idle else "")
                  + f", cap0 skbs {skbs}, in file {frames} ({whole} whole, {captured / 2**20:.1f} MiB, "
                  f"largest {largest} B)", flush=True)
    base = statistics.median(r[0] for r in results["none"])
    print(f"\n## TCP transfer of {mib} MiB (medians of {args.rounds} rounds; no-capture throughput "
          f"{base / 1e9:.2f} Gbit/s, {min(r[0] for r in results['none']) / 1e9:.2f}-"
          f"{max(r[0] for r in results['none']) / 1e9:.2f})")
    idle_head = ("| idle run CPU | consumer CPU per MiB net of it ", "|---|---") if args.idle else ("", "")
    print("| tool | throughput (min-max) | sender slowdown | consumer CPU per MiB captured " + idle_head[0]
          + "| MiB captured | loss | frames whole | largest frame |")
    print("|---|---|---|---" + idle_head[1] + "|---|---|---|---|")
    summary = {}
    for tool in tools:
        runs = results[tool.name]
        bps = statistics.median(r[0] for r in runs)
        summary[tool.name] = (base / bps, statistics.median(r[1] / (r[5] / 2**20) for r in runs if r[5]) * 1e3,
                              statistics.median((r[1] - r[7]) / (r[5] / 2**20) for r in runs if r[5]) * 1e3)
        loss = statistics.median(1 - r[3] / r[2] for r in runs)
        whole = f"{sum(r[4] == r[3] for r in runs)}/{len(runs)} rounds all"
        idle = (f"| {statistics.median(r[7] for r in runs):.3f} s | {summary[tool.name][2]:.2f} ms "
                if args.idle else "")
        print(f"| {tool.name} | {bps / 1e9:.2f} Gbit/s ({min(r[0] for r in runs) / 1e9:.2f}-"
              f"{max(r[0] for r in runs) / 1e9:.2f}) | {summary[tool.name][0]:.2f}x "
              f"| {summary[tool.name][1]:.2f} ms {idle}"
              f"| {statistics.median(r[5] for r in runs) / 2**20:.0f} | {loss * 100:.2f} % | {whole} "
              f"| {statistics.median(r[6] for r in runs):.0f} B |")
    for ours, peer in ratio_pairs(args, summary):
        x, p = summary[ours], summary[peer]
        print(f"{ours}/{peer}: sender slowdown {x[0] / p[0]:.2f}, consumer CPU per MiB {x[1] / p[1]:.2f}"
              + (f" (net of the idle run {x[2] / p[2]:.2f})" if args.idle and p[2] > 0 else ""))
    if args.bpf_stats:
        # Per MiB the file holds: the kernel's side of a capture, super-frames and ACKs alike.
        per_mib = {t.name: statistics.median(ns / (r[5] / 2**20) for ns, r in zip(bpf_ns[t.name], results[t.name])
                                             if r[5]) for t in tools if any(r[5] for r in results[t.name])}
        print("BPF run time per MiB captured: " + ", ".join(f"{n} {v / 1e3:.1f} us" for n, v in per_mib.items()
                                                             if v > 0))
    print(flush=True)


def ratio_pairs(args, summary):
    pairs = [("xdpcap", peer) for peer in ("baseline", "tcpdump", "xdpdump")]
    pairs += [("xdpcap", name) for name, _ in args.variant]
    pairs += [(name, peer) for name, _ in args.variant for peer in ("tcpdump", "xdpdump")]
    pairs += [(f"xdpcap-{d}", f"tcpdump-{d}") for d in ("out", "inout")]
    return [(ours, peer) for ours, peer in pairs if ours in summary and peer in summary]


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
    parser.add_argument("--variant", metavar="NAME=ARGS", type=variant, action="append", default=[],
                        help="also xdpcap with these extra options, named NAME (repeatable), "
                             "e.g. \"generic=--xdp-mode generic\"")
    parser.add_argument("--peers", default="tcpdump,xdpdump", help="peer tools to measure (comma-separated)")
    parser.add_argument("--idle", action="store_true",
                        help="also start and stop each tool once a round with no traffic, and print the consumer "
                             "CPU net of that fixed cost")
    parser.add_argument("--bpf-stats", action="store_true",
                        help="also BPF run time per frame (kernel.bpf_stats_enabled), summed over each tool's programs")
    parser.add_argument("--wakeups", action="store_true",
                        help="also each tool's wakeups per second with no traffic (voluntary switches over 10 s)")
    parser.add_argument("--floor", action="store_true",
                        help="add the minimal sampler (build/bench/min_sampler, native XDP) as the floor for the "
                             "kernel side, and print each xdpcap's generator slowdown against it")
    parser.add_argument("--rate", type=int, default=0, metavar="PPS",
                        help="trafgen sends PPS frames a second instead of as fast as it can")
    parser.add_argument("--dir", default="/dev/shm", help="where the tools write their files (default /dev/shm)")
    parser.add_argument("--discard", action="store_true",
                        help="every tool writes to /dev/null; counts are what the tools print")
    parser.add_argument("--warm", action="store_true",
                        help="before each run, write and delete in --dir as much as the tool will write, so "
                             "that its file gets memory the host still backs")
    parser.add_argument("--write-floor", action="store_true",
                        help="after each run, write as many bytes as the tool's file alone, and print that CPU "
                             "time per frame: the file system's floor under each tool's consumer CPU")
    parser.add_argument("--bulk-after", type=int, metavar="MIB",
                        help="after the frame rounds, the transfers of --tcp-bulk, MIB MiB each, in the same run")
    parser.add_argument("--tcp-bulk", type=int, metavar="MIB",
                        help="instead of trafgen frames, one TCP transfer of MIB MiB per tool and round")
    args = parser.parse_args()
    if args.discard and (args.tcp_bulk or args.bulk_after):
        parser.error("--discard counts frames, --tcp-bulk reads the files: not both")
    args.peers = [] if args.only_xdpcap else [p for p in args.peers.split(",") if p]
    if args.egress and (args.variant or args.tcp_bulk or args.bulk_after):
        parser.error("--variant and --tcp-bulk are for received frames, not with --egress")
    if args.tcp_bulk and args.filter_runs:
        parser.error("--filter-runs is for trafgen frames, not with --tcp-bulk")
    # The namespaces go on SIGTERM too: the with blocks run on SystemExit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.write_floor and (args.discard or args.tcp_bulk):
        parser.error("--write-floor is for the files of frame rounds, not with --discard or --tcp-bulk")
    global EGRESS, RATE, WARM, OUT_DIR, WRITE_FLOOR
    EGRESS = args.egress
    RATE = args.rate
    WARM = args.warm
    WRITE_FLOOR = args.write_floor
    OUT_DIR = args.dir
    if not os.path.isdir(OUT_DIR):
        parser.error(f"--dir {OUT_DIR}: not a directory")
    if os.geteuid() != 0:
        sys.exit("e2e_bench.py: run as root")
    if (args.tcp_bulk or args.bulk_after) and not shutil.which("iperf3"):
        sys.exit("e2e_bench.py: iperf3 is needed for --tcp-bulk")
    if not args.tcp_bulk and not shutil.which("trafgen"):
        sys.exit("e2e_bench.py: trafgen (netsniff-ng) is needed")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        sys.exit("e2e_bench.py: needs two CPUs")
    # trafgen pins its worker to the first CPU by itself, so the capture tools get the second.
    gen_cpu, cap_cpu = cpus[0], cpus[1]

    BPF_STATS[0] = args.bpf_stats
    stats_was = None
    if args.bpf_stats:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            stats_was = f.read().strip()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
    try:
        bench(args, gen_cpu, cap_cpu)
    finally:
        if stats_was is not None:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(stats_was)


def bench(args, gen_cpu, cap_cpu):
    mib = args.tcp_bulk or args.bulk_after
    if not args.tcp_bulk:
        frame_rounds(args, gen_cpu, cap_cpu)
    if mib:
        with Lab(addresses=True) as lab:
            tools = tools_for(args, lab, bulk=True)
            if args.wakeups and args.tcp_bulk:
                wakeups(lab, tools, cap_cpu)
            print(f"# TCP {mib} MiB per run, {args.rounds} rounds, capture on CPU {cap_cpu}, "
                  f"iperf3 both ends on CPU {gen_cpu}; tools: {', '.join(t.name for t in tools)}")
            tcp_bulk(args, mib, lab, tools, cap_cpu, gen_cpu)


def wakeups(lab, tools, cap_cpu):
    print("## Wakeups per second with no traffic (voluntary switches over 10 s)")
    for tool in tools:
        print(f"| {tool.name} | {idle_wakeups(lab, tool, cap_cpu):.1f} |", flush=True)


def frame_rounds(args, gen_cpu, cap_cpu):
    with Lab() as lab, tempfile.TemporaryDirectory() as tmp:
        tools = tools_for(args, lab)
        if args.wakeups:
            wakeups(lab, tools, cap_cpu)
        if args.discard:
            tools = [tool.discarding() if isinstance(tool, Tool) else tool for tool in tools]
        print(f"# {args.frames} frames per run, {args.rounds} rounds, capture on CPU {cap_cpu}, "
              f"generator on CPU {gen_cpu}; tools: {', '.join(t.name for t in tools)}")
        for size in (int(s) for s in args.sizes.split(",")):
            conf = os.path.join(tmp, f"frame{size}.cfg")
            with open(conf, "w") as f:
                f.write("{ " + ", ".join(f"0x{b:02x}" for b in udp_frame(size)) + " }\n")
            results = {name: [] for name in ["none"] + [t.name for t in tools]}
            bpf_ns = {name: [] for name in results}
            alone = {name: [] for name in results}
            for round_no in range(args.rounds):
                for tool in [None] + tools:
                    name = tool.name if tool else "none"
                    LAST_BPF_NS[0] = 0
                    LAST_WRITE_ALONE[0] = 0.0
                    results[name].append(measure(lab, tool, conf, args.frames, cap_cpu, gen_cpu, size)
                                         + (idle_cpu(lab, tool, cap_cpu) if tool and args.idle else 0.0,))
                    bpf_ns[name].append(LAST_BPF_NS[0])
                    alone[name].append(LAST_WRITE_ALONE[0])
                    gen_s, cpu_s, got, user_s, idle = results[name][-1]
                    print(f"  {size:>5} B round {round_no + 1} {name:<8} generator {gen_s:.3f} s, "
                          f"consumer {cpu_s:.3f} s (user {user_s:.3f}"
                          + (f", idle run {idle:.3f}" if args.idle else "") + f"), captured {got}", flush=True)
            base = statistics.median(r[0] for r in results["none"])
            summary = {}
            for tool in tools:
                runs = results[tool.name]
                expected = args.frames if getattr(tool, "expected", None) is None else tool.expected
                summary[tool.name] = (
                    statistics.median(r[0] for r in runs) / base,
                    statistics.median(r[1] for r in runs) / args.frames * 1e6,
                    statistics.median(1 - r[2] / expected if expected else float(r[2] != 0) for r in runs),
                    statistics.median(r[4] for r in runs),
                    statistics.median(r[1] - r[4] for r in runs) / args.frames * 1e6,
                    (min(r[0] for r in runs) / base, max(r[0] for r in runs) / base),
                    # A tool that loses frames does no work for them: per frame it wrote.
                    statistics.median((r[1] - r[4]) / r[2] * 1e6 if r[2] else 0.0 for r in runs),
                )
            rate = f"; trafgen at {RATE} frames/s" if RATE else ""
            print(f"\n## {size}-byte frames (medians of {args.rounds} rounds; "
                  f"no-capture generator time {base:.3f} s{rate})")
            if args.idle:
                print("| tool | generator slowdown (min-max) | consumer CPU per frame | idle run CPU "
                      "| consumer CPU per frame net of it | the same per frame written | loss |")
                print("|---|---|---|---|---|---|---|")
            else:
                print("| tool | generator slowdown | consumer CPU per frame | loss |")
                print("|---|---|---|---|")
            for name, (slow, cpu_us, loss, idle, net_us, spread, written_us) in summary.items():
                if args.idle:
                    print(f"| {name} | {slow:.2f}x ({spread[0]:.2f}-{spread[1]:.2f}) | {cpu_us:.3f} us | {idle:.3f} s "
                          f"| {net_us:.3f} us | {written_us:.3f} us | {loss * 100:.2f} % |")
                else:
                    print(f"| {name} | {slow:.2f}x | {cpu_us:.3f} us | {loss * 100:.2f} % |")
            for ours, peer in ratio_pairs(args, summary):
                x, p = summary[ours], summary[peer]
                print((f"{ours}/{peer}: generator slowdown {x[0] / p[0]:.2f}, "
                       f"consumer CPU {x[1] / p[1]:.2f}" if p[1] else "")
                      + (f" (net of the idle run {x[4] / p[4]:.2f}" if args.idle and p[4] > 0 else "")
                      + (f", per frame written {x[6] / p[6]:.2f})" if args.idle and p[4] > 0 and p[6] > 0
                         else ")" if args.idle and p[4] > 0 else ""))
            if args.write_floor:
                floors = {t.name: statistics.median(alone[t.name]) / args.frames * 1e6 for t in tools
                          if any(alone[t.name])}
                print("Its file's bytes written alone, per frame: "
                      + ", ".join(f"{n} {v:.3f} us" for n, v in floors.items()))
                if summary.get("tcpdump") and summary["tcpdump"][1]:
                    for name, floor_us in floors.items():
                        print(f"{name}'s bytes written alone / tcpdump's consumer CPU: "
                              f"{floor_us / summary['tcpdump'][1]:.2f}")
            if args.bpf_stats:
                per_frame = {t.name: statistics.median(bpf_ns[t.name]) / args.frames for t in tools}
                print("BPF run time per frame: " + ", ".join(f"{n} {v:.0f} ns" for n, v in per_frame.items()
                                                             if v > 0))
                if per_frame.get("floor"):
                    for name in ["xdpcap", "baseline"] + [n for n, _ in args.variant]:
                        if per_frame.get(name):
                            # Each round's own ratio too: the floor moves between rounds
                            # as much as the tools do.
                            per_round = [ns / floor_ns for ns, floor_ns in zip(bpf_ns[name], bpf_ns["floor"])
                                         if ns and floor_ns]
                            print(f"{name}/floor BPF run time: {per_frame[name] / per_frame['floor']:.2f} "
                                  f"(target <= {0.5 if size <= 64 else 0.8})"
                                  + (f"; per round {', '.join(f'{r:.2f}' for r in per_round)} "
                                     f"(median {statistics.median(per_round):.2f})" if per_round else ""))
            if "floor" in summary:
                # xdpcap's builds only: the reject filter and XDP_PASS do less than the floor.
                for name in ["xdpcap", "baseline"] + [n for n, _ in args.variant]:
                    if name in summary:
                        print(f"{name}/floor: generator slowdown {summary[name][0] / summary['floor'][0]:.2f} "
                              f"(goal <= 1.15 in native mode)")
            print(flush=True)


if __name__ == "__main__":
    main()
