#!/usr/bin/python3
"""End-to-end fault: the capture interface is moved to another network namespace.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_iface_moved.py PATH/TO/xdpcap

`xdpcap -i cap0 -v -w FILE` captures a corpus sent from the generator
namespace; then `ip -n CAPNS link set cap0 netns THIRD` moves cap0 into a third
namespace the test creates. In the default mode a veth's frames are captured
at tc ingress and egress (tcx links, or clsact filters without tcx), no XDP.
The interface still exists after a move, so only the kernel's link
notification (RTM_DELLINK with IFLA_NEW_NETNSID, in the old namespace) tells
xdpcap that it was moved rather than deleted.
Checks: xdpcap exits by itself within 1 s with status 2 and exactly one line
"xdpcap: cap0 went away (moved to another network namespace); capture
stopped"; the statistics are printed and add up; the file is complete (block
walk, the MIME-reader structural check, tshark, capinfos, tcpdump), holds
every frame sent, byte-exact, and ends with statistics blocks matching the
per-CPU lines; cap0's promiscuity, as `ip -d link show` reports it in its new
namespace, is what it was before xdpcap made it promiscuous (also after
xdpcap exited); neither XDP nor an xdpcap clsact filter is left on cap0
there, and the programs xdpcap held are freed (polled for up to 2 s).
Then the same in text mode (no -w): every frame printed on stdout, the one
line, statistics, exit 2.
"""

import os
import re
import secrets
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

COUNT = 80
CPU = N.cpus()[0]
EXIT_WITHIN_S = 1.0
MOVED_LINE = "xdpcap: cap0 went away (moved to another network namespace); capture stopped"


class Namespace(N.Scoped):
    """One more network namespace, deleted on exit with whatever was moved into it."""

    def __init__(self):
        self.name = f"xdpcapt-{os.getpid()}-{secrets.token_hex(3)}-third"
        self._created = False

    def _setup(self):
        N.run(["ip", "netns", "add", self.name])
        self._created = True

    def close(self):
        N._unregister_cleanup(self.close)
        if self._created:
            self._created = False
            N.run(["ip", "netns", "delete", self.name], check_rc=False, timeout=10)


def promiscuity(ns, dev):
    return int(N.NetLab.link_info(ns, dev).get("promiscuity", -1))


def move_and_wait(lab, x, third):
    """Move cap0 into `third`; return (exit status, seconds until xdpcap exited)."""
    N.log(f"  --    ip -n {lab.cap_ns} link set {lab.cap_if} netns {third}")
    started = time.monotonic()
    N.run(["ip", "-n", lab.cap_ns, "link", "set", lab.cap_if, "netns", third])
    # Timed from the move, done once ip returns: ip's own start-up (slow in
    # an emulated guest under load) is not xdpcap's reaction.
    t0 = time.monotonic()
    rc, _ = N.wait_exit(x.proc, 5.0)
    waited = time.monotonic() - t0
    if rc is None:
        x.wait(timeout=0.1)          # kills it and fails with its stderr
    x.wait(timeout=5)                 # reap, join the readers
    N.log(f"  info  xdpcap exited {waited:.3f} s after the move (ip took {t0 - started:.3f} s; status {rc})")
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    return rc, waited


def check_stop(x, rc, waited, what):
    N.expect(waited <= EXIT_WITHIN_S, f"{what}: xdpcap exits by itself within {EXIT_WITHIN_S} s of the move",
             f"took {waited:.3f} s")
    N.expect(rc == 2, f"{what}: exit status 2 (capture started, then failed)", f"status {rc}")
    msgs = N.messages(x.err_lines)
    N.expect(msgs == [MOVED_LINE], f"{what}: exactly one message: '{MOVED_LINE}'", msgs)
    st = N.final_stats(x.err_lines)
    N.check(st is not None, f"{what}: statistics lines printed after the failure", x.stderr)
    N.check_stats_identity(st)
    N.expect(st["captured"] == COUNT and st["received"] == COUNT and st["dropped"] == 0,
             f"{what}: stderr: {COUNT} captured, {COUNT} received, 0 dropped", "\n".join(st["lines"]))
    return st


def check_left_behind(lab, third, held, before, what):
    links = N.run(["ip", "-n", lab.cap_ns, "-o", "link", "show"]).stdout
    N.expect(f" {lab.cap_if}@" not in links, f"{what}: cap0 is no longer in the capture namespace", links)
    info = N.NetLab.link_info(third, lab.cap_if)
    N.expect(info.get("ifname") == lab.cap_if, f"{what}: cap0 is in {third}", info)
    N.expect(promiscuity(third, lab.cap_if) == before,
             f"{what}: cap0's promiscuity in its new namespace is {before}, as before the capture",
             promiscuity(third, lab.cap_if))
    N.expect("xdp" not in info, f"{what}: no XDP program left on cap0 in its new namespace",
             info.get("xdp"))
    filters = lab.tc_filters(lab.cap_if, ns=third)
    N.expect(not filters, f"{what}: no xdpcap clsact filter left on cap0 in its new namespace", filters)
    # A clsact filter's program is released after an RCU grace period.
    alive = N.wait_programs_gone(list(held))
    N.expect(not alive, f"{what}: none of the programs xdpcap held ({held}) exists any more "
                        "(detached and freed)", alive)


def start(lab, binary, args):
    before = N.link_info_promiscuity(lab)
    x = lab.xdpcap(binary, args)
    x.wait_listening()
    held = N.held_programs(x.proc.pid)
    N.check({"xdpcap_ingress", "xdpcap_egress"} <= set(held.values()),
            f"xdpcap holds its tc ingress and egress programs: {held}")
    now = N.link_info_promiscuity(lab)
    N.check(now == before + 1, f"xdpcap made cap0 promiscuous (promiscuity {before} -> {now})")
    return x, held, before


def test_file(binary, tmp, corpus, frames):
    with N.NetLab() as lab, Namespace() as third:
        out = os.path.join(tmp, "moved.pcapng")
        x, held, before = start(lab, binary, ["-v", "-w", out])
        N.log("  info  " + lab.send(corpus, CPU, gap_us=200))
        time.sleep(0.3)     # let the drain timer write everything out

        rc, waited = move_and_wait(lab, x, third.name)
        st = check_stop(x, rc, waited, "-w FILE")
        check_left_behind(lab, third.name, held, before, "-w FILE")

        N.check(os.path.isfile(out) and os.path.getsize(out) > 0, "output file kept")
        recs = N.pcapng_records(out)
        N.expect(not recs["problems"], "block walk: every block complete, lengths match, known types",
                 recs["problems"])
        N.check_structure(out)
        N.check_readers_agree(out, COUNT)
        N.check_idbs(out)
        rows = N.read_capture(out, tmp)
        N.check_exact(frames, [r["data"] for r in rows])
        N.expect(recs["blocks"] and recs["blocks"][-1][1] == N.PCAPNG_ISB,
                 "the file ends with interface statistics blocks")
        N.check_isbs_match_stats(recs, st)


def test_text(binary, corpus):
    with N.NetLab() as lab, Namespace() as third:
        x, held, before = start(lab, binary, ["-n", "-v"])
        N.log("  info  " + lab.send(corpus, CPU, gap_us=200))
        time.sleep(0.3)

        rc, waited = move_and_wait(lab, x, third.name)
        check_stop(x, rc, waited, "text")
        check_left_behind(lab, third.name, held, before, "text")
        # -v puts an IP header's fields first: a packet's line may continue,
        # indented, on the next.
        lines = [l for l in bytes(x.out).decode("utf-8", "replace").splitlines() if not l.startswith((" ", "\t"))]
        # One interface: tcpdump's lines, the decode right after the time.
        N.expect(len(lines) == COUNT and all(re.match(r"^\d\d:\d\d:\d\d\.\d{6} \S", l) and "@cpu" not in l
                                             for l in lines),
                 f"text: {COUNT} packet lines on stdout", f"{len(lines)} lines: {lines[:3]}")


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, COUNT, seed=17)
        test_file(binary, tmp, corpus, frames)
        test_text(binary, corpus)


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("bpftool",))
