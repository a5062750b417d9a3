#!/usr/bin/python3
"""End-to-end: --sample N keeps exactly one packet in N, over all CPUs.

Usage (root): /usr/bin/python3 tests/e2e/test_sampling.py PATH/TO/xdpcap

10 000 unique frames are sent from the generator namespace, 4 995 from one
CPU and then 5 005 from another, while `xdpcap -v --sample 10 -w FILE` runs.
Checks: the kernel saw every frame; exactly 1 000 are in the file, 500 from
each CPU (one count over all CPUs, where counters per CPU would keep 1 001),
tshark, capinfos and tcpdump agree, all of them frames that were sent;
stderr's statistics say 10 000 received, 9 000 skipped by sampling (and the
identity with the skipped ones holds, per CPU too); the ISBs carry
isb_ifrecv, isb_usrdeliv and an opt_comment with the skipped count (tshark
shows it) that add up to the same.  SIGUSR1 during the capture prints the
totals on one "interim statistics: " line, never taken for the final block.
Then with a filter: `--sample 3 udp` on 1 000 frames keeps one in three of
the frames the filter keeps (libpcap's count of the same file, via
tcpdump -r, is the reference).  Nothing stays attached.
"""

import os
import re
import signal
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

FRAMES = 10000
FIRST_PART = 4995                # sent from the first CPU, the rest from the second
EVERY = 10
SMALL = 1000
SMALL_EVERY = 3
ISB_COMMENT_RE = re.compile(r"^(\d+) packets skipped by sampling \(1 in (\d+) kept\)$")


def wait_for(pred, timeout):
    end = time.monotonic() + N.scaled(timeout)
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def check_isbs(out, st, every):
    recs = N.pcapng_records(out)
    N.expect(not recs["problems"], "the file is well formed", recs["problems"])
    isbs = recs["isbs"]
    N.check(isbs, "the file ends with interface statistics blocks")
    comments = [i.get("comment") for i in isbs]
    parsed = [ISB_COMMENT_RE.match(c or "") for c in comments]
    N.expect(all(parsed), "every ISB has the opt_comment 'N packets skipped by sampling "
             f"(1 in {every} kept)'", comments)
    if all(parsed):
        N.expect(all(int(m.group(2)) == every for m in parsed), f"the comments say 1 in {every}",
                 comments)
        skipped = sum(int(m.group(1)) for m in parsed)
        N.expect(skipped == st["skipped"], f"the ISB comments add up to the skipped packets "
                 f"on stderr ({st['skipped']})", skipped)
    # tshark (MIME Files Format reader) shows the same comments.
    cp = N.run(["tshark", "-r", out, "-X", "read_format:MIME Files Format", "-V"])
    shown = sorted(l.strip()[len("Comment: "):] for l in cp.stdout.splitlines()
                   if l.strip().startswith("Comment: ") and "skipped by sampling" in l)
    N.expect(shown == sorted(c or "" for c in comments), "tshark shows the ISB comments", shown)
    N.expect(sum(i.get("usrdeliv", 0) for i in isbs) == st["captured"],
             "isb_usrdeliv adds up to the packets captured",
             [i.get("usrdeliv") for i in isbs])
    # Per CPU, the comment's count equals the CPU's statistics line.
    bad = []
    for isb in isbs:
        cpu = N.idb_cpu(recs["idbs"][isb["if_id"]])
        c = st["cpus"].get(cpu)
        m = ISB_COMMENT_RE.match(isb.get("comment") or "")
        if c is None or m is None or int(m.group(1)) != c["skipped"] or isb.get("ifrecv") != c["seen"]:
            bad.append(f"cpu{cpu}: ISB {isb}, stderr {c}")
    N.expect(not bad, "per CPU the ISB's isb_ifrecv and skipped count equal the statistics line",
             "\n".join(bad))
    return isbs


def test(binary):
    cpus = N.cpus()[:2]
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        # 1 000 mixed frames from scapy; the 10 000 are those with their last
        # four bytes replaced by a sequence number (unique, and fast to make).
        small = os.path.join(tmp, "small.pcap")
        base = N.build_corpus(small, SMALL, sizes=[60, 64, 100, 128, 200], seed=23)
        frames = [base[i % SMALL][:-4] + struct.pack(">I", i) for i in range(FRAMES)]
        # An uneven split over two CPUs: one counter for all CPUs keeps
        # 500 + 500 = 1000, where counters per CPU would keep 500 + 501.
        parts = [(cpus[0], frames[:FIRST_PART]), (cpus[-1], frames[FIRST_PART:])]
        for n, (_cpu, part) in enumerate(parts):
            N.write_frames(os.path.join(tmp, f"part{n}.pcap"), part)
        out = os.path.join(tmp, "sampled.pcapng")

        x = lab.xdpcap(binary, ["-v", "--sample", str(EVERY), "-w", out])
        x.wait_listening()
        for n, (cpu, _part) in enumerate(parts):
            N.log("  info  " + lab.send(os.path.join(tmp, f"part{n}.pcap"), cpu, gap_us=20, timeout=60))
        time.sleep(0.3)
        # SIGUSR1 mid-capture: an interim block, marked as such.
        x.send_signal(signal.SIGUSR1)
        N.expect(wait_for(lambda: any(l.startswith(N.STATS_INTERIM_PREFIX) for l in x.err_lines), 3),
                 "SIGUSR1 prints a line starting with 'interim statistics: '", x.err_lines)
        rc = x.stop(signal.SIGINT)
        N.log("  info  stderr: " + " | ".join(x.err_lines))
        N.expect(rc == 0, "xdpcap exits 0 after SIGINT", f"exit status {rc}")

        blocks = N.parse_stats(x.err_lines)
        N.check(len(blocks) == 2, "one interim and one final statistics block", x.err_lines)
        interim, st = blocks
        N.expect(interim["interim"] and not st["interim"],
                 "the SIGUSR1 block is marked interim, the final one is not")
        interim_lines = [l for l in x.err_lines if l.startswith(N.STATS_INTERIM_PREFIX)]
        N.expect(len(interim_lines) == 1 and "packets captured, " in interim_lines[0]
                 and "received by filter, " in interim_lines[0],
                 "the interim totals are one comma-separated line", interim_lines)
        N.expect(not any(l.startswith(N.STATS_INTERIM_PREFIX) for l in x.err_lines[-len(st["lines"]):]),
                 "the final statistics carry no interim marker", st["lines"])
        N.expect(interim["captured"] == st["captured"] == FRAMES // EVERY
                 and interim["skipped"] == st["skipped"],
                 "the interim block (after the traffic) has the final counts",
                 (interim["captured"], interim["skipped"]))

        N.expect(st["received"] == FRAMES, f"stderr: {FRAMES} packets received by filter",
                 st["received"])
        N.expect(st["captured"] == FRAMES // EVERY,
                 f"stderr: exactly {FRAMES // EVERY} packets captured", st["captured"])
        N.expect(st["skipped"] == FRAMES - FRAMES // EVERY,
                 f"stderr: {FRAMES - FRAMES // EVERY} packets skipped by sampling (1 in {EVERY} kept)",
                 st["skipped"])
        N.check_stats_identity(st, "final statistics")
        N.log(f"  info  per CPU: {st['cpus']}")
        if len(cpus) > 1:
            got = {c: (v["seen"], v["written"]) for c, v in st["cpus"].items() if v["seen"]}
            want = {cpus[0]: (FIRST_PART, FIRST_PART // EVERY + 1),
                    cpus[1]: (FRAMES - FIRST_PART, (FRAMES - FIRST_PART) // EVERY)}
            N.expect(got == want, "per CPU (seen, written): the count runs on across CPUs "
                     f"({want})", got)

        N.check_structure(out)
        N.check_readers_agree(out, FRAMES // EVERY)
        rows = N.read_capture(out, tmp)
        sent = set(frames)
        got = [r["data"] for r in rows]
        N.expect(len(set(got)) == len(got) and all(g in sent for g in got),
                 "every packet written is a distinct frame that was sent")
        check_isbs(out, st, EVERY)
        lab.assert_clean()

        # With a filter: sampling counts only what the filter keeps.
        cp = N.run(["tcpdump", "-nr", small, "udp"], check_rc=True)
        want_kept = len([l for l in cp.stdout.splitlines() if l.strip()])
        N.check(0 < want_kept < SMALL, f"libpcap keeps {want_kept} of {SMALL} frames with 'udp'")
        out2 = os.path.join(tmp, "filtered.pcapng")
        x = lab.xdpcap(binary, ["-v", "--sample", str(SMALL_EVERY), "-w", out2, "udp"])
        x.wait_listening()
        N.log("  info  " + lab.send(small, cpus[0], gap_us=50))
        time.sleep(0.3)
        rc = x.stop(signal.SIGINT)
        N.log("  info  stderr: " + " | ".join(x.err_lines))
        N.expect(rc == 0, "filtered: xdpcap exits 0 after SIGINT", f"exit status {rc}")
        st = N.final_stats(x.err_lines)
        N.check(st is not None, "filtered: final statistics printed")
        want = (want_kept + SMALL_EVERY - 1) // SMALL_EVERY
        N.expect(st["received"] == want_kept, f"filtered: {want_kept} packets received by filter",
                 st["received"])
        N.expect(st["captured"] == want, f"filtered: exactly {want} packets captured "
                 f"(1 in {SMALL_EVERY} of {want_kept})", st["captured"])
        N.expect(st["skipped"] == want_kept - want, f"filtered: {want_kept - want} skipped",
                 st["skipped"])
        N.check_stats_identity(st, "filtered statistics")
        N.check_readers_agree(out2, want)
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
