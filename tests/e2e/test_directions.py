#!/usr/bin/python3
"""End-to-end: both directions (-Q), egress hook clean-up, promiscuous mode.

Usage (root): /usr/bin/python3 tests/e2e/test_directions.py PATH/TO/xdpcap

cap0 and gen0 get addresses from 198.18.77.0/24; a ping exchange and a small
TCP exchange cross the pair while xdpcap captures on cap0 and tcpdump, the
independent oracle, captures on gen0.  Every frame gen0 sent is received on
cap0 and the other way round, so:
  * default -Q (inout): xdpcap's frames are byte for byte tcpdump's, those
    with gen0's source MAC flagged inbound (epb_flags 1), those with cap0's
    outbound (2); tshark's frame.packet_flags_direction agrees with the raw
    block walk; pings and TCP both ways are present;
  * -Q in / -Q out: exactly the inbound / outbound part of the same;
  * the filters inbound, outbound and not inbound under -Q inout keep exactly
    the inbound / outbound part, and -v counts the filter per direction;
  * while capturing, received frames come from tc ingress: xdpcap's ingress
    and egress programs are attached through tcx (clsact filters on a kernel
    without tcx) and no XDP program is on the veth;
  * SIGKILL: no tcx ingress or egress program on cap0 (on a kernel without
    tcx: both clsact filters stay, as documented, until the next run, which
    removes them), promiscuity back to 0; -p leaves promiscuity alone;
  * the clsact path (forced with XDPCAP_TEST_NO_TCX=1, as on kernels without
    tcx): -Q out captures egress, both directions byte for byte tcpdump's with
    "clsact ingress and clsact egress" in the description, a SIGKILLed run's
    two filters are removed by the next run, and a normal exit leaves no
    clsact qdisc;
  * an interface that is down: one warning line, then packets once it is up.
"""

import ctypes
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CAP_ADDR, GEN_ADDR = "198.18.77.1", "198.18.77.2"
CAP_MAC, GEN_MAC = bytes.fromhex("020000 00ca01".replace(" ", "")), bytes.fromhex("02000000 9e01".replace(" ", ""))
INBOUND, OUTBOUND = 1, 2

SERVER = f"""
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{CAP_ADDR}", 5001)); s.listen(1); s.settimeout(10)
c, _ = s.accept(); c.settimeout(10)
c.sendall(c.recv(100).upper()); c.close()
"""
CLIENT = f"""
import socket, time
for _ in range(100):
    try:
        c = socket.create_connection(("{CAP_ADDR}", 5001), timeout=2); break
    except OSError:
        time.sleep(0.05)
c.sendall(b"hello from gen0"); assert c.recv(100) == b"HELLO FROM GEN0"; c.close()
"""

# Ids of the tcx programs attached to an ifindex at one hook (46 ingress, 47
# egress), through BPF_PROG_QUERY (run inside the namespace: ifindexes are per
# namespace); -errno when the query fails.
TCX_QUERY = r"""
import ctypes, struct, sys, socket
libc = ctypes.CDLL(None, use_errno=True)
ids = (ctypes.c_uint32 * 64)()
attr = ctypes.create_string_buffer(struct.pack("IIIIQI", socket.if_nametoindex(sys.argv[1]), int(sys.argv[2]), 0, 0,
                                               ctypes.addressof(ids), 64) + bytes(36))
if libc.syscall(321, 16, attr, 64) != 0:
    print(-ctypes.get_errno()); sys.exit(0)
print(" ".join(str(ids[i]) for i in range(struct.unpack_from("I", attr.raw, 24)[0])))
"""
TCX_INGRESS, TCX_EGRESS = 46, 47


def setup_addresses(lab):
    N.run(["ip", "-n", lab.cap_ns, "addr", "add", f"{CAP_ADDR}/24", "dev", lab.cap_if])
    N.run(["ip", "-n", lab.gen_ns, "addr", "add", f"{GEN_ADDR}/24", "dev", lab.gen_if])


def exchange(lab):
    """A ping exchange, then a TCP connection with one request and one reply."""
    N.run(["ip", "netns", "exec", lab.gen_ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", CAP_ADDR])
    server = lab.popen(lab.cap_ns, [N.PYTHON, "-c", SERVER], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    try:
        N.run(["ip", "netns", "exec", lab.gen_ns, N.PYTHON, "-c", CLIENT], timeout=15)
        server.wait(timeout=10)
    finally:
        N.kill_process(server)
        lab.forget(server)
    N.check(server.returncode == 0, "the TCP server in the capture namespace finished",
            server.stderr.read() if server.stderr else "")


def epb_frames(path):
    """(data, direction) of every EPB, from the raw blocks."""
    frames = []
    for e, btype, body in N.pcapng_blocks(path):
        if btype != 6:
            continue
        caplen = struct.unpack(e + "I", body[12:16])[0]
        data = body[20:20 + caplen]
        direction = None
        for code, val in N.parse_options(e, body[20 + ((caplen + 3) & ~3):]):
            if code == 2:
                direction = struct.unpack(e + "I", val)[0] & 3
        frames.append((data, direction))
    return frames


def tshark_directions(path):
    out = N.run(["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.packet_flags_direction"]).stdout
    return [int(x, 16) for x in out.split()]


def oracle_start(lab, path):
    p = lab.popen(lab.gen_ns, ["tcpdump", "-i", lab.gen_if, "-nn", "-U", "--immediate-mode", "-w", path],
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + 10
    while not os.path.exists(path) or os.path.getsize(path) < 24:
        N.check(p.poll() is None and time.monotonic() < end, "tcpdump oracle starts on gen0")
        time.sleep(0.05)
    time.sleep(0.3)
    return p


def oracle_stop(lab, p, path):
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=10)
    lab.forget(p)
    return [data for _c, _o, data in N.read_pcap(path)]


def capture(lab, binary, tmp, name, args, env=None):
    """Run xdpcap with ARGS around one exchange; return (epb frames, oracle frames, stderr)."""
    out = os.path.join(tmp, name + ".pcapng")
    ref = os.path.join(tmp, name + ".oracle.pcap")
    oracle = oracle_start(lab, ref)
    argv = [binary, "-i", lab.cap_if, "-w", out] + args
    x = N.Xdpcap(lab, binary, [], argv=argv if env is None else ["env"] + env + argv)
    x.wait_listening()
    exchange(lab)
    time.sleep(0.3)
    rc = x.stop(signal.SIGINT)
    N.check(rc == 0, f"xdpcap {' '.join(args)} exits 0 on SIGINT", f"{rc}: {x.stderr}")
    sent_and_received = oracle_stop(lab, oracle, ref)
    N.check_structure(out)
    return epb_frames(out), sent_and_received, x.stderr, out


def check_directions(frames, what):
    wrong = [(d, data[:14].hex()) for data, d in frames
             if d != (INBOUND if data[6:12] == GEN_MAC else OUTBOUND if data[6:12] == CAP_MAC else -1)]
    N.expect(not wrong, f"{what}: every EPB's direction flag matches its source MAC "
             "(gen0's = inbound 1, cap0's = outbound 2)", wrong[:5])


def check_exchange_present(frames, direction, what):
    """ICMP echo and TCP of the exchange in the given direction."""
    def proto(data, p):
        return len(data) > 23 and data[12:14] == b"\x08\x00" and data[23] == p
    sel = [data for data, d in frames if d == direction]
    icmp = [d for d in sel if proto(d, 1)]
    tcp = [d for d in sel if proto(d, 6)]
    N.expect(len(icmp) == 3, f"{what}: 3 ICMP echo {'requests' if direction == INBOUND else 'replies'}",
             len(icmp))
    N.expect(len(tcp) >= 4, f"{what}: the TCP exchange's segments ({len(tcp)})")


def test_modes(binary, tmp):
    with N.NetLab() as lab:
        setup_addresses(lab)
        frames, oracle, _err, out = capture(lab, binary, tmp, "inout", [])
        got = [data for data, _d in frames]
        missing, extra, dup = N.multiset_diff(oracle, got)
        N.expect(not missing and not extra and not dup,
                 f"default -Q: xdpcap's {len(got)} frames are byte for byte the {len(oracle)} tcpdump saw on gen0",
                 f"missing {len(missing)}: {N.describe_frames(missing)}\nextra {len(extra)}: "
                 f"{N.describe_frames(extra)}\nduplicated {len(dup)}")
        check_directions(frames, "default -Q")
        N.expect(tshark_directions(out) == [d for _data, d in frames],
                 "tshark's frame.packet_flags_direction agrees with the block walk")
        check_exchange_present(frames, INBOUND, "default -Q, inbound")
        check_exchange_present(frames, OUTBOUND, "default -Q, outbound")

        for mode, direction, mac in (("in", INBOUND, GEN_MAC), ("out", OUTBOUND, CAP_MAC)):
            frames, oracle, _err, _out = capture(lab, binary, tmp, mode, ["-Q", mode])
            want = [data for data in oracle if data[6:12] == mac]
            got = [data for data, _d in frames]
            missing, extra, dup = N.multiset_diff(want, got)
            N.expect(not missing and not extra and not dup and want,
                     f"-Q {mode}: exactly the {len(want)} frames with {'gen0' if mode == 'in' else 'cap0'}'s "
                     f"source MAC that tcpdump saw",
                     f"got {len(got)}, missing {len(missing)}, extra {len(extra)}, duplicated {len(dup)}")
            N.expect(all(d == direction for _data, d in frames), f"-Q {mode}: every EPB flagged {direction}")
            check_exchange_present(frames, direction, f"-Q {mode}")


def stats_direction_line(err_lines):
    """Totals over CPUs of the -v 'in: ...; out: ...' lines."""
    import re
    total = {"in": [0, 0], "out": [0, 0]}
    for line in err_lines:
        for d in ("in", "out"):
            m = re.search(rf"\b{d}: (\d+) seen, (\d+) kept by filter", line)
            if m:
                total[d][0] += int(m.group(1))
                total[d][1] += int(m.group(2))
    return total


def test_direction_filters(binary, tmp):
    with N.NetLab() as lab:
        setup_addresses(lab)
        # The last one runs bpf_loop() (protochain) at both hooks.
        for expr, keep in (("inbound", GEN_MAC), ("outbound", CAP_MAC), ("not inbound", CAP_MAC),
                           ("outbound and not ip6 protochain 132", CAP_MAC)):
            name = expr.replace(" ", "_")
            frames, oracle, err, _out = capture(lab, binary, tmp, name, ["-v", expr])
            want = [data for data in oracle if data[6:12] == keep]
            other = [data for data in oracle if data[6:12] != keep]
            got = [data for data, _d in frames]
            missing, extra, dup = N.multiset_diff(want, got)
            N.expect(not missing and not extra and not dup and want,
                     f"filter '{expr}' with -Q inout keeps exactly the {len(want)} frames "
                     f"{'gen0' if keep == GEN_MAC else 'cap0'} sent",
                     f"got {len(got)}, missing {len(missing)}, extra {len(extra)}, duplicated {len(dup)}")
            counts = stats_direction_line(err.splitlines())
            kept_dir, dropped_dir = ("in", "out") if keep == GEN_MAC else ("out", "in")
            N.expect(counts[kept_dir][1] == len(want) and counts[dropped_dir][1] == 0
                     and counts[kept_dir][0] == len(want) and counts[dropped_dir][0] == len(other),
                     f"filter '{expr}': -v counts seen and kept per direction", counts)


def promiscuity(lab):
    return N.link_info_promiscuity(lab)


def tcx_query(lab, attach_type):
    """The ids attached at that tcx hook of cap0, or -errno."""
    out = N.run(["ip", "netns", "exec", lab.cap_ns, N.PYTHON, "-c", TCX_QUERY, lab.cap_if,
                 str(attach_type)]).stdout.split()
    return int(out[0]) if out and out[0].startswith("-") else [int(i) for i in out]


def tcx_programs(lab, attach_type):
    """Names of the tcx programs attached at that hook of cap0."""
    names = []
    for prog_id in tcx_query(lab, attach_type):
        cp = N.run(["bpftool", "-j", "prog", "show", "id", str(prog_id)], check_rc=False)
        names.append(json.loads(cp.stdout).get("name", "") if cp.returncode == 0 else f"id {prog_id}")
    return names


def tc_state(lab):
    """xdpcap's clsact filters on cap0 (ingress and egress), and whether a clsact qdisc is there."""
    qdiscs = N.run(["ip", "netns", "exec", lab.cap_ns, "tc", "qdisc", "show", "dev", lab.cap_if]).stdout
    return lab.tc_filters(), "clsact" in qdiscs


def has_filters(filters, *names):
    """Whether there is exactly one filter per hook and program: 'ingress:xdpcap_ingress', ..."""
    want = sorted(names)
    got = sorted(f"{f.split(':', 1)[0]}:{n}" for f in filters for n in ("xdpcap_ingress", "xdpcap_egress")
                 if n in f)
    return got == want


def wait_for(fn, want, timeout=2.0):
    end = time.monotonic() + N.scaled(timeout)
    value = fn()
    while value != want and time.monotonic() < end:
        time.sleep(0.05)
        value = fn()
    return value


def kernel_has_tcx(lab):
    return isinstance(tcx_query(lab, TCX_EGRESS), list)  # the query fails with -EINVAL without tcx


def test_cleanup(binary, tmp):
    with N.NetLab() as lab:
        setup_addresses(lab)
        tcx = kernel_has_tcx(lab)
        N.log(f"  info  this kernel {'has' if tcx else 'lacks'} tcx")
        N.check(promiscuity(lab) == 0, "cap0 starts with promiscuity 0", promiscuity(lab))
        killed_out = os.path.join(tmp, "killed.pcapng")
        x = lab.xdpcap(binary, ["-w", killed_out])
        x.wait_listening()
        N.expect(promiscuity(lab) == 1, "while xdpcap runs, cap0 is promiscuous", promiscuity(lab))
        if tcx:
            N.expect(tcx_programs(lab, TCX_INGRESS) == ["xdpcap_ingress"],
                     "while xdpcap runs, its tcx ingress program is attached", tcx_programs(lab, TCX_INGRESS))
            N.expect(tcx_programs(lab, TCX_EGRESS) == ["xdpcap_egress"],
                     "while xdpcap runs, its tcx egress program is attached", tcx_programs(lab, TCX_EGRESS))
        else:
            N.expect(has_filters(lab.tc_filters(), "ingress:xdpcap_ingress", "egress:xdpcap_egress"),
                     "while xdpcap runs, its clsact ingress and egress filters are attached", tc_state(lab))
        # A veth's received frames come from tc ingress by default, not XDP.
        N.expect(lab.xdp_prog() is None, "while xdpcap runs, no XDP program is attached", lab.xdp_state())
        x.send_signal(signal.SIGKILL)
        N.expect(x.wait(timeout=5) == -signal.SIGKILL, "xdpcap died of SIGKILL")
        if tcx:
            N.expect(wait_for(lambda: tcx_query(lab, TCX_INGRESS), []) == [],
                     "no tcx ingress program remains on cap0 within 2 s of SIGKILL", tcx_programs(lab, TCX_INGRESS))
            N.expect(wait_for(lambda: tcx_query(lab, TCX_EGRESS), []) == [],
                     "no tcx egress program remains on cap0 within 2 s of SIGKILL", tcx_programs(lab, TCX_EGRESS))
            lab.assert_clean("nothing of xdpcap remains on cap0 after SIGKILL (XDP, tc)")
        else:
            N.expect(lab.xdp_state() == "", "no XDP program on cap0 after SIGKILL", lab.xdp_state())
            N.expect(has_filters(lab.tc_filters(), "ingress:xdpcap_ingress", "egress:xdpcap_egress"),
                     "without tcx, SIGKILL leaves both clsact filters (the documented caveat)", tc_state(lab))
        N.expect(wait_for(lambda: promiscuity(lab), 0) == 0, "promiscuity is back to 0 after SIGKILL",
                 promiscuity(lab))

        y = lab.xdpcap(binary, ["-p", "-w", os.path.join(tmp, "nopromisc.pcapng")])
        y.wait_listening()
        N.expect(promiscuity(lab) == 0, "-p: xdpcap leaves promiscuity at 0", promiscuity(lab))
        N.expect(y.stop(signal.SIGINT) == 0, "-p run exits 0")
        # Without tcx, this run also removed the killed run's filters.
        filters, has_clsact = tc_state(lab)
        N.expect(not filters and not has_clsact and lab.xdp_state() == "",
                 "after the -p run, nothing is left: no filter, no clsact qdisc, no XDP program",
                 (filters, has_clsact, lab.xdp_state()))

        # The clsact path, as on kernels without tcx.
        env = ["XDPCAP_TEST_NO_TCX=1"]
        frames, oracle, _err, out = capture(lab, binary, tmp, "clsact", ["-Q", "out"], env=env)
        want = [data for data in oracle if data[6:12] == CAP_MAC]
        missing, extra, dup = N.multiset_diff(want, [data for data, _d in frames])
        N.expect(not missing and not extra and not dup and want,
                 f"clsact path: -Q out captures exactly the {len(want)} frames cap0 sent")
        N.expect("clsact egress" in " ".join(i["description"] or "" for i in N.pcapng_idbs(out)),
                 "clsact path: the interface description says 'clsact egress'")
        filters, has_clsact = tc_state(lab)
        N.expect(not filters and not has_clsact, "clsact path: a normal exit removes the filter and the qdisc",
                 filters)

        # Both directions: received frames from the clsact ingress filter.
        frames, oracle, _err, out = capture(lab, binary, tmp, "clsact_inout", [], env=env)
        missing, extra, dup = N.multiset_diff(oracle, [data for data, _d in frames])
        N.expect(not missing and not extra and not dup and oracle,
                 f"clsact path: default -Q captures exactly the {len(oracle)} frames tcpdump saw on gen0",
                 f"missing {len(missing)}, extra {len(extra)}, duplicated {len(dup)}")
        check_directions(frames, "clsact path")
        descs = [i["description"] or "" for i in N.pcapng_idbs(out)]
        N.expect(descs and all(", clsact ingress and clsact egress, driver veth" in d for d in descs),
                 "clsact path: the interface description says 'clsact ingress and clsact egress'", descs)
        filters, has_clsact = tc_state(lab)
        N.expect(not filters and not has_clsact, "clsact path: a normal exit removes both filters and the qdisc",
                 filters)

        argv = ["env"] + env + [binary, "-i", lab.cap_if, "-w", os.path.join(tmp, "k.pcapng")]
        k = N.Xdpcap(lab, binary, [], argv=argv)
        k.wait_listening()
        k.send_signal(signal.SIGKILL)
        k.wait(timeout=5)
        killed, _ = tc_state(lab)
        N.expect(has_filters(killed, "ingress:xdpcap_ingress", "egress:xdpcap_egress"),
                 "clsact path: SIGKILL leaves both filters behind (the documented caveat of kernels without tcx)",
                 killed)
        argv[-1] = os.path.join(tmp, "k2.pcapng")
        k2 = N.Xdpcap(lab, binary, [], argv=argv)
        k2.wait_listening()
        filters, _ = tc_state(lab)
        N.expect(has_filters(filters, "ingress:xdpcap_ingress", "egress:xdpcap_egress")
                 and not set(filters) & set(killed),
                 "clsact path: the next run removes the killed run's two filters and attaches its own",
                 (killed, filters))
        N.expect(k2.stop(signal.SIGINT) == 0, "clsact path: the next run exits 0")
        filters, has_clsact = tc_state(lab)
        N.expect(not filters and not has_clsact, "clsact path: nothing is left after it", filters)


def test_down(binary, tmp):
    with N.NetLab() as lab:
        setup_addresses(lab)
        N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "down"])
        out = os.path.join(tmp, "down.pcapng")
        x = lab.xdpcap(binary, ["-w", out])
        x.wait_listening()
        warning = [l for l in x.err_lines if "down" in l]
        N.expect(warning == [f"xdpcap: warning: {lab.cap_if} is down; capture starts when it comes up"],
                 "a down interface gets one warning line", x.err_lines)
        N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "up"])
        lab._wait_up(lab.cap_ns, lab.cap_if)
        N.run(["ip", "netns", "exec", lab.gen_ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", CAP_ADDR])
        time.sleep(0.3)
        N.expect(x.stop(signal.SIGINT) == 0, "the capture started on a down interface exits 0")
        frames = epb_frames(out)
        icmp = [d for data, d in frames if len(data) > 23 and data[12:14] == b"\x08\x00" and data[23] == 1]
        N.expect(icmp.count(INBOUND) == 3 and icmp.count(OUTBOUND) == 3,
                 "once up, the pings are captured both ways", icmp)


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp:
        test_modes(binary, tmp)
        test_direction_filters(binary, tmp)
        test_cleanup(binary, tmp)
        test_down(binary, tmp)


if __name__ == "__main__":
    N.main(test)
