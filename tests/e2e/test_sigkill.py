#!/usr/bin/python3
"""End-to-end: SIGKILL leaves nothing attached (the XDP link dies with xdpcap).

Usage (root): /usr/bin/python3 tests/e2e/test_sigkill.py PATH/TO/xdpcap

Checks: while xdpcap runs an XDP program is attached to cap0; after SIGKILL no
XDP program remains (polled for up to 2 s); a new xdpcap can then attach and
stop cleanly.
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        N.build_corpus(corpus, 30, seed=5)
        x = lab.xdpcap(binary, ["-w", os.path.join(tmp, "killed.pcapng")])
        x.wait_listening()
        prog = lab.xdp_prog()
        N.check(prog is not None, f"an XDP program is attached while xdpcap runs: {prog}")
        lab.send(corpus, N.cpus()[0], gap_us=200)
        x.send_signal(signal.SIGKILL)
        rc = x.wait(timeout=5)
        N.expect(rc == -signal.SIGKILL, "xdpcap died of SIGKILL", rc)
        lab.assert_clean("no XDP program remains on cap0 within 2 s of SIGKILL", timeout=2.0)

        out = os.path.join(tmp, "again.pcapng")
        y = lab.xdpcap(binary, ["-w", out])
        y.wait_listening()
        lab.send(corpus, N.cpus()[0], gap_us=200)
        time.sleep(0.5)
        rc = y.stop(signal.SIGINT)
        N.expect(rc == 0, "a new xdpcap attaches afterwards and exits 0 on SIGINT",
                 f"{rc}: {y.stderr}")
        N.expect(N.capinfos_count(out) == 30, "and captures the 30 frames sent")
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
