#!/usr/bin/python3
"""End-to-end: without -w, one line per packet on stdout.

Usage (root): /usr/bin/python3 tests/e2e/test_text_mode.py PATH/TO/xdpcap

Checks: exactly one stdout line per frame sent, each matching
`HH:MM:SS.uuuuuu cap0@cpuN In [hash 0xH/T ]SRC > DST, ethertype ..., length ORIG: ...`
(run with -e --print-cpu), with N the CPU the frames were sent from and the
lengths those sent; exit 0. With -e alone, tcpdump's column: the MAC
addresses straight after the time, no interface, direction or hash. test_text_decode.py compares the decode itself with tcpdump.
"""

import os
import re
import signal
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

# -e also shows the hash the driver handed over, where it did (its value and
# type are checked in test_nic_metadata.py).
LINE_RE = re.compile(r"^\d\d:\d\d:\d\d\.\d{6} cap0@cpu(\d+) In (?:hash 0x[0-9a-f]{8}(?:/[A-Z0-9_]+)? )?"
                     r"(?:[0-9a-f]{2}:){5}[0-9a-f]{2} > (?:[0-9a-f]{2}:){5}[0-9a-f]{2}, "
                     r"ethertype \S+ \(0x[0-9a-f]{4}\), length (\d+): \S.*$")
TCPDUMP_E_RE = re.compile(r"^\d\d:\d\d:\d\d\.\d{6} (?:[0-9a-f]{2}:){5}[0-9a-f]{2} > (?:[0-9a-f]{2}:){5}[0-9a-f]{2}, "
                          r"ethertype \S+ \(0x[0-9a-f]{4}\), length \d+: \S.*$")
COUNT = 40
CPU = N.cpus()[0]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, COUNT, seed=8)
        x = lab.xdpcap(binary, ["-e", "--print-cpu"])
        x.wait_listening()
        lab.send(corpus, CPU, gap_us=200)
        time.sleep(0.5)
        rc = x.stop(signal.SIGINT)
        N.expect(rc == 0, "xdpcap exits 0 after SIGINT", f"exit status {rc}")
        N.check_listening(x)
        text = bytes(x.out).decode("utf-8", "replace")
        lines = text.splitlines()
        N.log(f"  info  first lines: {lines[:3]}")
        N.expect(len(lines) == COUNT, f"{COUNT} lines on stdout", f"{len(lines)} lines")
        bad = [l for l in lines if not LINE_RE.match(l)]
        N.expect(not bad, "every line matches 'HH:MM:SS.uuuuuu cap0@cpuN In MAC > MAC, ethertype T, length L: ...'",
                 "\n".join(repr(l) for l in bad[:10]))
        ms = [LINE_RE.match(l) for l in lines]
        ms = [m for m in ms if m]
        N.expect(all(int(m.group(1)) == CPU for m in ms), f"every line says cap0@cpu{CPU}",
                 sorted({m.group(1) for m in ms}))
        N.expect(Counter(int(m.group(2)) for m in ms) == Counter(len(f) for f in frames),
                 "the lengths printed are those of the frames sent",
                 f"sent {sorted(len(f) for f in frames)}\n"
                 f"printed {sorted(int(m.group(2)) for m in ms)}")

        x = lab.xdpcap(binary, ["-e"])
        x.wait_listening()
        lab.send(corpus, CPU, gap_us=200)
        time.sleep(0.5)
        rc = x.stop(signal.SIGINT)
        lines = bytes(x.out).decode("utf-8", "replace").splitlines()
        bad = [l for l in lines if not TCPDUMP_E_RE.match(l)]
        N.expect(rc == 0 and len(lines) == COUNT and not bad,
                 f"-e alone: {COUNT} lines, each 'HH:MM:SS.uuuuuu MAC > MAC, ethertype T, length L: ...' as tcpdump -e",
                 "\n".join(repr(l) for l in (bad or lines)[:10]))
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
