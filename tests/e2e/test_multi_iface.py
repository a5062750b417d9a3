#!/usr/bin/python3
"""End-to-end: several interfaces in one run (repeated -i), -i by tcpdump -D's number, -i any.

Usage (root): /usr/bin/python3 tests/e2e/test_multi_iface.py PATH/TO/xdpcap

One lab with two veth pairs between the same namespaces (cap0 <-> gen0,
cap1 <-> gen1).  Checks:
  * `-i cap0 -i cap1 -v -w FILE` while distinct corpora go out of gen0 and gen1
    at the same time: exit 0; one listening line per interface; the IDBs are
    cap0@cpuN for every CPU, then cap1@cpuN; the frames on cap0's interfaces
    are exactly (byte for byte) the frames sent on gen0, likewise cap1; the
    totals and each interface's line on stderr (on SIGUSR1 and at the end)
    have its exact count, the -v
    lines (IFACE@cpuN) add up to it, and each ISB matches its line; nothing
    stays attached (XDP, tcx/clsact ingress and egress, promiscuity) on either
    interface;
  * while such a run goes on, each veth has xdpcap's tc ingress program (the
    default mode on a veth) and no XDP, and is promiscuous; SIGKILL leaves
    nothing attached on either interface (without tcx: only the clsact
    filters, ingress and egress, which the next run removes from both);
  * `-i N` is the Nth interface of `tcpdump -D` (here not cap1's ifindex):
    xdpcap -D numbers them alike, every `-i N` takes the interface
    `tcpdump -i N` takes (any included; other pseudo-devices are refused,
    naming them), `-i N` for cap1 captures cap1 under its name, and an interface
    named like that number (a bridge: tc ingress, it has no native XDP) takes
    precedence, as with tcpdump;
  * the second interface failing to attach (a bridge in --xdp-mode native)
    exits 1 with one line naming it, leaves no output file, and cap0 (attached
    first) ends up with nothing attached;
  * text mode with a filter (arp) on both: lines named as tcpdump -i any's, only the
    ARP frames, three per interface, and so the per-interface lines;
  * `-i any` with a third pair (cap2 in bridge capbr1, which has its
    address) and lo, a filter (not arp and not igmp), frames sent to each
    receiver's address (tcpdump -i any leaves out other hosts' frames): each veth,
    the bridge and lo are taken at tc ingress with no XDP and left
    unpromiscuous; every frame sent (and one sent out of cap1) is on its own
    interface, once, byte for byte, with its direction; lo's pings once, as
    received; `tcpdump -i any` with the same filter counts the same per
    interface and direction; nothing stays attached; `-i any` beside another
    -i is refused in one line; one interface given by name and by number is
    refused in one line;
  * during `-i any`, cap0 deleted, capmv moved to another namespace and
    cap2 renamed ren2: the capture goes on (a line for each that left),
    frames sent afterwards captured on ren2 under its new name (IDBs and
    statistics), exit 0, the file reads in tshark, capinfos and tcpdump -r,
    an ISB for every IDB, nothing stays attached to the moved one;
  * during that same `-i any`, capj0 created: it joins within a second of
    its creation (one line), at tc ingress, every frame sent to it captured
    on it byte for byte, its ISBs count them, and deleted, it leaves with one
    line;
  * `-i 'capq*' -i ren2`: a listening line per pattern; capq0 created during
    the capture joins, capx0 (not matched) is left alone; the file holds
    ren2's and capq0's frames, byte for byte, and nothing else; nothing stays
    attached;
  * cap1 deleted during a two-interface capture: exit 2 with one line naming
    it, statistics printed, cap0 left clean.
"""

import os
import collections
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

COUNT = 120  # frames per interface
STATS_IFACE_RE = re.compile(
    r"^(cap\d): (\d+) packets? captured, (\d+) received by filter, (\d+) dropped by kernel$")
STATS_CPU_RE = re.compile(r"^\s+(cap\d)@cpu(\d+): (\d+) seen, (\d+) sampled, (\d+) written, ")


# BPF_PROG_QUERY of dev's tcx hook (attach type argv[2]: 46 ingress, 47
# egress): the program count, or a negative errno (no tcx: before 6.6).
TCX_QUERY = r"""
import ctypes, struct, sys, socket
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("IIII", socket.if_nametoindex(sys.argv[1]), int(sys.argv[2]), 0, 0)
                                   + bytes(48))
if libc.syscall(321, 16, attr, 64) != 0:
    print(-ctypes.get_errno()); sys.exit(0)
print(struct.unpack_from("I", attr.raw, 24)[0])
"""
TCX_INGRESS, TCX_EGRESS = 46, 47


def tcx_count(lab, dev, attach_type):
    return int(N.run(["ip", "netns", "exec", lab.cap_ns, N.PYTHON, "-c", TCX_QUERY, dev,
                      str(attach_type)]).stdout.strip())


def hooks(lab, dev):
    """What is attached to dev's receive and send hooks: XDP, tcx, clsact filters (empty when nothing)."""
    found = []
    xdp = lab.xdp_state(dev)
    if xdp:
        found.append(f"XDP: {xdp}")
    for point, attach_type in (("ingress", TCX_INGRESS), ("egress", TCX_EGRESS)):
        tcx = tcx_count(lab, dev, attach_type)
        if tcx > 0:
            found.append(f"{tcx} tcx {point} program(s)")
        filters = N.run(["ip", "netns", "exec", lab.cap_ns, "tc", "filter", "show", "dev", dev, point],
                        check_rc=False).stdout.strip()
        if filters:
            found.append(f"tc {point} filters: {filters}")
    return found


def leftovers(lab, dev):
    """What xdpcap could have left on dev: '' when nothing."""
    found = hooks(lab, dev)
    promiscuity = int(lab.link_info(lab.cap_ns, dev).get("promiscuity", -1))
    if promiscuity != 0:
        found.append(f"promiscuity {promiscuity}")
    return "; ".join(found)


def has_tcx(lab):
    """The tcx query fails (a negative errno) on kernels without tcx."""
    return tcx_count(lab, "cap0", TCX_EGRESS) >= 0


def tc_ingress_only(lab, dev, tcx):
    """Whether xdpcap receives on dev at tc ingress (tcx or its clsact filter), with no XDP program."""
    found = hooks(lab, dev)
    if tcx:
        ingress = "1 tcx ingress program(s)" in found
    else:
        ingress = any(f.startswith("ingress: ") for f in lab.tc_filters(dev))
    return ingress and not any(f.startswith("XDP") for f in found)


def check_clean(lab, devs, when, timeout=2.0):
    for dev in devs:
        end = time.monotonic() + N.scaled(timeout)
        state = leftovers(lab, dev)
        while state and time.monotonic() < end:
            time.sleep(0.05)
            state = leftovers(lab, dev)
        N.expect(state == "", f"{when}: nothing stays attached to {dev} (XDP, tc ingress and egress, "
                              "promiscuity)", state)


def send_both(lab, corpora, cpus):
    """Send each corpus out of its generator interface, all at the same time."""
    errors = []

    def one(path, gen_if, cpu):
        try:
            N.log("  info  " + gen_if + ": " + lab.send(path, cpu, gap_us=300, gen_if=gen_if))
        except N.TestFailure as e:
            errors.append(f"{gen_if}: {e}")

    threads = [threading.Thread(target=one, args=(path, gen_if, cpu))
               for path, gen_if, cpu in zip(corpora, lab.gen_ifs, cpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    N.check(not errors, "both senders finished", errors)


def capture_both(binary, lab, tmp):
    cpu_list = N.cpus()
    corpora, frames = [], []
    for i in range(2):
        path = os.path.join(tmp, f"corpus{i}.pcap")
        frames.append(N.build_corpus(path, COUNT, seed=10 + i))
        corpora.append(path)
    out = os.path.join(tmp, "both.pcapng")

    x = N.Xdpcap(lab, binary, ["-i", "cap0", "-i", "cap1", "-v", "-w", out])
    x.wait_listening()
    time.sleep(0.2)  # the second listening line follows the first at once
    send_both(lab, corpora, [cpu_list[0], cpu_list[-1]])
    time.sleep(0.5)
    # SIGUSR1's statistics count per interface too.
    x.send_signal(signal.SIGUSR1)
    end = time.monotonic() + N.scaled(5)
    while sum(1 for l in x.err_lines if STATS_IFACE_RE.match(l)) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    rc = x.stop(signal.SIGINT)
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    N.expect(rc == 0, "two interfaces: xdpcap exits 0 after SIGINT", f"exit status {rc}")
    listening = [m.group(1) for m in map(N.LISTENING_RE.match, x.err_lines) if m]
    N.expect(listening == ["cap0", "cap1"], "one 'listening on' line per interface, in -i order", listening)

    # Interfaces: every CPU of cap0, then every CPU of cap1.
    N.check_structure(out)
    N.check_readers_agree(out, 2 * COUNT)
    idbs = N.pcapng_idbs(out)
    names = [i["name"] for i in idbs]
    want = [f"cap{i}@cpu{c}" for i in range(2) for c in cpu_list]
    N.expect(names == want, "IDBs are capI@cpuN per interface and CPU, in -i order", names)
    N.expect(len({i["snaplen"] for i in idbs}) == 1 and all(i["linktype"] == 1 for i in idbs),
             "every IDB is EN10MB with one snaplen", idbs)
    ci = N.capinfos_interfaces(out)
    N.expect([c.get("Name") for c in ci] == want, "capinfos lists the same interface names",
             [c.get("Name") for c in ci])

    # Frames: each interface's are exactly those sent on its pair.
    rows = N.read_capture(out, tmp)
    for i in range(2):
        got = [r["data"] for r in rows if (r["if_name"] or "").startswith(f"cap{i}@")]
        N.check_exact(frames[i], got, f"cap{i}: every frame sent on gen{i} is on a cap{i} interface "
                                      "exactly once, byte-exact")
        ids = {r["if_id"] for r in rows if (r["if_name"] or "").startswith(f"cap{i}@")}
        N.expect(all(names[j].startswith(f"cap{i}@") for j in ids),
                 f"cap{i}'s frames refer to cap{i}'s IDBs by interface id", sorted(ids))

    # Counts: totals, a line per interface, -v lines per interface and CPU, ISBs.
    N.expect(N.stderr_count(x.err_lines, "captured") == 2 * COUNT,
             f"stderr says '{2 * COUNT} packets captured'", N.stderr_count(x.err_lines, "captured"))
    lines = [m.groups() for m in map(STATS_IFACE_RE.match, x.err_lines) if m]
    want_lines = [("cap0", str(COUNT), str(COUNT), "0"), ("cap1", str(COUNT), str(COUNT), "0")]
    N.expect(lines == want_lines * 2,
             f"SIGUSR1 and the end each print 'capI: {COUNT} packets captured, {COUNT} received by filter, "
             "0 dropped by kernel' for each interface", lines)
    final = x.err_lines[max(i for i, l in enumerate(x.err_lines) if N.stderr_count([l]) is not None):]
    per_cpu = {}
    for m in map(STATS_CPU_RE.match, final):
        if m:
            per_cpu[(m.group(1), int(m.group(2)))] = {"seen": int(m.group(3)), "written": int(m.group(5))}
    N.expect(sorted(per_cpu) == sorted((f"cap{i}", c) for i in range(2) for c in cpu_list),
             "-v has a line per interface and CPU, named capI@cpuN", sorted(per_cpu))
    for i in range(2):
        written = sum(v["written"] for (dev, _c), v in per_cpu.items() if dev == f"cap{i}")
        N.expect(written == COUNT, f"cap{i}'s -v lines add up to {COUNT} written", written)
    recs = N.pcapng_records(out)
    bad = []
    for isb in recs["isbs"]:
        name = names[isb["if_id"]] if isb["if_id"] < len(names) else "?"
        dev, _, cpu = name.partition("@cpu")
        line = per_cpu.get((dev, int(cpu) if cpu.isdigit() else -1))
        if line is None or (isb.get("ifrecv"), isb.get("usrdeliv")) != (line["seen"], line["written"]):
            bad.append(f"{name}: ISB ifrecv {isb.get('ifrecv')} usrdeliv {isb.get('usrdeliv')}, -v {line}")
    N.expect(len(recs["isbs"]) == len(idbs) and not bad,
             "one ISB per interface and CPU, equal to its -v line (seen, written)",
             f"{len(recs['isbs'])} ISBs for {len(idbs)} IDBs; " + "; ".join(bad))
    check_clean(lab, lab.cap_ifs, "after SIGINT")


def sigkill_both(binary, lab, tmp):
    x = N.Xdpcap(lab, binary, ["-i", "cap0", "-i", "cap1", "-w", os.path.join(tmp, "killed.pcapng")])
    x.wait_listening()
    time.sleep(0.2)
    tcx = has_tcx(lab)
    states = {dev: leftovers(lab, dev) for dev in lab.cap_ifs}
    N.expect(all(tc_ingress_only(lab, dev, tcx) for dev in lab.cap_ifs)
             and all("promiscuity 1" in s for s in states.values()),
             "while running, both veths have xdpcap's tc ingress program (no XDP) and are promiscuous", states)
    held = sorted(N.held_programs(x.proc.pid).values())
    N.expect(held.count("xdpcap_ingress") == 2, "and xdpcap holds one xdpcap_ingress program per interface",
             held)
    rc = x.stop(signal.SIGKILL)
    N.expect(rc == -signal.SIGKILL, "xdpcap died of SIGKILL", rc)
    if tcx:
        check_clean(lab, lab.cap_ifs, "after SIGKILL")
        return
    # Without tcx the clsact filters stay (documented), harmless, until the
    # next run on each interface removes them.
    states = {dev: hooks(lab, dev) for dev in lab.cap_ifs}
    N.expect(all(sorted(f.split(":")[0] for f in s) == ["tc egress filters", "tc ingress filters"]
                 for s in states.values())
             and all(int(lab.link_info(lab.cap_ns, dev).get("promiscuity", -1)) == 0 for dev in lab.cap_ifs),
             "after SIGKILL without tcx: only the clsact filters (ingress and egress) stay, on both interfaces",
             states)
    x = N.Xdpcap(lab, binary, ["-i", "cap0", "-i", "cap1", "-w", os.path.join(tmp, "next.pcapng")])
    x.wait_listening()
    time.sleep(0.2)
    N.expect(x.stop(signal.SIGINT) == 0, "the next two-interface run exits 0", x.err_lines)
    check_clean(lab, lab.cap_ifs, "after the next run removed the leftovers")


def tcpdump_list(lab):
    """tcpdump -D in the capture namespace: [(number, name)]."""
    rows = []
    for line in N.run(["ip", "netns", "exec", lab.cap_ns, "tcpdump", "-D"]).stdout.splitlines():
        number, _, rest = line.partition(".")
        rows.append((int(number), rest.split(" ", 1)[0]))
    return rows


def link_types_for(argv, lab):
    """Which device `ARGV -L -i N` resolves N to, from its 'Data link types
    for NAME' line (tcpdump and xdpcap both write it on stderr, and attach
    nothing); None when it refuses. Also the whole of stderr."""
    cp = N.run(["ip", "netns", "exec", lab.cap_ns] + argv, check_rc=False)
    m = re.search(r"^Data link types for (\S+) ", cp.stderr, re.M)
    return (m.group(1) if m else None), cp.stderr


def by_index(binary, lab, tmp):
    # tcpdump's -i N is the Nth of tcpdump -D, not ifindex N: in this
    # namespace cap0 and cap1 come before lo (ifindex 1). All up: tcpdump
    # refuses an interface that is down.
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "lo", "up"])
    listed = tcpdump_list(lab)
    number = next(n for n, name in listed if name == "cap1")
    ifindex = int(lab.link_info(lab.cap_ns, "cap1")["ifindex"])
    N.check(number != ifindex, "tcpdump -D numbers cap1 otherwise than its ifindex", (number, ifindex))
    ours_d = N.run(["ip", "netns", "exec", lab.cap_ns, binary, "-D"]).stdout.splitlines()
    N.expect([l.split(" ", 1)[0].rstrip(",") for l in ours_d] == [f"{n}.{name}" for n, name in listed],
             "xdpcap -D numbers the interfaces as tcpdump -D", (ours_d, listed))
    for n, name in listed:
        ours, text = link_types_for([binary, "-L", "-i", str(n)], lab)
        theirs, ttext = link_types_for(["tcpdump", "-L", "-i", str(n)], lab)
        if name in ("lo", "any") or name.startswith("cap"):
            want = theirs
            N.expect(theirs == name and ours == want,
                     f"-i {n}: xdpcap takes what tcpdump -i {n} takes ({name})", (ours, text, theirs, ttext))
        else:
            N.expect(ours is None and f"interface {n} is {name}" in text,
                     f"-i {n} ({name}, not a network interface): refused, naming it", text)
    corpus = os.path.join(tmp, "index.pcap")
    frames = N.build_corpus(corpus, 20, seed=30)
    out = os.path.join(tmp, "index.pcapng")
    x = N.Xdpcap(lab, binary, ["-i", str(number), "-w", out])
    x.wait_listening()
    N.check_listening(x, iface="cap1")
    N.log("  info  " + lab.send(corpus, N.cpus()[0], gap_us=300, gen_if="gen1"))
    time.sleep(0.5)
    rc = x.stop(signal.SIGINT)
    N.expect(rc == 0, f"-i {number} (cap1 in tcpdump -D) exits 0", rc)
    N.check_idbs(out, iface="cap1")
    N.check_exact(frames, [r["data"] for r in N.read_capture(out, tmp)],
                  f"-i {number}: every frame sent on gen1 captured exactly once")
    check_clean(lab, lab.cap_ifs, f"after -i {number}")

    # A number that is also an interface's name means that interface.
    N.run(["ip", "-n", lab.cap_ns, "link", "add", str(number), "type", "bridge"])
    try:
        x = N.Xdpcap(lab, binary, ["-i", str(number), "-w", os.path.join(tmp, "named.pcapng")])
        x.wait_listening()
        N.check_listening(x, iface=str(number))
        # A bridge has no native XDP: the default mode receives at tc ingress.
        states = (hooks(lab, str(number)), hooks(lab, "cap1"))
        N.expect(tc_ingress_only(lab, str(number), has_tcx(lab)) and states[1] == [],
                 f"-i {number} with an interface named '{number}': tc ingress on that one, nothing on cap1",
                 states)
        N.expect(x.stop(signal.SIGINT) == 0, "and it exits 0", x.err_lines)
    finally:
        N.run(["ip", "-n", lab.cap_ns, "link", "del", str(number)])


def second_attach_fails(binary, lab, tmp):
    N.run(["ip", "-n", lab.cap_ns, "link", "add", "capbr0", "type", "bridge"])
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "capbr0", "up"])
    out = os.path.join(tmp, "failed.pcapng")
    rc, _out, err = N.run_xdpcap(lab, binary, ["-i", "cap0", "-i", "capbr0", "--xdp-mode", "native",
                                               "-w", out])
    N.log("  info  stderr: " + " | ".join(err))
    N.expect(rc == 1, "a bridge refusing native XDP as second interface: exit 1", rc)
    N.expect(len(err) == 1 and err[0].startswith("xdpcap: ") and "capbr0" in err[0] and "cap0 " not in err[0],
             "one line on stderr, naming the second interface", err)
    N.expect(not os.path.exists(out), "no output file is left behind", out)
    check_clean(lab, ["cap0", "capbr0"], "after the second attach failed")


def one_goes_away(binary, lab, tmp):
    """Last: deleting a pair's generator end takes cap1 with it."""
    x = N.Xdpcap(lab, binary, ["-i", "cap0", "-i", "cap1", "-w", os.path.join(tmp, "gone.pcapng")])
    x.wait_listening()
    time.sleep(0.2)
    N.run(["ip", "-n", lab.gen_ns, "link", "del", "gen1"])
    rc = x.wait(10)
    msgs = N.messages(x.err_lines)
    N.expect(rc == 2 and msgs == ["xdpcap: cap1 went away; capture stopped"],
             "cap1 deleted mid-capture: exit 2 with 'xdpcap: cap1 went away; capture stopped'", (rc, msgs))
    N.expect(N.stderr_count(x.err_lines, "captured") is not None, "the statistics are still printed",
             x.err_lines)
    check_clean(lab, ["cap0"], "after cap1 went away")


def text_with_filter(binary, lab, tmp):
    """Text lines name each interface; the filter runs on both."""
    # Per interface: three ARP frames the filter keeps, three UDP ones it drops.
    for i in range(len(lab.gen_ifs)):
        for kind, seed in (("arp", 40 + i), ("ipv4-udp", 50 + i)):
            N.build_corpus(os.path.join(tmp, f"text-{kind}-{i}.pcap"), 3, kinds=(kind,), seed=seed)
    x = N.Xdpcap(lab, binary, ["-i", "cap0", "-i", "cap1", "arp"])
    x.wait_listening()
    time.sleep(0.2)
    for i, gen_if in enumerate(lab.gen_ifs):
        for kind in ("arp", "ipv4-udp"):
            N.log("  info  " + lab.send(os.path.join(tmp, f"text-{kind}-{i}.pcap"), N.cpus()[0], gap_us=300,
                                        gen_if=gen_if))
    time.sleep(0.5)
    rc = x.stop(signal.SIGINT)
    out = bytes(x.out).decode("utf-8", "replace").splitlines()
    N.log("  info  stdout: " + " | ".join(out))
    N.expect(rc == 0, "text mode on two interfaces with a filter: exit 0", rc)
    # tcpdump -i any's columns: the name in five, then the direction in four.
    line_re = re.compile(r"^\d\d:\d\d:\d\d\.\d{6} (cap\d)  In  ARP, ")
    names = [m.group(1) if m else "?" for m in map(line_re.match, out)]
    N.expect(sorted(names) == ["cap0"] * 3 + ["cap1"] * 3,
             "three ARP lines per interface, each 'capI  In  ' as tcpdump -i any, and nothing the filter rejects", out)
    lines = [m.groups() for m in map(STATS_IFACE_RE.match, x.err_lines) if m]
    N.expect(lines == [("cap0", "3", "3", "0"), ("cap1", "3", "3", "0")],
             "each interface's line: 3 captured, 3 received by filter", lines)


ANY_COUNT = 40  # frames per corpus under -i any
# The bridge's own IGMP reports, sent as it comes up, are left out of both.
ANY_FILTER = ["not", "arp", "and", "not", "igmp"]
LISTENING_ANY = "listening on any, link-type EN10MB (Ethernet), snapshot length 262144 bytes"


def add_bridged_pair(lab):
    """A third pair, cap2 <-> gen2, with cap2 a port of bridge capbr1, which
    has cap2's address: frames from gen2 to it reach the bridge too."""
    ns, gns = lab.cap_ns, lab.gen_ns
    N.run(["ip", "-n", ns, "link", "add", "cap2", "address", "02:00:00:00:ca:03", "type", "veth", "peer",
           "name", "gen2", "address", "02:00:00:00:9e:03", "netns", gns])
    N.run(["ip", "-n", ns, "link", "add", "capbr1", "address", "02:00:00:00:ca:03", "type", "bridge"])
    for n, dev in ((ns, "cap2"), (gns, "gen2"), (ns, "capbr1")):
        lab.sysctl(n, f"net.ipv6.conf.{dev}.disable_ipv6", "1")
    N.run(["ip", "-n", ns, "link", "set", "cap2", "master", "capbr1"])
    for n, dev in ((ns, "cap2"), (gns, "gen2"), (ns, "capbr1"), (ns, "lo")):
        N.run(["ip", "-n", n, "link", "set", dev, "up"])
    for n, dev in ((ns, "cap2"), (gns, "gen2")):
        lab._wait_up(n, dev)


def send_from_capture_side(lab, path, dev):
    """Every frame of path out of dev, sent from inside the capture namespace."""
    p = lab.popen(lab.cap_ns, [N.PYTHON, N.SENDER, "--iface", dev, "--cpu", str(N.cpus()[0]), "--pcap", path,
                               "--gap-us", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _out, err = p.communicate(timeout=N.scaled(30))
    lab.forget(p)
    N.check(p.returncode == 0, f"frames sent out of {dev}", err)


def epb_direction(flags):
    return {1: "In", 2: "Out"}.get((flags or 0) & 3, "?")


def any_frames(out):
    """The file's packets: [(interface name, direction, bytes)]."""
    recs = N.pcapng_records(out)
    names = [i["name"].partition("@")[0] for i in recs["idbs"]]
    return [(names[e["if_id"]], epb_direction(e["flags"]), e["data"]) for e in recs["epbs"]], recs


def tcpdump_any_counts(text):
    """tcpdump -i any's lines (IFACE In|Out ...), counted by interface and direction."""
    counts = collections.Counter()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] in ("In", "Out"):
            counts[(fields[1], fields[2])] += 1
    return counts


def check_any_clean(lab, devs, when):
    """check_clean, but a bridge port is promiscuous by the bridge's doing: its hooks alone."""
    check_clean(lab, [d for d in devs if d != "cap2"], when)
    N.expect(hooks(lab, "cap2") == [], f"{when}: nothing stays attached to cap2 (XDP, tc ingress and egress)",
             hooks(lab, "cap2"))


def any_interfaces(binary, lab, tmp):
    add_bridged_pair(lab)
    devs = ["cap0", "cap1", "cap2", "capbr1", "lo"]
    kinds = tuple(k for k in N.KINDS if not k.startswith("vlan"))
    corpora = {}
    # Each to its receiver's address: tcpdump -i any leaves out frames for
    # other hosts (xdpcap captures them).
    for name, seed, dst in (("gen0", 60, 1), ("gen1", 61, 2), ("gen2", 62, 3), ("out1", 63, 9)):
        path = os.path.join(tmp, f"any-{name}.pcap")
        frames = [f if f[:6] == b"\xff" * 6 else bytes([2, 0, 0, 0, 0xca, dst]) + f[6:]
                  for f in N.build_corpus(path, ANY_COUNT, kinds=kinds, seed=seed)]
        N.write_frames(path, frames)
        corpora[name] = (path, frames)
    kept = {name: [f for f in frames if f[12:14] != b"\x08\x06"] for name, (_p, frames) in corpora.items()}

    dump = lab.popen(lab.cap_ns, ["tcpdump", "-i", "any", "-nn", "-l"] + ANY_FILTER, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    out = os.path.join(tmp, "any.pcapng")
    x = N.Xdpcap(lab, binary, ["-i", "any", "-w", out] + ANY_FILTER)
    x.wait_listening()
    N.expect(LISTENING_ANY in x.err_lines, "-i any: one 'listening on any' line, as tcpdump's", x.err_lines)
    tcx = has_tcx(lab)
    states = {dev: hooks(lab, dev) for dev in devs}
    N.expect(all(tc_ingress_only(lab, dev, tcx) for dev in devs),
             "-i any: every veth, the bridge and lo taken at tc ingress, none with XDP", states)
    promiscuity = {dev: int(lab.link_info(lab.cap_ns, dev).get("promiscuity", -1)) for dev in ("cap0", "cap1")}
    N.expect(promiscuity == {"cap0": 0, "cap1": 0}, "-i any leaves the interfaces unpromiscuous, as tcpdump",
             promiscuity)
    time.sleep(0.3)  # tcpdump's socket is open by now
    for gen_if in ("gen0", "gen1", "gen2"):
        N.log("  info  " + lab.send(corpora[gen_if][0], N.cpus()[0], gap_us=300, gen_if=gen_if))
    send_from_capture_side(lab, corpora["out1"][0], "cap1")
    N.run(["ip", "netns", "exec", lab.cap_ns, "ping", "-c", "3", "-i", "0.2", "-q", "127.0.0.1"])
    time.sleep(0.5)
    rc = x.stop(signal.SIGINT)
    dump.send_signal(signal.SIGINT)
    dump_out, dump_err = dump.communicate(timeout=N.scaled(10))
    lab.forget(dump)
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    N.expect(rc == 0, "-i any: exit 0 after SIGINT", rc)

    frames, recs = any_frames(out)
    ours = collections.Counter((dev, direction) for dev, direction, _d in frames)
    theirs = tcpdump_any_counts(dump_out)
    N.log(f"  info  xdpcap {sorted(ours.items())}; tcpdump {sorted(theirs.items())}")
    N.expect(ours == theirs, "-i any: tcpdump -i any counts the same packets per interface and direction",
             (sorted(ours.items()), sorted(theirs.items()), dump_err[-300:]))
    for (dev, direction), sent in ((("cap0", "In"), "gen0"), (("cap1", "In"), "gen1"), (("cap2", "In"), "gen2"),
                                   (("capbr1", "In"), "gen2"), (("cap1", "Out"), "out1")):
        N.check_exact(kept[sent], [d for n, dr, d in frames if (n, dr) == (dev, direction)],
                      f"-i any: every frame the filter keeps is on {dev} {direction} once, byte for byte")
    N.expect(ours[("lo", "In")] == 6 and ours[("lo", "Out")] == 0,
             "-i any: lo's six ping packets once each, as received", sorted(ours.items()))
    N.expect(all(i["linktype"] == 1 for i in recs["idbs"]), "every IDB is EN10MB", recs["idbs"])
    # cap2 and the bridge above it take each frame on one CPU, one after
    # the other, into the ring every interface shares.
    stamps = [e["ts"] for e in recs["epbs"]]
    N.expect(stamps == sorted(stamps) and not any("written out of order" in l for l in x.err_lines),
             "-i any: the file in time order, frames of interfaces that share a CPU included",
             ([l for l in x.err_lines if "out of order" in l],
              [i for i in range(1, len(stamps)) if stamps[i] < stamps[i - 1]][:5]))
    # Each interface's own statistics line counts exactly its packets.
    in_file = collections.Counter(dev for dev, _dr, _d in frames)
    said = {}
    for line in x.err_lines:
        m = re.match(r"^(\S+): (\d+) packets? captured, (\d+) (?:packets? )?received by filter, (\d+)", line)
        if m:
            said[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    N.expect(all(said.get(dev) == (in_file[dev], in_file[dev], 0) for dev in devs),
             "-i any: each interface's statistics line counts its own packets, captured and received",
             (said, dict(in_file)))
    # Each interface and CPU described where it first carries a packet.
    N.check_readers_agree(out, len(frames))
    blocks = N.pcapng_walk(out)[1]
    first_epb = {}
    for at, (_o, btype, body) in enumerate(blocks):
        if btype == 6:
            first_epb.setdefault(struct.unpack("<I", body[:4])[0], at)
    idb_at = [at for at, (_o, btype, _b) in enumerate(blocks) if btype == 1]
    last_epb = max(first_epb.values())
    # The first up front (libpcap opens no file without one); one that
    # carried none (its packets all filtered out) is described only for its
    # statistics, at the end.
    N.expect(idb_at[0] == 1 and all(idb_at[i] == first_epb[i] - 1 if i in first_epb else idb_at[i] > last_epb
                                    for i in range(1, len(idb_at))),
             "-i any: the first IDB up front, every other just before its interface's first packet",
             (idb_at, first_epb))
    replay = N.run([binary, "-r", out, "-nn"])
    lines = [l for l in replay.stdout.splitlines() if l and not l[0].isspace()]
    N.expect(len(lines) == len(frames) and sum(" lo    In  " in l for l in lines) == 6,
             "xdpcap -r reads the file: a line per packet, with the interface column", replay.stdout[-500:])
    check_any_clean(lab, devs, "after -i any")

    rc, _out, err = N.run_xdpcap(lab, binary, ["-i", "cap0", "-i", "any", "-w", os.path.join(tmp, "no.pcapng")])
    N.expect(rc == 1 and err == ["xdpcap: -i any captures every interface: give it alone, without other -i"],
             "-i any beside another -i: refused in one line", (rc, err))
    check_any_clean(lab, devs, "after -i any was refused")
    ifindex = lab.link_info(lab.cap_ns, "cap1")["ifindex"]
    number = next(n for n, name in tcpdump_list(lab) if name == "cap1")
    rc, _out, err = N.run_xdpcap(lab, binary, ["-i", "cap1", "-i", str(number)])
    N.expect(rc == 1 and err == [f"xdpcap: interface cap1 (ifindex {ifindex}) is given twice with -i"],
             "one interface by name and by number: refused in one line", (rc, err))


def add_pair(lab, cap_if, gen_if):
    """A veth pair cap_if <-> gen_if (in the generator's namespace), up, without IPv6's own packets."""
    N.run(["ip", "-n", lab.cap_ns, "link", "add", cap_if, "type", "veth", "peer", "name", gen_if, "netns",
           lab.gen_ns])
    for n, dev in ((lab.cap_ns, cap_if), (lab.gen_ns, gen_if)):
        lab.sysctl(n, f"net.ipv6.conf.{dev}.disable_ipv6", "1")
        N.run(["ip", "-n", n, "link", "set", dev, "up"])
    lab._wait_up(lab.cap_ns, cap_if)


def wait_line(x, line, timeout):
    """Seconds until xdpcap printed line on stderr; None when it did not within timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if line in x.err_lines:
            return time.monotonic() - start
        time.sleep(0.01)
    return None


def joins(lab, x, path, frames):
    """During x's capture: capj0 created, joins within a second, its frames sent; then deleted."""
    created = time.monotonic()
    N.run(["ip", "-n", lab.cap_ns, "link", "add", "capj0", "type", "veth", "peer", "name", "genj0", "netns",
           lab.gen_ns])
    waited = wait_line(x, "xdpcap: capj0 joined the capture", N.scaled(3))
    joined = None if waited is None else time.monotonic() - created
    N.log(f"  info  capj0 joined {joined} s after its creation")
    N.expect(joined is not None and joined < N.scaled(1.0),
             "-i any: an interface created during the capture joins within a second, with one line",
             (joined, x.err_lines))
    tcx = tcx_count(lab, "capj0", TCX_EGRESS) >= 0  # cap0, which has_tcx asks, is gone
    N.expect(tc_ingress_only(lab, "capj0", tcx), "the joined interface is taken at tc ingress",
             hooks(lab, "capj0"))
    for n, dev in ((lab.cap_ns, "capj0"), (lab.gen_ns, "genj0")):
        lab.sysctl(n, f"net.ipv6.conf.{dev}.disable_ipv6", "1")
        N.run(["ip", "-n", n, "link", "set", dev, "up"])
    lab._wait_up(lab.cap_ns, "capj0")
    N.log("  info  " + lab.send(path, N.cpus()[0], gap_us=300, gen_if="genj0"))
    time.sleep(0.3)
    N.run(["ip", "-n", lab.gen_ns, "link", "del", "genj0"])
    gone = wait_line(x, "xdpcap: capj0 went away; capture goes on", N.scaled(3))
    N.expect(gone is not None, "the joined interface leaves when deleted, with one line", x.err_lines)


def any_comes_and_goes(binary, lab, tmp):
    """Last: cap0 deleted, capmv moved, cap2 renamed during -i any; capj0 created, then deleted."""
    N.run(["ip", "-n", lab.cap_ns, "link", "add", "capmv", "type", "veth", "peer", "name", "genmv", "netns",
           lab.gen_ns])
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "capmv", "up"])
    out = os.path.join(tmp, "any-goes.pcapng")
    path, frames = os.path.join(tmp, "any-goes.pcap"), None
    frames = N.build_corpus(path, 20, kinds=("ipv4-udp",), seed=70)
    join_path = os.path.join(tmp, "any-joins.pcap")
    join_frames = N.build_corpus(join_path, 20, kinds=("ipv4-udp",), seed=71)
    x = N.Xdpcap(lab, binary, ["-i", "any", "-w", out])
    x.wait_listening()
    N.run(["ip", "-n", lab.gen_ns, "link", "del", "gen0"])
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "capmv", "netns", lab.gen_ns])
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "cap2", "down"])
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "cap2", "name", "ren2"])
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "ren2", "up"])
    lab._wait_up(lab.cap_ns, "ren2")
    time.sleep(0.3)
    N.log("  info  " + lab.send(path, N.cpus()[0], gap_us=300, gen_if="gen2"))
    time.sleep(0.5)
    joins(lab, x, join_path, join_frames)
    # A tun device's packets carry no Ethernet header: it is left out, in one line.
    N.run(["ip", "-n", lab.cap_ns, "tuntap", "add", "mode", "tun", "name", "captun0"])
    tun_line = "xdpcap: captun0 left out: its packets carry no Ethernet header"
    N.expect(wait_line(x, tun_line, N.scaled(3)) is not None and not hooks(lab, "captun0"),
             "-i any: a tun created during the capture is left out with one line, nothing attached to it",
             (x.err_lines, hooks(lab, "captun0")))
    N.expect(x.returncode is None, "-i any: the capture goes on after interfaces went away", x.err_lines)
    rc = x.stop(signal.SIGINT)
    msgs = N.messages(x.err_lines)
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    N.expect(rc == 0, "-i any: exit 0 after interfaces went away", rc)
    N.expect("xdpcap: cap0 went away; capture goes on" in msgs
             and "xdpcap: capmv went away (moved to another network namespace); capture goes on" in msgs,
             "a line for the deleted one and one for the moved one", msgs)
    got, recs = any_frames(out)
    on_port = [d for n, dr, d in got if dr == "In" and n == "ren2"]
    N.check_exact(frames, on_port, "frames sent after the others left are captured on the renamed port, "
                                   "under its new name")
    N.expect(any(re.match(r"^ren2: 20 packets captured", l) for l in x.err_lines),
             "the statistics name the renamed port by its new name", x.err_lines)
    N.check_exact(join_frames, [d for n, dr, d in got if dr == "In" and n == "capj0"],
                  "every frame sent on the interface that joined is captured on it, byte for byte")
    N.check_readers_agree(out, len(got))
    N.expect(len(recs["isbs"]) == len(recs["idbs"]), "an ISB for every interface, those that left included",
             (len(recs["isbs"]), len(recs["idbs"])))
    joined_ids = [i for i, idb in enumerate(recs["idbs"]) if idb["name"].startswith("capj0@")]
    received = sum(isb.get("ifrecv", 0) for isb in recs["isbs"] if isb["if_id"] in joined_ids)
    N.expect(joined_ids and received == len(join_frames),
             "the joined interface's statistics blocks count its frames", (joined_ids, recs["isbs"]))
    moved = N.run(["ip", "netns", "exec", lab.gen_ns, "tc", "filter", "show", "dev", "capmv", "ingress"],
                  check_rc=False).stdout.strip()
    tcx_moved = [int(N.run(["ip", "netns", "exec", lab.gen_ns, N.PYTHON, "-c", TCX_QUERY, "capmv", str(t)]).stdout)
                 for t in (TCX_INGRESS, TCX_EGRESS)]
    N.expect(moved == "" and all(n <= 0 for n in tcx_moved),
             "nothing of xdpcap stays on the moved interface (tc filters, tcx)", (moved, tcx_moved))
    check_clean(lab, ["capbr1", "lo"], "after -i any with interfaces gone")
    N.expect(hooks(lab, "ren2") == [], "nothing stays attached to the renamed port", hooks(lab, "ren2"))


def patterns_join(binary, lab, tmp):
    """-i 'capq*' -i ren2: ren2 and capq0, created during the capture, are captured; capx0 is not."""
    out = os.path.join(tmp, "pattern.pcapng")
    corpora = {}
    for gen_if, seed in (("gen2", 80), ("genq0", 81), ("genx0", 82)):
        path = os.path.join(tmp, f"pattern-{gen_if}.pcap")
        corpora[gen_if] = (path, N.build_corpus(path, 10, kinds=("ipv4-udp",), seed=seed))
    x = N.Xdpcap(lab, binary, ["-i", "capq*", "-i", "ren2", "-w", out])
    x.wait_listening()
    add_pair(lab, "capx0", "genx0")
    add_pair(lab, "capq0", "genq0")
    N.expect(wait_line(x, "xdpcap: capq0 joined the capture", N.scaled(3)) is not None,
             "-i PATTERN: an interface it matches joins", x.err_lines)
    N.expect(hooks(lab, "capx0") == [], "-i PATTERN: one it does not match is left alone", hooks(lab, "capx0"))
    for gen_if, (path, _f) in corpora.items():
        N.log("  info  " + lab.send(path, N.cpus()[0], gap_us=300, gen_if=gen_if))
    time.sleep(0.3)
    rc = x.stop(signal.SIGINT)
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    N.expect(rc == 0, "-i PATTERN: exit 0 after SIGINT", rc)
    listening = [l for l in x.err_lines if l.startswith("listening on ")]
    N.expect([l.split(",")[0] for l in listening] == ["listening on capq*", "listening on ren2"],
             "-i PATTERN: a listening line per pattern", listening)
    got, recs = any_frames(out)
    N.expect({n for n, _dr, _d in got} == {"ren2", "capq0"},
             "-i PATTERN: only the interfaces it matches are in the file", sorted({n for n, _dr, _d in got}))
    for dev, gen_if in (("ren2", "gen2"), ("capq0", "genq0")):
        N.check_exact(corpora[gen_if][1], [d for n, dr, d in got if (n, dr) == (dev, "In")],
                      f"-i PATTERN: every frame sent to {dev} captured on it, byte for byte")
    N.check_readers_agree(out, len(got))
    check_clean(lab, ["capq0", "capx0"], "after -i PATTERN")
    N.expect(hooks(lab, "ren2") == [], "after -i PATTERN: nothing stays attached to ren2", hooks(lab, "ren2"))


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab(pairs=2) as lab:
        capture_both(binary, lab, tmp)
        sigkill_both(binary, lab, tmp)
        by_index(binary, lab, tmp)
        text_with_filter(binary, lab, tmp)
        any_interfaces(binary, lab, tmp)
        second_attach_fails(binary, lab, tmp)
        one_goes_away(binary, lab, tmp)
        any_comes_and_goes(binary, lab, tmp)
        patterns_join(binary, lab, tmp)


if __name__ == "__main__":
    N.main(test)
