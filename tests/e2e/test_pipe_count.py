#!/usr/bin/python3
"""End-to-end: `xdpcap -c N -w -` piped into tshark and into tcpdump.

Usage (root): /usr/bin/python3 tests/e2e/test_pipe_count.py PATH/TO/xdpcap

For each reader (tshark -r -, tcpdump -r -): xdpcap runs with -c N -w - and its
stdout piped straight into the reader; more than N frames are sent.  Checks:
xdpcap exits 0 on its own (no signal), the reader exits 0 and sees exactly N
packets, each of them a frame that was sent.
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

N_PACKETS = 20
SENT = 60
CPU = N.cpus()[0]

READERS = {
    "tshark": ["tshark", "-n", "-l", "-r", "-", "-T", "fields", "-e", "frame.len"],
    "tcpdump": ["tcpdump", "-nn", "-r", "-", "-w", "{out}"],
}


def one_run(lab, binary, tmp, reader, corpus, frames):
    N.log(f"  --    xdpcap -c {N_PACKETS} -w - | {reader} -r -")
    out_pcap = os.path.join(tmp, f"{reader}.pcap")
    x = lab.xdpcap(binary, ["-c", str(N_PACKETS), "-w", "-"], stdout=subprocess.PIPE)
    argv = [a.format(out=out_pcap) for a in READERS[reader]]
    r = lab.track(subprocess.Popen(argv, stdin=x.stdout_pipe, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True))
    x.stdout_pipe.close()        # the reader holds the only read end now
    x.wait_listening()
    lab.send(corpus, CPU, gap_us=500)
    rc = x.wait(timeout=10)      # must end by itself after N packets
    try:
        rout, rerr = r.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        N.kill_process(r)
        raise N.TestFailure(f"{reader} did not finish reading within 15 s")
    lab.forget(r)
    N.log("  info  xdpcap stderr: " + " | ".join(x.err_lines))
    N.expect(rc == 0, f"xdpcap exits 0 on its own after {N_PACKETS} packets", f"exit status {rc}")
    N.expect(r.returncode == 0, f"{reader} exits 0", f"{r.returncode}: {rerr.strip()[-500:]}")
    if reader == "tshark":
        n = len(rout.split())
    else:
        recs = N.read_pcap(out_pcap) if os.path.exists(out_pcap) else []
        n = len(recs)
        sent = set(frames)
        N.expect(all(rec[2] in sent for rec in recs),
                 "every packet tcpdump read is one of the frames sent")
    N.expect(n == N_PACKETS, f"{reader} reads exactly {N_PACKETS} packets", f"read {n}")


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, SENT, seed=4)
        for reader in READERS:
            one_run(lab, binary, tmp, reader, corpus, frames)
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
