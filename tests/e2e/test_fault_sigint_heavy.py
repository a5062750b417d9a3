#!/usr/bin/python3
"""End-to-end fault: SIGINT arrives in the middle of heavy traffic.

Usage (root): /usr/bin/python3 tests/e2e/test_fault_sigint_heavy.py PATH/TO/xdpcap

`xdpcap -i cap0 -v -w FILE` while one flood sender per CPU (at most two) sends
small frames at top speed; SIGINT is sent while the senders are still
running.  Twice: with the default ring, and with `-s 64 --ring-pages 2` so that
the kernel is also dropping samples when the stop comes.  Checks: exit 0
promptly, no error line; the statistics identity (received = captured +
dropped + after count + not written + malformed) holds in total and per CPU,
and the per-CPU lines add up to the totals; the file is
complete and valid (block walk, MIME-reader check, tshark/tcpdump counts); its
number of enhanced packet blocks equals "packets captured", every packet is a
frame that was sent; one ISB per interface whose counters (ifrecv, osdrop,
usrdeliv) equal the per-CPU lines; per interface, the drop counts of its packets
add up to at most its isb_osdrop; nothing stays attached.
"""

import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CORPUS = 1000
FLOOD_S = 6.0               # senders' bound; SIGINT comes well before
SIGINT_AFTER_S = 0.6


def one_run(binary, lab, tmp, corpus, frames, extra, tag):
    use_cpus = N.cpus()[:2]
    N.log(f"  --    xdpcap -v {' '.join(extra)} -w FILE, SIGINT under load")
    out = os.path.join(tmp, f"heavy-{tag}.pcapng")

    x = lab.xdpcap(binary, ["-v"] + extra + ["-w", out])
    x.wait_listening()
    floods = [N.start_flood(lab, corpus, cpu, seconds=FLOOD_S) for cpu in use_cpus]
    N.log(f"  info  flooding from CPUs {use_cpus}; SIGINT in {SIGINT_AFTER_S} s")
    time.sleep(SIGINT_AFTER_S)
    N.check(all(f.poll() is None for f in floods), "senders still running at SIGINT")
    t0 = time.monotonic()
    x.send_signal(signal.SIGINT)
    rc = x.wait(timeout=10)
    took = time.monotonic() - t0
    still = all(f.poll() is None for f in floods)
    for f in floods:
        f.send_signal(signal.SIGTERM)
    sent = sum(N.finish_flood(lab, f) for f in floods)
    N.log(f"  info  xdpcap exited {took:.3f} s after SIGINT (status {rc})")
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    N.expect(still, "the senders were still running when xdpcap had exited "
                    "(SIGINT came mid-traffic)")
    N.expect(rc == 0, "exit status 0 after SIGINT", f"status {rc}")
    N.expect(took < 3.0, "xdpcap exits within 3 s of SIGINT under load", f"{took:.3f} s")
    msgs = N.messages(x.err_lines)
    N.expect(not msgs, "no 'xdpcap: ' error line", msgs)

    st = N.final_stats(x.err_lines)
    N.check(st is not None, "statistics lines printed", x.stderr)
    N.check_stats_identity(st)
    N.expect(st["received"] <= sent, f"received by filter ({st['received']}) <= frames "
                                     f"sent ({sent})")
    N.expect(st["captured"] > 1000, f"a real load was captured ({st['captured']} packets)")
    N.log(f"  info  dropped by kernel: {st['dropped']}")

    recs = N.pcapng_records(out)
    N.expect(not recs["problems"], "block walk: every block complete, lengths match, "
                                   "known types", recs["problems"])
    n_epb = len(recs["epbs"])
    N.expect(n_epb == st["captured"], f"enhanced packet blocks in the file ({n_epb}) == "
                                      f"'packets captured' ({st['captured']})")
    snap = int(extra[extra.index("-s") + 1]) if "-s" in extra else 262144
    sent_set = {(f[:snap], len(f)) for f in frames}
    N.expect(all((r["data"], r["origlen"]) in sent_set and r["caplen"] == len(r["data"])
                 for r in recs["epbs"]),
             f"every packet in the file is a frame that was sent (its first {snap} bytes, "
             "its original length)")
    N.check_structure(out)
    N.check_readers_agree(out, st["captured"])
    N.check_isbs_match_stats(recs, st)
    drops = {}
    for r in recs["epbs"]:
        drops[r["if_id"]] = drops.get(r["if_id"], 0) + (r["dropcount"] or 0)
    bad = []
    for isb in recs["isbs"]:
        d = drops.get(isb["if_id"], 0)
        N.log(f"  info  interface {isb['if_id']}: sum of epb_dropcount {d}, "
              f"isb_osdrop {isb.get('osdrop')}")
        if isb.get("osdrop") is None or d > isb["osdrop"]:
            bad.append(f"interface {isb['if_id']}: drop counts {d} > osdrop "
                       f"{isb.get('osdrop')}")
    N.expect(not bad, "per interface, the packets' drop counts add up to at most its "
                      "isb_osdrop", "\n".join(bad))
    lab.assert_clean()
    os.unlink(out)


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, CORPUS, sizes=[60, 64, 80, 100, 128] * 200, seed=41)
        # Default ring (xdpcap keeps up), then a tiny one (the kernel drops
        # samples while the stop arrives): the accounting must hold in both.
        one_run(binary, lab, tmp, corpus, frames, [], "default")
        one_run(binary, lab, tmp, corpus, frames, ["-s", "64", "--ring-pages", "2"], "small")


if __name__ == "__main__":
    N.main(test)
