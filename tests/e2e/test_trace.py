#!/usr/bin/python3
"""End-to-end: trace mode, on an interface that already runs an XDP program.

Usage (root): /usr/bin/python3 tests/e2e/test_trace.py PATH/TO/xdpcap

The test's own XDP program (xdp_verdicts.bpf.c: drops UDP to port 7001, sets
the first payload byte of UDP to port 7002 to 0xee, passes the rest) runs on
cap0. Whether the kernel has the tracing program type is probed (bpftool
feature probe kernel).

In the default mode a veth's received frames are taken at tc ingress, after
the program (test_busy_interface.py); trace mode is for the XDP hook, asked
for here with --xdp-mode native (or --at, --program).

Without it: xdpcap --xdp-mode native -i cap0 (with or without a filter) is
refused in one line saying tracing needs fentry/fexit, exit 1, no file left,
the program still attached.

With it (Debian 12's 6.1, tests/vm):
- -d -i cap0 names the hooks the filter would run on: the traced program's
  fentry and fexit, and tc egress;
- attached with ip link, --at entry,exit (the default): every sent frame
  appears once at entry and once at exit, on IDBs named cap0@cpuN:entry and
  :exit whose description names the program, id and tag; exit records carry
  the verdict tshark reads as frame.verdict.ebpf_xdp (XDP_DROP = 1 for port
  7001, XDP_PASS = 2 for the rest), entry records none; the rewritten byte
  shows at exit only; the counts add up; -v names how frames travel, and
  where they are batched, while xdpcap is stopped (SIGSTOP) the CPU's
  staging entry holds frames at entry and at exit under their own keys;
- a filter in trace mode ('udp port 7001 or udp[8] = 0xee', -Q in): at entry
  only the frames to 7001, at exit those (dropped by the program, verdict
  XDP_DROP) and the frames to 7002 the program rewrote, byte for byte; the
  counts: each frame seen twice (entry and exit), the kept ones captured,
  -v splits them by hook point, and so do the ISBs (one per interface);
  a filter with protochain, indexed loads, len, inbound and vlan loads;
  'ifindex 3' (no device in trace mode) is refused in one line, exit 1;
- the traced interface together with another -i is refused in one line;
- --at exit in text mode, with a filter: lines of the kept frames only,
  ending with the verdict's name;
- --sample 3: entry and exit keep the same third of the frames, and the
  statistics count the skipped ones;
- SIGKILL (--at entry, a filter): bpftool link and bpftool prog then show
  nothing of xdpcap's, the program is still attached, same id, and still
  passes traffic (ping);
- behind a libxdp dispatcher (xdp-loader, two components): -D lists both;
  without --program both are traced (names end in the program name);
  --program ID traces that one only;
- frames of 65 051 and 65 151 bytes (multi-buffer, under an xdp.frags
  program, MTU 65535): whole at entry and at exit, byte for byte;
- the interface going away while traced: one line, exit 2, nothing left.
"""

import json
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

HERE = os.path.dirname(os.path.abspath(__file__))
# The XDP hook, where the program attached first is traced: without it a
# veth's received frames are taken at tc ingress, after that program.
XDP_HOOK = ["--xdp-mode", "native"]
PORTS = (7000, 7001, 7002)
XDP_DROP, XDP_PASS = 1, 2


def udp_frames(rounds, tag):
    """`rounds` frames to each port, each unique: payload 'A', marker, port, seq."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    frames = []
    for seq in range(rounds):
        for port in PORTS:
            payload = b"A" + N.MARKER + struct.pack(">HHB", port, seq, tag) + bytes(16)
            frames.append(bytes(Ether(dst="02:00:00:00:7a:01", src="02:00:00:00:7a:02") /
                                IP(src="198.18.80.2", dst="198.18.80.1") /
                                UDP(sport=40000, dport=port) / payload))
    return frames


def port_of(frame):
    return struct.unpack(">H", frame[36:38])[0]


def key_of(frame):
    """The frame's identity (marker, port, seq, tag), without the byte the program rewrites."""
    return frame[43:56]


def verdicts(path):
    out = N.run(["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.verdict.ebpf_xdp"]).stdout
    return [int(v) if v.strip() else None for v in out.splitlines()]


def descriptions(path):
    out = N.run(["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.interface_description"]).stdout
    return out.splitlines()


def capture(lab, binary, tmp, name, args, frames, staged=None):
    """Runs xdpcap with args, sends frames, stops it; returns (path, rows, stderr lines).
    With `staged`, xdpcap is stopped (SIGSTOP) while the frames are sent, and
    staged() is handed what its programs then hold staged (N.staged_frames)."""
    path = os.path.join(tmp, name + ".pcapng")
    pcap = os.path.join(tmp, name + ".pcap")
    N.write_frames(pcap, frames)
    x = lab.xdpcap(binary, XDP_HOOK + ["-w", path, "-v"] + args)
    x.wait_listening()
    if staged:
        x.send_signal(signal.SIGSTOP)
        try:
            lab.send(pcap, cpu=0)
            held = N.staged_frames(x.proc.pid)
        finally:
            x.send_signal(signal.SIGCONT)
        staged(held, x.err_lines)
    else:
        lab.send(pcap, cpu=0)
    time.sleep(N.scaled(0.5))
    rc = x.stop(signal.SIGINT)
    N.expect(rc == 0, f"{name}: xdpcap exits 0 on SIGINT", x.stderr)
    return path, N.read_capture(path, tmp), x.err_lines


def check_entry_exit(name, path, rows, frames, program_id, err):
    vs = verdicts(path)
    sent = {key_of(f): f for f in frames}
    entries = [r for r in rows if r["if_name"].endswith(":entry")]
    exits = [r for r in rows if r["if_name"].endswith(":exit")]
    N.expect(len(rows) == 2 * len(frames) and len(entries) == len(frames) and len(exits) == len(frames),
             f"{name}: every sent frame once at entry and once at exit ({len(frames)} each)",
             (len(rows), len(entries), len(exits)))
    N.expect(sorted(key_of(r["data"]) for r in entries) == sorted(sent) and
             sorted(key_of(r["data"]) for r in exits) == sorted(sent),
             f"{name}: entry and exit records are the sent frames")
    N.expect(all(r["data"] == sent[key_of(r["data"])] for r in entries),
             f"{name}: at entry every frame is byte for byte as sent")
    bad = [(r["if_name"], port_of(r["data"]), r["data"][42]) for r in exits
           if r["data"][42] != (0xee if port_of(r["data"]) == 7002 else ord("A"))]
    N.expect(not bad, f"{name}: at exit the first payload byte is 0xee for port 7002 only", bad[:5])
    wrong = []
    for row, v in zip(rows, vs):
        want = None
        if row["if_name"].endswith(":exit"):
            want = XDP_DROP if port_of(row["data"]) == 7001 else XDP_PASS
        if v != want:
            wrong.append((row["if_name"], port_of(row["data"]), v, want))
    N.expect(len(vs) == len(rows) and not wrong,
             f"{name}: frame.verdict.ebpf_xdp is 1 (XDP_DROP) for port 7001 and 2 (XDP_PASS) otherwise at "
             "exit, absent at entry", wrong[:5])
    descs = descriptions(path)
    N.expect(all(f"(id {program_id}, tag " in d for d, r in zip(descs, rows)),
             f"{name}: every interface description names the traced program's id and tag", descs[:2])
    isbs = isb_totals(path)
    N.expect(isbs["one_per_idb"] and isbs["entry"][2] == len(entries) and isbs["exit"][2] == len(exits) and
             isbs["entry"][0] >= len(frames) and isbs["exit"][0] >= len(frames),
             f"{name}: one ISB per interface; at entry and at exit isb_usrdeliv counts the records there and "
             "isb_ifrecv at least the frames sent", isbs)
    st = N.final_stats(err)
    N.check_stats_identity(st, name)
    N.expect(st["captured"] == len(rows), f"{name}: 'captured' counts the records written", st["captured"])


ENTRY_KEY, EXIT_KEY = 3, 4  # bpf/xdpcap_abi.h: XDPCAP_COUNTERS_TRACE(0, exit)


def check_traced_staged(staged, err):
    """Where -v says frames travel several per record, the frames at the
    traced program's entry and exit wait in their CPU's batch, each under
    its own counters key, until the loop flushes them."""
    N.log(f"  info  staged while xdpcap was stopped: {staged}")
    batched = "several frames per perf record, each written within 100 ms" in err
    N.expect(batched or any(l.startswith("one frame per perf record (") for l in err),
             "-v names how frames travel: batched, or one per record and why", err[:6])
    if batched:
        N.expect(staged is not None and staged[1].get(ENTRY_KEY, 0) > 0 and staged[1].get(EXIT_KEY, 0) > 0,
                 "traced frames are staged in their CPU's batch, at entry and at exit under their own keys", staged)


def traced_by_xdpcap():
    """xdpcap's programs and links still in the kernel."""
    progs = json.loads(N.run(["bpftool", "-j", "prog", "show"]).stdout or "[]")
    ours = {p["id"] for p in progs if str(p.get("name", "")).startswith("xdpcap")}
    links = json.loads(N.run(["bpftool", "-j", "link", "show"]).stdout or "[]")
    return sorted(ours), [l for l in links if l.get("prog_id") in ours]


def test_refused(lab, binary, tmp, prog):
    out_file = os.path.join(tmp, "refused.pcapng")
    for extra in ([], ["udp port 7001"]):
        rc, _out, err = N.run_xdpcap(lab, binary, XDP_HOOK + ["-i", lab.cap_if, "-w", out_file] + extra)
        N.expect(rc == 1 and len(err) == 1 and "'xdp_verdicts'" in err[0] and f"id {prog[0]}" in err[0] and
                 "cannot be traced: this kernel does not offer fentry/fexit" in err[0],
                 f"without the tracing program type: refused in one line naming the program {extra}", (rc, err))
    N.expect(lab.xdp_prog() == prog, "the program stays attached, same id", lab.xdp_prog())
    N.expect(not os.path.exists(out_file), "no output file left")
    # The same as the second of two interfaces: refused before anything is attached.
    N.run(["ip", "-n", lab.cap_ns, "link", "add", "trbr0", "type", "bridge"])
    rc, _out, err = N.run_xdpcap(lab, binary, XDP_HOOK + ["-i", "trbr0", "-i", lab.cap_if, "-w", out_file])
    N.expect(rc == 1 and len(err) == 1 and "'xdp_verdicts'" in err[0],
             "with another -i first: refused in one line naming the program", (rc, err))
    N.expect(lab.xdp_state("trbr0") == "" and lab.xdp_prog() == prog and not os.path.exists(out_file),
             "nothing attached to the other interface, the program stays, no output file",
             (lab.xdp_state("trbr0"), lab.xdp_prog()))


def stderr_number(err_lines, what):
    vals = [v for v in (N.stderr_count([l], what) for l in err_lines) if v is not None]
    return vals[-1] if vals else None


def isb_totals(path):
    """ISB sums over the :entry and the :exit interfaces: [ifrecv, filteraccept, usrdeliv]."""
    recs = N.pcapng_records(path)
    names = [i["name"] for i in recs["idbs"]]
    total = {"entry": [0, 0, 0], "exit": [0, 0, 0],
             "one_per_idb": sorted(i["if_id"] for i in recs["isbs"]) == list(range(len(names)))}
    for isb in recs["isbs"]:
        name = names[isb["if_id"]] if isb["if_id"] < len(names) else ""
        for point in ("entry", "exit"):
            if name.endswith(":" + point):
                for n, field in enumerate(("ifrecv", "filteraccept", "usrdeliv")):
                    total[point][n] += isb.get(field, 0)
    return total


def hook_point_counts(err_lines):
    """Totals over CPUs of the -v 'entry: N seen, K kept by filter; exit: ...' lines."""
    import re
    total = {"entry": [0, 0], "exit": [0, 0]}
    for line in err_lines:
        for point in total:
            m = re.search(rf"\b{point}: (\d+) seen, (\d+) kept by filter", line)
            if m:
                total[point][0] += int(m.group(1))
                total[point][1] += int(m.group(2))
    return total


def test_filtered(lab, binary, tmp, pid):
    """A filter at entry and at exit; exit sees the frame as the program left it."""
    frames = udp_frames(8, 4)
    sent = {key_of(f): f for f in frames}
    # Port 7002's first payload byte is 0xee only after the program ran.
    expr = "udp port 7001 or udp[8] = 0xee"
    path, rows, err = capture(lab, binary, tmp, "filtered", ["-Q", "in", expr], frames)
    entries = [r for r in rows if r["if_name"].endswith(":entry")]
    exits = [r for r in rows if r["if_name"].endswith(":exit")]
    N.expect(len(entries) + len(exits) == len(rows), "filtered: every record is from entry or exit",
             [r["if_name"] for r in rows][:4])
    N.expect(sorted(port_of(r["data"]) for r in entries) == [7001] * 8,
             "filtered: at entry only the frames to port 7001", [port_of(r["data"]) for r in entries])
    N.expect(sorted(port_of(r["data"]) for r in exits) == [7001] * 8 + [7002] * 8,
             "filtered: at exit the frames to 7001 (dropped by the program) and the rewritten ones to 7002",
             [port_of(r["data"]) for r in exits])
    want = {}
    for r in exits:
        f = sent.get(key_of(r["data"]))
        want[id(r)] = f if f is None or port_of(f) == 7001 else f[:42] + b"\xee" + f[43:]
    N.expect(all(r["data"] == sent.get(key_of(r["data"])) for r in entries) and
             all(r["data"] == want[id(r)] for r in exits) and
             len({key_of(r["data"]) for r in exits}) == len(exits),
             "filtered: records byte for byte as sent (at exit with the program's rewrite), none twice")
    vs = verdicts(path)
    wrong = [(r["if_name"], port_of(r["data"]), v) for r, v in zip(rows, vs)
             if r["if_name"].endswith(":exit") and v != (XDP_DROP if port_of(r["data"]) == 7001 else XDP_PASS)]
    N.expect(len(vs) == len(rows) and not wrong, "filtered: exit records carry the program's verdict", wrong[:5])
    counts = (stderr_number(err, "captured"), stderr_number(err, "received by filter"),
              stderr_number(err, "seen on the interface"))
    N.expect(counts == (len(rows), len(rows), 2 * len(frames)),
             f"filtered: {len(rows)} captured, {len(rows)} received by filter, {2 * len(frames)} seen "
             "(each frame once at entry, once at exit)", (counts, err[-12:]))
    N.check_stats_identity(N.final_stats(err), "filtered", per_cpu=False)
    isbs = isb_totals(path)
    N.expect(isbs == {"entry": [len(frames), 8, 8], "exit": [len(frames), 16, 16], "one_per_idb": True},
             f"filtered: one ISB per interface; entry ISBs: {len(frames)} received, 8 accepted, 8 delivered; "
             f"exit ISBs: {len(frames)}, 16, 16", isbs)
    split = hook_point_counts(err)
    N.expect(split == {"entry": [len(frames), 8], "exit": [len(frames), 16]},
             f"filtered: -v splits the counts by hook point: entry {len(frames)} seen, 8 kept; "
             f"exit {len(frames)} seen, 16 kept", (split, err[-8:]))

    # The verifier takes the harder shapes too: protochain's loops, indexed
    # loads, the length, the direction, VLAN offsets.
    hard = ("ip6 protochain 17 or ip protochain 17 or (tcp[tcpflags] & tcp-syn != 0 and greater 1000) or "
            "(inbound and ether broadcast) or (vlan 100 and udp port 53)")
    x = lab.xdpcap(binary, XDP_HOOK + ["-Q", "in", "-w", os.path.join(tmp, "hard.pcapng"), hard])
    x.wait_listening()
    N.expect(x.stop(signal.SIGINT) == 0, "a filter with protochain, indexed loads, len, inbound and vlan loads "
             "in trace mode", x.err_lines[-3:])

    rc, _o, e = N.run_xdpcap(lab, binary, XDP_HOOK + ["-i", lab.cap_if, "-w", os.path.join(tmp, "f.pcapng"),
                                           "ifindex 3"])
    N.expect(rc == 1 and len(e) == 1 and "'ifindex'" in e[0] and "trace mode" in e[0],
             "a filter trace mode cannot run ('ifindex') is refused in one line", (rc, e))
    N.expect(not os.path.exists(os.path.join(tmp, "f.pcapng")), "and leaves no file")
    N.expect(traced_by_xdpcap() == ([], []), "and nothing of xdpcap's in the kernel", traced_by_xdpcap())


def read_back(binary, tmp, path, rows):
    """-r shows the hook point and the verdict of each record as live capture
    does, and -r -w keeps each record's verdict."""
    cp = N.run([binary, "-r", path, "--print-cpu"])
    lines = cp.stdout.splitlines()
    want = []
    for r in rows:
        hook = r["if_name"].rsplit(":", 1)[-1]
        verdict = "" if hook == "entry" else ("XDP_DROP " if port_of(r["data"]) == 7001 else "XDP_PASS ")
        want.append(f"{r['if_name']} In {verdict}IP ")
    got = [re.sub(r"^\S+ ", "", l)[:len(w)] for l, w in zip(lines, want)]
    N.expect(len(lines) == len(rows) and got == want,
             "-r prints each record's CPU and hook interface, and at exit its verdict by name",
             [(g, w) for g, w in zip(got, want) if g != w][:4] or (len(lines), len(rows)))
    copy = os.path.join(tmp, "trace-copy.pcapng")
    N.run([binary, "-r", path, "-w", copy])
    N.expect(verdicts(copy) == verdicts(path), "-r -w keeps every record's verdict (epb_verdict)",
             (verdicts(copy)[:6], verdicts(path)[:6]))


def test_traced(lab, binary, tmp, obj, prog):
    pid = prog[0]
    cp = N.run(["ip", "netns", "exec", lab.cap_ns, binary, "-d"] + XDP_HOOK + ["-i", lab.cap_if, "udp"],
               check_rc=False)
    hooks = re.findall(r"^eBPF run at (.*) \(\d+ instructions\):$", cp.stdout, re.M)
    N.expect(cp.returncode == 0 and len(hooks) == 2 and
             hooks[0].startswith(f"fentry and fexit of XDP program 'xdp_verdicts' (id {pid}") and
             hooks[1] == "tc egress", "-d names the traced program's entry and exit as the hooks", (hooks, cp.stderr))
    frames = udp_frames(10, 1)
    path, rows, err = capture(lab, binary, tmp, "entry-exit", [], frames, staged=check_traced_staged)
    N.expect(any(l.startswith(f"tracing XDP program 'xdp_verdicts' (id {pid}") for l in err),
             "the start says which program is traced", err[:3])
    check_entry_exit("ip link", path, rows, frames, pid, err)
    N.check_structure(path)
    read_back(binary, tmp, path, rows)
    idbs = [i["name"] for i in N.pcapng_records(path)["idbs"]]
    N.expect(all(n.endswith((":entry", ":exit")) or n.rsplit("@cpu", 1)[-1].isdigit() for n in idbs) and
             any(n.endswith(":entry") for n in idbs) and any(n.endswith(":exit") for n in idbs),
             "IDBs named cap0@cpuN:entry, cap0@cpuN:exit (and cap0@cpuN for egress)", idbs)

    test_filtered(lab, binary, tmp, pid)

    # Trace mode is one interface at a time: with a second -i, refused.
    N.run(["ip", "-n", lab.cap_ns, "link", "add", "trbr0", "type", "bridge"])
    rc, _o, e = N.run_xdpcap(lab, binary, XDP_HOOK + ["-i", "trbr0", "-i", lab.cap_if,
                                           "-w", os.path.join(tmp, "m.pcapng")])
    N.expect(rc == 1 and len(e) == 1 and "trace mode captures one interface at a time" in e[0] and
             f"(id {pid}," in e[0], "a traced interface with another -i is refused in one line", (rc, e))
    N.expect(traced_by_xdpcap() == ([], []) and lab.xdp_state("trbr0") == "",
             "and leaves nothing of xdpcap's in the kernel, nor on the other interface",
             (traced_by_xdpcap(), lab.xdp_state("trbr0")))
    N.expect(lab.xdp_prog() == prog, "the traced program stays attached, same id", lab.xdp_prog())

    # Text mode, exit only, with a filter: the verdict by name.
    text_frames = udp_frames(2, 2)
    kept = [f for f in text_frames if port_of(f) != 7000]
    pcap = os.path.join(tmp, "text.pcap")
    N.write_frames(pcap, text_frames)
    x = lab.xdpcap(binary, XDP_HOOK + ["--at", "exit", "-Q", "in", "--print-cpu", "-c", str(len(kept)),
                            "not udp port 7000"])
    x.wait_listening()
    lab.send(pcap, cpu=0)
    N.expect(x.wait(20) == 0, "--at exit -c N 'not udp port 7000' exits 0 after N packets", x.stderr)
    lines = bytes(x.out).decode().splitlines()
    # "TIME cap0@cpuN:exit In VERDICT IP ...": the verdict follows the direction.
    names = [l.split()[3] if len(l.split()) > 3 else "" for l in lines]
    N.expect(len(lines) == len(kept) and all(":exit " in l for l in lines) and
             not any(".7000:" in l or ".7000 " in l for l in lines) and
             sorted(names) == sorted(["XDP_DROP", "XDP_PASS"] * 2),
             "--at exit with a filter, text lines: one per kept frame, at exit, with XDP_DROP (port 7001) "
             "or XDP_PASS (7002) after the direction", lines)

    # --sample: entry and exit each keep one frame in 3, counted per hook;
    # frames sent one after another from one CPU are kept at both.
    sample_frames = udp_frames(10, 3)
    path, rows, err = capture(lab, binary, tmp, "sampled", ["--sample", "3", "-Q", "in"], sample_frames)
    entries = sorted(key_of(r["data"]) for r in rows if r["if_name"].endswith(":entry"))
    exits = sorted(key_of(r["data"]) for r in rows if r["if_name"].endswith(":exit"))
    want = len(sample_frames) // 3
    N.expect(len(entries) == len(exits) == want and entries == exits,
             f"--sample 3: the same {want} of {len(sample_frames)} frames at entry and at exit",
             (len(entries), len(exits)))
    st = N.final_stats(err)
    N.check_stats_identity(st, "--sample 3 in trace mode")
    N.expect(st["skipped"] == 2 * (len(sample_frames) - want),
             "--sample 3 in trace mode: the skipped entry and exit samples are counted", st["lines"])

    # SIGKILL leaves nothing behind; the program keeps running.
    # -Q in: the clsact egress program stays after SIGKILL on 6.1 (no tcx), by design.
    # Entry only, with a filter: its tracing program goes too.
    x = lab.xdpcap(binary, XDP_HOOK + ["-Q", "in", "--at", "entry", "-w", os.path.join(tmp, "killed.pcapng"),
                            "udp"])
    x.wait_listening()
    N.expect(traced_by_xdpcap()[1] != [], "while tracing, bpftool link shows xdpcap's tracing links")
    x.send_signal(signal.SIGKILL)
    x.wait(10)
    end = time.monotonic() + N.scaled(5)
    while traced_by_xdpcap() != ([], []) and time.monotonic() < end:
        time.sleep(0.1)
    N.expect(traced_by_xdpcap() == ([], []), "after SIGKILL bpftool prog and link show nothing of xdpcap's",
             traced_by_xdpcap())
    N.expect(lab.xdp_prog() == prog, "the traced program is still attached, same id", lab.xdp_prog())
    N.run(["ip", "-n", lab.cap_ns, "addr", "add", "198.18.81.1/24", "dev", lab.cap_if])
    N.run(["ip", "-n", lab.gen_ns, "addr", "add", "198.18.81.2/24", "dev", lab.gen_if])
    ping = N.run(["nsenter", f"--net=/run/netns/{lab.gen_ns}", "ping", "-c", "2", "-i", "0.3", "-W", "3",
                  "198.18.81.1"], check_rc=False)
    N.expect(ping.returncode == 0, "and still passes traffic: ping through it answers", ping.stdout[-200:])

    # Behind a libxdp dispatcher: two components.
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "xdpdrv", "off"])
    loader = ["nsenter", f"--net=/run/netns/{lab.cap_ns}", "xdp-loader"]
    for _ in range(2):
        N.run(loader + ["load", "-m", "native", lab.cap_if, obj])
    status = N.run(loader + ["status", lab.cap_if]).stdout
    N.log("  info  " + " | ".join(status.splitlines()))
    # Component ids in the order the dispatcher runs them.
    run_order = [int(l.split()[3]) for l in status.splitlines() if l.strip().startswith("=>")]
    rc, out, _e = N.run_xdpcap(lab, binary, ["-D"])
    line = next((l for l in out.splitlines() if l.split(".", 1)[-1].startswith(lab.cap_if + " ")), "")
    comps = [int(w.split()[0].rstrip(",)")) for w in line.split("'xdp_verdicts' (id ")[1:]]
    N.expect(rc == 0 and "'xdp_dispatcher'" in line and len(comps) == 2,
             "-D lists the dispatcher running two xdp_verdicts components", line)
    if len(comps) != 2:
        return
    frames = udp_frames(4, 3)
    path, rows, err = capture(lab, binary, tmp, "dispatcher-all", ["-Q", "in"], frames)
    names = sorted({r["if_name"].split("@cpu", 1)[1].split(":", 1)[1] for r in rows})
    N.expect(names == ["entry:xdp_verdicts", "exit:xdp_verdicts"] and len(rows) >= 2 * len(frames),
             "without --program every component is traced (interfaces named ...:entry:xdp_verdicts)",
             (names, len(rows)))
    # The first one run: it sees every frame as sent.
    first = run_order[0] if run_order else comps[0]
    path, rows, err = capture(lab, binary, tmp, "dispatcher-one", ["-Q", "in", "--program", str(first)], frames)
    check_entry_exit("--program ID", path, rows, frames, first, err)

    long_frames(lab, binary, tmp)

    # The interface goes away while traced: as in the ordinary mode.
    x = lab.xdpcap(binary, XDP_HOOK + ["-Q", "in", "-w", os.path.join(tmp, "gone.pcapng")])
    x.wait_listening()
    N.run(["ip", "-n", lab.gen_ns, "link", "del", lab.gen_if])
    rc = x.wait(10)
    vlan = [l for l in x.err_lines if N.RX_VLAN_WARNING.match(l)]
    N.expect(len(vlan) == 1 and "trace mode sees frames as the traced program does" in vlan[0],
             "trace mode on a veth (rx-vlan-offload on): one warning that received VLAN tags will be missing", vlan)
    msgs = N.messages(x.err_lines, "xdpcap:")
    N.expect(rc == 2 and msgs == [f"xdpcap: {lab.cap_if} went away; capture stopped"],
             "the traced interface going away stops xdpcap with one line, exit 2", (rc, x.err_lines))
    N.expect(traced_by_xdpcap() == ([], []), "and leaves nothing of xdpcap's in the kernel", traced_by_xdpcap())


def long_frames(lab, binary, tmp):
    """Multi-buffer frames longer than one record (65 024 bytes) under an
    xdp.frags program: whole at entry and at exit, their parts read from the
    fragments' pages."""
    loader = ["nsenter", f"--net=/run/netns/{lab.cap_ns}", "xdp-loader"]
    N.run(loader + ["unload", "--all", lab.cap_if])
    for ns, dev in ((lab.cap_ns, lab.cap_if), (lab.gen_ns, lab.gen_if)):
        N.run(["ip", "-n", ns, "link", "set", "dev", dev, "mtu", "65535"])
    obj_dir = os.path.join(tmp, "frags")
    os.mkdir(obj_dir)
    obj = N.build_bpf_object("xdp_frags_pass.bpf.c", obj_dir)
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "xdpdrv", "obj", obj, "sec", "xdp.frags"])
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    frames = [bytes(Ether(dst="02:00:00:00:7a:01", src="02:00:00:00:7a:02") /
                    IP(src="198.18.80.2", dst="198.18.80.1", flags="DF") / UDP(sport=40000, dport=7000) /
                    (N.MARKER + bytes([seq]) + bytes((seq + k) & 0xff for k in range(size))))
              for seq, size in enumerate((65000, 65100, 3000))]
    path, rows, err = capture(lab, binary, tmp, "long", ["-Q", "in"], frames)
    for point in ("entry", "exit"):
        got = [r for r in rows if r["if_name"].endswith(":" + point)]
        N.check_exact(frames, [r["data"] for r in got],
                      f"frames of {', '.join(str(len(f)) for f in frames)} bytes: each once at {point}, "
                      "byte for byte")
        N.expect(all(r["len"] == r["cap_len"] for r in got), f"long frames at {point}: none cut",
                 [(r["len"], r["cap_len"]) for r in got])
    st = N.final_stats(err)
    N.expect(st is not None and st["dropped"] == 0, "long frames: none dropped", err)


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        obj = N.build_bpf_object("xdp_verdicts.bpf.c", tmp)
        N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "xdpdrv", "obj", obj, "sec", "xdp"])
        prog = lab.xdp_prog()
        N.check(prog is not None, "the test program is attached to cap0", prog)
        tracing = N.kernel_has_tracing()
        N.log(f"  info  this kernel {'has' if tracing else 'lacks'} the tracing program type")
        if tracing:
            test_traced(lab, binary, tmp, obj, prog)
        else:
            test_refused(lab, binary, tmp, prog)


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("clang", "bpftool", "xdp-loader", "nsenter"))
