#!/usr/bin/python3
"""End-to-end: output file rotation (-C, -G, -W, -z) as tcpdump does it.

Usage (root): /usr/bin/python3 tests/e2e/test_rotation.py PATH/TO/xdpcap

0. -C/-G/-W/-z without -w or with -w -, -W or -z without -C or -G, and bad
   values (0, negative, not a number, too large) are refused in one line,
   status 1, before any file is created.
1. -C 1 -W 3 -z LOGGER: about 4 MB of numbered frames (each carries its
   sequence number) from one CPU. Exactly three files ring0 ring1 ring2 are
   left; each is a complete pcapng that tshark (-z expert), capinfos and
   tcpdump -r read; each ends with its own statistics blocks whose
   isb_usrdeliv adds up to that file's packets and isb_ifrecv too (give or
   take the one packet the kernel may be handling at the rotation; tshark
   reads the same counters); the packets of the three files, oldest file first, are exactly
   the last ones sent, with no gap; every frame sent is counted captured.
   The number of files the capture went through is what tcpdump's rule
   (a new file before a packet when the current one is larger than
   1,000,000 bytes) gives for these frames, and LOGGER (a script appending
   its argument to a log) ran once per closed file, the last one at the end
   of the capture. No child of xdpcap is left a
   zombie while it runs.
2. -G 1 -w 'g-%H%M%S.pcapng' while frames arrive for about 2.5 s: several
   files, each named for the second its period began in (the start, or the
   first packet after the last period ran out), its packets all stamped in
   that second, no packet lost or doubled across them.
3. -G 1 -W 2: xdpcap stops by itself after the second file with tcpdump's
   "Maximum file limit reached: 2", status 0, exactly two valid files; the
   packets read after the last file was complete (at least the one that
   would have started a third) are counted on a line of their own, so the
   totals add up: received = captured + dropped + not written.
4. -C 1 where the second file's name is a directory: xdpcap stops by itself,
   status 2, one "xdpcap:" line naming that file, statistics printed and
   consistent; the first file is complete (statistics blocks included) and
   valid for every reader.
"""

import os
import re
import stat
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CPU = N.cpus()[0]
LIMIT = 1_000_000
EPB_OVERHEAD = 64  # block header, fixed fields and options around the padded data


def ipv4_checksum(header):
    total = sum(struct.unpack("!10H", header))
    while total > 0xffff:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def numbered_frames(path, count, size, tag):
    """`count` IPv4/UDP frames of `size` bytes from 198.18.0.0/15, each
    carrying netlab's marker and its sequence number, written to a classic
    pcap; built by hand (scapy takes seconds for thousands)."""
    frames = []
    for seq in range(count):
        payload = N.MARKER + struct.pack("!I", (tag << 16) + seq)
        payload += bytes((seq + i) & 0xff for i in range(size - 42 - len(payload)))
        udp = struct.pack("!HHHH", 40000 + seq % 20000, 9, 8 + len(payload), 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(payload), seq & 0xffff, 0, 64, 17, 0,
                         bytes([198, 18, (seq >> 8) & 0xff, seq & 0xff]), bytes([198, 19, 0, 1]))
        ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
        eth = bytes.fromhex("02000000ca01") + bytes([2, 0, 0x5e, tag & 0xff, (seq >> 8) & 0xff, seq & 0xff]) + b"\x08\x00"
        frames.append(eth + ip + udp + payload)
    N.write_frames(path, frames)
    return frames


def seq_of(frame):
    """The corpus sequence number a frame carries after netlab's marker."""
    at = frame.find(N.MARKER)
    return struct.unpack("!I", frame[at + len(N.MARKER):at + len(N.MARKER) + 4])[0] if at >= 0 else None


def epb_timestamps(path):
    """(seconds, data) of each packet, from the file's own blocks (ns resolution)."""
    out = []
    for e, btype, body in N.pcapng_blocks(path):
        if btype == N.PCAPNG_EPB:
            _if, high, low, caplen, _orig = struct.unpack(e + "IIIII", body[:20])
            out.append((((high << 32) | low) / 1e9, body[20:20 + caplen]))
    return out


def header_size(path):
    """Bytes before the first packet block: section header and interfaces."""
    size = 0
    for _e, btype, body in N.pcapng_blocks(path):
        if btype not in (N.PCAPNG_SHB, N.PCAPNG_IDB):
            break
        size += len(body) + 12
    return size


def check_file(path, what, readers=True, tshark_isbs=False):
    """A complete, valid pcapng: all readers agree; its ISBs count its packets
    (isb_ifrecv too, give or take the one packet the kernel may have been
    handling at the rotation)."""
    recs = N.pcapng_records(path)
    N.expect(not recs["problems"], f"{what}: every block complete and consistent", recs["problems"])
    n = len(recs["epbs"])
    if readers:
        N.check_structure(path)
        N.check_idbs(path)
        N.check_readers_agree(path, n)
    else:  # libpcap at least; the readers' full round is run on the other parts
        N.expect(N.tcpdump_count(path) == n, f"{what}: tcpdump -r reads its {n} packets")
    isbs = recs["isbs"]
    N.expect(len(isbs) >= 1 and len(isbs) == len({i["if_id"] for i in isbs}),
             f"{what}: ends with statistics blocks, one per CPU", isbs)
    blocks = recs["blocks"]
    N.expect(blocks and all(b[1] == N.PCAPNG_ISB for b in blocks[-len(isbs):]),
             f"{what}: the statistics blocks come last")
    delivered = sum(i.get("usrdeliv", 0) for i in isbs)
    N.expect(delivered == n, f"{what}: isb_usrdeliv adds up to the file's {n} packets", isbs)
    received = sum(i.get("ifrecv", 0) for i in isbs)
    N.expect(abs(received - n) <= 1 and all(i.get("osdrop") == 0 for i in isbs),
             f"{what}: isb_ifrecv ({received}) counts the file's {n} packets, none dropped", isbs)
    if tshark_isbs:  # it reads the whole file as one frame: small files only
        tshark = N.tshark_isbs(path)
        N.expect([t["usrdeliv"] for t in tshark] == [i.get("usrdeliv") for i in isbs]
                 and [t["ifrecv"] for t in tshark] == [i.get("ifrecv") for i in isbs],
                 f"{what}: tshark reads the same statistics", (tshark, isbs))
    recs["received"] = received
    return recs


def zombies_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] == "Z" and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def test_ring(binary, lab, tmp):
    corpus = os.path.join(tmp, "ring-corpus.pcap")
    frames = numbered_frames(corpus, 2700, 1514, 31)
    N.log(f"  info  {len(frames)} numbered frames, {sum(map(len, frames))} bytes")
    out_dir = os.path.join(tmp, "ring")
    os.mkdir(out_dir)
    log_path = os.path.join(tmp, "closed.log")
    logger = os.path.join(tmp, "log-closed")
    with open(logger, "w") as f:
        f.write(f"#!/bin/sh\nprintf '%s\\n' \"$1\" >> {log_path}\n")
    os.chmod(logger, 0o755)
    base = os.path.join(out_dir, "ring")
    x = lab.xdpcap(binary, ["-v", "-C", "1", "-W", "3", "-z", logger, "-w", base])
    x.wait_listening()
    N.log("  info  " + lab.send(corpus, CPU))
    time.sleep(N.scaled(0.5))  # the commands run and are collected on the loop's timer
    zombies = zombies_of(x.proc.pid)
    N.expect(not zombies, "no child of xdpcap is left a zombie", zombies)
    rc = x.stop()
    N.expect(rc == 0, "xdpcap exits 0 after SIGINT", x.stderr)
    st = N.final_stats(x.err_lines)
    N.check_stats_identity(st)
    N.expect(st["captured"] == len(frames) and st["dropped"] == 0,
             f"all {len(frames)} frames captured, none dropped", "\n".join(st["lines"]))
    N.expect(not N.messages(x.err_lines), "no error line", x.err_lines)

    names = sorted(os.listdir(out_dir))
    N.check(names == ["ring0", "ring1", "ring2"], "exactly three files ring0 ring1 ring2", names)
    files = [os.path.join(out_dir, n) for n in names]
    got = []
    for path in files:
        recs = check_file(path, os.path.basename(path))
        got.append([r["data"] for r in recs["epbs"]])
    newest = next((i for i in range(3) if got[i] and got[i][-1] == frames[-1]), None)
    N.check(newest is not None, "one file ends with the last frame sent")
    tail = []
    for k in (1, 2, 3):
        tail += got[(newest + k) % 3]
    N.expect(tail == frames[-len(tail):],
             f"the files, oldest first, hold the last {len(tail)} frames sent, in order, no gap",
             f"sequence numbers {[seq_of(f) for f in tail[:3]]} ... {[seq_of(f) for f in tail[-3:]]}")
    N.expect(all(os.path.getsize(files[(newest + k) % 3]) > LIMIT for k in (1, 2)),
             "the two older files were closed once larger than 1,000,000 bytes",
             [os.path.getsize(f) for f in files])

    # tcpdump's rule over every frame sent: how many files the ring went through.
    header = header_size(files[0])
    size, opened = header, 1
    for frame in frames:
        if size > LIMIT:
            opened += 1
            size = header
        size += EPB_OVERHEAD + ((len(frame) + 3) & ~3)
    N.log(f"  info  header {header} bytes; the capture went through {opened} files")
    N.check(opened > 3, "the ring wrapped (more than three files)", opened)
    # -z: once per closed file, in ring order, the last one at exit. The last
    # command may still be running right after xdpcap exits.
    expected = [os.path.join(out_dir, f"ring{i % 3}") for i in range(opened)]
    deadline = time.monotonic() + N.scaled(5)
    logged = []
    while time.monotonic() < deadline:
        logged = open(log_path).read().split() if os.path.exists(log_path) else []
        if len(logged) >= len(expected):
            break
        time.sleep(0.05)
    time.sleep(0.2)
    logged = open(log_path).read().split() if os.path.exists(log_path) else []
    # The commands run in parallel: their lines may come in any order.
    N.expect(sorted(logged) == sorted(expected), f"-z ran once per closed file ({len(expected)} files)",
             f"logged {logged}")


def test_time(binary, lab, tmp):
    corpus = os.path.join(tmp, "time-corpus.pcap")
    frames = numbered_frames(corpus, 250, 200, 32)
    out_dir = os.path.join(tmp, "time")
    os.mkdir(out_dir)
    x = lab.xdpcap(binary, ["-v", "-G", "1", "-w", os.path.join(out_dir, "g-%H%M%S.pcapng")])
    x.wait_listening()
    N.log("  info  " + lab.send(corpus, CPU, gap_us=10_000))
    rc = x.stop()
    N.expect(rc == 0, "xdpcap -G 1 exits 0 after SIGINT", x.stderr)
    names = sorted(os.listdir(out_dir))
    N.log(f"  info  files {names}")
    N.expect(len(names) >= 3, "-G 1 over ~2.5 s of traffic: several files", names)
    N.expect(all(re.fullmatch(r"g-\d{6}\.pcapng", n) for n in names),
             "every name is the pattern formatted by strftime", names)
    got = []
    received = 0
    for name in names:
        path = os.path.join(out_dir, name)
        received += check_file(path, name, readers=name == names[1], tshark_isbs=name == names[1])["received"]
        h, m, s = int(name[2:4]), int(name[4:6]), int(name[6:8])
        start = h * 3600 + m * 60 + s
        stamps = epb_timestamps(path)
        bad = []
        for t, _data in stamps:
            lt = time.localtime(int(t))
            sod = lt.tm_hour * 3600 + lt.tm_min * 60 + lt.tm_sec
            if sod != start:
                bad.append(time.strftime("%H:%M:%S", lt))
        N.expect(not bad, f"{name}: its packets fall in the second it is named for", bad[:5])
        got += [d for _t, d in stamps]
    N.expect(got == frames, "the files hold every frame sent, once, in order",
             f"{len(got)} packets for {len(frames)} frames")
    st = N.final_stats(x.err_lines)
    N.check_stats_identity(st)
    N.expect(received == st["received"] == len(frames),
             f"the files' isb_ifrecv add up to the {len(frames)} packets received", (received, st["lines"]))
    stamps = [epb_timestamps(os.path.join(out_dir, n)) for n in names]
    for earlier, later, name in zip(stamps, stamps[1:], names[1:]):
        if earlier and later:
            N.expect(int(later[0][0]) >= int(earlier[-1][0]) + 1,
                     f"{name} starts in a later second than the file before ends")


def test_time_limit(binary, lab, tmp):
    corpus = os.path.join(tmp, "limit-corpus.pcap")
    numbered_frames(corpus, 250, 200, 33)
    out_dir = os.path.join(tmp, "limit")
    os.mkdir(out_dir)
    x = lab.xdpcap(binary, ["-v", "-G", "1", "-W", "2", "-w", os.path.join(out_dir, "l-%H%M%S")])
    x.wait_listening()
    N.log("  info  " + lab.send(corpus, CPU, gap_us=10_000))
    rc, _ = N.wait_exit(x.proc, 2)
    if rc is None:
        x.stop()
    else:
        x.wait()
    N.expect(rc == 0, "xdpcap -G 1 -W 2 stops by itself with status 0", x.stderr)
    N.expect("Maximum file limit reached: 2" in x.err_lines, "tcpdump's 'Maximum file limit reached: 2'",
             x.err_lines)
    st = N.final_stats(x.err_lines)
    N.check_stats_identity(st)
    after = sum(c["after_count"] for c in st["cpus"].values())
    N.expect(st["after_end"] == after >= 1,
             f"'{after} packets not written: the last file of -W was complete' counts the packets read after "
             "the end", st["lines"])
    N.expect(st["received"] == st["captured"] + st["dropped"] + st["not_written"] + st["malformed"]
             + st["after_end"], "the totals' lines alone add up", st["lines"])
    names = sorted(os.listdir(out_dir))
    N.expect(len(names) == 2, "exactly two files", names)
    total = 0
    for name in names:
        total += len(check_file(os.path.join(out_dir, name), name, readers=False)["epbs"])
    N.expect(total == st["captured"], f"the two files hold the {st['captured']} packets captured", total)


def test_cannot_create(binary, lab, tmp):
    corpus = os.path.join(tmp, "fail-corpus.pcap")
    frames = numbered_frames(corpus, 1500, 1514, 34)
    out_dir = os.path.join(tmp, "fail")
    os.mkdir(out_dir)
    first = os.path.join(out_dir, "f")
    blocker = os.path.join(out_dir, "f1")
    os.mkdir(blocker)  # the second file's name
    x = lab.xdpcap(binary, ["-v", "-C", "1", "-w", first])
    x.wait_listening()
    N.log("  info  " + lab.send(corpus, CPU))
    rc, _ = N.wait_exit(x.proc, 5)
    if rc is None:
        x.stop()
    else:
        x.wait()
    N.expect(rc == 2, "xdpcap stops by itself with status 2 when the next file cannot be created",
             f"status {rc}; {x.stderr}")
    msgs = N.messages(x.err_lines)
    N.expect(len(msgs) == 1 and blocker in msgs[0] and "Is a directory" in msgs[0],
             "exactly one 'xdpcap:' line, naming the file it could not create", msgs)
    st = N.final_stats(x.err_lines)
    N.check(st is not None, "statistics printed after the failure", x.stderr)
    N.check_stats_identity(st)
    N.expect(stat.S_ISDIR(os.stat(blocker).st_mode) and sorted(os.listdir(out_dir)) == ["f", "f1"],
             "no other file was created", os.listdir(out_dir))
    recs = check_file(first, "the file written before the failure")
    n = len(recs["epbs"])
    N.expect(n == st["captured"] and [r["data"] for r in recs["epbs"]] == frames[:n],
             f"it holds the first {st['captured']} frames sent ('packets captured'), in order", n)
    N.expect(st["captured"] + st["not_written"] <= len(frames) and st["not_written"] > 0,
             "the packets after the failure are counted as not written", "\n".join(st["lines"]))
    N.expect(os.path.getsize(first) > LIMIT, "the first file was full when the next was due")


def test_refusals(binary, lab, tmp):
    out = os.path.join(tmp, "refused.pcapng")
    cases = [(["-C", "1"], "-C cannot be used without -w FILE"),
             (["-G", "1"], "-G cannot be used without -w FILE"),
             (["-W", "2"], "-W cannot be used without -w FILE"),
             (["-z", "gzip"], "-z cannot be used without -w FILE"),
             (["-C", "1", "-w", "-"], "standard output"),
             (["-G", "1", "-w", "-"], "standard output"),
             (["-W", "2", "-w", out], "-W cannot be used without -C or -G"),
             (["-z", "gzip", "-w", out], "-z cannot be used without -C or -G"),
             (["-C", "0", "-w", out], "invalid file size"),
             (["-C", "-3", "-w", out], "invalid file size"),
             (["-C", "lots", "-w", out], "invalid file size"),
             (["-C", "99999999999999999999", "-w", out], "invalid file size"),
             (["-C", "9999999999999g", "-w", out], "invalid file size"),
             (["-G", "0", "-w", out], "invalid number of seconds"),
             (["-G", "-1", "-w", out], "invalid number of seconds"),
             (["-G", "2147483648", "-w", out], "invalid number of seconds"),
             (["-C", "1", "-W", "0", "-w", out], "invalid number of files"),
             (["-C", "1", "-W", "x", "-w", out], "invalid number of files")]
    for args, message in cases:
        rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if] + args)
        N.expect(rc == 1 and len(err) == 1 and err[0].startswith("xdpcap: ") and message in err[0],
                 f"{' '.join(args)}: refused in one line saying '{message}', status 1", (rc, err))
    N.expect(not os.path.exists(out), "no file was created by a refused command line")


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        for part in (test_refusals, test_ring, test_time, test_time_limit, test_cannot_create):
            t0 = time.monotonic()
            part(binary, lab, tmp)
            N.log(f"  info  {part.__name__} took {time.monotonic() - t0:.1f} s")
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test)
