#!/usr/bin/python3
"""End-to-end: -Z and the capability drop.

Usage (root): /usr/bin/python3 tests/e2e/test_privileges.py PATH/TO/xdpcap

  * -Z with an unknown user: one "xdpcap: " line, exit 1, no output file,
    nothing attached (the user is checked before anything is);
  * -Z nobody -w FILE: during the capture /proc/PID/status shows nobody's
    uid and gid, no capability in any set (CapEff, CapPrm, CapInh, CapAmb 0)
    and NoNewPrivs 1; the file was created by nobody and belongs to it;
    every frame sent is in it, SIGINT drains and ends with exit 0,
    statistics and ISBs, and nothing stays attached (where egress goes
    through clsact, on kernels without tcx, only CAP_NET_ADMIN stays
    permitted, as below);
  * -Z nobody -w in a directory only root may write (also with -C, -W): the
    file is opened as nobody, so one "Permission denied" line, exit 1,
    nothing created, nothing attached; a file that cannot be opened is one
    line, exit 1, nothing attached;
  * a symbolic link to a root-only file at the output's name, planted in a
    directory nobody owns: without -Z, with -Z nobody, and as -C -W's first
    file, one line naming the link and exit 1, nothing attached; as -C's
    second file, the capture stops with that line and status 2; the link's
    target is never written or given away;
  * -r as root, while xdpcap blocks reading a FIFO or standard input: the
    reading process (with -w, the child that reads) runs as the default
    unprivileged user (xdpcap, else nobody) or -Z's, with CapEff, CapPrm,
    CapInh, CapAmb and CapBnd 0 and NoNewPrivs 1, and prints or copies every
    packet; a -w copy is renamed into place, also in a directory only root
    may write, by the waiting parent, which keeps only CAP_DAC_OVERRIDE and
    CAP_FOWNER (NoNewPrivs 1), and no temporary is left;
  * -Z nobody on the clsact egress path (forced as on kernels without tcx):
    only CAP_NET_ADMIN stays, permitted but not effective, and the filter and
    qdisc are gone after exit;
  * -Z nobody on an interface that is down at the start: once it comes up
    (after the drop) the frames are captured;
  * without -Z: still root, but no capability left during the capture; the
    capture works to the end.
"""

import os
import pwd
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

COUNT = 200
CAP_NET_ADMIN = 12
CAP_DAC_OVERRIDE = 1
CAP_FOWNER = 3


def status_of(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    return fields


def caps(fields, name):
    return int(fields[name].strip(), 16)


def check_process(x, what, uid, gid, permitted):
    pid = x.proc.pid
    with open(f"/proc/{pid}/comm") as f:
        comm = f.read().strip()
    N.check(comm.startswith("xdpcap"), f"{what}: process {pid} is xdpcap ({comm})")
    st = status_of(pid)
    N.log(f"  info  {what}: Uid {st['Uid']} Gid {st['Gid']} CapInh {st['CapInh']} CapPrm {st['CapPrm']} "
          f"CapEff {st['CapEff']} CapAmb {st.get('CapAmb')} NoNewPrivs {st.get('NoNewPrivs')}")
    N.expect(st["Uid"].split() == [str(uid)] * 4, f"{what}: real, effective, saved and fs uid are {uid}",
             st["Uid"])
    N.expect(st["Gid"].split() == [str(gid)] * 4, f"{what}: every gid is {gid}", st["Gid"])
    N.expect(caps(st, "CapEff") == 0, f"{what}: no effective capability (CapEff 0)", st["CapEff"])
    N.expect(caps(st, "CapPrm") == permitted, f"{what}: CapPrm is {permitted:#x}", st["CapPrm"])
    N.expect(caps(st, "CapInh") == 0 and caps(st, "CapAmb") == 0,
             f"{what}: nothing inheritable or ambient", (st["CapInh"], st["CapAmb"]))
    N.expect(st.get("NoNewPrivs", "").strip() == "1", f"{what}: NoNewPrivs 1", st.get("NoNewPrivs"))


def tc_egress_state(lab):
    filters = N.run(["ip", "netns", "exec", lab.cap_ns, "tc", "filter", "show", "dev", lab.cap_if,
                     "egress"], check_rc=False).stdout.strip()
    qdiscs = N.run(["ip", "netns", "exec", lab.cap_ns, "tc", "qdisc", "show", "dev", lab.cap_if]).stdout
    return filters, "clsact" in qdiscs


def uses_clsact(out, what):
    """The interface descriptions (written before the listening line) say how
    egress is hooked: only the clsact fallback keeps CAP_NET_ADMIN."""
    clsact = "clsact egress" in " ".join(i["description"] or "" for i in N.pcapng_idbs(out))
    N.log(f"  info  {what}: egress through {'clsact' if clsact else 'tcx'}")
    return clsact


def capture(lab, binary, tmp, corpus, frames, what, args, out, uid, gid, env=None):
    argv = [binary, "-i", lab.cap_if, "-v", "-w", out] + args
    x = N.Xdpcap(lab, binary, [], argv=argv if env is None else ["env"] + env + argv)
    x.wait_listening()
    clsact = uses_clsact(out, what)
    if env:
        N.check(clsact, f"{what}: egress goes through clsact")
    permitted = (1 << CAP_NET_ADMIN) if clsact else 0
    check_process(x, what, uid, gid, permitted)
    st = os.stat(out)
    N.expect((st.st_uid, st.st_gid) == (uid, gid), f"{what}: the output file belongs to {uid}:{gid}",
             (st.st_uid, st.st_gid))
    N.log("  info  " + lab.send(corpus, N.cpus()[0], gap_us=200))
    time.sleep(0.3)
    # Still without privileges after the traffic, just before the drain.
    check_process(x, what + " (after the traffic)", uid, gid, permitted)
    rc = x.stop(signal.SIGINT)
    N.log("  info  stderr: " + " | ".join(x.err_lines))
    N.expect(rc == 0, f"{what}: exit 0 after SIGINT", f"status {rc}")
    N.expect(not N.messages(x.err_lines), f"{what}: no error or warning line",
             x.err_lines)
    st = N.final_stats(x.err_lines)
    N.check(st is not None, f"{what}: final statistics printed")
    N.check_stats_identity(st, what)
    rows = N.read_capture(out, tmp)
    got = [r["data"] for r in rows]
    received = [f for f in frames]
    N.check_exact(received, got, f"{what}: every frame sent captured once, byte-exact")
    recs = N.pcapng_records(out)
    N.expect(not recs["problems"] and recs["isbs"], f"{what}: the drain wrote the statistics blocks",
             recs["problems"])
    N.check_isbs_match_stats(recs, st, f"{what}: ISBs")
    lab.assert_clean(f"{what}: no XDP program remains attached to cap0")


def victim_file(tmp):
    """A file only root may read or write, in a directory only root may write."""
    safe = os.path.join(tmp, "root-safe")
    os.makedirs(safe, 0o755, exist_ok=True)
    victim = os.path.join(safe, "victim")
    with open(victim, "w") as f:
        f.write("root's own\n")
    os.chmod(victim, 0o600)
    return victim


def victim_untouched(victim, what):
    st = os.stat(victim)
    with open(victim) as f:
        content = f.read()
    N.expect(content == "root's own\n" and (st.st_uid, st.st_gid) == (0, 0),
             f"{what}: the link's target is untouched and still root's", (content, st.st_uid, st.st_gid))


def symlinks(lab, binary, tmp, corpus, nobody):
    """A symbolic link at the output's name, planted in a directory nobody
    owns: never followed, with or without -Z, for the first file and for a
    later one of -C."""
    victim = victim_file(tmp)
    planted = os.path.join(tmp, "nobodys")
    os.mkdir(planted, 0o755)
    os.chown(planted, nobody.pw_uid, nobody.pw_gid)
    for args, name in (([], "cap.pcapng"), (["-Z", "nobody"], "cap.pcapng"),
                       (["-Z", "nobody", "-C", "1k", "-W", "3"], "cap.pcapng0")):
        link = os.path.join(planted, name)
        os.symlink(victim, link)
        os.lchown(link, nobody.pw_uid, nobody.pw_gid)
        what = f"{' '.join(args) or 'no -Z'}: a symbolic link at the output's name"
        rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if, "-c", "1", "-w",
                                                   os.path.join(planted, "cap.pcapng")] + args)
        N.expect(rc == 1 and len(err) == 1 and err[0] == f"xdpcap: cannot write {link}: it is a symbolic link, "
                 "which xdpcap does not follow", f"{what}: one line naming the link, exit 1", (rc, err))
        victim_untouched(victim, what)
        N.expect(lab.xdp_state() == "", f"{what}: nothing attached", lab.xdp_state())
        os.unlink(link)
    # The second file of -C: the capture has begun, so it stops with status 2.
    link = os.path.join(planted, "rot1")
    os.symlink(victim, link)
    os.lchown(link, nobody.pw_uid, nobody.pw_gid)
    what = "-Z nobody -C 1k: a symbolic link at the second file's name"
    x = lab.xdpcap(binary, ["-Z", "nobody", "-C", "1k", "-w", os.path.join(planted, "rot")])
    x.wait_listening()
    N.log("  info  " + lab.send(corpus, N.cpus()[0]))
    rc, _ = N.wait_exit(x.proc, 5)
    if rc is None:
        x.stop()
    else:
        x.wait()
    msgs = N.messages(x.err_lines)
    N.expect(rc == 2 and len(msgs) == 1 and msgs[0] == f"xdpcap: cannot create {link}: it is a symbolic link, "
             "which xdpcap does not follow", f"{what}: the capture stops with one line naming it, status 2",
             (rc, msgs))
    victim_untouched(victim, what)
    N.expect(sorted(os.listdir(planted)) == ["rot", "rot1"], f"{what}: no other file", os.listdir(planted))
    lab.assert_clean(f"{what}: nothing attached after exit")


def reader_status(pid, what):
    """/proc/PID/status of xdpcap reading a file, once it has changed user."""
    deadline = time.monotonic() + N.scaled(5)
    while True:
        st = status_of(pid)
        if st["Uid"].split()[0] != "0" or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    N.log(f"  info  {what}: Uid {st['Uid']} CapEff {st['CapEff']} CapPrm {st['CapPrm']} CapInh {st['CapInh']} "
          f"CapAmb {st.get('CapAmb')} CapBnd {st['CapBnd']} NoNewPrivs {st.get('NoNewPrivs')}")
    return st


def check_reader(pid, what, uid):
    with open(f"/proc/{pid}/comm") as f:
        N.check(f.read().startswith("xdpcap"), f"{what}: process {pid} is xdpcap")
    st = reader_status(pid, what)
    N.expect(st["Uid"].split() == [str(uid)] * 4, f"{what}: every uid is {uid}", st["Uid"])
    for name in ("CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd"):
        N.expect(caps(st, name) == 0, f"{what}: {name} 0", st[name])
    N.expect(st.get("NoNewPrivs", "").strip() == "1", f"{what}: NoNewPrivs 1", st.get("NoNewPrivs"))


def check_renamer(pid, what):
    """The parent that waits to rename the copy keeps only what a rename
    takes: CAP_DAC_OVERRIDE and CAP_FOWNER."""
    deadline = time.monotonic() + N.scaled(5)
    while status_of(pid).get("NoNewPrivs", "").strip() != "1" and time.monotonic() < deadline:
        time.sleep(0.01)
    st = status_of(pid)
    keep = (1 << CAP_DAC_OVERRIDE) | (1 << CAP_FOWNER)
    N.expect(caps(st, "CapEff") == caps(st, "CapPrm") == caps(st, "CapBnd") == keep and
             st.get("NoNewPrivs", "").strip() == "1",
             f"{what}: the waiting parent keeps CAP_DAC_OVERRIDE and CAP_FOWNER alone, NoNewPrivs 1",
             (st["CapEff"], st["CapPrm"], st["CapBnd"], st.get("NoNewPrivs")))


def reading_child(pid):
    deadline = time.monotonic() + N.scaled(5)
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = f.read().split()
        if children:
            return int(children[0])
        time.sleep(0.01)
    N.check(False, f"xdpcap {pid} started a reading process")


def reading(binary, tmp, corpus, nobody):
    """-r as root: the file is opened, then parsed by a process without any
    privilege, while xdpcap blocks reading a FIFO (or standard input) that
    has no data yet: the default user, or -Z's."""
    try:
        default = pwd.getpwnam("xdpcap")
    except KeyError:
        default = nobody
    with open(corpus, "rb") as f:
        data = f.read()
    want = N.run(["tcpdump", "-n", "-r", corpus]).stdout.count("\n")
    fifo = os.path.join(tmp, "input.fifo")
    os.mkfifo(fifo)
    private = os.path.join(tmp, "root-only-read")
    os.mkdir(private, 0o700)
    # Without -Z the copy is root's, renamed into place in a directory only
    # root may write; with -Z, nobody creates it.
    cases = ((["-r", fifo, "-n"], default.pw_uid, None, None),
             (["-r", "-", "-w", os.path.join(private, "copy.pcapng")], default.pw_uid, subprocess.PIPE, 0),
             (["-r", fifo, "-Z", "nobody", "-w", os.path.join(tmp, "z-copy.pcapng")], nobody.pw_uid, None,
              nobody.pw_uid))
    for args, uid, stdin, owner in cases:
        what = "xdpcap " + " ".join(args)
        p = subprocess.Popen([binary] + args, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            writer = open(fifo, "wb") if stdin is None else None
            reader = reading_child(p.pid) if "-w" in args else p.pid
            check_reader(reader, what, uid)
            if reader != p.pid:
                check_renamer(p.pid, what)
            if writer:
                writer.write(data)
                writer.close()
            stdout, stderr = p.communicate(input=None if writer else data, timeout=N.scaled(10))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        N.expect(p.returncode == 0, f"{what}: exit 0", (p.returncode, stderr[-300:]))
        if "-w" in args:
            out = args[-1]
            N.expect(N.capinfos_count(out) == want and os.stat(out).st_uid == owner,
                     f"{what}: all {want} packets in the copy, created by uid {owner} and renamed into place",
                     (N.capinfos_count(out), os.stat(out).st_uid))
            N.expect(not [n for n in os.listdir(os.path.dirname(out)) if ".xdpcap-" in n],
                     f"{what}: no temporary left", os.listdir(os.path.dirname(out)))
        else:
            N.expect(stdout.count(b"\n") == want, f"{what}: a line per packet", stdout.count(b"\n"))


def test(binary):
    nobody = pwd.getpwnam("nobody")
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        # nobody must be able to create the file there.
        os.chmod(tmp, 0o777)
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, COUNT, seed=31)

        # Unknown user: refused before anything is attached.
        bad_user = "xdpcapt-no-such-user"
        out = os.path.join(tmp, "never.pcapng")
        rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if, "-Z", bad_user, "-w", out])
        N.expect(rc == 1, "unknown -Z user: exit 1", rc)
        N.expect(len(err) == 1 and err[0].startswith("xdpcap: ") and bad_user in err[0],
                 "unknown -Z user: one 'xdpcap: ' line naming the user", err)
        N.expect(not os.path.exists(out), "unknown -Z user: no output file")
        N.expect(lab.xdp_state() == "", "unknown -Z user: nothing attached", lab.xdp_state())

        # -Z nobody: the file is created by nobody, and belongs to it.
        capture(lab, binary, tmp, corpus, frames, "-Z nobody -w", ["-Z", "nobody"],
                os.path.join(tmp, "x.pcapng"), nobody.pw_uid, nobody.pw_gid)
        # A directory only root may write: the file is opened as nobody, who
        # may not create it there, with -C too; nothing is created.
        private = os.path.join(tmp, "root-only")
        os.mkdir(private, 0o755)
        for args in ([], ["-C", "1k"], ["-C", "1k", "-W", "2"]):
            what = f"-Z nobody {' '.join(args)} -w in a root-only directory"
            rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if, "-Z", "nobody", "-w",
                                                       os.path.join(private, "x.pcapng")] + args)
            N.expect(rc == 1 and len(err) == 1 and "Permission denied" in err[0],
                     f"{what}: one 'Permission denied' line, exit 1", (rc, err))
            N.expect(os.listdir(private) == [], f"{what}: nothing created", os.listdir(private))
            N.expect(lab.xdp_state() == "", f"{what}: nothing attached", lab.xdp_state())
        symlinks(lab, binary, tmp, corpus, nobody)
        reading(binary, tmp, corpus, nobody)
        # A file that cannot be opened: one line, exit 1, nothing attached.
        rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if, "-Z", "nobody", "-w",
                                                   os.path.join(tmp, "no-such-dir", "x.pcapng")])
        N.expect(rc == 1 and len(err) == 1 and "No such file or directory" in err[0],
                 "-Z nobody -w in a missing directory: one 'No such file or directory' line, exit 1", (rc, err))
        N.expect(lab.xdp_state() == "", "-Z nobody -w in a missing directory: nothing attached", lab.xdp_state())

        # -Z nobody with egress through clsact: CAP_NET_ADMIN kept, not effective.
        capture(lab, binary, tmp, corpus, frames, "-Z nobody, clsact egress", ["-Z", "nobody"],
                os.path.join(tmp, "clsact.pcapng"), nobody.pw_uid, nobody.pw_gid,
                env=["XDPCAP_TEST_NO_TCX=1"])
        filters, has_clsact = tc_egress_state(lab)
        N.expect(not filters and not has_clsact,
                 "-Z nobody, clsact egress: the filter and the qdisc are removed at exit", filters)

        # An interface that is down at the start comes up after the drop: the
        # programs are attached already, nothing needs a privilege.
        N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "down"])
        out = os.path.join(tmp, "down.pcapng")
        x = lab.xdpcap(binary, ["-Z", "nobody", "-w", out])
        x.wait_listening()
        check_process(x, "-Z nobody, interface down", nobody.pw_uid, nobody.pw_gid,
                      (1 << CAP_NET_ADMIN) if uses_clsact(out, "-Z nobody, interface down") else 0)
        N.run(["ip", "-n", lab.cap_ns, "link", "set", "dev", lab.cap_if, "up"])
        lab._wait_up(lab.cap_ns, lab.cap_if)
        N.log("  info  " + lab.send(corpus, N.cpus()[0], gap_us=200))
        time.sleep(0.3)
        rc = x.stop(signal.SIGINT)
        N.expect(rc == 0, "-Z nobody, interface down: exit 0 after SIGINT", (rc, x.err_lines))
        N.check_exact(frames, [r["data"] for r in N.read_capture(out, tmp)],
                      "-Z nobody, interface down at the start: once up, every frame is captured")
        lab.assert_clean("-Z nobody, interface down: nothing attached after exit")

        # No -Z: still root, but without capabilities.
        capture(lab, binary, tmp, corpus, frames, "no -Z", [],
                os.path.join(tmp, "root.pcapng"), 0, 0)


if __name__ == "__main__":
    N.main(test)
