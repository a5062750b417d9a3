#!/usr/bin/python3
"""End-to-end: odd standard streams, resource limits and filter files.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_streams.py PATH/TO/xdpcap

Checks:
- -F on a directory and on /dev/zero: one 'xdpcap: ' line, exit 1, nothing
  attached (a directory used to read as an empty expression, which captures
  everything; /dev/zero used to read until memory ran out);
- standard output closed (>&-) with text output: one line saying so, exit 1
  (the closed descriptor used to be reused by the next open file);
- -w /dev/full: the first blocks cannot be written: exit 2 with one line and
  the statistics, as the man page says of exit status 2;
- text output into /dev/full: exit 2, no line counted as captured, every
  one counted as not written;
- a file-size limit (ulimit -f) under a flood: the capture ends as on a full
  disk: exit 2, 'File too large', the statistics add up, the file is valid up
  to at most one incomplete final block and 'packets captured' equals its
  complete packet blocks;
- SIGUSR1 after the reader of stderr has gone: the capture goes on, and
  SIGINT then ends it with status 0 and a complete file.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CPU = N.cpus()[0]


def one_line_failure(lab, desc, argv, msg, *, stdout=None):
    x = N.Xdpcap(lab, None, [], argv=argv, stdout=stdout)
    rc = x.wait(timeout=10)
    err = [l for l in x.err_lines if l.strip()]
    N.expect(rc == 1, f"{desc}: exit status 1", f"{rc}: {err}")
    N.expect(len(err) == 1 and err[0].startswith("xdpcap: ") and msg in err[0],
             f"{desc}: one line saying '{msg}'", err)
    lab.assert_clean(f"{desc}: nothing attached")


def shell(lab, cmd):
    """argv running CMD with bash inside the capture namespace."""
    return ["bash", "-c", cmd]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        out = os.path.join(tmp, "x.pcapng")
        one_line_failure(lab, "-F on a directory", [binary, "-i", lab.cap_if, "-F", tmp, "-w", out],
                         "Is a directory")
        one_line_failure(lab, "-F /dev/zero", [binary, "-i", lab.cap_if, "-F", "/dev/zero", "-w", out],
                         "larger than 1 MiB")
        N.expect(not os.path.exists(out), "no output file after the refusals")
        one_line_failure(lab, "standard output closed", shell(lab, f"exec {binary} -i {lab.cap_if} -c 1 >&-"),
                         "standard output is closed")

        # Not even the first blocks can be written.
        x = lab.xdpcap(binary, ["-w", "/dev/full"])
        rc = x.wait(timeout=10)
        msgs = N.messages(x.err_lines)
        N.expect(rc == 2, "-w /dev/full: exit status 2 (the capture was set up, then failed)", (rc, x.err_lines))
        N.expect(len(msgs) == 1 and "No space left on device" in msgs[0], "-w /dev/full: one line saying why",
                 msgs)
        st = N.final_stats(x.err_lines)
        N.expect(st is not None and st["captured"] == 0, "-w /dev/full: the statistics are printed", x.err_lines)
        lab.assert_clean("-w /dev/full: nothing attached afterwards")

        # Text lines into /dev/full: none reaches the output, none counts as captured.
        corpus_text = os.path.join(tmp, "text.pcap")
        text_frames = N.build_corpus(corpus_text, 20, seed=33)
        x = N.Xdpcap(lab, None, [], argv=shell(lab, f"exec {binary} -i {lab.cap_if} -v > /dev/full"))
        x.wait_listening()
        lab.send(corpus_text, CPU, gap_us=300)
        rc, _ = N.wait_exit(x.proc, 5.0)
        if rc is None:
            x.stop()
        else:
            x.wait(timeout=5)
        N.expect(x.returncode == 2, "text to /dev/full: exit status 2", (x.returncode, x.err_lines))
        st = N.final_stats(x.err_lines)
        N.check(st is not None, "text to /dev/full: statistics printed", x.err_lines)
        N.check_stats_identity(st, "text to /dev/full")
        N.expect(st["captured"] == 0 and 0 < st["not_written"] <= len(text_frames),
                 "text to /dev/full: no line counts as captured; the lines are counted as not written",
                 st["lines"])
        lab.assert_clean("text to /dev/full: nothing attached afterwards")

        # A file-size limit under a flood: 200 KiB, far less than the traffic.
        corpus = os.path.join(tmp, "flood.pcap")
        frames = N.build_corpus(corpus, 400, sizes=[1000], seed=31)
        limited = os.path.join(tmp, "limited.pcapng")
        x = N.Xdpcap(lab, None, [], argv=shell(lab, f"ulimit -f 200; exec {binary} -i {lab.cap_if} -v -w {limited}"))
        x.wait_listening()
        lab.send(corpus, CPU)
        rc, _ = N.wait_exit(x.proc, 5.0)
        if rc is None:
            x.stop()
        else:
            x.wait(timeout=5)
        N.expect(x.returncode == 2, "ulimit -f: exit status 2, as on a full disk", f"{x.returncode}: {x.stderr}")
        msgs = N.messages(x.err_lines)
        N.expect(len(msgs) == 1 and "File too large" in msgs[0], "ulimit -f: one line, 'File too large'", msgs)
        st = N.final_stats(x.err_lines)
        N.check(st is not None, "ulimit -f: statistics printed", x.stderr)
        N.check_stats_identity(st, "ulimit -f")
        recs = N.pcapng_records(limited, allow_tail=True)
        N.expect(not recs["problems"], "ulimit -f: the file is valid up to one incomplete final block",
                 recs["problems"])
        N.expect(len(recs["epbs"]) == st["captured"],
                 f"ulimit -f: 'packets captured' ({st['captured']}) equals the complete packet blocks "
                 f"({len(recs['epbs'])})")
        N.expect(os.path.getsize(limited) <= 200 * 1024, "ulimit -f: the file respects the limit")
        lab.assert_clean("ulimit -f: nothing attached afterwards")

        # SIGUSR1 with the reader of stderr gone.
        kept = os.path.join(tmp, "usr1.pcapng")
        p = lab.popen(lab.cap_ns, ["bash", "-c", f"exec {binary} -i {lab.cap_if} -w {kept} 2>&1 | head -n 1"],
                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        first = p.stdout.readline().decode()
        # On a veth the default mode's line comes before "listening on".
        N.check(first.startswith("listening on") or N.VETH_GENERIC_WARNING.match(first.rstrip("\n")),
                "the stderr reader got the first line, then left", first)
        time.sleep(0.5)
        pid = N.run(["pgrep", "-f", "-n", f"xdpcap -i {lab.cap_if} -w {kept}"]).stdout.split()[0]
        os.kill(int(pid), signal.SIGUSR1)
        time.sleep(0.5)
        alive = N.run(["kill", "-0", pid], check_rc=False).returncode == 0
        N.expect(alive, "SIGUSR1 with stderr's reader gone does not stop the capture")
        small = os.path.join(tmp, "small.pcap")
        N.build_corpus(small, 10, seed=32)
        lab.send(small, CPU, gap_us=200)
        time.sleep(0.3)
        os.kill(int(pid), signal.SIGINT)
        p.wait(timeout=N.scaled(10))
        lab.forget(p)
        waited = 0.0
        while N.run(["kill", "-0", pid], check_rc=False).returncode == 0 and waited < N.scaled(5):
            time.sleep(0.1)
            waited += 0.1
        recs = N.pcapng_records(kept)
        N.expect(not recs["problems"] and len(recs["epbs"]) == 10 and len(recs["isbs"]) >= 1,
                 "then SIGINT ends it with a complete file: 10 packets and statistics blocks",
                 recs["problems"] or (len(recs["epbs"]), len(recs["isbs"])))
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
