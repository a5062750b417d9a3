#!/usr/bin/python3
"""End-to-end: frames received on CPU k land on the interface named IFACE@cpuk.

Usage (root): /usr/bin/python3 tests/e2e/test_cpus.py PATH/TO/xdpcap

Needs 2 CPUs (skip, or failure under CI, with fewer).  One batch of frames is
sent from a process pinned to CPU 0, then another from CPU 1; on the veth peer
they are received on the same CPU.  Checks: the two batches use two different
interface IDs, named cap0@cpu0 and cap0@cpu1; every frame is captured once,
byte-exact; readers agree; structure clean.
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

PER_CPU = 60


def test(binary):
    two = N.cpus()[:2]
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        N.log(f"  info  sending from CPUs {two}")
        batches = {}
        for cpu in two:
            path = os.path.join(tmp, f"cpu{cpu}.pcap")
            batches[cpu] = (path, N.build_corpus(path, PER_CPU, seed=10 + cpu))
        out = os.path.join(tmp, "cpus.pcapng")

        x = lab.xdpcap(binary, ["-w", out])
        x.wait_listening()
        for cpu in two:
            N.log("  info  " + lab.send(batches[cpu][0], cpu, gap_us=200))
        time.sleep(0.5)
        rc = x.stop(signal.SIGINT)
        N.log("  info  stderr: " + " | ".join(x.err_lines))

        N.expect(rc == 0, "xdpcap exits 0 after SIGINT", f"exit status {rc}")
        N.check_structure(out)
        N.check_readers_agree(out, 2 * PER_CPU)
        N.check_idbs(out)
        rows = N.read_capture(out, tmp)
        N.check_exact(batches[0][1] + batches[1][1], [r["data"] for r in rows])

        where = {}
        for cpu in two:
            sent = set(batches[cpu][1])
            where[cpu] = sorted({(r["if_id"], r["if_name"]) for r in rows if r["data"] in sent})
            N.log(f"  info  frames sent from CPU {cpu} are on interface(s) {where[cpu]}")
        for cpu in two:
            N.expect(len(where[cpu]) == 1,
                     f"all frames sent from CPU {cpu} use one interface", where[cpu])
            N.expect(bool(where[cpu]) and all(n.endswith(f"@cpu{cpu}") for _, n in where[cpu]),
                     f"that interface's name ends with @cpu{cpu}", where[cpu])
        ids = {i for cpu in two for i, _ in where[cpu]}
        N.expect(len(ids) == 2, "the two CPUs' frames use two different interface IDs", ids)
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test, min_cpus=2)
