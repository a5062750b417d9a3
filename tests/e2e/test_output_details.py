#!/usr/bin/python3
"""End-to-end: the details of the output and of the options that shape it.

Usage (root): /usr/bin/python3 tests/e2e/test_output_details.py PATH/TO/xdpcap

Checks:
- SHB carries shb_hardware, shb_os and shb_userappl ("xdpcap ..."); every IDB
  carries if_description "cap0 (ifindex N), CPU k, tcx ingress and tcx egress, driver
  veth" (clsact for both on kernels without tcx: a veth's received frames come
  from tc ingress by default), if_tsresol 9 and if_os;
- packet timestamps are wall-clock nanoseconds between the times the sender
  started and finished (so the monotonic-to-realtime offset is right), and the
  ISBs' start/end times bracket them;
- --xdp-mode generic and native attach in that mode (ip link agrees, and the
  IDB says so);
- -U issues at least one write per packet, without it far fewer;
- with -w - a lone packet reaches the pipe reader while xdpcap keeps running;
- -q still prints the "listening on" line, as tcpdump -q does;
- capturing never changes the traffic: ping across the pair works while
  xdpcap is attached, in the default mode (tc ingress) and in both XDP modes
  (the program returns XDP_PASS).
"""

import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CPU = N.cpus()[0]
# tcx links came with Linux 6.6; before, both hooks are clsact filters.
TC = "tcx" if tuple(int(n) for n in re.findall(r"\d+", os.uname().release)[:2]) >= (6, 6) else "clsact"
# Default mode on a veth: tc ingress, which reads VLAN tags from the skb
# (nothing to say about them).
DESC_RE = re.compile(rf"^cap0 \(ifindex \d+\), CPU (\d+), {TC} ingress and {TC} egress, driver veth$")


def u32_pair_ns(e, val):
    high, low = struct.unpack(e + "II", val)
    return high << 32 | low


def read_blocks(path):
    e, blocks, tail, problems = N.pcapng_walk(path)
    N.expect(not problems and tail is None, "the file walks cleanly", problems or tail)
    shb = {code: val for code, val in N.parse_options(e, blocks[0][2][16:])}
    idbs, epb_ts, isbs = [], [], []
    for _off, btype, body in blocks[1:]:
        if btype == N.PCAPNG_IDB:
            idbs.append({code: val for code, val in N.parse_options(e, body[8:])})
        elif btype == N.PCAPNG_EPB:
            _if, high, low = struct.unpack(e + "III", body[:12])
            epb_ts.append(high << 32 | low)
        elif btype == N.PCAPNG_ISB:
            isbs.append({code: val for code, val in N.parse_options(e, body[12:])})
    return e, shb, idbs, epb_ts, isbs


def capture_to_file(lab, binary, corpus, path, extra=()):
    x = lab.xdpcap(binary, ["-w", path] + list(extra))
    x.wait_listening()
    before = time.time_ns()
    lab.send(corpus, CPU, gap_us=100)
    after = time.time_ns()
    time.sleep(0.3)
    pid = x.proc.pid
    syscw = None
    try:
        with open(f"/proc/{pid}/io") as f:
            syscw = int(re.search(r"^syscw: (\d+)$", f.read(), re.M).group(1))
    except OSError:
        pass
    rc = x.stop(signal.SIGINT)
    N.expect(rc == 0, f"xdpcap {' '.join(extra)} exits 0", f"exit status {rc}")
    return x, before, after, syscw


def check_metadata(binary, lab, tmp, corpus, count):
    path = os.path.join(tmp, "meta.pcapng")
    _x, before, after, _ = capture_to_file(lab, binary, corpus, path)
    e, shb, idbs, epb_ts, isbs = read_blocks(path)
    N.expect(shb.get(2, b"") != b"", "SHB has shb_hardware", shb.get(2))
    N.expect(shb.get(3, b"").startswith(b"Linux "), "SHB has shb_os 'Linux ...'", shb.get(3))
    N.expect(shb.get(4, b"").startswith(b"xdpcap "), "SHB has shb_userappl 'xdpcap ...'", shb.get(4))
    descs = [i.get(3, b"").decode() for i in idbs]
    N.expect(all(DESC_RE.match(d) for d in descs), "every IDB has the full if_description", descs)
    N.expect([int(DESC_RE.match(d).group(1)) for d in descs if DESC_RE.match(d)] ==
             [int(i[2].decode().rsplit("@cpu", 1)[1]) for i in idbs],
             "if_description names the CPU of its if_name")
    N.expect(all(i.get(9) == b"\x09" for i in idbs), "every IDB has if_tsresol 9 (ns)")
    N.expect(all(i.get(12, b"").startswith(b"Linux ") for i in idbs), "every IDB has if_os")
    N.expect(len(epb_ts) == count, f"{count} packets in the file", len(epb_ts))
    slack = 50_000_000  # the sender's own start-up and exit, not clock error
    N.expect(all(before - slack <= t <= after + slack for t in epb_ts),
             "packet timestamps are wall-clock ns within the sending window",
             f"window {before}..{after}, got {min(epb_ts)}..{max(epb_ts)}")
    N.expect(epb_ts == sorted(epb_ts), "timestamps of one CPU increase")
    starts = [u32_pair_ns(e, i[2]) for i in isbs]
    ends = [u32_pair_ns(e, i[3]) for i in isbs]
    N.expect(len(isbs) == len(idbs) and all(s <= min(epb_ts) for s in starts)
             and all(t >= max(epb_ts) for t in ends),
             "ISB start and end times bracket every packet", (starts, ends))


def check_modes(binary, lab, tmp, corpus, count):
    for mode, flag in (("generic", "xdpgeneric"), ("native", "xdp ")):
        path = os.path.join(tmp, f"{mode}.pcapng")
        x = lab.xdpcap(binary, ["-w", path, "--xdp-mode", mode])
        x.wait_listening()
        link = N.run(["ip", "-n", lab.cap_ns, "link", "show", "cap0"]).stdout
        N.expect(flag in link, f"--xdp-mode {mode}: ip link shows '{flag.strip()}'", link)
        lab.send(corpus, CPU, gap_us=100)
        time.sleep(0.3)
        rc = x.stop(signal.SIGINT)
        N.expect(rc == 0, f"--xdp-mode {mode}: exits 0", rc)
        _e, _shb, idbs, epb_ts, _isbs = read_blocks(path)
        N.expect(len(epb_ts) == count, f"--xdp-mode {mode}: all {count} packets captured", len(epb_ts))
        N.expect(all(f"XDP {mode} mode".encode() in i.get(3, b"") for i in idbs),
                 f"--xdp-mode {mode}: IDBs say 'XDP {mode} mode'")
        lab.assert_clean(f"--xdp-mode {mode}: nothing left attached")


def check_packet_buffered(binary, lab, tmp, corpus, count):
    _x, _b, _a, plain = capture_to_file(lab, binary, corpus, os.path.join(tmp, "plain.pcapng"))
    _x, _b, _a, unbuffered = capture_to_file(lab, binary, corpus, os.path.join(tmp, "u.pcapng"), ["-U"])
    N.expect(unbuffered is not None and unbuffered >= count,
             f"-U: at least one write per packet ({count})", unbuffered)
    N.expect(plain is not None and plain < count // 4, "without -U: writes are batched", plain)


def check_pipe_liveness(binary, lab, tmp):
    one = os.path.join(tmp, "one.pcap")
    N.build_corpus(one, 1, seed=21)
    x = lab.xdpcap(binary, ["-w", "-"], stdout=subprocess.PIPE)
    got = bytearray()

    def reader():
        while True:
            chunk = x.proc.stdout.read1(65536)
            if not chunk:
                return
            got.extend(chunk)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    x.wait_listening()
    time.sleep(0.3)
    header_bytes = len(got)
    lab.send(one, CPU)
    deadline = time.time() + 3
    while time.time() < deadline and b"\x06\x00\x00\x00" not in bytes(got[header_bytes:]):
        time.sleep(0.02)
    running = x.proc.poll() is None
    N.expect(running and len(got) > header_bytes,
             "-w -: a lone packet reaches the pipe reader while xdpcap runs",
             f"{len(got) - header_bytes} bytes after the header, running={running}")
    rc = x.stop(signal.SIGINT)
    N.expect(rc == 0, "-w -: exits 0", rc)
    t.join(5)


def check_quiet(binary, lab, tmp):
    x = lab.xdpcap(binary, ["-q", "-w", os.path.join(tmp, "q.pcapng")])
    time.sleep(1.0)
    rc = x.stop(signal.SIGINT)
    N.expect(rc == 0, "-q: exits 0", rc)
    N.check_listening(x)
    N.expect(any("packets captured" in l for l in x.err_lines), "-q: statistics still printed",
             x.err_lines)


def check_traffic_passes(binary, lab, tmp):
    N.run(["ip", "-n", lab.cap_ns, "addr", "add", "198.18.7.1/24", "dev", "cap0"])
    N.run(["ip", "-n", lab.gen_ns, "addr", "add", "198.18.7.2/24", "dev", "gen0"])
    for what, extra in (("default mode, tc ingress", []), ("--xdp-mode generic, XDP_PASS", ["--xdp-mode", "generic"]),
                        ("--xdp-mode native, XDP_PASS", ["--xdp-mode", "native"])):
        x = lab.xdpcap(binary, ["-w", os.path.join(tmp, "ping.pcapng")] + extra)
        x.wait_listening()
        ping = N.run(["ip", "netns", "exec", lab.gen_ns, "ping", "-c", "3", "-i", "0.2", "-W", "2",
                      "198.18.7.1"], check_rc=False)
        rc = x.stop(signal.SIGINT)
        N.expect(ping.returncode == 0, f"ping across the pair works while capturing ({what})",
                 ping.stdout + ping.stderr)
        N.expect(rc == 0, f"exits 0 after the ping capture ({what})", rc)
    N.run(["ip", "-n", lab.cap_ns, "addr", "flush", "dev", "cap0"])
    N.run(["ip", "-n", lab.gen_ns, "addr", "flush", "dev", "gen0"])


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        corpus = os.path.join(tmp, "corpus.pcap")
        count = 100
        N.build_corpus(corpus, count, seed=20)
        check_metadata(binary, lab, tmp, corpus, count)
        check_modes(binary, lab, tmp, corpus, count)
        check_packet_buffered(binary, lab, tmp, corpus, count)
        check_pipe_liveness(binary, lab, tmp)
        check_quiet(binary, lab, tmp)
        check_traffic_passes(binary, lab, tmp)
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("ping",))
