#!/usr/bin/python3
"""End-to-end: more bad input and setup failures (beyond test_bad_input.py).

Usage (root): /usr/bin/python3 tests/e2e/test_bad_input_more.py PATH/TO/xdpcap

For each case: exit status 1, exactly one stderr line starting with "xdpcap: ",
nothing on stdout, no crash/stack trace, no raw errno number in the message
(no "errno", "error 30", "-13", "...: 30" or "(30)": errors are spelled out),
nothing attached to cap0, no output file left behind.  Cases:
  * -w into a read-only file system (a tmpfs mounted ro; unmounted at the end)
    -> the message says "Read-only file system"; and an existing file there
    (tmpfs remounted ro after creating it) is left untouched;
  * interface names the kernel cannot have: 16 and 20 characters (the limit is
    15), containing '/', ':' or a space, and the empty name;
  * a process selection that can never match: --pid of no process, a
    --pname of 28 characters (the kernel keeps 15), a --cgroup that does
    not exist;
  * --ring-pages 1 with the default snapshot length -> the message says the
    ring is too small, and says "1 page"; while `-s 64 --ring-pages 1` (4 KiB
    rings hold a record) and the man page's `-B 100` are accepted and capture
    (positive controls);
  * as user nobody with only CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON (no
    CAP_IPC_LOCK) and a 4 MiB locked-memory limit (capsh, ulimit -l): an
    explicit --ring-pages 4096 (16 MiB per CPU) fails with a message about the
    locked-memory limit, while the default ring size shrinks until it fits and
    captures every frame; under a 512 KiB limit it is refused rather than
    shrunk below two of the longest frames' records, and with -s 1500 it
    shrinks further and captures. (Another user than root, because the kernel charges
    every perf ring of a user to that user: rings of tests running in
    parallel as root would count against the limit.)
"""

import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CRASH_RE = re.compile(r"terminate called|what\(\):|Aborted|Segmentation|core dumped|"
                      r"Traceback|#\d+\s+0x[0-9a-f]+|AddressSanitizer|runtime error", re.I)
# A raw errno: "errno", "error 30", "err=-30", a negative number, a number in
# parentheses or a number ending the message after a colon.
RAW_ERRNO_RE = re.compile(r"\berrno\b|\berr(or)?\s*[=:]?\s*-?\d+\b|(^|[\s:(=,])-\d+\b|"
                          r"\(\s*-?\d+\s*\)|:\s*-?\d+\s*$", re.I)


def check_failure(lab, desc, argv, *, msg_re=None, absent=None):
    shown = " ".join(repr(a) if not a or " " in a else a for a in argv[1:])
    N.log(f"  --    {desc}: xdpcap {shown}")
    x = N.Xdpcap(lab, None, [], argv=argv)
    rc = x.wait(timeout=10)
    err = [l for l in x.err_lines if l.strip()]
    out = bytes(x.out).decode("utf-8", "replace")
    line = err[0] if err else ""
    N.log(f"        stderr: {err}")
    N.expect(rc == 1, f"{desc}: exit status 1", f"status {rc}")
    N.expect(len(err) == 1 and line.startswith("xdpcap: "),
             f"{desc}: exactly one stderr line, starting with 'xdpcap: '", err)
    N.expect(not out, f"{desc}: nothing on stdout", out[:200])
    N.expect(not CRASH_RE.search(x.stderr + out), f"{desc}: no crash or stack trace", x.stderr)
    N.expect(not any(RAW_ERRNO_RE.search(l) for l in err),
             f"{desc}: no raw errno number in the message", err)
    if msg_re is not None:
        N.expect(re.search(msg_re, line, re.I) is not None,
                 f"{desc}: message matches /{msg_re}/", line)
    if absent is not None:
        N.expect(not os.path.lexists(absent), f"{desc}: no output file left ({absent})")
    lab.assert_clean(f"{desc}: nothing attached to cap0", timeout=1.0)
    return line


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, \
            N.Tmpfs("1m", ro=True) as ro_fs, N.Tmpfs("1m") as remount_fs, N.NetLab() as lab:
        ok_out = os.path.join(tmp, "ok.pcapng")

        def xd(*args):
            return [binary] + list(args)

        # --- read-only file system
        N.check(N.mounted_at(ro_fs.path), f"read-only tmpfs mounted on {ro_fs.path}")
        ro_file = os.path.join(ro_fs.path, "x.pcapng")
        check_failure(lab, "-w into a read-only file system",
                      xd("-i", "cap0", "-w", ro_file), msg_re=r"Read-only file system",
                      absent=ro_file)
        # An existing file on a file system remounted read-only stays as it was.
        keep = os.path.join(remount_fs.path, "existing.pcapng")
        content = b"precious data, not a capture\n"
        with open(keep, "wb") as f:
            f.write(content)
        os.utime(keep, (1_000_000_000, 1_000_000_000))
        N.run(["mount", "-o", "remount,ro", remount_fs.path])
        check_failure(lab, "-w to an existing file on a read-only file system",
                      xd("-i", "cap0", "-w", keep), msg_re=r"Read-only file system")
        st = os.stat(keep)
        with open(keep, "rb") as f:
            now = f.read()
        N.expect(now == content and int(st.st_mtime) == 1_000_000_000,
                 "the existing file is untouched", f"{now[:60]!r}, mtime {st.st_mtime}")

        # --- interface names the kernel cannot have
        long16 = "a" * 16
        long20 = "cap0-" + "x" * 15
        for desc, name, rx in (
                ("interface name of 16 characters", long16, r"too long|15"),
                ("interface name of 20 characters", long20, r"too long|15"),
                ("interface name with a slash", "cap0/x", r"cap0/x"),
                ("interface name with a colon", "cap0:1", r"cap0:1"),
                ("interface name with a space", "cap 0", r"cap 0"),
                ("empty interface name", "", r"interface")):
            out = os.path.join(tmp, "name.pcapng")
            check_failure(lab, desc, xd("-i", name, "-w", out), msg_re=rx, absent=out)

        # --- a process selection that can never match, refused before anything is attached
        gone = next(p for p in range(999999, 4000000, 7919) if not os.path.exists(f"/proc/{p}"))
        out = os.path.join(tmp, "proc.pcapng")
        for desc, args, rx in (
                ("--pid of no process", ["--pid", str(gone)], rf"^xdpcap: --pid {gone}: no such process$"),
                ("--pname of 28 characters", ["--pname", "xdpcap-twenty-eight-chars-xx"],
                 r"^xdpcap: --pname xdpcap-twenty-eight-chars-xx: longer than the 15 bytes the kernel keeps "
                 r"of a command name \(xdpcap-twenty-e\)$"),
                ("--cgroup that does not exist", ["--cgroup", "/xdpcap-no-such-cgroup"],
                 r"xdpcap-no-such-cgroup")):
            check_failure(lab, desc, xd("-i", "cap0", "-w", out, *args), msg_re=rx, absent=out)

        # --- ring too small for the snapshot length
        out = os.path.join(tmp, "ring.pcapng")
        line = check_failure(lab, "--ring-pages 1 with the default snapshot length",
                             xd("-i", "cap0", "--ring-pages", "1", "-w", out),
                             msg_re=r"too small", absent=out)
        N.expect("ring" in line.lower(), "the message is about the ring size", line)
        check_failure(lab, "-s 4096 --ring-pages 1 (a 4 KiB record does not fit)",
                      xd("-i", "cap0", "-s", "4096", "--ring-pages", "1", "-w", out),
                      msg_re=r"too small.*record", absent=out)
        check_failure(lab, "--ring-pages 1 says '1 page'", xd("-i", "cap0", "--ring-pages", "1", "-w", out),
                      msg_re=r"\(1 page per CPU\)", absent=out)

        # --- positive control: a small snaplen fits a 4 KiB ring
        N.log("  --    positive control: -s 64 --ring-pages 1")
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, 20, seed=81)
        x = lab.xdpcap(binary, ["-s", "64", "--ring-pages", "1", "-w", ok_out])
        x.wait_listening()
        lab.send(corpus, N.cpus()[0], gap_us=500)
        time.sleep(0.3)
        rc = x.stop(signal.SIGINT)
        N.expect(rc == 0, "-s 64 --ring-pages 1: accepted, exits 0 on SIGINT",
                 f"{rc}: {x.stderr}")
        st = N.final_stats(x.err_lines)
        N.expect(st is not None and st["captured"] == len(frames),
                 f"-s 64 --ring-pages 1: {len(frames)} packets captured",
                 st["lines"] if st else x.stderr)
        lab.assert_clean()

        # --- the man page's example: -B 100 (16 pages of 4 KiB) with the
        # default snapshot length holds a whole record, as tcpdump's -B 100 works
        N.log("  --    -B 100 with the default snapshot length")
        x = lab.xdpcap(binary, ["-B", "100", "-w", ok_out])
        x.wait_listening()
        lab.send(corpus, N.cpus()[0], gap_us=500)
        time.sleep(0.3)
        rc = x.stop(signal.SIGINT)
        st = N.final_stats(x.err_lines)
        N.expect(rc == 0 and st is not None and st["captured"] == len(frames),
                 f"-B 100: accepted, {len(frames)} packets captured, exits 0", f"{rc}: {x.stderr}")
        lab.assert_clean()

        # --- the locked-memory limit: explicit size refused, default shrinks
        # nobody may not reach the build tree (a clone under a 0700
        # directory): run a copy from a directory anyone can enter.
        open_dir = tempfile.mkdtemp(prefix="xdpcapt-exe-")
        N._register_cleanup(lambda: shutil.rmtree(open_dir, ignore_errors=True))
        os.chmod(open_dir, 0o755)
        open_binary = os.path.join(open_dir, "xdpcap")
        shutil.copy(binary, open_binary)
        os.chmod(open_binary, 0o755)

        def limited(*args, kib=4096):
            caps = "cap_bpf,cap_net_admin,cap_perfmon"
            cmd = f"ulimit -l {kib} && exec " + " ".join([open_binary] + list(args))
            return ["capsh", "--keep=1", "--user=nobody", f"--inh={caps}", f"--addamb={caps}", "--", "-c", cmd]

        paranoid = int(open("/proc/sys/kernel/perf_event_paranoid").read())
        if paranoid >= 3:
            # Debian's own level: perf events need CAP_SYS_ADMIN, so the
            # capabilities above are not enough; say which sysctl and why.
            check_failure(lab, "perf_event_paranoid 3 without CAP_SYS_ADMIN",
                          limited("-i", "cap0", "-w", "-"),
                          msg_re=r"kernel\.perf_event_paranoid is 3, which allows them only with CAP_SYS_ADMIN")
            lab.assert_clean()
            return
        check_failure(lab, "--ring-pages 4096 over the locked-memory limit",
                      limited("-i", "cap0", "--ring-pages", "4096", "-w", "-"),
                      msg_re=r"locked-memory limit")
        N.log("  --    default ring size under a 4 MiB locked-memory limit")
        corpus = os.path.join(tmp, "corpus-memlock.pcap")
        frames = N.build_corpus(corpus, 20, seed=82)

        def capture_under_limit(desc, argv):
            """The corpus through cap0 into `argv` (a limited xdpcap): exit 0, every frame captured."""
            x = N.Xdpcap(lab, None, [], argv=argv)
            x.wait_listening()
            lab.send(corpus, N.cpus()[0], gap_us=500)
            time.sleep(0.3)
            rc = x.stop(signal.SIGINT)
            N.expect(rc == 0, f"{desc}: exits 0", f"{rc}: {x.stderr}")
            st = N.final_stats(x.err_lines)
            N.expect(st is not None and st["captured"] == len(frames), f"{desc}: {len(frames)} packets captured",
                     st["lines"] if st else x.stderr)
            return x

        x = capture_under_limit("default rings under a 4 MiB locked-memory limit",
                                limited("-i", "cap0", "-w", "-"))
        # Shrunk, the default still holds every record of the longest frame.
        N.expect(not [l for l in x.err_lines if "cannot hold" in l],
                 "default rings under a 4 MiB locked-memory limit: no ring too small for a 262144-byte frame",
                 x.stderr)

        # The floor: the default shrinks no further than two of the longest
        # frames. 512 KiB per CPU would fit the limit (with the kernel's own
        # perf_event_mlock_kb allowance) but not two 262144-byte frames'
        # records; a shorter snapshot length lets it shrink that far.
        check_failure(lab, "default rings under a 512 KiB locked-memory limit, -s 262144: refused, not shrunk "
                      "below two frames", limited("-i", "cap0", "-w", "-", kib=512), msg_re=r"locked-memory limit")
        capture_under_limit("default rings under a 512 KiB limit with -s 1500 (shrunk further)",
                            limited("-s", "1500", "-i", "cap0", "-w", "-", kib=512))
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("mount", "umount", "capsh"))
