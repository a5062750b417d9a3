#!/usr/bin/python3
"""End-to-end: what the NIC and the kernel know about a frame besides its bytes:
the RSS hash of received frames, the skb hash of sent ones, and the flags that
explain a sent frame's checksum and size.

Usage (root): /usr/bin/python3 tests/e2e/test_nic_metadata.py PATH/TO/xdpcap

cap0 (198.18.81.1) and gen0 (198.18.81.2).  xdpcap captures on cap0 natively
(the RX metadata kfuncs need a native hook) and writes pcapng and, with
--print -e, text lines from the same run.

Received (kernels with bpf_xdp_metadata_rx_hash, 6.3; veth computes the
kernel's flow hash when asked, where a NIC reads its descriptor): without
--rss-type-comments the program in front never calls veth's hash function
(its translated instructions), and received frames carry no epb_hash, no
hash in the text line or the interface description.  With
--rss-type-comments, UDP datagrams of four flows from gen0 each carry
epb_hash, with the algorithm byte 255 (veth has no RSS function for ethtool
to name); every datagram of one flow the same hash, the four flows four
hashes; the hash type in a packet comment ("RSS hash type L4_ANY"); tshark
reads the option (pcapng's own dissector) and the comment; the text line of
each frame (-e) shows the same hash and its type.  -v writes every packet
block with the same options as without it.  On kernels without the kfunc
(Debian's 6.1): no epb_hash on received frames, and nothing else changed.

Sent: a TCP transfer from cap0 to gen0 (veth offloads checksums and
segmentation).  Every sent data segment carries the connection's skb hash.  A sent frame is flagged "checksum not ready" (epb_flags bit
9) exactly when its TCP checksum is not yet the right one (the NIC would
fill it in), and TSO (bit 11) exactly when it is longer than the MTU allows
(a super-frame the NIC would cut up); both occur; received frames carry
neither; tshark's expert information has no checksum complaint.  Both
directions of one connection with -vv: bit 9 exactly on the frames whose TCP
checksum is not final, received ones included (the peer left them to
offload; tc ingress reads the skb), and every such checksum reads
"(offloaded)" in the text, never "(incorrect -> ...)".
"""

import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CAP_ADDR, GEN_ADDR = "198.18.81.1", "198.18.81.2"
FLOWS = (41001, 41002, 41003, 41004)
PER_FLOW = 5
CHECKSUM_NOT_READY, TSO = 1 << 9, 1 << 11
MTU = 1500

SEND_UDP = f"""
import socket, time
for port in {FLOWS!r}:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("{GEN_ADDR}", port))
    for i in range({PER_FLOW}):
        s.sendto(b"flow %d datagram %d" % (port, i), ("{CAP_ADDR}", 7009))
        time.sleep(0.002)
    s.close()
"""

SERVER = f"""
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{GEN_ADDR}", 5301)); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.settimeout(20)
got = 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    got += len(b)
c.sendall(str(got).encode()); c.close()
"""

CLIENT = f"""
import socket, time
for _ in range(200):
    try:
        c = socket.create_connection(("{GEN_ADDR}", 5301), timeout=2); break
    except OSError:
        time.sleep(0.05)
c.sendall(bytes(range(256)) * 1600)
c.shutdown(socket.SHUT_WR)
assert c.recv(100) == b"409600"
c.close()
"""


def kernel_has_rx_hash_kfunc():
    with open("/proc/kallsyms") as f:
        return any(line.rstrip().endswith(" bpf_xdp_metadata_rx_hash") for line in f)


def addresses(lab):
    N.run(["ip", "-n", lab.cap_ns, "addr", "add", f"{CAP_ADDR}/24", "dev", lab.cap_if])
    N.run(["ip", "-n", lab.gen_ns, "addr", "add", f"{GEN_ADDR}/24", "dev", lab.gen_if])
    # No ARP exchange in the captures: each side knows the other.
    N.run(["ip", "-n", lab.cap_ns, "neigh", "add", GEN_ADDR, "lladdr", "02:00:00:00:9e:01", "dev", lab.cap_if])
    N.run(["ip", "-n", lab.gen_ns, "neigh", "add", CAP_ADDR, "lladdr", "02:00:00:00:ca:01", "dev", lab.gen_if])
    # Super-frames small enough to be sampled whole (a sample holds 65024 bytes).
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "gso_max_size", "16384"])


def run_in(lab, ns, code, timeout=30):
    p = lab.popen(ns, [N.PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p


def finish(lab, p, what, timeout=30):
    try:
        out, err = p.communicate(timeout=N.scaled(timeout))
    except subprocess.TimeoutExpired:
        N.kill_process(p)
        raise N.TestFailure(f"{what} timed out")
    finally:
        lab.forget(p)
    N.check(p.returncode == 0, f"{what} succeeds", err)


def udp_flow(frame):
    """Source port of an IPv4 UDP frame from gen0 to port 7009, else None."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    ihl = (frame[14] & 15) * 4
    sport, dport = struct.unpack("!HH", frame[14 + ihl:18 + ihl])
    return sport if dport == 7009 else None


def tcp_checksum_ok(frame):
    """Whether an IPv4 TCP frame's checksum is the final one."""
    ihl = (frame[14] & 15) * 4
    total = struct.unpack("!H", frame[16:18])[0]
    segment = frame[14 + ihl:14 + total]
    pseudo = frame[26:34] + struct.pack("!BBH", 0, 6, len(segment))
    data = pseudo + segment
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s == 0xffff


def tcp_payload(frame):
    ihl = (frame[14] & 15) * 4
    total = struct.unpack("!H", frame[16:18])[0]
    return total - ihl - (frame[14 + ihl + 12] >> 4) * 4


def is_tcp(frame):
    return len(frame) >= 54 and frame[12:14] == b"\x08\x00" and frame[23] == 6


def tshark_hash_options(path):
    """epb_hash options as pcapng's own dissector shows them: [(algorithm, hex)] in file order."""
    cp = N.run(["tshark", "-r", path, "-X", "read_format:MIME Files Format", "-T", "fields",
                "-e", "pcapng.options.option.data.packet.hash.algorithm",
                "-e", "pcapng.options.option.data.packet.hash.data"])
    found = []
    for line in cp.stdout.splitlines():
        algorithms, data = (line.split("\t") + [""])[:2]
        for a, d in zip(filter(None, algorithms.split(",")), filter(None, data.split(","))):
            found.append((int(a, 0), d.replace(":", "")))
    return found


def attached_hash_calls(lab):
    """(name, calls of the driver's RSS hash function) of the XDP program
    attached to cap0: the capture program bound to the device, or the one
    in front of a filter."""
    prog = lab.xdp_prog()
    if not prog or prog[0] is None:
        return None, 0
    xlated = N.run(["bpftool", "prog", "dump", "xlated", "id", str(prog[0])]).stdout
    return prog[1], sum(1 for line in xlated.splitlines() if " call " in line and "rx_hash" in line)


def native_capture(binary, lab, tmp, name, args=(), expression=("udp port 7009",)):
    """Received datagrams of the four flows, natively, with -e text lines:
    (file, their records, their text lines, interface descriptions, the
    attached program's name and hash calls while it ran)."""
    out = os.path.join(tmp, name)
    x = lab.xdpcap(binary, ["--xdp-mode", "native", "-Q", "in", "-e", "--print-cpu", "--print"] + list(args)
                   + ["-w", out] + list(expression))
    x.wait_listening()
    hash_calls = attached_hash_calls(lab)
    finish(lab, run_in(lab, lab.gen_ns, SEND_UDP), "the UDP sender")
    time.sleep(0.5)
    N.check(x.stop(signal.SIGINT) == 0, f"xdpcap {' '.join(args)} exits 0", x.stderr)
    N.check_structure(out)
    recs = N.pcapng_records(out)
    epbs = [r for r in recs["epbs"] if udp_flow(r["data"]) is not None]
    N.check(len(epbs) == len(FLOWS) * PER_FLOW, f"{' '.join(args)}: the {len(FLOWS) * PER_FLOW} datagrams are "
            "captured", f"{len(epbs)} of {len(recs['epbs'])} records")
    N.expect(all((r["flags"] or 0) & (CHECKSUM_NOT_READY | TSO) == 0 for r in epbs),
             "received frames are flagged neither checksum-not-ready nor TSO")
    lines = [l for l in bytes(x.out).decode().splitlines() if "198.18.81.2." in l]
    N.check(len(lines) == len(epbs), "one text line per captured datagram (--print)", lines)
    descriptions = [i["description"] for i in N.pcapng_idbs(out)]
    return out, epbs, lines, descriptions, hash_calls


def no_received_hash(epbs, lines, descriptions, why):
    N.expect(all(not r["hashes"] and not r["comments"] for r in epbs),
             f"{why}: no epb_hash and no hash comment on received frames", [r["hashes"] for r in epbs[:4]])
    N.expect(not any(" hash 0x" in l for l in lines), f"{why}: no hash in the text lines", lines[:3])
    N.expect(not any("RSS hash" in d for d in descriptions), f"{why}: nor in the interface descriptions",
             descriptions)


def received_hashes(binary, lab, tmp, has_kfunc):
    plain, epbs, lines, descriptions, (_name, hash_calls) = native_capture(binary, lab, tmp, "rx.pcapng",
                                                                           expression=())
    if not has_kfunc:
        no_received_hash(epbs, lines, descriptions, "without bpf_xdp_metadata_rx_hash")
        return
    # veth computes the hash it hands out (the flow dissector, and the hash
    # set on the skb): not asked for unless the hash types are wanted.
    N.expect(hash_calls == 0, "veth, without --rss-type-comments: the attached program never calls "
                              "veth_xdp_rx_hash", hash_calls)
    no_received_hash(epbs, lines, descriptions, "veth, without --rss-type-comments")
    # Without a filter the capture program, bound to the device, reads the
    # hash itself; with one, the program in front of the filter does.
    for name, expression, program in (("rx-types.pcapng", (), "xdpcap_bound"),
                                      ("rx-types-filtered.pcapng", ("udp port 7009",), "xdpcap_rx_meta")):
        hashes_with_types(binary, lab, tmp, name, expression, program)
    verbose_like_plain(binary, lab, tmp, plain)


def hashes_with_types(binary, lab, tmp, name, expression, program):
    out, epbs, lines, descriptions, attached = native_capture(binary, lab, tmp, name, ["--rss-type-comments"],
                                                              expression)
    N.expect(attached == (program, 1), f"--rss-type-comments: {program} is attached and calls veth_xdp_rx_hash",
             attached)
    N.expect(all("RSS hash from the NIC's RX metadata" in d for d in descriptions),
             "the interface descriptions say the hash is read", descriptions)
    N.check(all(len(r["hashes"]) == 1 and r["hashes"][0][0] == 255 and len(r["hashes"][0][1]) == 4 for r in epbs),
            "every received datagram carries one epb_hash: algorithm 255 (veth: the kernel's flow hash), 4 bytes",
            [r["hashes"] for r in epbs[:4]])
    by_flow = {}
    for r in epbs:
        by_flow.setdefault(udp_flow(r["data"]), set()).add(r["hashes"][0][1])
    N.expect(all(len(h) == 1 for h in by_flow.values()), "every datagram of a flow carries the same hash",
             {k: [x.hex() for x in v] for k, v in by_flow.items()})
    distinct = {next(iter(h)) for h in by_flow.values()}
    N.expect(len(distinct) == len(FLOWS), f"the {len(FLOWS)} flows carry {len(FLOWS)} different hashes",
             {k: [x.hex() for x in v] for k, v in by_flow.items()})
    N.expect(all(r["comments"] == ["RSS hash type L4_ANY"] for r in epbs),
             "--rss-type-comments: the hash type is in a packet comment: RSS hash type L4_ANY "
             "(veth: a layer-4 flow hash)", [r["comments"] for r in epbs[:4]])
    cp = N.run(["tshark", "-n", "-r", out, "-Y", "udp.port == 7009", "-T", "fields", "-e", "frame.comment"])
    N.expect(cp.stdout.splitlines() == ["RSS hash type L4_ANY"] * len(epbs),
             "--rss-type-comments: tshark shows the comment on every frame (frame.comment)", cp.stdout[:300])
    seen = tshark_hash_options(out)
    want = [(255, r["hashes"][0][1].hex()) for r in epbs]
    N.expect(seen == want, "tshark (pcapng's dissector) reads the same algorithm and hash for every frame",
             f"tshark {seen[:4]}, file {want[:4]}")
    got = []
    for line in lines:
        m = re.search(r" In hash 0x([0-9a-f]{8})/L4_ANY ", line)
        got.append(m.group(1) if m else line)
    want_text = [f"{int.from_bytes(r['hashes'][0][1], 'little'):08x}" for r in epbs]
    N.expect(got == want_text, "each text line (-e) shows the frame's hash and type after the direction",
             f"{got[:3]} vs {want_text[:3]}")


def epb_options(path):
    """Of each captured datagram's EPB: its options as written, (code, value),
    the hash's value left out (a new flow hash each run)."""
    e, blocks, _tail, _problems = N.pcapng_walk(path)
    options = []
    for _off, btype, body in blocks:
        if btype != N.PCAPNG_EPB:
            continue
        caplen = struct.unpack(e + "I", body[12:16])[0]
        if udp_flow(body[20:20 + caplen]) is None:
            continue
        options.append([(code, val[:1] if code == 3 else val)
                        for code, val in N.parse_options(e, body[20 + ((caplen + 3) & ~3):])])
    return options


def verbose_like_plain(binary, lab, tmp, plain_path):
    """-v writes the packet blocks as without it (no comment added), and the
    program in front of the filter as the bound one without."""
    out = os.path.join(tmp, "rx-v.pcapng")
    x = lab.xdpcap(binary, ["--xdp-mode", "native", "-Q", "in", "-v", "-w", out, "udp port 7009"])
    x.wait_listening()
    finish(lab, run_in(lab, lab.gen_ns, SEND_UDP), "the UDP sender")
    time.sleep(0.5)
    N.check(x.stop(signal.SIGINT) == 0, "xdpcap -v exits 0", x.stderr)
    verbose, plain = epb_options(out), epb_options(plain_path)
    N.expect(len(verbose) == len(FLOWS) * PER_FLOW and verbose == plain and any(plain),
             "-v: every packet block carries the same options as without -v (no comment added)",
             f"{verbose[:2]} vs {plain[:2]}")


def kernel_has_kern_ctx_kfunc():
    with open("/proc/kallsyms") as f:
        return any(line.rstrip().endswith(" bpf_cast_to_kern_ctx") for line in f)


def probe_read_calls(pid):
    """Calls of bpf_probe_read_kernel in xdpcap's loaded egress program (the
    verifier inlines bpf_cast_to_kern_ctx: it leaves no call to look for)."""
    ids = [i for i, name in N.held_programs(pid).items() if name == "xdpcap_egress"]
    N.check(len(ids) == 1, "xdpcap holds one egress program", N.held_programs(pid))
    xlated = N.run(["bpftool", "prog", "dump", "xlated", "id", str(ids[0])]).stdout
    return sum(1 for line in xlated.splitlines() if "call bpf_probe_read_kernel" in line)


def sent_flags(binary, lab, tmp):
    out = os.path.join(tmp, "tx.pcapng")
    server = run_in(lab, lab.gen_ns, SERVER)
    x = lab.xdpcap(binary, ["-Q", "out", "-w", out, "tcp port 5301"])
    x.wait_listening()
    # A plain load where the kernel hands tc its sk_buff (6.2), the helper
    # before. The flags below judge that either path reads the right bits
    # (host, and the 6.1 guest); this, which path was taken.
    direct = kernel_has_kern_ctx_kfunc()
    calls = probe_read_calls(x.proc.pid)
    N.expect(calls == (0 if direct else 1),
             "ip_summed read with a plain load (bpf_cast_to_kern_ctx), no helper call" if direct
             else "ip_summed read with one bpf_probe_read_kernel call (no bpf_cast_to_kern_ctx)", calls)
    finish(lab, run_in(lab, lab.cap_ns, CLIENT), "the TCP client")
    finish(lab, server, "the TCP server")
    time.sleep(0.5)
    N.check(x.stop(signal.SIGINT) == 0, "xdpcap exits 0", x.stderr)
    N.check_structure(out)
    epbs = [r for r in N.pcapng_records(out)["epbs"] if is_tcp(r["data"])]
    N.check(len(epbs) > 10, "the sent TCP frames are captured", len(epbs))
    N.check(all(r["caplen"] == r["origlen"] for r in epbs), "captured whole (default snapshot length)")
    wrong = [i for i, r in enumerate(epbs)
             if bool(r["flags"] & CHECKSUM_NOT_READY) == tcp_checksum_ok(r["data"])]
    N.expect(not wrong, "checksum not ready (bit 9) is set exactly on the frames whose TCP checksum is not final",
             [(i, hex(epbs[i]["flags"]), tcp_checksum_ok(epbs[i]["data"])) for i in wrong[:5]])
    N.expect(any(r["flags"] & CHECKSUM_NOT_READY for r in epbs), "some sent frames are flagged checksum not ready")
    wrong = [i for i, r in enumerate(epbs) if bool(r["flags"] & TSO) != (r["origlen"] > MTU + 14)]
    N.expect(not wrong, "TSO (bit 11) is set exactly on the frames longer than the MTU allows",
             [(i, hex(epbs[i]["flags"]), epbs[i]["origlen"]) for i in wrong[:5]])
    N.expect(any(r["flags"] & TSO for r in epbs), "some sent frames are segmentation-offload super-frames",
             sorted({r["origlen"] for r in epbs})[-3:])
    # Data goes out from the socket, which gives every skb its hash; a last
    # ACK may come from the kernel's control socket (time-wait), without one.
    hashes = {h for r in epbs for h in r["hashes"]}
    data = [r for r in epbs if tcp_payload(r["data"]) > 0]
    N.expect(data and all(len(r["hashes"]) == 1 for r in data) and len(hashes) == 1 and next(iter(hashes))[0] == 255,
             "every sent data segment carries the connection's skb hash (TCP's own): one hash, algorithm 255",
             (list(hashes)[:4], [len(r["hashes"]) for r in data][:20]))
    N.expect(all(not r["comments"] for r in epbs), "sent frames carry no RSS hash type (the NIC made none)")
    cp = N.run(["tshark", "-n", "-r", out, "-T", "fields", "-e", "_ws.expert.message"])
    N.expect("checksum" not in cp.stdout.lower(), "tshark's expert information has no checksum complaint",
             cp.stdout[:500])
    # tshark 4.0 checks no checksum by default, and does not read bit 9 when
    # asked to: then each complaint must fall on a frame the flag explains.
    everything = N.pcapng_records(out)["epbs"]
    flagged = {i + 1 for i, r in enumerate(everything) if r["flags"] & CHECKSUM_NOT_READY}
    cp = N.run(["tshark", "-n", "-r", out, "-o", "tcp.check_checksum:TRUE", "-T", "fields", "-e", "frame.number",
                "-e", "tcp.checksum.status"])
    bad = {int(n) for n, _, status in (l.partition("\t") for l in cp.stdout.splitlines()) if status == "0"}
    N.expect(bad and bad == flagged,
             "with tshark checking TCP checksums, the frames it calls bad are exactly those flagged not ready",
             (sorted(bad)[:8], sorted(flagged)[:8]))


def both_directions_checksums(binary, lab, tmp):
    """One connection, both directions, -vv text: a checksum left to offload
    reads the same way whichever way the packet went, never as wrong."""
    out = os.path.join(tmp, "both.pcapng")
    server = run_in(lab, lab.gen_ns, SERVER)
    x = lab.xdpcap(binary, ["-vv", "--print", "-w", out, "tcp port 5301"])
    x.wait_listening()
    finish(lab, run_in(lab, lab.cap_ns, CLIENT), "the TCP client")
    finish(lab, server, "the TCP server")
    time.sleep(0.5)
    N.check(x.stop(signal.SIGINT) == 0, "xdpcap -vv --print exits 0", x.stderr)
    epbs = [r for r in N.pcapng_records(out)["epbs"] if is_tcp(r["data"])]
    received = [r for r in epbs if r["flags"] & 3 == 1]
    sent = [r for r in epbs if r["flags"] & 3 == 2]
    N.check(received and sent, "both directions captured", (len(received), len(sent)))
    wrong = [i for i, r in enumerate(epbs) if bool(r["flags"] & CHECKSUM_NOT_READY) == tcp_checksum_ok(r["data"])]
    N.expect(not wrong, "both directions: checksum not ready (bit 9) exactly where the TCP checksum is not final",
             [(i, hex(epbs[i]["flags"]), tcp_checksum_ok(epbs[i]["data"])) for i in wrong[:5]])
    N.expect(any(r["flags"] & CHECKSUM_NOT_READY for r in received),
             "received packets the peer left to checksum offload are flagged too (tc ingress on a veth)",
             [hex(r["flags"]) for r in received[:8]])
    text = bytes(x.out).decode("utf-8", "replace")
    N.expect("incorrect" not in text and text.count("(offloaded)") == sum(
        1 for r in epbs if r["flags"] & CHECKSUM_NOT_READY) and text.count("(correct)") == sum(
        1 for r in epbs if not r["flags"] & CHECKSUM_NOT_READY),
        "-vv lines: each offloaded checksum reads (offloaded) in either direction, every other one (correct)",
        text[:1500])


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        addresses(lab)
        has_kfunc = kernel_has_rx_hash_kfunc()
        N.log(f"  note  kernel has bpf_xdp_metadata_rx_hash: {has_kfunc}")
        received_hashes(binary, lab, tmp, has_kfunc)
        sent_flags(binary, lab, tmp)
        both_directions_checksums(binary, lab, tmp)


if __name__ == "__main__":
    N.main(test)
