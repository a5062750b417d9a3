#!/usr/bin/python3
"""End-to-end: a loopback interface's packets are captured once, as tcpdump does.

Usage (root): /usr/bin/python3 tests/e2e/test_loopback.py PATH/TO/xdpcap

Every packet sent on lo comes straight back in; libpcap keeps only the
received copy. In a namespace of its own (lo with 198.18.93.1 and
2001:db8:93::1), tcpdump -i lo and xdpcap -i lo -w FILE --print run side by
side over a 3 MiB TCP transfer each way, IPv4 and IPv6, and pings:
  * xdpcap's file holds exactly the frames tcpdump's holds, byte for byte,
    each once, every one marked received (epb_flags inbound);
  * the text view prints one line per packet, no line twice;
  * tshark finds no more retransmissions or duplicate ACKs in xdpcap's file
    than in tcpdump's (a second copy of every packet would make it call them
    so by the hundred);
  * -Q out on lo is refused in one line (it would capture nothing), and
    nothing is left attached.
"""

import collections
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

V4, V6 = "198.18.93.1", "2001:db8:93::1"
SIZE = 3 << 20
PORT = 5093


def transfer(lab, ns, addr, port):
    helper = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bulk_tcp.py")
    server = lab.popen(ns, ["/usr/bin/python3", helper, "server", addr, str(port), str(SIZE)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    N.check(server.stdout.readline().strip() == "ready", f"{addr}: the server listens")
    client = N.run(["ip", "netns", "exec", ns, "/usr/bin/python3", helper, "client", addr, str(port), str(SIZE)],
                   timeout=N.scaled(60), check_rc=False)
    out, _ = server.communicate(timeout=N.scaled(60))
    lab.forget(server)
    N.check(client.stdout.strip() == "client OK" and out.strip() == "server OK",
            f"{addr}: both ends received the bytes sent", (client.stdout, client.stderr, out))


def analysis_count(path, field):
    cp = N.run(["tshark", "-n", "-r", path, "-Y", field, "-T", "fields", "-e", "frame.number"], timeout=N.scaled(120))
    return len(cp.stdout.split())


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        ns = lab.cap_ns
        lab.sysctl(ns, "net.ipv6.conf.lo.disable_ipv6", "0")
        N.run(["ip", "-n", ns, "link", "set", "lo", "up"])
        N.run(["ip", "-n", ns, "addr", "add", f"{V4}/32", "dev", "lo"])
        N.run(["ip", "-n", ns, "addr", "add", f"{V6}/128", "dev", "lo", "nodad"])

        rc, _, err = N.run_xdpcap(lab, binary, ["-i", "lo", "-Q", "out", "-c", "1"])
        errs = N.messages(err)
        N.expect(rc == 1 and len(err) == 1 and len(errs) == 1 and "loopback" in errs[0] and "-Q out" in errs[0],
                 "-Q out on lo: refused in one line naming why", err)

        ref = os.path.join(tmp, "tcpdump.pcap")
        ours = os.path.join(tmp, "xdpcap.pcapng")
        t = lab.popen(ns, ["tcpdump", "-i", "lo", "-nn", "-U", "--immediate-mode", "-B", "65536", "-w", ref],
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        N.check("listening on lo" in t.stderr.readline(), "tcpdump listens on lo")
        x = N.Xdpcap(lab, binary, ["-i", "lo", "-w", ours, "--print"])
        x.wait_listening()
        transfer(lab, ns, V4, PORT)
        transfer(lab, ns, V6, PORT + 1)
        N.run(["ip", "netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", V4])
        N.run(["ip", "netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", V6])
        time.sleep(N.scaled(0.5))
        N.check(x.stop(signal.SIGINT) == 0, "xdpcap exits 0", x.err_lines[-3:])
        t.send_signal(signal.SIGINT)
        t.wait(timeout=N.scaled(20))
        lab.forget(t)

        theirs = [data for _, _, data in N.read_pcap(ref)]
        recs = N.pcapng_records(ours)
        N.expect(not recs["problems"], "xdpcap's file is well formed", recs["problems"])
        mine = [r["data"] for r in recs["epbs"]]
        N.log(f"  info  tcpdump {len(theirs)} frames, xdpcap {len(mine)}")
        N.expect(len(theirs) > 100, "tcpdump saw the transfers", len(theirs))
        missing, extra, doubled = N.multiset_diff(theirs, mine)
        N.expect(len(mine) == len(theirs) and not missing and not extra and not doubled,
                 "xdpcap's frames are tcpdump's, byte for byte, each as often",
                 f"{len(missing)} missing, {len(extra)} extra, {len(doubled)} more often")
        N.expect(all(r["flags"] & 3 == 1 for r in recs["epbs"]), "every packet is marked received",
                 collections.Counter(r["flags"] & 3 for r in recs["epbs"]))
        lines = [line for line in bytes(x.out).decode("utf-8", "replace").splitlines() if line]
        N.expect(len(lines) == len(recs["epbs"]) and len(set(lines)) == len(lines),
                 "the text view: one line per packet, none twice", (len(lines), len(recs["epbs"])))
        for field in ("tcp.analysis.retransmission", "tcp.analysis.duplicate_ack"):
            a, b = analysis_count(ours, field), analysis_count(ref, field)
            N.expect(a <= b, f"tshark's {field}: no more in xdpcap's file than in tcpdump's", (a, b))
        lab.assert_clean("nothing of xdpcap remains attached to lo", dev="lo")


if __name__ == "__main__":
    N.main(test)
