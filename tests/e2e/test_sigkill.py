#!/usr/bin/python3
"""End-to-end: after SIGKILL nothing of xdpcap stays attached to cap0.

Usage (root): /usr/bin/python3 tests/e2e/test_sigkill.py PATH/TO/xdpcap

In the default mode a veth's frames are captured at tc ingress and egress, no
XDP. Checks, while xdpcap runs: it holds its xdpcap_ingress and xdpcap_egress
programs, no XDP program is on cap0, and without tcx its two clsact filters
(priority 1, xdpcap's handles) run those programs. After SIGKILL:
  * tcx (Linux 6.6+): the programs the killed xdpcap held no longer exist
    (the kernel dropped its tcx links), polled for up to 2 s; cap0 is clean;
  * clsact (kernels without tcx, and here too through the XDPCAP_TEST_NO_TCX
    test seam): the killed run's filters stay (the documented caveat); the
    next run removes them (its own filters replace them, the killed run's
    programs are freed).
Either way the next xdpcap attaches, captures the 30 frames sent, exits 0 on
SIGINT and leaves cap0 clean.
"""

import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

COUNT = 30
FILTER_RE = re.compile(r"^(ingress|egress): filter protocol all pref (\d+) bpf chain \d+ "
                       r"handle (0x[0-9a-f]+) .*\bid (\d+) name (\S+)")
# 'XD', a slot per capture sharing the hook, and whether an xdpcap created the qdisc.
HANDLES = tuple(hex(0x58440000 | slot << 1 | created) for slot in range(32) for created in (0, 1))


def kernel_has_tcx():
    """tcx came with Linux 6.6; older kernels (Debian 12's 6.1) use clsact."""
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(m.group(1)), int(m.group(2))) >= (6, 6)


def check_filters(lines, held, what):
    """xdpcap's clsact filters are exactly one per direction, priority 1, an
    xdpcap handle, running the programs in `held` ({id: name})."""
    parsed = [FILTER_RE.match(l) for l in lines]
    got = sorted((m.group(1), m.group(2), m.group(3), int(m.group(4)), m.group(5)) for m in parsed if m)
    want_ids = {name: pid for pid, name in held.items()}
    ok = (len(got) == len(lines) == 2 and [g[0] for g in got] == ["egress", "ingress"]
          and all(g[1] == "1" and g[2] in HANDLES for g in got)
          and all(g[4] == f"xdpcap_{g[0]}" and g[3] == want_ids.get(g[4]) for g in got))
    N.expect(ok, f"{what}: one clsact filter per direction, priority 1, xdpcap's handle, running "
                 f"the xdpcap_ingress/xdpcap_egress programs held {held}", "\n".join(lines))


def scenario(binary, tmp, corpus, clsact, env):
    what = "clsact" if clsact else "tcx"
    with N.NetLab() as lab:
        def start(out):
            argv = ["env"] + env + [binary, "-i", lab.cap_if, "-w", out] if env else None
            x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-w", out], argv=argv)
            x.wait_listening()
            return x

        x = start(os.path.join(tmp, f"killed-{what}.pcapng"))
        held = N.held_programs(x.proc.pid)
        N.log(f"  info  {what}: the xdpcap to be killed holds {held}")
        N.check({"xdpcap_ingress", "xdpcap_egress"} <= set(held.values()),
                f"{what}: while xdpcap runs it holds its tc ingress and egress programs", held)
        N.expect(lab.xdp_state() == "", f"{what}: no XDP program on the veth in the default mode",
                 lab.xdp_state())
        filters = lab.tc_filters()
        if clsact:
            check_filters(filters, held, f"{what}: while xdpcap runs")
        else:
            N.expect(not filters, f"{what}: no clsact filter (tcx links instead)", filters)
        lab.send(corpus, N.cpus()[0], gap_us=200)
        x.send_signal(signal.SIGKILL)
        rc = x.wait(timeout=5)
        N.expect(rc == -signal.SIGKILL, f"{what}: xdpcap died of SIGKILL", rc)

        if not clsact:
            alive = N.wait_programs_gone(list(held))
            N.expect(not alive, f"{what}: within 2 s of SIGKILL none of the programs it held "
                                f"exists any more (its tcx links are gone)", alive)
            lab.assert_clean(f"{what}: nothing of xdpcap remains attached to cap0 (XDP, clsact)")
        else:
            left = lab.tc_filters()
            N.expect(left == filters, f"{what}: SIGKILL leaves the killed run's filters behind "
                                      f"(the documented caveat of kernels without tcx)", left)

        out = os.path.join(tmp, f"again-{what}.pcapng")
        y = start(out)
        if clsact:
            y_held = N.held_programs(y.proc.pid)
            now = lab.tc_filters()
            check_filters(now, y_held, f"{what}: the next run removed the killed run's filters and "
                                       f"attached its own")
            alive = N.wait_programs_gone(list(held))
            N.expect(not alive, f"{what}: the killed run's programs are freed with its filters "
                                f"(within 2 s)", alive)
        lab.send(corpus, N.cpus()[0], gap_us=200)
        time.sleep(0.5)
        rc = y.stop(signal.SIGINT)
        N.expect(rc == 0, f"{what}: a new xdpcap attaches afterwards and exits 0 on SIGINT",
                 f"{rc}: {y.stderr}")
        N.expect(N.capinfos_count(out) == COUNT, f"{what}: and captures the {COUNT} frames sent",
                 N.capinfos_count(out))
        lab.assert_clean(f"{what}: after it nothing of xdpcap remains attached to cap0 (XDP, clsact)")


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp:
        corpus = os.path.join(tmp, "corpus.pcap")
        N.build_corpus(corpus, COUNT, seed=5)
        tcx = kernel_has_tcx()
        N.log(f"  info  kernel {os.uname().release}: {'tcx' if tcx else 'no tcx (clsact)'}")
        scenario(binary, tmp, corpus, clsact=not tcx, env=[])
        if tcx:
            # The clsact path of kernels without tcx, through the test seam.
            scenario(binary, tmp, corpus, clsact=True, env=["XDPCAP_TEST_NO_TCX=1"])


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("bpftool",))
