#!/usr/bin/python3
"""End-to-end fault: the output file system fills up during the capture.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_disk_full.py PATH/TO/xdpcap

Twice: on a 256 KiB tmpfs, and on a 2 MiB ext4 (a loop-mounted image, where
xdpcap allocates the file's blocks ahead of its writes), each mounted on a
temporary directory and always unmounted at the end, `xdpcap -i cap0 -v -w
FS/full.pcapng` captures about twice as many frames as fit.
Checks: xdpcap exits by itself within a few seconds with status 2 and one
"xdpcap: ... No space left on device" line naming the file; the statistics are
still printed and add up (what could not be written is counted); nothing stays
attached to cap0; the file is a valid prefix of a capture: walking its blocks,
every complete block has matching length fields and a known type and only the
final block may be incomplete; the number of complete enhanced packet blocks
equals "N packets captured", each of them a frame that was sent, none twice;
tshark and tcpdump -r read that many packets (they may complain about the cut
end); no blocks stay allocated past the file's end.
"""

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

TMPFS_SIZE = "256k"
EXT4_SIZE = "2M"
MEAN_FRAME = 780             # bytes, the corpus's mean frame length
MIN_COUNT = 600              # ~470 KiB of frames: about twice what the tmpfs holds
CPU = N.cpus()[0]
EXIT_WITHIN_S = 5.0


def count_lines(cmd):
    cp = N.run(cmd, check_rc=False)
    n = len([l for l in cp.stdout.splitlines() if l.strip()])
    return n, cp.returncode, cp.stderr.strip()


def test(binary):
    with N.Tmpfs(TMPFS_SIZE) as fs:
        fill(binary, fs, f"tmpfs {TMPFS_SIZE}")
    with N.LoopExt4(EXT4_SIZE) as fs:
        fill(binary, fs, f"ext4 {EXT4_SIZE}")


def fill(binary, fs, fs_name):
    N.log(f"  ----  {fs_name}")
    vfs = os.statvfs(fs.path)
    free = vfs.f_bavail * vfs.f_frsize
    count = max(MIN_COUNT, 2 * free // MEAN_FRAME)
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, count, seed=21)
        total = sum(len(f) for f in frames)
        N.log(f"  info  corpus of {len(frames)} frames, {total} bytes; {fs_name}, {free} bytes free")
        N.check(total > 1.5 * free, "the frames are well beyond what fits", f"{total} vs {free}")
        out = os.path.join(fs.path, "full.pcapng")

        x = lab.xdpcap(binary, ["-v", "-w", out])
        x.wait_listening()
        N.log("  info  " + lab.send(corpus, CPU, gap_us=100))
        t0 = time.monotonic()
        rc, _ = N.wait_exit(x.proc, EXIT_WITHIN_S)
        waited = time.monotonic() - t0
        if rc is None:
            N.log(f"  FAIL  xdpcap still running {EXIT_WITHIN_S} s after the last frame; "
                  "stopping it with SIGINT")
            x.stop()
        else:
            x.wait(timeout=5)
        N.log(f"  info  xdpcap exited {waited:.3f} s after the last frame was sent "
              f"(status {x.returncode})")
        N.log("  info  stderr: " + " | ".join(x.err_lines))
        N.expect(rc is not None, f"xdpcap stops by itself within {EXIT_WITHIN_S} s",
                 f"still running after {waited:.1f} s")
        N.expect(x.returncode == 2, "exit status 2 (capture started, then failed)",
                 f"status {x.returncode}")
        msgs = N.messages(x.err_lines)
        N.expect(len(msgs) == 1, "exactly one 'xdpcap: ' message", msgs)
        N.expect(any("No space left on device" in m for m in msgs),
                 "the message says 'No space left on device'", msgs)
        N.expect(any(out in m for m in msgs), f"the message names the file {out}", msgs)
        N.expect(not any(re.search(r"\b(errno|error)\s*[-=]?\s*\d+|:\s*-?\d+\s*$", m, re.I)
                         for m in msgs), "no raw errno number in the message", msgs)

        st = N.final_stats(x.err_lines)
        N.check(st is not None, "statistics lines printed after the failure", x.stderr)
        N.check_stats_identity(st)
        N.expect(st["captured"] < st["received"] <= count,
                 f"captured < received by filter <= {count} sent (frames sent after the "
                 "stop are not seen)", "\n".join(st["lines"]))
        N.expect(st["captured"] < count and st["not_written"] > 0,
                 "some packets were not written (the disk was full) and are counted "
                 "as 'not written to the output'", "\n".join(st["lines"]))
        lab.assert_clean("the XDP program is detached after the failure")

        N.check(os.path.isfile(out), "the (partial) output file is kept")
        size = os.path.getsize(out)
        allocated = os.stat(out).st_blocks * 512
        block = os.statvfs(fs.path).f_bsize
        N.log(f"  info  file size {size} bytes, {allocated} allocated")
        N.expect(allocated <= (size + block - 1) // block * block,
                 "no blocks stay allocated past the end of the file", f"{allocated} > {size}")
        recs = N.pcapng_records(out, allow_tail=True)
        N.expect(not recs["problems"],
                 "block walk: every complete block has matching length fields and a known "
                 "type; only the final block may be incomplete", recs["problems"])
        types = [b[1] for b in recs["blocks"]]
        N.expect(types[:1] == [N.PCAPNG_SHB] and len(recs["idbs"]) >= 1,
                 "the file starts with a section header and interface descriptions",
                 types[:4])
        tail = recs["tail"]
        N.log(f"  info  {len(recs['blocks'])} complete blocks, incomplete tail: {tail}")
        if tail is not None and tail["type"] is not None:
            N.expect(tail["type"] in (N.PCAPNG_EPB, N.PCAPNG_ISB),
                     "the incomplete final block is a packet or statistics block", tail)
        n_epb = len(recs["epbs"])
        N.expect(n_epb == st["captured"],
                 f"complete enhanced packet blocks ({n_epb}) == 'packets captured' "
                 f"({st['captured']})")
        got = [r["data"] for r in recs["epbs"]]
        sent = set(frames)
        N.expect(all(g in sent for g in got) and len(set(got)) == len(got),
                 "every complete packet block holds a frame that was sent, none twice")
        N.expect(all(r["caplen"] == r["origlen"] == len(r["data"]) for r in recs["epbs"]),
                 "no complete packet block is truncated (caplen == len)")

        n_tshark, rc_t, err_t = count_lines(["tshark", "-n", "-r", out, "-T", "fields",
                                             "-e", "frame.number"])
        N.log(f"  info  tshark: {n_tshark} packets, status {rc_t}, stderr {err_t[-200:]!r}")
        n_tcpdump, rc_d, err_d = count_lines(["tcpdump", "-nn", "-r", out])
        N.log(f"  info  tcpdump: {n_tcpdump} packets, status {rc_d}, stderr {err_d[-200:]!r}")
        N.expect(n_tshark == n_tcpdump == st["captured"],
                 f"tshark and tcpdump -r read {st['captured']} packets",
                 f"tshark {n_tshark}, tcpdump {n_tcpdump}")


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("mount", "umount", "mkfs.ext4", "truncate"))
