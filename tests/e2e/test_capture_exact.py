#!/usr/bin/python3
"""End-to-end: every frame sent is captured exactly once, byte for byte.

Usage (root): /usr/bin/python3 tests/e2e/test_capture_exact.py PATH/TO/xdpcap

A mixed corpus (~200 frames: IPv4 UDP/TCP/ICMP, IPv6 UDP/ICMPv6, ARP, 802.1Q;
60..1514 bytes) is sent from the generator namespace, pinned to CPU 0, while
`xdpcap -i cap0 -w FILE` runs; SIGINT stops it.  Checks: exit 0; the multiset
of captured frames equals the multiset sent; tshark, capinfos and tcpdump agree
on the count; the MIME-reader structural check is clean; -v names how frames
travel (several per perf record, or one and why); all IDBs are EN10MB
with one snaplen; stderr has the listening line and "N packets captured";
no packet has an epb_dropcount (written only after a loss); cap0, a veth
with one queue, gives no packet an epb_queue, and once `ethtool -L` gives it
two, every packet has one; nothing stays attached to cap0.
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

COUNT = 200
CPU = N.cpus()[0]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, COUNT)
        N.log(f"  info  corpus of {len(frames)} frames, {min(map(len, frames))}.."
              f"{max(map(len, frames))} bytes")
        out = os.path.join(tmp, "capture.pcapng")

        x = lab.xdpcap(binary, ["-v", "-w", out])
        x.wait_listening()
        # Batched where the kernel runs the flush program on a chosen CPU,
        # else one frame per record: either way chosen and named.
        travel = [l for l in x.err_lines if "per perf record" in l]
        N.log("  info  " + (travel[0] if travel else "no line on how frames travel"))
        N.expect(len(travel) == 1 and (travel[0].startswith("several frames per perf record")
                                       or travel[0].startswith("one frame per perf record (")),
                 "-v names how frames travel (several per record, or one and why)", x.err_lines)
        N.log("  info  " + lab.send(corpus, CPU, gap_us=200))
        time.sleep(0.5)
        rc = x.stop(signal.SIGINT)
        N.log("  info  stderr: " + " | ".join(x.err_lines))

        N.expect(rc == 0, "xdpcap exits 0 after SIGINT", f"exit status {rc}")
        N.check(os.path.isfile(out) and os.path.getsize(out) > 0, "output file written")
        snaplen = N.check_listening(x)
        captured = N.stderr_count(x.err_lines, "captured")
        N.expect(captured == COUNT, f"stderr says '{COUNT} packets captured'",
                 f"got {captured}")

        N.check_structure(out)
        N.check_readers_agree(out, COUNT)
        idbs = N.check_idbs(out)
        if snaplen is not None and idbs:
            N.expect(idbs[0]["snaplen"] == snaplen,
                     f"IDB snaplen equals the listening line's ({snaplen})",
                     idbs[0]["snaplen"])

        rows = N.read_capture(out, tmp)
        N.check_exact(frames, [r["data"] for r in rows])
        N.expect(all(r["len"] == r["cap_len"] == len(r["data"]) for r in rows),
                 "no frame truncated (caplen == len)")
        N.expect(all(r["queue"] is None for r in rows),
                 "one queue: no packet carries epb_queue (its 8 bytes would say 0 every time)",
                 sorted({r["queue"] for r in rows}, key=str))
        N.expect(all(r["drop_count"] is None for r in rows),
                 "no packet has a drop count (epb_dropcount, written only after a loss): nothing was lost",
                 sorted({r["drop_count"] for r in rows}, key=str))
        names = sorted({r["if_name"] for r in rows})
        N.expect(names == [f"cap0@cpu{CPU}"],
                 f"frames sent from CPU {CPU} are on interface cap0@cpu{CPU}", names)

        check_queues_said_with_two(binary, lab, tmp)
        lab.assert_clean()


def check_queues_said_with_two(binary, lab, tmp):
    """A device with two queues: every packet says its queue, 0 included."""
    N.run(["ip", "netns", "exec", lab.cap_ns, "ethtool", "-L", lab.cap_if, "rx", "2", "tx", "2"])
    corpus = os.path.join(tmp, "queues.pcap")
    frames = N.build_corpus(corpus, 20, seed=2)
    out = os.path.join(tmp, "queues.pcapng")
    x = lab.xdpcap(binary, ["-w", out])
    x.wait_listening()
    lab.send(corpus, CPU)
    time.sleep(0.5)
    N.expect(x.stop(signal.SIGINT) == 0, "two queues: xdpcap exits 0")
    rows = N.read_capture(out, tmp)
    N.check_exact(frames, [r["data"] for r in rows])
    N.expect(all(r["queue"] is not None for r in rows),
             "two queues: every packet carries epb_queue",
             sorted({r["queue"] for r in rows}, key=str))


if __name__ == "__main__":
    N.main(test)
