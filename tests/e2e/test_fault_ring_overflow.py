#!/usr/bin/python3
"""End-to-end fault: a CPU's ring overflows, deterministically.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_ring_overflow.py PATH/TO/xdpcap

`xdpcap -i cap0 -s 64 --ring-pages 1 -v -w FILE` (a 4 KiB ring per CPU).  xdpcap
is stopped with SIGSTOP, 2000 frames are sent pinned to one CPU (the ring fills
after a few dozen samples and the kernel drops the rest), xdpcap is continued
with SIGCONT, then a few more frames are sent on the same CPU (so a sample that
made it follows the drops and carries their count), then SIGINT.  Checks:
"packets dropped by kernel" > 0; captured + dropped == frames sent, exactly
(nothing unaccounted); the statistics identity holds; on that CPU's interface
the sum of the packets' epb_dropcount == its isb_osdrop == its "ring full"
count; the other CPU saw nothing; the ISB counters read by tshark equal ours;
the file is valid and every packet is the first 64 bytes of a frame sent.
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

FLOOD = 2000
AFTER = 5
SNAP = 64
CPU = N.cpus()[0]


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        frames = N.build_corpus(os.path.join(tmp, "all.pcap"), FLOOD + AFTER,
                                sizes=[60, 64, 80, 100, 128, 200] * 400, seed=51)
        flood = os.path.join(tmp, "flood.pcap")
        after = os.path.join(tmp, "after.pcap")
        N.write_frames(flood, frames[:FLOOD])
        N.write_frames(after, frames[FLOOD:])
        out = os.path.join(tmp, "overflow.pcapng")

        x = lab.xdpcap(binary, ["-s", str(SNAP), "--ring-pages", "1", "-v", "-w", out])
        x.wait_listening()
        x.send_signal(signal.SIGSTOP)
        try:
            N.log("  info  xdpcap stopped (SIGSTOP); " + lab.send(flood, CPU))
        finally:
            x.send_signal(signal.SIGCONT)
        time.sleep(0.5)             # drain what the ring held
        N.log("  info  xdpcap continued; " + lab.send(after, CPU, gap_us=2000))
        time.sleep(0.5)
        rc = x.stop(signal.SIGINT)
        N.log("  info  stderr: " + " | ".join(x.err_lines))
        N.expect(rc == 0, "exit status 0 after SIGINT", f"status {rc}")

        sent = FLOOD + AFTER
        st = N.final_stats(x.err_lines)
        N.check(st is not None, "statistics lines printed", x.stderr)
        N.check_stats_identity(st)
        N.expect(st["dropped"] > 0, f"packets dropped by kernel > 0 ({st['dropped']})")
        N.expect(st["captured"] + st["dropped"] == sent and st["received"] == sent,
                 f"captured ({st['captured']}) + dropped ({st['dropped']}) == received == "
                 f"frames sent ({sent})", "\n".join(st["lines"]))
        c = st["cpus"].get(CPU)
        N.check(c is not None, f"a statistics line for cpu{CPU}", st["lines"])
        N.expect(c["ring_full"] == st["dropped"] and c["other_errors"] == 0,
                 f"cpu{CPU}: every drop is a 'ring full' ({c['ring_full']})", c)
        others = {k: v for k, v in st["cpus"].items() if k != CPU and v["seen"]}
        N.expect(not others, "no other CPU saw packets", others)

        recs = N.pcapng_records(out)
        N.expect(not recs["problems"], "block walk: every block complete, lengths match, "
                                       "known types", recs["problems"])
        N.check_structure(out)
        N.check_readers_agree(out, st["captured"])
        N.check_idbs(out)
        N.expect(len(recs["epbs"]) == st["captured"],
                 f"enhanced packet blocks ({len(recs['epbs'])}) == 'packets captured'")
        prefixes = {(f[:SNAP], len(f)) for f in frames}
        N.expect(all((r["data"], r["origlen"]) in prefixes
                     and r["caplen"] == min(SNAP, r["origlen"]) for r in recs["epbs"]),
                 f"every packet is the first {SNAP} bytes of a frame sent, with its length")
        N.check_isbs_match_stats(recs, st)
        # Batches lost whole or written whole: within the CPU, no frame twice
        # and none out of its order (the corpus's frames are unique).
        order = {f[:SNAP]: i for i, f in enumerate(frames)}
        mine_order = [order[r["data"]] for r in recs["epbs"] if r["data"] in order]
        N.expect(len(set(mine_order)) == len(mine_order) and mine_order == sorted(mine_order),
                 "no frame duplicated or reordered", mine_order[:20])

        ids = [i for i, idb in enumerate(recs["idbs"]) if N.idb_cpu(idb) == CPU]
        N.check(len(ids) == 1, f"one interface for cpu{CPU}", [i["name"] for i in recs["idbs"]])
        if_id = ids[0]
        dsum = sum(r["dropcount"] or 0 for r in recs["epbs"] if r["if_id"] == if_id)
        osdrop = next((i.get("osdrop") for i in recs["isbs"] if i["if_id"] == if_id), None)
        N.log(f"  info  cpu{CPU}: sum of epb_dropcount {dsum}, isb_osdrop {osdrop}, "
              f"ring full {c['ring_full']}")
        N.expect(dsum == osdrop == c["ring_full"],
                 f"cpu{CPU}: sum of epb_dropcount == isb_osdrop == 'ring full'",
                 f"{dsum}, {osdrop}, {c['ring_full']}")
        N.expect(all(r["dropcount"] is None or r["dropcount"] > 0 for r in recs["epbs"]),
                 "epb_dropcount is written only where something was lost (never 0)",
                 sorted({r["dropcount"] for r in recs["epbs"]}, key=str)[:5])
        last = [r for r in recs["epbs"] if r["if_id"] == if_id][-AFTER:]
        after_set = {f[:SNAP] for f in frames[FLOOD:]}
        N.expect([r["data"] in after_set for r in last] == [True] * AFTER,
                 f"the last {AFTER} packets are the frames sent after SIGCONT")
        mine_drops = [r["dropcount"] for r in recs["epbs"] if r["if_id"] == if_id]
        k = len(mine_drops) - AFTER
        N.expect(k >= 0 and mine_drops[k] == c["ring_full"]
                 and all(d is None for i, d in enumerate(mine_drops) if i != k),
                 "the first packet after SIGCONT carries all the drops (epb_dropcount == "
                 "'ring full'), no other packet one",
                 [(i, d) for i, d in enumerate(mine_drops) if d])
        drop_rows = [r["drop_count"] for r in N.tshark_frames(out) if r["if_id"] == if_id]
        N.expect(sum(d or 0 for d in drop_rows) == dsum,
                 f"tshark's frame.drop_count adds up to the same {dsum}",
                 sum(d or 0 for d in drop_rows))
        t_isbs = N.tshark_isbs(out)
        mine = [{k: i.get(k) for k in ("if_id", "ifrecv", "osdrop", "usrdeliv")}
                for i in recs["isbs"]]
        N.expect(t_isbs == mine, "tshark reads the same ISB counters", f"tshark {t_isbs}\n"
                                                                        f"ours   {mine}")
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
