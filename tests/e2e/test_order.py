#!/usr/bin/python3
"""End-to-end: one capture file in time order, whatever CPU took each frame.

Usage (root): /usr/bin/python3 tests/e2e/test_order.py PATH/TO/xdpcap

Needs 2 CPUs.  While `xdpcap -v -w F` runs:
1. a TCP exchange over IPv4 and one over IPv6 (handshake, data both ways,
   FIN), built with scapy, frame i sent from CPU i % 2 by one sender that moves
   between the two CPUs before each frame;
2. a corpus of mixed frames sent the same way;
3. two more corpora sent at the same time by two senders, one per CPU.
All of it arrives within a few drain periods, so without the merge the file
would hold each CPU's frames of a drain as one run.  Checks: `capinfos -o`
says "Strict time order: True"; every frame is captured once, byte-exact; the
TCP frames come in the order they were sent and tshark's expert info has no
"Port numbers reused", "Previous segment(s) not captured" (or any other
warning or error) for them (the corpora hold no TCP); -v reports 0 packets written out of order; the
statistics add up.
"""

import os
import re
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CORPUS = 300
# Without TCP: the exchanges' expert analysis must see only themselves.
CORPUS_KINDS = tuple(k for k in N.KINDS if k != "ipv4-tcp")
CAP_MAC = "02:00:00:00:ca:01"


def tcp_exchange(ip_layer, client, server, client_port):
    """Frames of one complete TCP connection, in the order the hosts send them."""
    from scapy.layers.inet import TCP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    def segment(from_client, flags, seq, ack, payload=b""):
        src, dst = (client, server) if from_client else (server, client)
        sport, dport = (client_port, 80) if from_client else (80, client_port)
        mac = "02:00:5e:00:c1:01" if from_client else "02:00:5e:00:c1:02"
        p = Ether(src=mac, dst=CAP_MAC) / ip_layer(src=src, dst=dst) / TCP(
            sport=sport, dport=dport, flags=flags, seq=seq, ack=ack, window=65535)
        return bytes(p / Raw(load=payload) if payload else p)

    c, s = 1000, 5000
    frames = [segment(True, "S", c, 0), segment(False, "SA", s, c + 1),
              segment(True, "A", c + 1, s + 1)]
    c, s = c + 1, s + 1
    for k in range(8):
        frames.append(segment(True, "PA", c, s, bytes([k]) * 100))
        c += 100
        frames.append(segment(False, "A", s, c))
    for k in range(8):
        frames.append(segment(False, "PA", s, c, bytes([0x80 + k]) * 200))
        s += 200
        frames.append(segment(True, "A", c, s))
    frames += [segment(True, "FA", c, s), segment(False, "FA", s, c + 1),
               segment(True, "A", c + 1, s + 1)]
    return frames


def strict_time_order(path):
    cp = N.run(["capinfos", "-o", path])
    m = re.search(r"^Strict time order:\s*(True|False)\s*$", cp.stdout, re.M)
    N.check(m is not None, "capinfos -o prints 'Strict time order'", cp.stdout)
    return m.group(1) == "True"


def tcp_expert_problems(path):
    """Warnings and errors of tshark's expert info on the TCP frames."""
    cp = N.run(["tshark", "-n", "-r", path, "-q", "-z", "expert,tcp"])
    problems, section = [], None
    for line in cp.stdout.splitlines():
        m = re.match(r"^(Errors|Warns|Notes|Chats|Comments) \(\d+\)", line)
        if m:
            section = m.group(1)
            continue
        if section in ("Errors", "Warns") and line.strip() and not line.startswith("=") \
                and "Frequency" not in line:
            problems.append(line.strip())
    return problems, cp.stdout


def test(binary):
    two = N.cpus()[:2]
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6

    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        tcp = (tcp_exchange(IP, "198.18.7.1", "198.18.7.2", 41000)
               + tcp_exchange(IPv6, "2001:db8:7::1", "2001:db8:7::2", 41001))
        tcp_path = os.path.join(tmp, "tcp.pcap")
        N.write_frames(tcp_path, tcp)
        mixed_path = os.path.join(tmp, "mixed.pcap")
        mixed = N.build_corpus(mixed_path, CORPUS, kinds=CORPUS_KINDS, seed=31)
        parallel = {}
        for cpu in two:
            path = os.path.join(tmp, f"cpu{cpu}.pcap")
            parallel[cpu] = (path, N.build_corpus(path, CORPUS, kinds=CORPUS_KINDS, seed=40 + cpu))
        out = os.path.join(tmp, "order.pcapng")

        x = lab.xdpcap(binary, ["-v", "-w", out])
        x.wait_listening()
        N.log(f"  info  taking turns between CPUs {two}")
        N.log("  info  " + lab.send(tcp_path, two))
        N.log("  info  " + lab.send(mixed_path, two))
        senders = [threading.Thread(target=lambda c=cpu: N.log("  info  " + lab.send(parallel[c][0], c)))
                   for cpu in two]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        time.sleep(0.3)
        rc = x.stop(signal.SIGINT)
        N.log("  info  stderr: " + " | ".join(x.err_lines))

        N.expect(rc == 0, "xdpcap exits 0 after SIGINT", f"exit status {rc}")
        sent = tcp + mixed + parallel[two[0]][1] + parallel[two[1]][1]
        N.check_structure(out)
        N.check_readers_agree(out, len(sent))
        rows = N.read_capture(out, tmp)
        got = [r["data"] for r in rows]
        N.check_exact(sent, got)
        per_cpu = {}
        for r in rows:
            per_cpu[r["if_name"]] = per_cpu.get(r["if_name"], 0) + 1
        N.log(f"  info  frames per interface: {per_cpu}")
        N.expect(len(per_cpu) == 2, "frames were taken on both CPUs", per_cpu)

        N.expect(strict_time_order(out), "capinfos -o: Strict time order: True")
        tcp_set = set(tcp)
        N.expect([d for d in got if d in tcp_set] == tcp,
                 "the TCP frames are in the file in the order they were sent")
        problems, text = tcp_expert_problems(out)
        N.expect(not [p for p in problems if re.search(r"port numbers reused|previous segment", p, re.I)],
                 "tshark expert: no 'Port numbers reused', no 'Previous segment(s) not captured'",
                 text)
        N.expect(not problems, "tshark expert: no TCP warnings or errors at all", "\n".join(problems))

        st = N.final_stats(x.err_lines)
        N.check_stats_identity(st)
        N.expect(st["out_of_order"] == 0, "-v: 0 packets written out of order",
                 "\n".join(st["lines"]))
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test, min_cpus=2)
