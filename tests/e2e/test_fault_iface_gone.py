#!/usr/bin/python3
"""End-to-end fault: the capture interface disappears while xdpcap runs.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_iface_gone.py PATH/TO/xdpcap

`xdpcap -i cap0 -v -w FILE` captures a corpus sent from the generator
namespace; then `ip -n GENNS link del gen0` deletes the veth pair (cap0 with
it).  Checks: xdpcap exits by itself within 1 s with status 2 and one
"xdpcap: cap0 went away; capture stopped" line; the statistics are still
printed and add up; the BPF programs it held (in the default mode a veth's
frames are captured at tc ingress and egress, no XDP) are gone (detached and
freed, polled for up to 2 s); the file is complete: valid for the MIME-reader
structural check, tshark, capinfos and `tcpdump -r`, holds every frame sent
(byte-exact) and ends with one interface statistics block per interface whose
counters match the per-CPU lines.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

COUNT = 120
CPU = N.cpus()[0]
EXIT_WITHIN_S = 1.0


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, COUNT, seed=11)
        out = os.path.join(tmp, "gone.pcapng")

        x = lab.xdpcap(binary, ["-v", "-w", out])
        x.wait_listening()
        held = N.held_programs(x.proc.pid)
        N.check({"xdpcap_ingress", "xdpcap_egress"} <= set(held.values()),
                f"xdpcap holds its tc ingress and egress programs: {held}")
        N.log("  info  " + lab.send(corpus, CPU, gap_us=200))
        time.sleep(0.3)     # let the drain timer write everything out

        N.log(f"  --    ip -n {lab.gen_ns} link del {lab.gen_if}")
        t0 = time.monotonic()
        N.run(["ip", "-n", lab.gen_ns, "link", "del", lab.gen_if])
        rc, _ = N.wait_exit(x.proc, 5.0)
        waited = time.monotonic() - t0
        if rc is None:
            x.wait(timeout=0.1)          # kills it and fails with its stderr
        x.wait(timeout=5)                 # reap, join the readers
        N.log(f"  info  xdpcap exited {waited:.3f} s after the link deletion started "
              f"(status {rc})")
        N.log("  info  stderr: " + " | ".join(x.err_lines))

        N.expect(waited <= EXIT_WITHIN_S,
                 f"xdpcap exits by itself within {EXIT_WITHIN_S} s of the deletion",
                 f"took {waited:.3f} s")
        N.expect(rc == 2, "exit status 2 (capture started, then failed)", f"status {rc}")
        msgs = N.messages(x.err_lines)
        N.expect(msgs == ["xdpcap: cap0 went away; capture stopped"],
                 "exactly one message: 'xdpcap: cap0 went away; capture stopped'", msgs)
        st = N.final_stats(x.err_lines)
        N.check(st is not None, "statistics lines printed after the failure", x.stderr)
        N.check_stats_identity(st)
        N.expect(st["captured"] == COUNT and st["received"] == COUNT and st["dropped"] == 0,
                 f"stderr: {COUNT} captured, {COUNT} received, 0 dropped",
                 "\n".join(st["lines"]))

        links = N.run(["ip", "-n", lab.cap_ns, "-o", "link", "show"]).stdout
        N.expect(lab.cap_if not in links, "cap0 no longer exists", links)
        # A clsact filter's program is released after an RCU grace period.
        alive = N.wait_programs_gone(list(held))
        N.expect(not alive, f"none of the programs it held ({held}) exists any more "
                            "(detached and freed)", alive)

        N.check(os.path.isfile(out) and os.path.getsize(out) > 0, "output file kept")
        recs = N.pcapng_records(out)
        N.expect(not recs["problems"], "block walk: every block complete, lengths match, "
                                       "known types", recs["problems"])
        N.check_structure(out)
        N.check_readers_agree(out, COUNT)
        N.check_idbs(out)
        rows = N.read_capture(out, tmp)
        N.check_exact(frames, [r["data"] for r in rows])
        N.expect(len(recs["epbs"]) == COUNT, f"{COUNT} enhanced packet blocks in the file",
                 len(recs["epbs"]))
        N.expect(recs["blocks"] and recs["blocks"][-1][1] == N.PCAPNG_ISB,
                 "the file ends with interface statistics blocks")
        N.check_isbs_match_stats(recs, st)


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("bpftool",))
