#!/usr/bin/python3
"""End-to-end: --drops captures the frames the kernel drops on the interface, with its reason.

Usage (root): /usr/bin/python3 tests/e2e/test_drops.py PATH/TO/xdpcap

cap0 (198.18.74.1) has an nft rule that drops UDP port 7777. Sent into it:
UDP to a closed port (NO_SOCKET), to port 7777 (NETFILTER_DROP), frames with
a bad IPv4 header checksum (IP_CSUM) and frames for another MAC address
(OTHERHOST, received in promiscuous mode). Frames sent the same way into
cap1, which is not captured, must not appear. Checked:

  * each dropped frame exactly once, on a cap0@cpuN:drop interface, byte for
    byte as sent, inbound, its reason in the comment (tshark's
    frame.comment), the same on the text line of --print and in the
    statistics line, by reason;
  * an independent oracle: the same tracepoint through a tracefs instance of
    the test's own, whose text names each reason (it sees every namespace,
    so it must count at least as many);
  * a filter applies to drops ('udp port 9' keeps the NO_SOCKET ones only);
  * with both interfaces captured and both directions, cap1's drops are on
    cap1's drop interfaces, and datagrams sent from cap0's namespace that
    cap0's qdisc (pfifo, limit 0) drops are outbound drops, byte for byte as
    the egress hook captured them, with a reason the tracefs oracle names;
  * SIGUSR1's interim line counts the drops so far; each drop interface's
    description names the tracepoint, and its ISB counts what it saw and
    delivered (the records written there), none lost;
  * -Q in keeps only drops of received frames (an nft rule's), -Q out only
    those of sent ones (a qdisc's);
  * with kernel.kptr_restrict 2 one warning says dropped frames keep only
    their linear bytes (not with -q, nor with the addresses shown);
  * SIGKILL leaves none of the programs and links the process held (its
    fdinfo) on the tracepoint.
"""

import collections
import json
import os
import re
import signal
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402
from test_text_tcp import checksum  # noqa: E402

CAP_MAC = bytes.fromhex("02000000ca01")
CAP1_MAC = bytes.fromhex("02000000ca02")
GEN_MAC = bytes.fromhex("020000009e01")
OTHER_MAC = bytes.fromhex("020000007777")
CAP4, GEN4 = bytes([198, 18, 74, 1]), bytes([198, 18, 74, 2])
CAP14, GEN14 = bytes([198, 18, 75, 1]), bytes([198, 18, 75, 2])
TRACEFS = "/sys/kernel/tracing"


def udp_frame(dst_mac, src_ip, dst_ip, dport, payload, bad_ip_checksum=False):
    udp = struct.pack("!HHHH", 41000, dport, 8 + len(payload), 0) + payload
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0x4700, 0x4000, 64, 17, 0, src_ip, dst_ip)
    csum = checksum(head) ^ (0x5a5a if bad_ip_checksum else 0)
    head = head[:10] + struct.pack("!H", csum) + head[12:]
    return dst_mac + GEN_MAC + b"\x08\x00" + head + udp


def corpus():
    """(frame, expected reason) for cap0, and frames for cap1."""
    cap0 = []
    for i in range(5):
        cap0.append((udp_frame(CAP_MAC, GEN4, CAP4, 9, b"nosock%02d" % i), "NO_SOCKET"))
    for i in range(4):
        cap0.append((udp_frame(CAP_MAC, GEN4, CAP4, 7777, b"nftdrop%02d" % i), "NETFILTER_DROP"))
    for i in range(3):
        cap0.append((udp_frame(CAP_MAC, GEN4, CAP4, 5555, b"badcsum%02d" % i, bad_ip_checksum=True), "IP_CSUM"))
    for i in range(2):
        cap0.append((udp_frame(OTHER_MAC, GEN4, CAP4, 5555, b"otherhost%02d" % i), "OTHERHOST"))
    cap1 = [udp_frame(CAP1_MAC, GEN14, CAP14, 9, b"notcaptured%02d" % i) for i in range(3)]
    return cap0, cap1


class TraceInstance(N.Scoped):
    """A tracefs instance of our own with skb:kfree_skb enabled; removed on exit."""

    def __init__(self):
        self.path = os.path.join(TRACEFS, "instances", f"xdpcapt-{os.getpid()}")

    def _setup(self):
        if not os.path.isdir(os.path.join(TRACEFS, "instances")):
            N.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check_rc=False)
        os.mkdir(self.path)
        with open(os.path.join(self.path, "events/skb/kfree_skb/enable"), "w") as f:
            f.write("1")

    def reasons(self):
        with open(os.path.join(self.path, "trace")) as f:
            return collections.Counter(re.findall(r"reason: (\w+)", f.read()))

    def close(self):
        N._unregister_cleanup(self.close)
        if os.path.isdir(self.path):
            try:
                with open(os.path.join(self.path, "events/skb/kfree_skb/enable"), "w") as f:
                    f.write("0")
            except OSError:
                pass
            os.rmdir(self.path)


def setup_lab(lab):
    for i, (cap, gen) in enumerate(zip(lab.cap_ifs, lab.gen_ifs)):
        N.run(["ip", "-n", lab.cap_ns, "addr", "add", f"198.18.{74 + i}.1/24", "dev", cap])
        N.run(["ip", "-n", lab.gen_ns, "addr", "add", f"198.18.{74 + i}.2/24", "dev", gen])
        # The port unreachable replies need no ARP: no neighbour drops.
        N.run(["ip", "-n", lab.cap_ns, "neigh", "replace", f"198.18.{74 + i}.2", "lladdr",
               f"02:00:00:00:9e:{i + 1:02x}", "dev", cap, "nud", "permanent"])
    N.run(["ip", "netns", "exec", lab.cap_ns, "nft",
           "table inet xdpcapt { chain c { type filter hook input priority 0; udp dport 7777 drop; }; }"])


def drop_records(path, tmp):
    """The capture's rows (netlab.read_capture) with comment and direction, and the drop rows."""
    rows = N.read_capture(path, tmp)
    extra = N.run(["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-e", "frame.comment",
                   "-e", "frame.packet_flags_direction", "-e", "frame.packet_id"]).stdout.splitlines()
    N.check(len(extra) == len(rows), "tshark lists every frame once more", (len(extra), len(rows)))
    for row, line in zip(rows, extra):
        parts = (line.split("\t") + ["", "", ""])[:3]
        row["comment"], row["direction"], row["packet_id"] = parts
    return rows, [r for r in rows if r["if_name"].endswith(":drop")]


def held_by(pid):
    """Program and link ids a process holds, from its fdinfo (other tests may
    run drop programs of their own at the same time)."""
    progs, links = set(), set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue
        if "link_id" in info:
            links.add(int(info["link_id"]))
        elif "prog_id" in info:
            progs.add(int(info["prog_id"]))
    return progs, links


def drop_attachments(prog_ids, link_ids):
    """Of the given ids: the drop programs still loaded, and the kfree_skb links still there."""
    progs = json.loads(N.run(["bpftool", "-j", "prog", "show"]).stdout or "[]")
    links = json.loads(N.run(["bpftool", "-j", "link", "show"]).stdout or "[]")
    names = [p.get("name") for p in progs if p.get("id") in prog_ids and
             str(p.get("name", "")).startswith(("xdpcap_drop", "xdpcap_fdrop"))]
    ids = [l.get("id") for l in links if l.get("id") in link_ids and l.get("type") == "raw_tracepoint" and
           l.get("tp_name") == "kfree_skb"]
    return names, ids


def run_capture(lab, binary, tmp, label, extra_args, frames, cap1_frames, interim=None):
    path = os.path.join(tmp, label + ".pcapng")
    x = lab.xdpcap(binary, ["--drops", "-Q", "in", "-v", "-w", path, "--print", "--print-cpu"] + extra_args)
    x.wait_listening()
    pcap = os.path.join(tmp, label + ".pcap")
    N.write_frames(pcap, frames)
    lab.send(pcap, 0, gap_us=2000)
    pcap1 = os.path.join(tmp, label + "-cap1.pcap")
    N.write_frames(pcap1, cap1_frames)
    lab.send(pcap1, 0, gap_us=2000, gen_if=lab.gen_ifs[1])
    time.sleep(N.scaled(0.5))
    if interim is not None:
        x.send_signal(signal.SIGUSR1)
        end = time.monotonic() + N.scaled(3)
        while not any(l.startswith(N.STATS_INTERIM_PREFIX) for l in x.err_lines) and time.monotonic() < end:
            time.sleep(0.05)
        lines = [l for l in x.err_lines if l.startswith(N.STATS_INTERIM_PREFIX)]
        want = f", {interim} packets dropped by the kernel's stack"
        N.expect(len(lines) == 1 and want in lines[0],
                 f"{label}: SIGUSR1's interim line counts the drops so far ({want})", lines)
    rc = x.stop()
    N.check(rc == 0, f"{label}: xdpcap exits 0 on SIGINT", (rc, x.err_lines[-6:]))
    return path, x


def check_drop_interfaces(label, path, expected):
    """The drop interfaces' descriptions name the hook, and their ISBs count the drops:
    seen and delivered add up to the drops expected, delivered = records written there."""
    recs = N.pcapng_records(path)
    idbs = N.pcapng_idbs(path)
    drop_ids = [i for i, idb in enumerate(idbs) if (idb["name"] or "").endswith(":drop")]
    N.expect(drop_ids and all("skb:kfree_skb" in (idbs[i]["description"] or "") for i in drop_ids),
             f"{label}: each drop interface's description names the tracepoint",
             [idbs[i]["description"] for i in drop_ids][:2])
    isbs = {isb["if_id"]: isb for isb in recs["isbs"]}
    written = collections.Counter(e["if_id"] for e in recs["epbs"])
    got = [(i, isbs.get(i, {}).get("usrdeliv"), written[i]) for i in drop_ids]
    N.expect(all(i in isbs for i in drop_ids) and all(d == w for _, d, w in got),
             f"{label}: an ISB per drop interface, isb_usrdeliv = its records", got)
    seen = sum(isbs.get(i, {}).get("ifrecv", 0) for i in drop_ids)
    lost = sum(isbs.get(i, {}).get("osdrop", 0) for i in drop_ids)
    N.expect(seen == expected and lost == 0 and sum(w for _, _, w in got) == expected,
             f"{label}: the drop ISBs saw and delivered the {expected} drops, none lost",
             (seen, lost, got))


def one_direction(lab, binary, tmp, direction):
    """-Q in keeps the drops of received frames only, -Q out of sent ones."""
    path = os.path.join(tmp, f"q{direction}.pcapng")
    x = lab.xdpcap(binary, ["--drops", "-Q", direction, "-w", path])
    x.wait_listening()
    N.run(["tc", "-n", lab.cap_ns, "qdisc", "replace", "dev", lab.cap_if, "root", "pfifo", "limit", "0"])
    # Received, dropped by the nft rule (no reply); sent, dropped by the qdisc.
    received = [udp_frame(CAP_MAC, GEN4, CAP4, 7777, b"q%sin%02d" % (direction.encode(), i)) for i in range(3)]
    pcap = os.path.join(tmp, f"q{direction}.pcap")
    N.write_frames(pcap, received)
    lab.send(pcap, 0, gap_us=2000)
    rc = send_into_the_qdisc_and_stop(lab, x, "qout", 2)
    N.check(rc == 0, f"-Q {direction}: xdpcap exits 0 on SIGINT", (rc, x.err_lines[-6:]))
    _rows, drops = drop_records(path, tmp)
    got_in = [r for r in drops if r["data"] in received]
    got_out = [r for r in drops if b"qout" in r["data"]]
    if direction == "in":
        N.expect(len(got_in) == 3 and not got_out and len(drops) == 3,
                 "-Q in: the three received frames the nft rule dropped, none of the sent ones",
                 [(r["direction"], r["data"][-8:]) for r in drops])
    else:
        N.expect(len(got_out) == 2 and not got_in and all(r["direction"] == "0x00000002" for r in drops),
                 "-Q out: the two sent datagrams the qdisc dropped (outbound), none of the received ones",
                 [(r["direction"], r["data"][-8:]) for r in drops])


def check_drops(label, drops, expected):
    got = collections.Counter((r["data"], r["comment"].split(" at ")[0]) for r in drops)
    want = collections.Counter((frame, "drop reason " + reason) for frame, reason in expected)
    N.expect(got == want, f"{label}: every dropped frame once, byte for byte, with its reason",
             f"missing {list((want - got).items())[:4]}\nextra {list((got - want).items())[:4]}")
    N.expect(all(re.fullmatch(r"drop reason \w+ at [\w.]+\+0x[0-9a-f]+", r["comment"]) for r in drops),
             f"{label}: each comment names the reason and the kernel function with its offset",
             [r["comment"] for r in drops][:4])
    N.expect(all(r["direction"] == "0x00000001" for r in drops), f"{label}: every drop is inbound",
             [r["direction"] for r in drops][:4])
    N.expect(all(r["len"] == r["cap_len"] == len(r["data"]) for r in drops), f"{label}: whole frames",
             [(r["len"], r["cap_len"]) for r in drops][:4])


def check_copies_named(label, rows, drops):
    """A drop of a packet the capture recorded before shares that record's
    epb_packetid (tshark's frame.packet_id); every captured record has an
    id of its own."""
    captured = [r for r in rows if not r["if_name"].endswith(":drop")]
    ids = [r["packet_id"] for r in captured]
    N.expect(all(ids) and len(set(ids)) == len(ids), f"{label}: every captured record has a packet id of its own",
             ids[:8])
    by_id = {r["packet_id"]: r for r in captured}
    unmatched = [r for r in drops if not (r["packet_id"] in by_id and by_id[r["packet_id"]]["data"] == r["data"]
                                          and rows.index(by_id[r["packet_id"]]) < rows.index(r))]
    N.expect(drops and not unmatched, f"{label}: each drop record names the earlier record of the same packet by "
             "its packet id (frame.packet_id)", [(r["packet_id"], r["comment"]) for r in unmatched][:6])


def send_into_the_qdisc_and_stop(lab, x, prefix, count):
    """`count` datagrams PREFIXnn sent from cap0's namespace, which its qdisc
    (pfifo, limit 0, put there by the caller) drops; then xdpcap is stopped
    and the qdisc removed. Returns xdpcap's exit status."""
    N.run(["ip", "netns", "exec", lab.cap_ns, N.PYTHON, "-c",
           "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
           f"for i in range({count}):\n    s.sendto(b'{prefix}%02d' % i, ('198.18.74.2', 6666))\n"])
    time.sleep(N.scaled(0.5))
    rc = x.stop()
    N.run(["tc", "-n", lab.cap_ns, "qdisc", "del", "dev", lab.cap_if, "root"], check_rc=False)
    return rc


def both_interfaces(lab, binary, tmp, trace, frames, cap1):
    path = os.path.join(tmp, "both.pcapng")
    x = lab.xdpcap(binary, ["-i", lab.cap_ifs[1], "--drops", "-w", path])
    x.wait_listening()
    # Every frame cap0 sends is dropped by its qdisc, after the egress hook.
    N.run(["tc", "-n", lab.cap_ns, "qdisc", "replace", "dev", lab.cap_if, "root", "pfifo", "limit", "0"])
    pcap = os.path.join(tmp, "both.pcap")
    N.write_frames(pcap, [f for f, _ in frames])
    lab.send(pcap, 0, gap_us=2000)
    pcap1 = os.path.join(tmp, "both-cap1.pcap")
    N.write_frames(pcap1, cap1)
    lab.send(pcap1, 0, gap_us=2000, gen_if=lab.gen_ifs[1])
    rc = send_into_the_qdisc_and_stop(lab, x, "qdiscdrop", 3)
    N.check(rc == 0, "two interfaces: xdpcap exits 0 on SIGINT", (rc, x.err_lines[-6:]))
    rows, drops = drop_records(path, tmp)
    on_cap1 = [r for r in drops if r["if_name"].startswith("cap1@") and b"notcaptured" in r["data"]]
    N.expect(len(on_cap1) == len(cap1) and all("NO_SOCKET" in r["comment"] for r in on_cap1),
             "cap1's drops are on cap1's drop interfaces, with their reason",
             [(r["if_name"], r["comment"]) for r in drops][:6])
    received = [r for r in drops if r["if_name"].startswith("cap0@") and r["direction"] == "0x00000001"]
    N.expect(collections.Counter(r["data"] for r in received) == collections.Counter(f for f, _ in frames),
             "cap0's received drops are still each frame once", len(received))
    sent = [r for r in drops if b"qdiscdrop" in r["data"]]
    egress = [r for r in rows if not r["if_name"].endswith(":drop") and b"qdiscdrop" in r["data"]]
    N.expect(len(sent) == 3 and all(r["if_name"].startswith("cap0@") and r["direction"] == "0x00000002"
                                    for r in sent), "the three datagrams cap0's qdisc dropped are outbound drops",
             [(r["if_name"], r["direction"], r["comment"]) for r in sent])
    check_copies_named("two interfaces, sent drops", rows, sent)
    N.expect(sorted(r["data"] for r in sent) == sorted(r["data"] for r in egress) and len(egress) == 3,
             "each sent drop holds the frame the egress hook captured, byte for byte",
             (len(sent), len(egress)))
    oracle = trace.reasons()
    names = {r["comment"].split(" at ")[0].removeprefix("drop reason ") for r in sent}
    N.expect(len(names) == 1 and all(oracle[n] >= 3 for n in names),
             "the sent drops' reason is one the tracefs instance saw", (names, dict(oracle)))


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab(pairs=2) as lab, \
            TraceInstance() as trace:
        setup_lab(lab)
        frames, cap1 = corpus()
        path, x = run_capture(lab, binary, tmp, "all", [], [f for f, _ in frames], cap1, interim=len(frames))
        rows, drops = drop_records(path, tmp)
        check_drops("no filter", drops, frames)
        check_copies_named("no filter", rows, drops)
        check_drop_interfaces("no filter", path, len(frames))
        N.expect(not any(b"notcaptured" in r["data"] for r in rows),
                 "drops on cap1, which is not captured, are not recorded")
        reasons = collections.Counter(reason for _, reason in frames)
        stats = [l for l in x.err_lines if "dropped by the kernel's stack" in l and
                 not l.startswith(N.STATS_INTERIM_PREFIX)]
        want_line = (f"{len(frames)} packets dropped by the kernel's stack: " +
                     ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda i: (-i[1], i[0]))))
        N.expect(stats == [want_line], "the statistics count the drops by reason, most frequent first",
                 (stats, want_line))
        # With -v a packet's IP header fields come first and its addresses on
        # an indented line of their own: one packet, two lines.
        packets = []
        for line in bytes(x.out).decode().splitlines():
            if line.startswith(("    ", "\t")) and packets:
                packets[-1] += " " + line.strip()
            else:
                packets.append(line)
        text = [p for p in packets if ":drop " in p]
        text_reasons = collections.Counter(re.search(r":drop In Drop (\w+) ", p).group(1) for p in text
                                           if re.search(r":drop In Drop (\w+) IP \(tos .*\) 198\.18\.74\.2\.41000 > ", p))
        N.expect(len(text) == len(drops) and text_reasons == reasons,
                 "--print shows one 'Drop REASON' line per drop record, after the interface", text[:4])
        for reason, n in reasons.items():
            cp = N.run(["tshark", "-n", "-r", path, "-Y", f'frame.comment contains "{reason}"'])
            N.expect(len(cp.stdout.splitlines()) == n, f"tshark's frame.comment filter finds the {n} {reason}",
                     cp.stdout[-300:])
        oracle = trace.reasons()
        N.expect(all(oracle[r] >= n for r, n in reasons.items()),
                 "the tracefs instance saw each reason at least as often", (dict(oracle), dict(reasons)))

        path, x = run_capture(lab, binary, tmp, "filtered", ["udp port 9"], [f for f, _ in frames], cap1)
        rows, drops = drop_records(path, tmp)
        check_drops("udp port 9", drops, [(f, r) for f, r in frames if r == "NO_SOCKET"])
        N.expect(all(r["data"][36:38] == b"\x00\x09" for r in rows),
                 "with the filter, every record (received and dropped) is UDP port 9")

        both_interfaces(lab, binary, tmp, trace, frames, cap1)

        one_direction(lab, binary, tmp, "in")
        one_direction(lab, binary, tmp, "out")

        hidden_addresses(lab, binary, tmp)

        # SIGKILL: the tracepoint's link goes with the process.
        x = lab.xdpcap(binary, ["--drops", "-w", os.path.join(tmp, "killed.pcapng")])
        x.wait_listening()
        prog_ids, link_ids = held_by(x.proc.pid)
        before = drop_attachments(prog_ids, link_ids)
        N.check(before[0] and before[1], "while capturing, the drop program and its kfree_skb link exist", before)
        x.send_signal(signal.SIGKILL)
        x.wait()
        end = time.monotonic() + N.scaled(3)
        after = drop_attachments(prog_ids, link_ids)
        while (after[0] or after[1]) and time.monotonic() < end:
            time.sleep(0.1)
            after = drop_attachments(prog_ids, link_ids)
        N.check(not after[0] and not after[1], "after SIGKILL no drop program and no kfree_skb link remains", after)


def hidden_addresses(lab, binary, tmp):
    """kptr_restrict 2 hides where the kernel's direct map is: one warning
    that dropped frames keep their linear bytes only; none otherwise, or
    with -q."""
    line = ("xdpcap: warning: dropped frames keep only their linear bytes (their headers, mostly): "
            "/proc/kallsyms hides kernel addresses (kernel.kptr_restrict)")
    before = N.run(["sysctl", "-n", "kernel.kptr_restrict"]).stdout.strip()
    try:
        for setting, extra, expected in (("2", [], [line]), ("2", ["-q"], []), ("1", [], [])):
            N.run(["sysctl", "-qw", f"kernel.kptr_restrict={setting}"])
            x = lab.xdpcap(binary, ["--drops", *extra, "-w", os.path.join(tmp, "hidden.pcapng")])
            if extra:
                time.sleep(N.scaled(1.5))  # -q: no listening line to wait for
            else:
                x.wait_listening()
            rc = x.stop(signal.SIGINT)
            got = [l for l in x.err_lines if "linear bytes" in l]
            N.expect(rc == 0 and got == expected,
                     f"kptr_restrict {setting}{' with -q' if extra else ''}: "
                     f"{'the' if expected else 'no'} warning on dropped frames' linear bytes", x.err_lines)
    finally:
        N.run(["sysctl", "-qw", f"kernel.kptr_restrict={before}"])


if __name__ == "__main__":
    N.main(test)
