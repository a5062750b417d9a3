#!/usr/bin/python3
"""End-to-end: an interface that already runs an XDP program of someone else.

Usage (root): /usr/bin/python3 tests/e2e/test_busy_interface.py PATH/TO/xdpcap

The test's own XDP program (xdp_verdicts.bpf.c: drops UDP to port 7001,
rewrites a byte of UDP to port 7002, passes the rest) is attached to cap0
with ip link.  Checks:
- xdpcap -D lists cap0 with its state and that program (mode, id as ip link
  reports it, full name, tag), and lo; exit 0; for both it says received
  frames are taken at tc ingress (after the program on cap0);
- xdpcap -i cap0 in the default mode (tc ingress on a veth) captures what
  the program passes: the frames to 7000 and 7002 (rewritten), none to 7001;
  one line names the program acting first (none with -q); the program stays
  attached, same id, same mode; the same with the program in generic mode;
- on a kernel without the tracing program type (bpftool feature probe),
  xdpcap --xdp-mode native -i cap0 (the XDP hook) is refused in one line
  naming the program and saying that it cannot be traced: the kernel does
  not offer fentry/fexit, and that without --xdp-mode it is captured at tc
  ingress; exit 1, and the program stays attached, same id
  (with tracing, xdpcap traces it instead: test_trace.py);
- xdpcap -Q out captures beside it: the frames cap0 sends, byte for byte.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

PORTS = (7000, 7001, 7002)


def udp_frames(tag):
    """Two frames to each port the test program treats apart, each unique."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    return [bytes(Ether(dst="02:00:00:00:7a:01", src="02:00:00:00:7a:02") /
                  IP(src="198.18.79.2", dst="198.18.79.1") / UDP(sport=40000, dport=port) /
                  (b"A" + N.MARKER + bytes([port & 0xff, seq, tag]) + bytes(16)))
            for seq in range(2) for port in PORTS]


def passed_by_program(frame):
    """The frame as xdp_verdicts passes it, or None where it drops it."""
    port = int.from_bytes(frame[36:38], "big")
    if port == 7001:
        return None
    return frame[:42] + b"\xee" + frame[43:] if port == 7002 else frame


def capture_behind(lab, binary, tmp, name, prog, extra):
    """Captures cap0 in the default mode while the test program runs there;
    checks only what it passes is captured and that it is left as it was.
    Returns xdpcap's stderr lines."""
    before = lab.link_info(lab.cap_ns, lab.cap_if).get("xdp")
    frames = udp_frames(len(name))
    pcap = os.path.join(tmp, name + ".pcap")
    N.write_frames(pcap, frames)
    path = os.path.join(tmp, name + ".pcapng")
    x = lab.xdpcap(binary, ["-Q", "in", "-w", path] + extra)
    x.wait_listening()
    lab.send(pcap, cpu=0)
    time.sleep(N.scaled(0.5))
    N.expect(x.stop(signal.SIGINT) == 0, f"{name}: xdpcap exits 0 behind the program", x.stderr)
    got = [r["data"] for r in N.read_capture(path, tmp) if N.MARKER in r["data"]]
    N.check_exact([f for f in map(passed_by_program, frames) if f], got,
                  f"{name}: captured at tc ingress, the frames the program passes as it passes them "
                  "(7000, 7002 rewritten), none it drops (7001)")
    after = lab.link_info(lab.cap_ns, lab.cap_if).get("xdp")
    N.expect(after == before and lab.xdp_prog() == prog,
             f"{name}: the program is left attached, same id, same mode", (before, after))
    return x.err_lines


def check_acting_first(lab, binary, tmp, name, prog):
    tag = N.run(["bpftool", "prog", "show", "id", str(prog[0])]).stdout.split("tag ")[1].split()[0]
    err = capture_behind(lab, binary, tmp, name, prog, [])
    want = (f"xdpcap: {lab.cap_if}: XDP program 'xdp_verdicts' (id {prog[0]}, tag {tag}) acts first; "
            "received frames are captured at tc ingress as it passes them")
    N.expect(N.messages(err) == [want], f"{name}: one line names the program acting first", err)
    err = capture_behind(lab, binary, tmp, name + "-q", prog, ["-q"])
    N.expect(N.messages(err) == [], f"{name}: -q leaves that line out", err)


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        obj = N.build_bpf_object("xdp_verdicts.bpf.c", tmp)
        N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "xdpdrv", "obj", obj, "sec", "xdp"])
        prog = lab.xdp_prog()
        N.check(prog is not None, "the test program is attached to cap0", prog)
        pid = prog[0]
        tag = N.run(["bpftool", "prog", "show", "id", str(pid)]).stdout.split("tag ")[1].split()[0]

        rc, out, err = N.run_xdpcap(lab, binary, ["-D"])
        lines = out.splitlines()
        N.expect(rc == 0 and not err, "-D exits 0, nothing on stderr", (rc, err))
        cap_lines = [l for l in lines if l.split(".", 1)[-1].startswith(lab.cap_if + " ")]
        want = f"XDP native 'xdp_verdicts' (id {pid}, tag {tag})"
        N.expect(len(cap_lines) == 1 and "[Up, Running" in cap_lines[0] and cap_lines[0].endswith(want),
                 f"-D lists cap0 up and running with {want}", lines)
        # tcpdump -D's order: an interface that is down comes last.
        N.expect(re.match(r"^\d+\.lo \[Loopback\], ifindex 1,", lines[-1]) is not None,
                 "-D lists lo (down in a new namespace) last, as tcpdump -D", lines)
        N.expect(", received at: tc ingress," in lines[-1], "-D: lo's received frames are taken at tc ingress",
                 lines[-1])
        N.expect(bool(cap_lines) and ", received at: tc ingress (after the XDP program there)," in cap_lines[0],
                 "-D: cap0's at tc ingress, after the program", cap_lines)

        N.run(["ip", "-n", lab.cap_ns, "addr", "add", "198.18.79.1/24", "dev", lab.cap_if])
        N.run(["ip", "-n", lab.gen_ns, "addr", "add", "198.18.79.2/24", "dev", lab.gen_if])
        check_acting_first(lab, binary, tmp, "native", prog)

        tracing = N.kernel_has_tracing()
        N.log(f"  info  this kernel {'has' if tracing else 'lacks'} the tracing program type")
        if not tracing:
            out_file = os.path.join(tmp, "refused.pcapng")
            rc, _out, err = N.run_xdpcap(lab, binary, ["--xdp-mode", "native", "-i", lab.cap_if, "-w", out_file])
            N.expect(rc == 1 and len(err) == 1 and f"'xdp_verdicts'" in err[0] and f"id {pid}" in err[0],
                     "receiving with XDP on the busy cap0 is refused in one line naming the program", (rc, err))
            N.expect(bool(err) and "cannot be traced: this kernel does not offer fentry/fexit" in err[0],
                     "the line says this kernel cannot trace it", err)
            N.expect(bool(err) and "without --xdp-mode received frames are captured at tc ingress" in err[0],
                     "and that without --xdp-mode cap0 is captured at tc ingress", err)
            N.expect(lab.xdp_prog() == prog, "the program stays attached, same id", lab.xdp_prog())
            N.expect(not os.path.exists(out_file), "no output file left")
        # With tracing, xdpcap traces the program instead: test_trace.py.

        # Egress needs no XDP: it works beside the program.
        sent = os.path.join(tmp, "out.pcapng")
        x = lab.xdpcap(binary, ["-Q", "out", "-w", sent])
        x.wait_listening()
        N.run(["ip", "netns", "exec", lab.gen_ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.79.1"])
        time.sleep(0.3)
        N.expect(x.stop(signal.SIGINT) == 0, "-Q out beside the program exits 0", x.stderr)
        rows = N.read_capture(sent, tmp)
        replies = [r for r in rows if len(r["data"]) > 34 and r["data"][23] == 1 and r["data"][34] == 0]
        N.expect(len(replies) == 3, "-Q out beside the program captures the 3 echo replies cap0 sent",
                 len(rows))
        N.expect(lab.xdp_prog() == prog, "and the program is still attached, same id", lab.xdp_prog())

        # The same program in generic mode: no obstacle to tc either.
        N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "xdpdrv", "off"])
        N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "xdpgeneric", "obj", obj, "sec", "xdp"])
        generic = lab.xdp_prog()
        N.check(generic is not None and lab.link_info(lab.cap_ns, lab.cap_if)["xdp"].get("mode") == 2,
                "the test program is attached to cap0 in generic mode", lab.link_info(lab.cap_ns, lab.cap_if))
        check_acting_first(lab, binary, tmp, "generic", generic)


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("clang", "bpftool"))
