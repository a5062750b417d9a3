#!/usr/bin/python3
"""End-to-end fault: the reader of `xdpcap -w -` goes away.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_reader_gone.py PATH/TO/xdpcap

`xdpcap -i cap0 -v -w - | head -c 3000`, twice:
  1. a burst of a few dozen frames (far more than 3000 bytes of pcapng), then
     nothing: head exits somewhere in or after the burst;
  2. a burst of small frames (less than 3000 bytes of pcapng), then single
     frames until head has its 3000 bytes and exits, then nothing more: the
     last frame is sent before head goes away, so no failing write tells
     xdpcap; it must notice the vanished reader by itself.
  3. frames wait in a CPU's batch when the reader goes: a burst is written
     and read (`cat > FILE` this time), xdpcap is stopped (SIGSTOP), more
     frames are sent (bpftool shows them staged), the reader is killed, and
     xdpcap continued: it stops by itself, every staged frame is counted
     as not written, the first burst as captured, and FILE holds exactly the
     first burst.
Checks each time: xdpcap exits within 1 s of head's exit, with status 0 and no
"xdpcap: " error line; head got exactly 3000 bytes, starting with a pcapng
section header; the statistics are printed and add up; nothing stays attached
to cap0; in case 2 every frame sent was received by filter (xdpcap was still
running when the traffic ended).  Every wait has a timeout: a hang is a
failure, never a stuck test.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

BURST_BIG = 40
BURST_SMALL = 12
MAX_SINGLES = 40
HEAD_BYTES = 3000
CPU = N.cpus()[0]
EXIT_WITHIN_S = 1.0
WRITTEN_FIRST = 6
STAGED = 8
XDPCAP_COUNTERS_INGRESS = 0  # bpf/xdpcap_abi.h


def start(lab, binary):
    x = lab.xdpcap(binary, ["-v", "-w", "-"], stdout=subprocess.PIPE)
    head = lab.track(subprocess.Popen(["head", "-c", str(HEAD_BYTES)],
                                      stdin=x.stdout_pipe, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    x.stdout_pipe.close()        # head holds the only read end now
    x.wait_listening()
    return x, head


def finish(lab, x, head, sent, what):
    """head has exited (or is about to); check head's bytes and xdpcap's exit."""
    try:
        head_out, _ = head.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        N.kill_process(head)
        raise N.TestFailure(f"{what}: head did not get {HEAD_BYTES} bytes from {sent} frames")
    t_head = time.monotonic()
    lab.forget(head)
    N.log(f"  info  head exited (status {head.returncode}) with {len(head_out)} bytes")
    N.expect(head.returncode == 0 and len(head_out) == HEAD_BYTES,
             f"{what}: head read {HEAD_BYTES} bytes and exited 0",
             f"{len(head_out)} bytes, status {head.returncode}")
    N.expect(head_out[:4] == b"\x0a\x0d\x0d\x0a",
             f"{what}: the stream starts with a pcapng section header block",
             head_out[:8].hex())

    rc, _ = N.wait_exit(x.proc, 5.0)
    waited = time.monotonic() - t_head
    if rc is None:
        N.log(f"  FAIL  xdpcap still running {waited:.1f} s after head exited "
              "(no more traffic); stopping it with SIGINT")
        x.stop()
    else:
        x.wait(timeout=5)
    N.log(f"  info  xdpcap exited {waited:.3f} s after head (status {x.returncode})")
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    N.expect(rc is not None and waited <= EXIT_WITHIN_S,
             f"{what}: xdpcap stops by itself within {EXIT_WITHIN_S} s of the reader's "
             "exit, without further traffic", f"{waited:.3f} s, status {rc}")
    N.expect(x.returncode == 0, f"{what}: exit status 0 (reader gone is a normal stop)",
             f"status {x.returncode}")
    msgs = N.messages(x.err_lines)
    N.expect(not msgs, f"{what}: no 'xdpcap: ' error line", msgs)
    st = N.final_stats(x.err_lines)
    N.check(st is not None, f"{what}: statistics lines printed", x.stderr)
    N.check_stats_identity(st, f"{what}: statistics")
    N.expect(st["received"] <= sent, f"{what}: received by filter ({st['received']}) <= "
                                     f"frames sent ({sent})")
    lab.assert_clean(f"{what}: no XDP program remains attached to cap0")
    return st


def check_pending(lab, binary, tmp):
    what = "pending batch"
    N.log(f"  --    {what}: {WRITTEN_FIRST} frames read, then {STAGED} staged when the reader goes")
    frames = N.build_corpus(os.path.join(tmp, "pending.pcap"), WRITTEN_FIRST + STAGED,
                            sizes=[60, 90] * (WRITTEN_FIRST + STAGED), seed=33)
    first, staged = os.path.join(tmp, "first.pcap"), os.path.join(tmp, "staged.pcap")
    N.write_frames(first, frames[:WRITTEN_FIRST])
    N.write_frames(staged, frames[WRITTEN_FIRST:])
    got = os.path.join(tmp, "pending.pcapng")
    x = lab.xdpcap(binary, ["-v", "-w", "-"], stdout=subprocess.PIPE)
    with open(got, "wb") as sink:
        reader = lab.track(subprocess.Popen(["cat"], stdin=x.stdout_pipe, stdout=sink))
    x.stdout_pipe.close()        # cat holds the only read end now
    x.wait_listening()
    N.log("  info  " + lab.send(first, CPU))
    deadline = time.monotonic() + N.scaled(5)
    while len(N.pcapng_records(got)["epbs"]) < WRITTEN_FIRST and time.monotonic() < deadline:
        time.sleep(0.01)
    N.check(len(N.pcapng_records(got)["epbs"]) == WRITTEN_FIRST,
            f"{what}: the first {WRITTEN_FIRST} frames reach the reader")
    x.send_signal(signal.SIGSTOP)
    try:
        lab.send(staged, CPU, gap_us=1000)
        held = N.staged_frames(x.proc.pid)
        N.log(f"  info  staged while stopped: {held}")
        N.check(held is not None and held[1].get(XDPCAP_COUNTERS_INGRESS) == STAGED,
                f"{what}: the {STAGED} frames wait in the CPU's batch", held)
        reader.kill()
        reader.wait(timeout=10)
        lab.forget(reader)
    finally:
        x.send_signal(signal.SIGCONT)
    t_gone = time.monotonic()
    rc, _ = N.wait_exit(x.proc, 5.0)
    waited = time.monotonic() - t_gone
    if rc is None:
        x.stop()
    else:
        x.wait(timeout=5)
    N.log(f"  info  xdpcap exited {waited:.3f} s after it was continued (status {x.returncode})")
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    N.expect(rc == 0 and waited <= EXIT_WITHIN_S,
             f"{what}: xdpcap stops by itself within {EXIT_WITHIN_S} s, status 0", f"{waited:.3f} s, status {rc}")
    N.expect(not N.messages(x.err_lines), f"{what}: no 'xdpcap: ' error line", N.messages(x.err_lines))
    st = N.final_stats(x.err_lines)
    N.check(st is not None, f"{what}: statistics lines printed", x.stderr)
    N.check_stats_identity(st, f"{what}: statistics")
    N.expect((st["received"], st["captured"], st["dropped"], st["not_written"])
             == (WRITTEN_FIRST + STAGED, WRITTEN_FIRST, 0, STAGED),
             f"{what}: {WRITTEN_FIRST + STAGED} received, {WRITTEN_FIRST} captured, 0 dropped, "
             f"the {STAGED} staged frames not written", "\n".join(st["lines"]))
    rows = N.pcapng_records(got)
    N.expect(not rows["problems"], f"{what}: the reader's file is valid", rows["problems"])
    N.check_exact(frames[:WRITTEN_FIRST], [r["data"] for r in rows["epbs"]],
                  f"{what}: the reader got the first burst, each frame once")
    lab.assert_clean(f"{what}: no program remains attached to cap0")


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        # 1. A few dozen frames in one burst, then nothing.
        what = "burst"
        N.log(f"  --    {what}: {BURST_BIG} frames at once, then nothing")
        big = os.path.join(tmp, "big.pcap")
        frames = N.build_corpus(big, BURST_BIG, seed=31)
        N.log(f"  info  {sum(map(len, frames))} bytes of frames")
        x, head = start(lab, binary)
        N.log("  info  " + lab.send(big, CPU))
        finish(lab, x, head, BURST_BIG, what)

        # 2. Under 3000 bytes, then one frame at a time until head exits.
        what = "trickle"
        N.log(f"  --    {what}: {BURST_SMALL} small frames, then single frames until head "
              "exits, then nothing")
        n = BURST_SMALL + MAX_SINGLES
        frames = N.build_corpus(os.path.join(tmp, "all.pcap"), n, sizes=[60] * n, seed=32)
        burst = os.path.join(tmp, "burst.pcap")
        N.write_frames(burst, frames[:BURST_SMALL])
        singles = []
        for i, fr in enumerate(frames[BURST_SMALL:]):
            singles.append(os.path.join(tmp, f"single{i}.pcap"))
            N.write_frames(singles[-1], [fr])
        x, head = start(lab, binary)
        N.log("  info  " + lab.send(burst, CPU))
        time.sleep(0.3)
        N.check(head.poll() is None, f"{what}: head still running after {BURST_SMALL} small "
                                     "frames (under 3000 bytes of pcapng)")
        sent = BURST_SMALL
        for path in singles:
            lab.send(path, CPU)
            sent += 1
            end = time.monotonic() + 0.4
            while head.poll() is None and time.monotonic() < end:
                time.sleep(0.005)
            if head.poll() is not None:
                break
        N.log(f"  info  sent {sent} frames in all; head exited after the last one")
        st = finish(lab, x, head, sent, what)
        N.expect(st["received"] == sent,
                 f"{what}: every frame sent ({sent}) was received by filter: xdpcap was "
                 "still running when the traffic ended", "\n".join(st["lines"]))

        # 3. The reader goes while frames wait in a batch.
        check_pending(lab, binary, tmp)


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("head",))
