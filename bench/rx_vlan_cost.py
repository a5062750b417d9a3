#!/usr/bin/python3
"""What restoring received VLAN tags costs: the device-bound front program with and without a tag to put back.

Run as root:  bench/rx_vlan_cost.py --xdpcap build/src/xdpcap [--rounds 3] [--frames 1000000]

Needs a kernel with bpf_xdp_metadata_rx_vlan_tag (6.8; veth implements it),
trafgen (netsniff-ng), clang and capinfos.

A NIC with rx-vlan-offload is reproduced as in tests/e2e/test_rx_vlan.py:
frames sent into inj1 are received on inj0, whose receive path moves the
802.1Q tag into skb metadata, and a tc program redirects them out of cap0,
so they reach gen0 with the tag outside the frame. trafgen (pinned to the
first CPU, where on a veth the whole receive path runs, XDP included) sends
--frames 64-byte frames, tagged or not, while nothing captures on gen0 and
while `xdpcap --xdp-mode native -Q in` (the front program, the capture
program, and for a tagged frame the copy with the tag put back) writes to
/dev/shm, in interleaved rounds. Printed per traffic (medians): trafgen's
frames per second, the nanoseconds a frame the capture adds, and the records
in the file, with how many hold their tag.
"""

import argparse
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHM = "/dev/shm"

sys.path.insert(0, HERE)
from e2e_bench import udp_frame  # noqa: E402


def run(*argv, check=True):
    return subprocess.run(argv, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def frame(tagged):
    """A 64-byte UDP frame for gen0, the last 4 of its bytes an 802.1Q tag (VLAN 100) when `tagged`."""
    if not tagged:
        return udp_frame(64)
    inner = udp_frame(60)
    return inner[:12] + bytes.fromhex("81000064") + inner[12:]


class Lab:
    def __init__(self):
        tag = f"xdpcapv-{os.getpid()}-{secrets.token_hex(2)}"
        self.cap_ns, self.gen_ns = tag + "-cap", tag + "-gen"

    def __enter__(self):
        try:
            run("ip", "netns", "add", self.cap_ns)
            run("ip", "netns", "add", self.gen_ns)
            for a, b in (("cap0", "gen0"), ("inj0", "inj1")):
                run("ip", "link", "add", a, "netns", self.cap_ns, "type", "veth", "peer", "name", b,
                    "netns", self.gen_ns)
            for ns, devs in ((self.cap_ns, ("cap0", "inj0")), (self.gen_ns, ("gen0", "inj1"))):
                for key in ("all", "default") + devs:
                    run("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1",
                        check=False)
                for dev in devs:
                    run("ip", "-n", ns, "link", "set", dev, "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for ns in (self.cap_ns, self.gen_ns):
            run("ip", "netns", "del", ns, check=False)

    def redirect(self, tmp):
        ifindex = run("ip", "netns", "exec", self.cap_ns, "cat", "/sys/class/net/cap0/ifindex").stdout.strip()
        obj = os.path.join(tmp, "redirect_to.o")
        multiarch = run("gcc", "-print-multiarch", check=False).stdout.strip() or "x86_64-linux-gnu"
        run("clang", "-O2", "-g", "-target", "bpf", "-idirafter", f"/usr/include/{multiarch}",
            f"-DTARGET_IFINDEX={int(ifindex)}", "-c",
            os.path.join(HERE, "..", "tests", "e2e", "redirect_to.bpf.c"), "-o", obj)
        run("ip", "netns", "exec", self.cap_ns, "tc", "qdisc", "add", "dev", "inj0", "clsact")
        run("ip", "netns", "exec", self.cap_ns, "tc", "filter", "add", "dev", "inj0", "ingress", "bpf", "da",
            "obj", obj, "sec", "tc")


def send(lab, conf, frames):
    start = time.perf_counter()
    run("ip", "netns", "exec", lab.gen_ns, "taskset", "-c", "0", "trafgen", "--dev", "inj1", "--conf", conf,
        "--num", str(frames), "--cpus", "1", "-q")
    return time.perf_counter() - start


def tagged_records(path):
    """(records, records whose frame carries an 802.1Q tag) from tshark."""
    out = run("tshark", "-n", "-r", path, "-T", "fields", "-e", "eth.type").stdout.split()
    return len(out), sum(1 for t in out if t.startswith("0x8100"))


def measure(lab, xdpcap, conf, frames, capture):
    if not capture:
        return send(lab, conf, frames), None
    out = os.path.join(SHM, f"xdpcap-rxvlan-{os.getpid()}.pcapng")
    proc = subprocess.Popen(["ip", "netns", "exec", lab.gen_ns, "taskset", "-c", "1", xdpcap, "-i", "gen0",
                             "--xdp-mode", "native", "-Q", "in", "-w", out], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith("listening on"):
                break
            if "warning" in line:
                sys.exit(f"rx_vlan_cost.py: {line.strip()} (the tags cannot be restored here)")
        time.sleep(0.3)
        seconds = send(lab, conf, frames)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        return seconds, tagged_records(out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if os.path.exists(out):
            os.unlink(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xdpcap", default="build/src/xdpcap")
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    xdpcap = os.path.abspath(args.xdpcap)
    results = {}
    with tempfile.TemporaryDirectory() as tmp, Lab() as lab:
        lab.redirect(tmp)
        confs = {}
        for name, tagged in (("untagged", False), ("802.1Q tag in metadata", True)):
            confs[name] = os.path.join(tmp, f"{tagged}.cfg")
            with open(confs[name], "w") as f:
                f.write("{ " + ", ".join(f"0x{b:02x}" for b in frame(tagged)) + " }\n")
        for rnd in range(args.rounds):
            for name, conf in confs.items():
                for capture in (False, True):
                    r = measure(lab, xdpcap, conf, args.frames, capture)
                    results.setdefault((name, capture), []).append(r)
                    print(f"round {rnd + 1} {name:<24} {'xdpcap' if capture else 'none':<7} {r}", flush=True)
    med = statistics.median
    print(f"\n{args.frames} frames of 64 bytes (60 on the wire untagged), trafgen on CPU 0, xdpcap on CPU 1\n")
    print("| received frames | capture on gen0 | trafgen frames/s | ns a frame the capture adds | records (tagged) |")
    print("|---|---|---|---|---|")
    for name in confs:
        base = med([s for s, _ in results[(name, False)]])
        for capture in (False, True):
            rs = results[(name, capture)]
            seconds = med([s for s, _ in rs])
            added = f"{(seconds - base) / args.frames * 1e9:.0f}" if capture else "-"
            recs = "-"
            if capture:
                counts = [c for _, c in rs]
                recs = f"{med([c[0] for c in counts]):,.0f} ({med([c[1] for c in counts]):,.0f})"
            print(f"| {name} | {'xdpcap native' if capture else 'none'} | {args.frames / seconds:,.0f} | "
                  f"{added} | {recs} |")


if __name__ == "__main__":
    sys.exit(main())
