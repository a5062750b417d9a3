#!/usr/bin/python3
"""End-to-end fault: a second xdpcap on an interface that is already captured.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_two_captures.py PATH/TO/xdpcap

A first `xdpcap -i cap0 -v -w FIRST` captures.  A second one on cap0 (once with
-w FILE, once writing text to stdout) must be refused: exit 1 within a few
seconds, exactly one stderr line "xdpcap: cap0 is already being captured by
another xdpcap (pid P, XDP program 'NAME' id N); stop it first, or capture
there with -Q out" with P the first xdpcap's pid (found through the fdinfo of
its BPF link) and its program's name and id as ip link reports them, whether
or not the kernel could trace XDP programs; nothing on stdout, no output file
left; the first program stays attached, the first xdpcap keeps running.  A
third, in a pid namespace of its own (where the first one's process cannot be
seen), gets the same line with "(pid unknown)".  Frames are then sent and the
first captures every one of them; after SIGINT it exits 0 with consistent
statistics and cap0 is clean.  Last, a first xdpcap attached with
--xdp-mode native (where the kernel has the RX metadata kfuncs, the attached
program is the device-bound xdpcap_rx_meta in front) is recognised the same.
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

COUNT = 60
CPU = N.cpus()[0]


def refuse(lab, binary, args, prog, who, desc, absent=None, argv=None):
    """A second xdpcap on cap0 is refused in one line naming `who` ("pid N") and
    the first one's program (id, name)."""
    N.log(f"  --    second xdpcap ({desc}): xdpcap -i cap0 {' '.join(args)}")
    x = N.Xdpcap(lab, binary, ["-i", "cap0"] + args, argv=argv)
    rc = x.wait(timeout=10)
    err = [l for l in x.err_lines if l.strip()]
    out = bytes(x.out)
    N.log(f"        stderr: {err}")
    N.expect(rc == 1, f"{desc}: exit status 1", f"status {rc}")
    N.expect(len(err) == 1, f"{desc}: exactly one stderr line", err)
    line = err[0] if err else ""
    want = (f"xdpcap: cap0 is already being captured by another xdpcap ({who}, XDP program "
            f"'{prog[1]}' id {prog[0]}); stop it first, or capture there with -Q out")
    N.expect(line == want, f"{desc}: the line says another xdpcap ({who}) captures there",
             f"{line!r} != {want!r}")
    N.expect(not out, f"{desc}: nothing on stdout", out[:200])
    if absent is not None:
        N.expect(not os.path.lexists(absent), f"{desc}: no output file left ({absent})")
    N.expect(lab.xdp_prog() == prog, f"{desc}: the first program is still attached",
             lab.xdp_prog())


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, COUNT, seed=61)
        first_out = os.path.join(tmp, "first.pcapng")

        first = lab.xdpcap(binary, ["-v", "-w", first_out])
        first.wait_listening()
        prog = lab.xdp_prog()
        N.check(prog is not None and prog[0] is not None and prog[1],
                f"first xdpcap attached XDP program {prog}")
        mode_no = lab.link_info(lab.cap_ns, lab.cap_if).get("xdp", {}).get("mode")
        N.log(f"  info  first program: id {prog[0]}, name {prog[1]!r}, ip link mode {mode_no}, "
              f"pid {first.proc.pid}")
        N.check(mode_no in (1, 2, 3), f"ip link reports a single attach mode ({mode_no})")
        # ip netns exec execs the command: the pid we started is xdpcap's.
        with open(f"/proc/{first.proc.pid}/comm") as f:
            N.check(f.read().strip() == "xdpcap", f"pid {first.proc.pid} is the first xdpcap")

        second_out = os.path.join(tmp, "second.pcapng")
        who = f"pid {first.proc.pid}"
        refuse(lab, binary, ["-w", second_out], prog, who, "-w FILE", absent=second_out)
        refuse(lab, binary, ["-q"], prog, who, "text to stdout")
        refuse(lab, binary, ["-q"], prog, "pid unknown", "own pid namespace",
               argv=["unshare", "--pid", "--fork", "--mount-proc", binary, "-i", "cap0", "-q"])
        N.expect(first.proc.poll() is None, "the first xdpcap is still running")

        N.log("  info  " + lab.send(corpus, CPU, gap_us=200))
        time.sleep(0.5)
        rc = first.stop(signal.SIGINT)
        N.log("  info  first stderr: " + " | ".join(first.err_lines))
        N.expect(rc == 0, "first xdpcap exits 0 on SIGINT", f"status {rc}")
        N.expect(not N.messages(first.err_lines),
                 "first xdpcap printed no error")
        st = N.final_stats(first.err_lines)
        N.check(st is not None, "first xdpcap printed statistics", first.stderr)
        N.check_stats_identity(st)
        N.expect(st["captured"] == COUNT == st["received"] and st["dropped"] == 0,
                 f"first xdpcap: {COUNT} captured, {COUNT} received, 0 dropped",
                 "\n".join(st["lines"]))
        N.check_structure(first_out)
        rows = N.read_capture(first_out, tmp)
        N.check_exact(frames, [r["data"] for r in rows],
                      "the first xdpcap captured every frame sent after the refusals, "
                      "byte-exact")
        lab.assert_clean("after stopping the first xdpcap, cap0 is clean")
        cp = N.run(["bpftool", "prog", "show", "id", str(prog[0])], check_rc=False)
        N.expect(cp.returncode != 0, f"program id {prog[0]} is gone", cp.stdout)

        # Natively attached: on kernels with the RX metadata kfuncs the
        # attached program is the device-bound one in front (xdpcap_rx_meta),
        # which must be recognised as xdpcap's too.
        native = lab.xdpcap(binary, ["--xdp-mode", "native", "-w", os.devnull])
        native.wait_listening()
        prog = lab.xdp_prog()
        N.log(f"  info  natively attached: id {prog[0]}, name {prog[1]!r}")
        refuse(lab, binary, ["-q"], prog, f"pid {native.proc.pid}", "first one native")
        N.check(native.stop(signal.SIGINT) == 0, "the native xdpcap exits 0", native.stderr)
        lab.assert_clean("after stopping the native xdpcap, cap0 is clean")


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("bpftool", "unshare"))
