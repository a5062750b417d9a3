#!/usr/bin/python3
"""End-to-end: stop signals while xdpcap waits on its output, and readers
that stall.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_stalls.py PATH/TO/xdpcap

Checks:
- -w FIFO with no reader: SIGINT ends the wait at once (exit 0, one line,
  nothing attached); with a reader that opens the FIFO later, the capture
  runs and the reader gets a complete file;
- -w - into a reader that stops reading, under a flood: SIGTERM ends the
  capture within the bound (1 s of grace for the output, then the drain),
  the XDP program is detached and the statistics add up, the packets never
  written counted as not written;
- a non-blocking standard output (O_NONBLOCK on the pipe) read by a reader
  that stalls and resumes at random for 15 s under a flood, then keeps up:
  no failure, the reader gets a valid, complete file whose packet count is
  'packets captured', and the statistics add up.
"""

import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CPU = N.cpus()[0]
STOP_BOUND_S = 3.0  # 1 s of grace for the output, the drain, exit


def wait_gone(proc, bound):
    t0 = time.monotonic()
    rc, _ = N.wait_exit(proc, bound)
    return rc, time.monotonic() - t0


def test_fifo(lab, binary, tmp):
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    x = lab.xdpcap(binary, ["-w", fifo])
    time.sleep(N.scaled(0.5))
    N.expect(x.proc.poll() is None, "-w FIFO without a reader: xdpcap waits for one")
    x.send_signal(signal.SIGINT)
    rc, took = wait_gone(x.proc, 2.0)
    x.wait(timeout=5)
    N.expect(rc == 0, f"-w FIFO without a reader: SIGINT ends the wait, exit 0 ({took:.2f} s)", (rc, x.err_lines))
    N.expect(len(x.err_lines) == 1 and "waiting for a reader of" in x.err_lines[0],
             "-w FIFO without a reader: one line saying what it was waiting for", x.err_lines)
    lab.assert_clean("-w FIFO without a reader: nothing attached")

    corpus = os.path.join(tmp, "fifo.pcap")
    frames = N.build_corpus(corpus, 30, seed=41)
    y = lab.xdpcap(binary, ["-w", fifo])
    time.sleep(N.scaled(0.5))
    got = bytearray()
    reader_done = threading.Event()

    def read_fifo():
        with open(fifo, "rb") as f:
            while True:
                chunk = f.read(65536)
                if not chunk:
                    break
                got.extend(chunk)
        reader_done.set()

    threading.Thread(target=read_fifo, daemon=True).start()
    y.wait_listening()
    lab.send(corpus, CPU, gap_us=200)
    time.sleep(0.3)
    N.expect(y.stop(signal.SIGINT) == 0, "-w FIFO with a late reader: exit 0 on SIGINT", y.err_lines)
    reader_done.wait(N.scaled(5))
    path = os.path.join(tmp, "fifo-copy.pcapng")
    with open(path, "wb") as f:
        f.write(got)
    recs = N.pcapng_records(path)
    N.expect(not recs["problems"] and len(recs["epbs"]) == len(frames) and recs["isbs"],
             f"-w FIFO with a late reader: the reader gets a complete file with the {len(frames)} frames",
             recs["problems"] or len(recs["epbs"]))


def test_stalled_reader(lab, binary, tmp):
    corpus = os.path.join(tmp, "flood.pcap")
    N.build_corpus(corpus, 200, sizes=[1400], seed=42)
    # The reader never reads: the pipe fills and xdpcap would block in write().
    r, w = os.pipe()
    x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-v", "-w", "-"], stdout=w)
    os.close(w)
    try:
        x.wait_listening()
        flood = N.start_flood(lab, corpus, CPU, seconds=N.scaled(2))
        N.finish_flood(lab, flood)
        N.expect(x.proc.poll() is None, "a stalled reader: xdpcap still runs")
        x.send_signal(signal.SIGTERM)
        rc, took = wait_gone(x.proc, STOP_BOUND_S)
        if rc is None:
            N.log(f"  FAIL  still running {STOP_BOUND_S} s after SIGTERM; killing it")
        x.wait(timeout=10)
        N.expect(rc == 0, f"a stalled reader: SIGTERM ends the capture within {STOP_BOUND_S} s ({took:.2f} s), "
                 "exit 0", (x.returncode, x.err_lines[-3:]))
        lab.assert_clean("a stalled reader: the XDP program is detached")
        st = N.final_stats(x.err_lines)
        N.check(st is not None, "a stalled reader: statistics printed", x.err_lines)
        N.check_stats_identity(st, "a stalled reader")
        N.expect(st["not_written"] > 0, "a stalled reader: the packets never written are counted as not written",
                 st["lines"])
    finally:
        os.close(r)


def test_nonblocking_stdout(lab, binary, tmp):
    corpus = os.path.join(tmp, "flood2.pcap")
    N.build_corpus(corpus, 200, sizes=[600], seed=43)
    r, w = os.pipe()
    os.set_blocking(w, False)
    x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-v", "-w", "-"], stdout=w)
    os.close(w)
    got = bytearray()
    rng = random.Random(44)
    done = threading.Event()
    flood_over = threading.Event()

    def slow_reader():
        while True:
            # Stalls only during the flood: afterwards it keeps up, so the
            # stop's bounded wait for the output is not what ends the file.
            if not flood_over.is_set() and rng.random() < 0.3:
                time.sleep(rng.uniform(0.05, 0.4))  # stall
            chunk = os.read(r, rng.choice((512, 4096, 65536)))
            if not chunk:
                break
            got.extend(chunk)
        done.set()

    threading.Thread(target=slow_reader, daemon=True).start()
    x.wait_listening()
    flood = N.start_flood(lab, corpus, CPU, seconds=N.scaled(15))
    N.finish_flood(lab, flood)
    flood_over.set()
    time.sleep(1.0)
    rc = x.stop(signal.SIGINT, timeout=20)
    done.wait(N.scaled(10))
    os.close(r)
    N.expect(rc == 0, "non-blocking stdout with a stalling reader: exit 0", x.err_lines[-4:])
    N.expect(not N.messages(x.err_lines), "no failure message", x.err_lines)
    st = N.final_stats(x.err_lines)
    N.check(st is not None, "non-blocking stdout: statistics printed", x.err_lines)
    N.check_stats_identity(st, "non-blocking stdout")
    path = os.path.join(tmp, "nonblocking.pcapng")
    with open(path, "wb") as f:
        f.write(got)
    recs = N.pcapng_records(path)
    N.expect(not recs["problems"] and recs["isbs"], "non-blocking stdout: the reader gets a valid, complete file",
             recs["problems"])
    N.expect(len(recs["epbs"]) == st["captured"] > 0,
             f"non-blocking stdout: the file's {len(recs['epbs'])} packets are 'packets captured' ({st['captured']})")


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        test_fifo(lab, binary, tmp)
        test_stalled_reader(lab, binary, tmp)
        test_nonblocking_stdout(lab, binary, tmp)


if __name__ == "__main__":
    N.main(test)
