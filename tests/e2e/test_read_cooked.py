#!/usr/bin/python3
"""xdpcap -r on Linux cooked captures, the files `tcpdump -i any` writes.

Usage (root): /usr/bin/python3 tests/e2e/test_read_cooked.py PATH/TO/xdpcap

Two fresh network namespaces joined by a veth pair (xsl0 <-> xsl1,
198.18.0.0/24 and 2001:db8::/64), with loopback up in the capture namespace.
There tcpdump -i any writes, while ping, ping -b, ping6 (to a unicast and a
multicast address, so ARP and neighbour discovery too; the peer's to a
multicast address too, received as multicast), UDP and a TCP connection run:
  * an SLL2 file (tcpdump's default for "any"),
  * an SLL file (-y LINUX_SLL),
  * an SLL file cut at 40 bytes (-s 40: headers cut short).
In the same namespace (so SLL2's interface indexes name the same
interfaces) xdpcap -r and tcpdump -n -r must print the same lines, on
standard output and standard error, plain and with -e, -v, -q, -x, -xx, -X,
-A and a filter; and again in a third namespace, where the capture's
interface indexes are unknown ("?"). xdpcap -r F -w OUT must keep the file's
link type: tcpdump and tshark read OUT as they read F. A file of another link
type is refused in one line that names it.
"""

import os
import secrets
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402


class CookedLab(N.NetLab):
    """The capture namespace (xsl0, 198.18.0.1, 2001:db8::1, lo up), the peer
    namespace (xsl1, .2, ::2) and an empty third one, all removed on exit."""

    def __init__(self):
        super().__init__()
        tag = f"xsl-{os.getpid()}-{secrets.token_hex(3)}"
        self.cap_ns, self.gen_ns, self.empty_ns = f"{tag}-a", f"{tag}-b", f"{tag}-c"
        self.cap_if, self.gen_if = "xsl0", "xsl1"

    def _setup(self):
        for ns in (self.cap_ns, self.gen_ns, self.empty_ns):
            N.run(["ip", "netns", "add", ns])
            self._created.append(ns)
        N.run(["ip", "-n", self.cap_ns, "link", "add", self.cap_if, "address", "02:00:00:00:51:01",
               "type", "veth", "peer", "name", self.gen_if, "address", "02:00:00:00:51:02",
               "netns", self.gen_ns])
        for ns, dev, v4, v6 in ((self.cap_ns, self.cap_if, "198.18.0.1/24", "2001:db8::1/64"),
                                (self.gen_ns, self.gen_if, "198.18.0.2/24", "2001:db8::2/64")):
            # No router solicitations or address autoconfiguration: the
            # traffic is the test's own (and the neighbour discovery it needs).
            self.sysctl(ns, f"net.ipv6.conf.{dev}.router_solicitations", "0")
            self.sysctl(ns, f"net.ipv6.conf.{dev}.autoconf", "0")
            N.run(["ip", "-n", ns, "addr", "add", v4, "dev", dev])
            N.run(["ip", "-n", ns, "addr", "add", v6, "dev", dev, "nodad"])
            N.run(["ip", "-n", ns, "link", "set", "dev", dev, "up"])
        N.run(["ip", "-n", self.cap_ns, "link", "set", "dev", "lo", "up"])
        for ns, dev in ((self.cap_ns, self.cap_if), (self.gen_ns, self.gen_if)):
            self._wait_up(ns, dev)
        # Broadcast echo requests answered, so that "B" packets come back.
        for ns in (self.cap_ns, self.gen_ns):
            self.sysctl(ns, "net.ipv4.icmp_echo_ignore_broadcasts", "0")
        N.log(f"  lab   {self.cap_ns} ({self.cap_if}) <-> {self.gen_ns} ({self.gen_if}), {self.empty_ns}")


def in_ns(ns, argv):
    return ["ip", "netns", "exec", ns] + argv


def start_tcpdump(lab, args):
    """tcpdump -i any writing a file, once it says it is listening."""
    # Immediate mode: with TPACKET_V3's block timeout, packets of the last
    # second could still wait in the ring when SIGINT comes.
    p = lab.popen(lab.cap_ns, ["tcpdump", "-Z", "root", "-i", "any", "-U", "--immediate-mode"] + args,
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said = []
    # "tcpdump: data link type LINUX_SLL2" may come first.
    while len(said) < 3:
        said.append(p.stderr.readline())
        if "listening on any" in said[-1] or not said[-1]:
            break
    N.check("listening on any" in said[-1], f"tcpdump {' '.join(args)} listens", "".join(said))
    return p


def stop(lab, p):
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=N.scaled(10))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    lab.forget(p)


# Answers one TCP connection with a line, in the capture namespace.
SERVER = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.18.0.1", 8080)); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); c.recv(100); c.sendall(b"HTTP/1.1 200 OK\r\n\r\n"); c.close()
"""

# From the peer: UDP to a closed port, TCP to a closed port, then a short
# exchange with the server.
CLIENT = r"""
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b"hello", ("198.18.0.1", 9999))
u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u6.sendto(b"hello6", ("2001:db8::1", 9999))
r = socket.socket(); r.settimeout(2)
try: r.connect(("198.18.0.1", 81))
except OSError: pass
t = socket.create_connection(("198.18.0.1", 8080), timeout=5)
t.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"); t.recv(100); t.close()
"""


def make_traffic(lab):
    server = lab.popen(lab.cap_ns, [N.PYTHON, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    N.check(server.stdout.readline().strip() == "ready", "the TCP server listens")
    a, b = lab.cap_ns, lab.gen_ns
    for argv in (in_ns(a, ["ping", "-c", "2", "-i", "0.2", "198.18.0.2"]),
                 in_ns(a, ["ping", "-c", "2", "-i", "0.2", "2001:db8::2"]),
                 in_ns(a, ["ping", "-c", "1", "-W", "1", "-b", "198.18.0.255"]),
                 in_ns(b, ["ping", "-c", "1", "-W", "1", "-b", "198.18.0.255"]),
                 in_ns(a, ["ping", "-c", "1", "-W", "1", "ff02::1%xsl0"]),
                 # The capture side's one multicast frame that does not hang on
                 # the timing of address configuration (DAD, MLD reports).
                 in_ns(b, ["ping", "-c", "1", "-W", "1", "ff02::1%xsl1"]),
                 in_ns(a, ["ping", "-c", "1", "127.0.0.1"]),
                 in_ns(b, [N.PYTHON, "-c", CLIENT])):
        cp = N.run(argv, check_rc=False)
        if cp.returncode != 0:
            N.log(f"  note  {' '.join(argv[3:])}: exit {cp.returncode} {cp.stderr.strip()}")
    server.wait(timeout=N.scaled(10))
    lab.forget(server)
    time.sleep(0.3)  # the last replies reach the capture


def lines(cp):
    return cp.stdout.splitlines()


def compare(label, ours, theirs):
    o, t = lines(ours), lines(theirs)
    diff = [(i, x, y) for i, (x, y) in enumerate(zip(o, t)) if x != y]
    ok = len(o) == len(t) and not diff and ours.returncode == theirs.returncode
    N.expect(ok, f"{label}: {len(t)} lines, each tcpdump's",
             f"exit {ours.returncode} vs {theirs.returncode}; {len(o)} ours, {len(t)} tcpdump's\n" +
             "\n".join(f"#{i}\n ours: {x}\n tcpd: {y}" for i, x, y in diff[:6]) +
             (f"\n first extra: {(o + t)[min(len(o), len(t))]}" if len(o) != len(t) else ""))
    N.expect(ours.stderr == theirs.stderr, f"{label}: standard error as tcpdump's",
             f"ours: {ours.stderr!r}\ntcpd: {theirs.stderr!r}")


def read_both(binary, ns, path, args):
    ours = N.run(in_ns(ns, [binary, "-r", path] + args), check_rc=False)
    theirs = N.run(in_ns(ns, ["tcpdump", "-n", "-r", path] + args), check_rc=False)
    return ours, theirs


def compare_reads(binary, lab, path, name):
    for flags in ([], ["-e"], ["-v"], ["-vv", "-e"], ["-q"], ["-q", "-e"], ["-x"], ["-xx"], ["-X"],
                  ["-XX", "-e"], ["-A"]):
        ours, theirs = read_both(binary, lab.cap_ns, path, flags)
        compare(f"{name} -r {' '.join(flags) or '(plain)'}", ours, theirs)
    for expression in ("icmp", "arp or icmp6", "tcp and port 8080", "inbound and udp", "outbound"):
        ours, theirs = read_both(binary, lab.cap_ns, path, [expression])
        compare(f"{name} -r '{expression}'", ours, theirs)
        N.expect(lines(theirs), f"{name}: tcpdump keeps packets for '{expression}'")
    # Where no interface has the capture's indexes (only lo, index 1).
    for flags in ([], ["-e"]):
        ours, theirs = read_both(binary, lab.empty_ns, path, flags)
        compare(f"{name} -r {' '.join(flags) or '(plain)'} in a namespace without its interfaces",
                ours, theirs)


def tshark_view(path):
    cp = N.run(["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=|", "-e", "frame.len",
                "-e", "frame.protocols", "-e", "_ws.col.Info"])
    return cp.stdout.splitlines()


def compare_copy(binary, lab, tmp, path, name, link_type):
    out = os.path.join(tmp, f"{name}-copy.pcapng")
    N.run(in_ns(lab.cap_ns, [binary, "-r", path, "-w", out]))
    want = N.run(in_ns(lab.cap_ns, ["tcpdump", "-n", "-r", path]), check_rc=False)
    got = N.run(in_ns(lab.cap_ns, ["tcpdump", "-n", "-r", out]), check_rc=False)
    compare(f"{name}: tcpdump reads -r -w's copy as the file", got,
            subprocess.CompletedProcess(want.args, want.returncode, want.stdout,
                                        want.stderr.replace(path, out)))
    N.expect(f"link-type {link_type} " in got.stderr, f"{name}: the copy's link type is {link_type}", got.stderr)
    a, b = tshark_view(path), tshark_view(out)
    N.expect(a == b and a, f"{name}: tshark reads the copy as the file ({len(a)} packets)",
             "\n".join(f"file: {x}\ncopy: {y}" for x, y in zip(a, b) if x != y) or f"{len(a)} vs {len(b)}")
    N.expect(all("sll" in line.split("|")[1] for line in b), f"{name}: tshark sees Linux cooked headers in the copy",
             b[:3])
    # With a filter, the copy keeps what tcpdump keeps.
    filtered = os.path.join(tmp, f"{name}-icmp.pcapng")
    N.run(in_ns(lab.cap_ns, [binary, "-r", path, "-w", filtered, "icmp or icmp6"]))
    got = N.run(in_ns(lab.cap_ns, ["tcpdump", "-n", "-r", filtered]))
    want = N.run(in_ns(lab.cap_ns, ["tcpdump", "-n", "-r", path, "icmp or icmp6"]))
    N.expect(lines(got) == lines(want) and lines(want),
             f"{name}: -r -w with a filter copies the {len(lines(want))} packets tcpdump keeps",
             f"{len(lines(got))} copied")


def refusal(binary, tmp):
    path = os.path.join(tmp, "raw.pcap")
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 101))
        f.write(struct.pack("<IIII", 1, 0, 20, 20) + bytes(20))
    cp = N.run([binary, "-r", path], check_rc=False)
    N.expect(cp.returncode == 1 and cp.stdout == "" and cp.stderr.count("\n") == 1 and
             cp.stderr.rstrip().endswith("has link type RAW (101)"),
             "a raw IP file is refused in one line naming its link type", cp)


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xsl-") as tmp:
        os.chmod(tmp, 0o755)
        refusal(binary, tmp)
        with CookedLab() as lab:
            files = {"sll2": os.path.join(tmp, "any-sll2.pcap"), "sll": os.path.join(tmp, "any-sll.pcap"),
                     "sll-cut": os.path.join(tmp, "any-sll-cut.pcap")}
            dumps = [start_tcpdump(lab, ["-w", files["sll2"]]),
                     start_tcpdump(lab, ["-y", "LINUX_SLL", "-w", files["sll"]]),
                     start_tcpdump(lab, ["-y", "LINUX_SLL", "-s", "40", "-w", files["sll-cut"]])]
            make_traffic(lab)
            for p in dumps:
                stop(lab, p)

            plain = lines(N.run(in_ns(lab.cap_ns, ["tcpdump", "-n", "-r", files["sll2"]])))
            for what, mark in (("sent", " Out "), ("received", " In  "), ("multicast", " M   "),
                               ("broadcast", " B   "), ("loopback", "lo    In  "), ("ARP", " ARP, "),
                               ("ICMPv6", " ICMP6, "), ("UDP", ": UDP, "), ("TCP", ": Flags [")):
                N.check(any(mark in line for line in plain), f"the SLL2 capture has {what} packets",
                        "\n".join(plain))
            link_types = {"sll2": "LINUX_SLL2", "sll": "LINUX_SLL", "sll-cut": "LINUX_SLL"}
            for name, path in files.items():
                compare_reads(binary, lab, path, name)
                compare_copy(binary, lab, tmp, path, name, link_types[name])


if __name__ == "__main__":
    N.main(test)
