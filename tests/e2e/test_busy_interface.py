#!/usr/bin/python3
"""End-to-end: an interface that already runs an XDP program of someone else.

Usage (root): /usr/bin/python3 tests/e2e/test_busy_interface.py PATH/TO/xdpcap

The test's own XDP program (xdp_verdicts.bpf.c: drops UDP to port 7001,
rewrites a byte of UDP to port 7002, passes the rest) is attached to cap0
with ip link.  Checks:
- xdpcap -D lists cap0 with its state and that program (mode, id as ip link
  reports it, full name, tag), and lo; exit 0;
- on a kernel without the tracing program type (bpftool feature probe),
  xdpcap -i cap0 (receiving) is refused in one line naming the program and
  saying that it cannot be traced: the kernel does not offer fentry/fexit;
  exit 1, and the program stays attached, same id (with tracing, xdpcap
  traces it instead: test_trace.py);
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

        tracing = N.kernel_has_tracing()
        N.log(f"  info  this kernel {'has' if tracing else 'lacks'} the tracing program type")
        if not tracing:
            out_file = os.path.join(tmp, "refused.pcapng")
            rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if, "-w", out_file])
            N.expect(rc == 1 and len(err) == 1 and f"'xdp_verdicts'" in err[0] and f"id {pid}" in err[0],
                     "receiving on the busy cap0 is refused in one line naming the program", (rc, err))
            N.expect(bool(err) and "cannot be traced: this kernel does not offer fentry/fexit" in err[0],
                     "the line says this kernel cannot trace it", err)
            N.expect(lab.xdp_prog() == prog, "the program stays attached, same id", lab.xdp_prog())
            N.expect(not os.path.exists(out_file), "no output file left")
        # With tracing, xdpcap traces the program instead: test_trace.py.

        # Egress needs no XDP: it works beside the program.
        N.run(["ip", "-n", lab.cap_ns, "addr", "add", "198.18.79.1/24", "dev", lab.cap_if])
        N.run(["ip", "-n", lab.gen_ns, "addr", "add", "198.18.79.2/24", "dev", lab.gen_if])
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


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("clang", "bpftool"))
