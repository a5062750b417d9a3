#!/usr/bin/python3
"""End-to-end fault: a second xdpcap on an interface that is already captured.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_two_captures.py PATH/TO/xdpcap

In the default mode a veth's frames are captured at tc ingress and egress.

tcx (Linux 6.6+) and clsact (kernels without tcx, as Debian 12's 6.1, and
here too through the XDPCAP_TEST_NO_TCX test seam): a first `xdpcap -i cap0
-v -w FIRST` captures a corpus alone; a second `xdpcap -i cap0 -v -w SECOND`
then attaches too (its own programs; with clsact its own two filters) and
both capture a second corpus; one of them stops (exit 0; the second, then, in
another run, the first, which created the clsact qdisc) and its programs are
freed; the other, untouched (its filters and the qdisc as they were), captures
a third corpus, then stops (exit 0). Each one's statistics count its own
frames, both files hold exactly those frames, byte-exact, and say
"MECH ingress and MECH egress"; cap0 is clean, no clsact qdisc left.

XDP (explicit --xdp-mode) on a kernel with the tracing program type (Debian
12's 6.1): a second xdpcap with --xdp-mode, while a first one holds the XDP
hook, traces the first one's program at its entry and holds its XDP link.
Twice: both generic, the second stopping first; and both native, the first
with a filter (its front program, built at run time, carries the BTF fentry
needs), the first stopping first.  The second says so in one line ("...
another xdpcap (pid P) takes its received frames with XDP; this one traces
its program", P the first's pid) and "tracing XDP program 'NAME' (id N, ...)
at entry"; the first's program stays attached while either runs (after the
first exits too); each captures every frame sent while it runs, byte-exact,
and counts only those; both exit 0; once both have exited the program is gone
and cap0 is clean.

XDP (explicit --xdp-mode) on a kernel without the tracing program type:
with a first xdpcap attached with --xdp-mode
generic, a second with --xdp-mode generic (-w FILE) or native (text to stdout)
must be refused: exit 1 within a few seconds, exactly one stderr line
"xdpcap: cap0 is already being captured by another xdpcap (pid P, XDP program
'NAME' id N); stop it first, or capture there without --xdp-mode (at tc
ingress) or with -Q out" with P the first
xdpcap's pid (found through the fdinfo of its BPF link) and its program's name
and id as ip link reports them; nothing on stdout, no output file left; the first program stays
attached, the first xdpcap keeps running.  A third, in a pid namespace of its
own (where the first one's process cannot be seen), gets the same line with
"(pid unknown)".  Frames are then sent and the first captures every one of
them; after SIGINT it exits 0 with consistent statistics and cap0 is clean.
Last, a first xdpcap attached with --xdp-mode native (where the kernel has the
RX metadata kfuncs, the attached program is the device-bound xdpcap_rx_meta in
front) is recognised the same by a second with --xdp-mode generic.

Beside native XDP: a first xdpcap with --xdp-mode native, a second in the
default mode: the second takes received frames at tc ingress (tcx, and clsact
through the test seam), says so in one line, the first's XDP program stays;
both capture every frame sent while they run; the first stops first and the
second captures on, alone, to the end; cap0 is clean.
"""

import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

# Eight pairs of captures, each started, fed and stopped in turn: under a
# loaded CI host the run nears the default deadline; meson gives it 150 s.
N.TEST_DEADLINE_S = 135

COUNT = 60
CPU = N.cpus()[0]
NO_TCX = ["XDPCAP_TEST_NO_TCX=1"]


def kernel_has_tcx():
    """tcx came with Linux 6.6; older kernels (Debian 12's 6.1) use clsact."""
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(m.group(1)), int(m.group(2))) >= (6, 6)


def start(lab, binary, args, env=()):
    """xdpcap -i cap0 ARGS, with `env` (VAR=VALUE) in its environment."""
    argv = ["env"] + list(env) + [binary, "-i", lab.cap_if] + list(args) if env else None
    return N.Xdpcap(lab, binary, ["-i", lab.cap_if] + list(args), argv=argv)


def held_tc(x, what):
    """The programs xdpcap x holds; it must hold its tc ingress and egress ones."""
    held = N.held_programs(x.proc.pid)
    N.check({"xdpcap_ingress", "xdpcap_egress"} <= set(held.values()),
            f"{what} holds its tc ingress and egress programs: {held}")
    return held


def refused(x, desc, want, absent=None):
    """x exits 1 within 10 s with exactly the one stderr line `want`, nothing on stdout."""
    rc = x.wait(timeout=10)
    err = [l for l in x.err_lines if l.strip()]
    out = bytes(x.out)
    N.log(f"        stderr: {err}")
    N.expect(rc == 1, f"{desc}: exit status 1", f"status {rc}")
    N.expect(len(err) == 1, f"{desc}: exactly one stderr line", err)
    line = err[0] if err else ""
    N.expect(line == want, f"{desc}: the line is {want!r}", f"{line!r} != {want!r}")
    N.expect(not out, f"{desc}: nothing on stdout", out[:200])
    if absent is not None:
        N.expect(not os.path.lexists(absent), f"{desc}: no output file left ({absent})")


def finish(x, out, frames, tmp, what, describes=None, notes=()):
    """Stop x with SIGINT: exit 0, no error (but the lines `notes`),
    statistics counting exactly `frames`, and the file holding them
    byte-exact."""
    rc = x.stop(signal.SIGINT)
    N.log(f"  info  {what} stderr: " + " | ".join(x.err_lines))
    N.expect(rc == 0, f"{what} exits 0 on SIGINT", f"status {rc}")
    messages = [l for l in N.messages(x.err_lines) if l not in notes]
    N.expect(not messages, f"{what} printed no error or warning", messages)
    st = N.final_stats(x.err_lines)
    N.check(st is not None, f"{what} printed statistics", x.stderr)
    N.check_stats_identity(st, f"{what} statistics")
    n = len(frames)
    N.expect(st["captured"] == n == st["received"] and st["dropped"] == 0,
             f"{what}: {n} captured, {n} received, 0 dropped", "\n".join(st["lines"]))
    N.check_structure(out)
    rows = N.read_capture(out, tmp)
    N.check_exact(frames, [r["data"] for r in rows],
                  f"{what} captured exactly the {n} frames sent while it ran, byte-exact")
    if describes is not None:
        descs = [i.get("description") or "" for i in N.pcapng_idbs(out)]
        N.expect(descs and all(f", {describes}, driver veth" in d for d in descs),
                 f"{what}: every interface description says '{describes}'", descs)


def our_filters(lab, held):
    """xdpcap's clsact filters on cap0 running the programs `held` names."""
    return [l for l in lab.tc_filters() if any(f" id {pid} name " in l for pid in held)]


def clsact_qdisc(lab):
    return "clsact" in N.run(["tc", "-n", lab.cap_ns, "qdisc", "show", "dev", lab.cap_if]).stdout


def two_default(binary, tmp, corpora, env, mech, first_stops_first):
    """Two default captures on one veth: both attach, both capture, either
    stops first without disturbing the other."""
    (pre, pre_frames), (both, both_frames), (post, post_frames) = corpora
    label = f"{mech}, the {'first' if first_stops_first else 'second'} stopping first"
    with N.NetLab() as lab:
        first_out = os.path.join(tmp, f"{mech}-{first_stops_first}-first.pcapng")
        second_out = os.path.join(tmp, f"{mech}-{first_stops_first}-second.pcapng")
        first = start(lab, binary, ["-v", "-w", first_out], env)
        first.wait_listening()
        held1 = held_tc(first, f"{label}: the first xdpcap")
        N.log("  info  first alone: " + lab.send(pre, CPU, gap_us=200))

        second = start(lab, binary, ["-v", "-w", second_out], env)
        second.wait_listening()
        held2 = held_tc(second, f"{label}: the second xdpcap")
        N.expect(not set(held1) & set(held2), f"{label}: the two hold distinct programs", (held1, held2))
        N.expect(first.proc.poll() is None, f"{label}: the first xdpcap is still running")
        N.expect(lab.xdp_state() == "", f"{label}: no XDP program on cap0", lab.xdp_state())
        if mech == "clsact":
            N.expect(len(our_filters(lab, held1)) == 2 and len(our_filters(lab, held2)) == 2,
                     f"{label}: each capture has its own ingress and egress filter", lab.tc_filters())
        N.log("  info  both: " + lab.send(both, CPU, gap_us=200))
        time.sleep(0.5)

        describes = f"{mech} ingress and {mech} egress"
        leaving, staying = (first, second) if first_stops_first else (second, first)
        left_held, staying_held = (held1, held2) if first_stops_first else (held2, held1)
        staying_filters = our_filters(lab, staying_held)
        if first_stops_first:
            finish(first, first_out, pre_frames + both_frames, tmp, f"{label}: the first xdpcap", describes)
        else:
            finish(second, second_out, both_frames, tmp, f"{label}: the second xdpcap", describes)
        alive = N.wait_programs_gone(list(left_held))
        N.expect(not alive, f"{label}: the programs of the one that stopped are gone", alive)
        N.expect(staying.proc.poll() is None, f"{label}: the other still runs")
        if mech == "clsact":
            N.expect(our_filters(lab, staying_held) == staying_filters and clsact_qdisc(lab),
                     f"{label}: the other's filters and the qdisc are untouched", lab.tc_filters())
        N.log("  info  the other alone again: " + lab.send(post, CPU, gap_us=200))
        time.sleep(0.5)
        if first_stops_first:
            finish(second, second_out, both_frames + post_frames, tmp, f"{label}: the second xdpcap", describes)
        else:
            finish(first, first_out, pre_frames + both_frames + post_frames, tmp, f"{label}: the first xdpcap",
                   describes)
        lab.assert_clean(f"{label}: after both exited nothing of xdpcap remains attached to cap0")
        N.expect(not clsact_qdisc(lab), f"{label}: no clsact qdisc left on cap0")
        alive = N.wait_programs_gone(list(staying_held))
        N.expect(not alive, f"{label}: the other's programs are gone after it exited", alive)


def refuse_xdp(lab, binary, args, prog, who, desc, absent=None, argv=None):
    """A second xdpcap selecting XDP on cap0 is refused in one line naming
    `who` ("pid N") and the first one's XDP program (id, name)."""
    N.log(f"  --    second xdpcap ({desc}): xdpcap -i cap0 {' '.join(args)}")
    want = (f"xdpcap: cap0 is already being captured by another xdpcap ({who}, XDP program "
            f"'{prog[1]}' id {prog[0]}); stop it first, or capture there without --xdp-mode (at tc ingress) "
            "or with -Q out")
    refused(N.Xdpcap(lab, binary, ["-i", "cap0"] + args, argv=argv), desc, want, absent)
    N.expect(lab.xdp_prog() == prog, f"{desc}: the first program is still attached",
             lab.xdp_prog())


def beside_xdp(binary, tmp, corpora, env, mech):
    """A first xdpcap takes received frames with native XDP; a second in the
    default mode takes them at tc ingress beside it, says so in one line,
    and both capture every frame; the first stops first, the second goes on."""
    (pre, pre_frames), (both, both_frames), (post, post_frames) = corpora
    label = f"beside native XDP ({mech})"
    with N.NetLab() as lab:
        first_out = os.path.join(tmp, f"{mech}-native-first.pcapng")
        second_out = os.path.join(tmp, f"{mech}-native-second.pcapng")
        first = start(lab, binary, ["--xdp-mode", "native", "-Q", "in", "-v", "-w", first_out], env)
        first.wait_listening()
        prog = lab.xdp_prog()
        N.log("  info  first alone: " + lab.send(pre, CPU, gap_us=200))
        second = start(lab, binary, ["-Q", "in", "-v", "-w", second_out], env)
        second.wait_listening()
        note = (f"xdpcap: cap0: another xdpcap (pid {first.proc.pid}) takes its received frames with XDP; "
                "this one takes them at tc ingress")
        N.expect(note in second.err_lines, f"{label}: the second says where it takes received frames", second.err_lines)
        N.expect(lab.xdp_prog() == prog, f"{label}: the first one's XDP program stays attached", lab.xdp_prog())
        N.log("  info  both: " + lab.send(both, CPU, gap_us=200))
        time.sleep(0.5)
        finish(first, first_out, pre_frames + both_frames, tmp, f"{label}: the first xdpcap")
        N.expect(second.proc.poll() is None, f"{label}: the second still runs after the first stopped")
        N.log("  info  second alone: " + lab.send(post, CPU, gap_us=200))
        time.sleep(0.5)
        finish(second, second_out, both_frames + post_frames, tmp, f"{label}: the second xdpcap",
               f"{mech} ingress", notes=(note,))
        lab.assert_clean(f"{label}: after both exited nothing of xdpcap remains attached to cap0")


def xdp_shared(binary, tmp, corpora, mode, first_filter, first_stops_first):
    """A second xdpcap with --xdp-mode MODE traces the XDP program of a first
    one (with `first_filter`, if any) at entry, holding its link: both
    capture every frame, either stops first, the last one detaches it."""
    (pre, pre_frames), (both, both_frames), (post, post_frames) = corpora
    label = f"--xdp-mode {mode} twice{', the first filtering' if first_filter else ''}, the " \
            f"{'first' if first_stops_first else 'second'} stopping first"
    with N.NetLab() as lab:
        first_out = os.path.join(tmp, f"shared-{mode}-first.pcapng")
        second_out = os.path.join(tmp, f"shared-{mode}-second.pcapng")
        first = lab.xdpcap(binary, ["--xdp-mode", mode, "-Q", "in", "-v", "-w", first_out]
                           + ([first_filter] if first_filter else []))
        first.wait_listening()
        prog = lab.xdp_prog()
        N.check(prog is not None and prog[0] is not None and prog[1],
                f"{label}: the first xdpcap attached XDP program {prog}")
        N.log("  info  first alone: " + lab.send(pre, CPU, gap_us=200))

        second = lab.xdpcap(binary, ["--xdp-mode", mode, "-Q", "in", "-v", "-w", second_out])
        second.wait_listening()
        note = (f"xdpcap: cap0: another xdpcap (pid {first.proc.pid}) takes its received frames with XDP; "
                "this one traces its program")
        N.expect(note in second.err_lines, f"{label}: the second says it traces the first one's program",
                 second.err_lines)
        tracing = [l for l in second.err_lines if l.startswith("tracing ")]
        N.expect(len(tracing) == 1 and tracing[0].startswith(f"tracing XDP program '{prog[1]}' (id {prog[0]}, ")
                 and tracing[0].endswith(" at entry"), f"{label}: the second traces it at entry only", tracing)
        N.expect(lab.xdp_prog() == prog, f"{label}: the first one's program stays attached", lab.xdp_prog())
        N.log("  info  both: " + lab.send(both, CPU, gap_us=200))
        time.sleep(0.5)

        if first_stops_first:
            finish(first, first_out, pre_frames + both_frames, tmp, f"{label}: the first xdpcap")
            N.expect(lab.xdp_prog() == prog, f"{label}: its program stays attached while the second runs",
                     lab.xdp_prog())
            staying, staying_out, staying_frames = second, second_out, both_frames + post_frames
        else:
            finish(second, second_out, both_frames, tmp, f"{label}: the second xdpcap", notes=(note,))
            staying, staying_out, staying_frames = first, first_out, pre_frames + both_frames + post_frames
        N.expect(staying.proc.poll() is None, f"{label}: the other still runs")
        N.log("  info  the other alone again: " + lab.send(post, CPU, gap_us=200))
        time.sleep(0.5)
        finish(staying, staying_out, staying_frames, tmp,
               f"{label}: the {'second' if first_stops_first else 'first'} xdpcap",
               notes=(note,) if staying is second else ())
        lab.assert_clean(f"{label}: after both exited nothing of xdpcap remains attached to cap0")
        alive = N.wait_programs_gone([prog[0]])
        N.expect(not alive, f"{label}: program id {prog[0]} is gone", alive)


def xdp_refusals(binary, tmp, corpus, frames):
    with N.NetLab() as lab:
        first_out = os.path.join(tmp, "xdp-first.pcapng")
        first = lab.xdpcap(binary, ["--xdp-mode", "generic", "-v", "-w", first_out])
        first.wait_listening()
        prog = lab.xdp_prog()
        N.check(prog is not None and prog[0] is not None and prog[1],
                f"first xdpcap (--xdp-mode generic) attached XDP program {prog}")
        mode_no = lab.link_info(lab.cap_ns, lab.cap_if).get("xdp", {}).get("mode")
        N.log(f"  info  first program: id {prog[0]}, name {prog[1]!r}, ip link mode {mode_no}, "
              f"pid {first.proc.pid}")
        N.check(mode_no in (1, 2, 3), f"ip link reports a single attach mode ({mode_no})")
        # ip netns exec execs the command: the pid we started is xdpcap's.
        with open(f"/proc/{first.proc.pid}/comm") as f:
            N.check(f.read().strip() == "xdpcap", f"pid {first.proc.pid} is the first xdpcap")

        second_out = os.path.join(tmp, "xdp-second.pcapng")
        who = f"pid {first.proc.pid}"
        refuse_xdp(lab, binary, ["--xdp-mode", "generic", "-w", second_out], prog, who,
                   "--xdp-mode generic, -w FILE", absent=second_out)
        refuse_xdp(lab, binary, ["--xdp-mode", "native", "-q"], prog, who, "--xdp-mode native, text to stdout")
        refuse_xdp(lab, binary, ["--xdp-mode", "generic", "-q"], prog, "pid unknown", "own pid namespace",
                   argv=["unshare", "--pid", "--fork", "--mount-proc", binary, "-i", "cap0",
                         "--xdp-mode", "generic", "-q"])
        N.expect(first.proc.poll() is None, "the first xdpcap is still running")

        N.log("  info  " + lab.send(corpus, CPU, gap_us=200))
        time.sleep(0.5)
        finish(first, first_out, frames, tmp, "the first xdpcap (--xdp-mode generic)")
        lab.assert_clean("after stopping the first xdpcap, cap0 is clean")
        cp = N.run(["bpftool", "prog", "show", "id", str(prog[0])], check_rc=False)
        N.expect(cp.returncode != 0, f"program id {prog[0]} is gone", cp.stdout)

        # Natively attached: on kernels with the RX metadata kfuncs the
        # attached program is the device-bound one in front (xdpcap_rx_meta),
        # which must be recognised as xdpcap's too.
        native = lab.xdpcap(binary, ["--xdp-mode", "native", "-w", os.devnull])
        native.wait_listening()
        prog = lab.xdp_prog()
        N.check(prog is not None and prog[0] is not None and prog[1],
                f"--xdp-mode native attached XDP program {prog}")
        refuse_xdp(lab, binary, ["--xdp-mode", "generic", "-q"], prog, f"pid {native.proc.pid}",
                   "first one native")
        N.check(native.stop(signal.SIGINT) == 0, "the native xdpcap exits 0", native.stderr)
        lab.assert_clean("after stopping the native xdpcap, cap0 is clean")


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp:
        corpora = []
        for seed, count in ((61, COUNT), (62, 20), (63, 10)):
            path = os.path.join(tmp, f"corpus{seed}.pcap")
            corpora.append((path, N.build_corpus(path, count, seed=seed)))
        tcx = kernel_has_tcx()
        N.log(f"  info  kernel {os.uname().release}: {'tcx' if tcx else 'no tcx (clsact)'}")
        order = [corpora[1], corpora[0], corpora[2]]
        if tcx:
            two_default(binary, tmp, order, (), "tcx", first_stops_first=False)
            two_default(binary, tmp, order, (), "tcx", first_stops_first=True)
        # The clsact path of kernels without tcx (here through the test seam).
        for first_stops_first in (False, True):
            two_default(binary, tmp, order, () if not tcx else NO_TCX, "clsact", first_stops_first)
        if N.kernel_has_tracing():
            xdp_shared(binary, tmp, order, "generic", None, first_stops_first=False)
            xdp_shared(binary, tmp, order, "native", "len >= 1", first_stops_first=True)
        else:
            xdp_refusals(binary, tmp, *corpora[0])
        beside_xdp(binary, tmp, order, (), "tcx" if tcx else "clsact")
        if tcx:
            beside_xdp(binary, tmp, order, NO_TCX, "clsact")


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("bpftool", "unshare"))
