#!/usr/bin/python3
"""End-to-end: 9014-byte frames on an MTU 9000 veth are captured whole.

Usage (root): /usr/bin/python3 tests/e2e/test_jumbo.py PATH/TO/xdpcap

Both veth ends get MTU 9000 (multi-buffer XDP).  Frames of 9014 bytes and some
smaller ones are sent.  Checks: every frame captured once, byte-exact, with
caplen == len (9014 for the jumbo ones); readers agree; structure clean.
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

JUMBO = 9014
SIZES = [JUMBO] * 12 + [60, 1514, 3000, 4096, 5000, 8000, 9000]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab(mtu=9000) as lab:
        frames = [N.jumbo_frame(0x60000 + i, size) for i, size in enumerate(SIZES)]
        N.check([len(f) for f in frames] == SIZES, f"built {len(frames)} frames of sizes {SIZES}")
        corpus = os.path.join(tmp, "jumbo.pcap")
        N.write_frames(corpus, frames)
        out = os.path.join(tmp, "jumbo.pcapng")

        x = lab.xdpcap(binary, ["-w", out])
        x.wait_listening()
        lab.send(corpus, N.cpus()[0], gap_us=500)
        time.sleep(0.5)
        rc = x.stop(signal.SIGINT)
        N.log("  info  stderr: " + " | ".join(x.err_lines))

        N.expect(rc == 0, "xdpcap exits 0 after SIGINT", f"exit status {rc}")
        N.check_structure(out)
        N.check_readers_agree(out, len(frames))
        N.check_idbs(out)
        rows = N.read_capture(out, tmp)
        jumbo_rows = [r for r in rows if r["len"] == JUMBO]
        N.expect(len(jumbo_rows) == SIZES.count(JUMBO)
                 and all(r["cap_len"] == JUMBO for r in jumbo_rows),
                 f"{SIZES.count(JUMBO)} frames with len == caplen == {JUMBO}",
                 sorted((r["len"], r["cap_len"]) for r in rows))
        N.expect(all(r["cap_len"] == r["len"] for r in rows), "no frame truncated",
                 [(r["len"], r["cap_len"]) for r in rows if r["cap_len"] != r["len"]])
        N.check_exact(frames, [r["data"] for r in rows])
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
