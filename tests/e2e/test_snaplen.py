#!/usr/bin/python3
"""End-to-end: -s 96 keeps min(len, 96) bytes and records the true length.

Usage (root): /usr/bin/python3 tests/e2e/test_snaplen.py PATH/TO/xdpcap

Checks: the listening line and every IDB say snaplen 96; for every frame
caplen == min(len, 96), origlen == the length sent, the bytes kept are the
first caplen bytes of a frame sent (each sent frame exactly once); the
readers agree on the count and the structure check is clean.
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

COUNT = 120
SNAPLEN = 96
CPU = N.cpus()[0]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, COUNT, seed=2)
        small = sum(1 for f in frames if len(f) <= SNAPLEN)
        N.log(f"  info  {len(frames)} frames, {small} of them no longer than {SNAPLEN} bytes")
        out = os.path.join(tmp, "snap.pcapng")

        x = lab.xdpcap(binary, ["-s", str(SNAPLEN), "-w", out])
        x.wait_listening()
        lab.send(corpus, CPU, gap_us=200)
        time.sleep(0.5)
        rc = x.stop(signal.SIGINT)
        N.log("  info  stderr: " + " | ".join(x.err_lines))

        N.expect(rc == 0, "xdpcap exits 0 after SIGINT", f"exit status {rc}")
        N.check_listening(x, snaplen=SNAPLEN)
        N.check_structure(out)
        N.check_readers_agree(out, COUNT)
        idbs = N.check_idbs(out)
        N.expect(all(i["snaplen"] == SNAPLEN for i in idbs),
                 f"every IDB has snaplen {SNAPLEN}", [i["snaplen"] for i in idbs])

        rows = N.read_capture(out, tmp)
        bad = [r for r in rows if r["cap_len"] != min(r["len"], SNAPLEN)
               or len(r["data"]) != r["cap_len"]]
        N.expect(not bad, f"every frame: caplen == min(len, {SNAPLEN})",
                 "\n".join(f"len {r['len']} cap {r['cap_len']}" for r in bad[:10]))
        sent = [(len(f), f[:SNAPLEN]) for f in frames]
        got = [(r["len"], r["data"]) for r in rows]
        missing, extra, dup = N.multiset_diff(sent, got)
        N.expect(not missing and not extra and not dup and len(got) == len(sent),
                 "every frame once, origlen = true length, bytes = its first caplen bytes",
                 f"missing {len(missing)}, unexpected {len(extra)}, duplicated {len(dup)}; "
                 f"e.g. {(missing or extra or dup)[:2]}")
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
