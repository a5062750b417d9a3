#!/usr/bin/python3
"""End-to-end: xdpcap as a Wireshark extcap, driven by the real client, tshark.

Usage (root): /usr/bin/python3 tests/e2e/test_extcap.py PATH/TO/xdpcap

xdpcap is linked into a personal extcap directory under a temporary
XDG_CONFIG_HOME (Wireshark 4.0 reads $XDG_CONFIG_HOME/wireshark/extcap), so
nothing needs installing. Checks, inside the capture namespace of a NetLab:
`tshark -D` lists exactly xdpcap:cap0 and xdpcap:lo; with a veth pair named
'a{b}c' and 'x}{y' added, it lists them too, each shown with its own name,
and tshark captures a frame sent on 'a{b}c' through 'x}{y', whose value
escapes the '}' Wireshark's parser would end it at; `tshark -i xdpcap:cap0
-c 10 -w F` captures ten frames sent on the veth, byte-exact, with xdpcap's
per-CPU interfaces, and no extcap error; a capture filter given to tshark
(-f) reaches xdpcap (the interfaces record it) and only matching frames
arrive; -k and --pid set as tshark sets the options dialog's fields keep
only that process's packets on lo, each naming it; after each capture no
xdpcap process is left and nothing stays attached; the filter check Wireshark runs while one types a filter answers
on stdout; as an unprivileged user, and with another xdpcap's XDP program on
the interface (both in XDP generic mode, tshark's through its extcap option:
by default a veth's received frames come from tc ingress; on a kernel
without the tracing program type, where the second is refused), tshark
shows xdpcap's one-line error as an extcap error.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CPU = N.cpus()[0]
EXTCAP_ERROR = "Error by extcap pipe:"

# Ids of the programs attached to cap0's tcx ingress (BPF_PROG_QUERY, inside
# the namespace: ifindexes are per namespace), or -errno (-EINVAL: no tcx).
TCX_INGRESS_QUERY = r"""
import ctypes, struct, sys, socket
libc = ctypes.CDLL(None, use_errno=True)
ids = (ctypes.c_uint32 * 64)()
attr = ctypes.create_string_buffer(struct.pack("IIIIQI", socket.if_nametoindex(sys.argv[1]), 46, 0, 0,
                                               ctypes.addressof(ids), 64) + bytes(36))
if libc.syscall(321, 16, attr, 64) != 0:
    print(-ctypes.get_errno()); sys.exit(0)
print(" ".join(str(ids[i]) for i in range(struct.unpack_from("I", attr.raw, 24)[0])))
"""


class Tshark:
    """tshark in the capture namespace, with xdpcap as a personal extcap."""

    def __init__(self, lab, config_home, user=None):
        self.lab = lab
        self.env = ["env", f"HOME={config_home}", f"XDG_CONFIG_HOME={config_home}"]
        self.user = (["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
                     if user else [])

    def argv(self, args):
        return ["ip", "netns", "exec", self.lab.cap_ns] + self.user + self.env + ["tshark"] + args

    def run(self, args, timeout=20):
        return N.run(self.argv(args), timeout=timeout, check_rc=False)

    def start(self, args):
        N.log(f"  run   tshark {' '.join(args)}")
        return self.lab.track(subprocess.Popen(self.argv(args), stdin=subprocess.DEVNULL,
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                               text=True))


def ingress_attached(lab, dev=None):
    """Whether an xdpcap program is on cap0's (or dev's) tc ingress: a tcx link, or a clsact filter without tcx.

    xdpcap_ingress, or with a capture filter xdpcap_filter_in (the kernel keeps 15 characters)."""
    out = N.run(["ip", "netns", "exec", lab.cap_ns, N.PYTHON, "-c", TCX_INGRESS_QUERY,
                 dev or lab.cap_if]).stdout.split()
    if out and out[0].startswith("-"):
        return any(f.startswith("ingress:") for f in lab.tc_filters(dev))
    for prog_id in out:
        cp = N.run(["bpftool", "-j", "prog", "show", "id", prog_id], check_rc=False)
        if cp.returncode == 0 and json.loads(cp.stdout).get("name", "").startswith("xdpcap_"):
            return True
    return False


def wait_attached(lab, proc, timeout=30.0, dev=None):
    """Wait until xdpcap takes received frames: at tc ingress, the default on a veth.
    A hang guard: tshark's start and xdpcap's (with -k, the attribution
    programs too) took over 10 s on a loaded host."""
    timeout = N.scaled(timeout)
    end = time.monotonic() + timeout
    while not ingress_attached(lab, dev):
        if proc.poll() is not None:
            raise N.TestFailure(f"tshark exited ({proc.returncode}) before xdpcap attached: "
                                f"{proc.stderr.read()}")
        if time.monotonic() > end:
            raise N.TestFailure(f"xdpcap did not attach within {timeout:.0f} s of tshark's start")
        time.sleep(0.05)


def finish(lab, proc, what, timeout=20):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        N.kill_process(proc)
        raise N.TestFailure(f"{what}: tshark did not finish within {timeout} s")
    lab.forget(proc)
    N.log("  info  tshark stderr: " + " | ".join(l for l in err.splitlines() if l.strip()))
    N.expect(proc.returncode == 0, f"{what}: tshark exits 0", f"{proc.returncode}: {err}")
    # tshark 4.0 prints "Error by extcap pipe: " with nothing after it even for
    # its own extcaps: only a message after it is an error.
    errors = [l for l in err.splitlines() if re.search(re.escape(EXTCAP_ERROR) + r"\s*\S", l)]
    N.expect(not errors, f"{what}: no extcap error", errors)
    return err


def check_gone(lab, what):
    end = time.monotonic() + 5
    left = None
    while time.monotonic() < end:
        pids = N.run(["ip", "netns", "pids", lab.cap_ns], check_rc=False).stdout.split()
        left = [p for p in pids if os.path.exists(f"/proc/{p}/comm")
                and open(f"/proc/{p}/comm").read().strip() == "xdpcap"]
        if not left:
            break
        time.sleep(0.05)
    N.expect(not left, f"{what}: no xdpcap process left", left)
    lab.assert_clean(f"{what}: nothing stays attached to cap0")


# A server on lo that listens once told to, answers one connection and says
# its port.
LO_SERVER = ("import socket,sys\n"
             "sys.stdin.readline()\n"
             "l=socket.socket();l.bind(('127.0.0.1',0));l.listen(1)\n"
             "print(l.getsockname()[1],flush=True)\n"
             "c,_=l.accept();c.recv(10);c.sendall(b'ok');c.close()\n")


def check_process_options(lab, tshark, tmp):
    """The options dialog's -k and --pid, as tshark passes its extcap
    preferences: only the selected process's packets, each naming it."""
    N.run(["ip", "-n", lab.cap_ns, "link", "set", "lo", "up"])
    srv = lab.popen(lab.cap_ns, [N.PYTHON, "-S", "-c", LO_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    text=True)
    out = os.path.join(tmp, "process.pcapng")
    proc = tshark.start(["-i", "xdpcap:lo", "-o", "extcap.xdpcap_lo.k:true", "-o", f"extcap.xdpcap_lo.pid:{srv.pid}",
                         "-c", "6", "-w", out])
    wait_attached(lab, proc, dev="lo")
    # Another process's datagram on lo first: not the selected process's.
    N.run(["ip", "netns", "exec", lab.cap_ns, N.PYTHON, "-S", "-c",
           "import socket;socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(b'x',('127.0.0.1',9))"])
    srv.stdin.write("go\n")
    srv.stdin.flush()
    port = int(srv.stdout.readline())
    N.run(["ip", "netns", "exec", lab.cap_ns, N.PYTHON, "-S", "-c",
           f"import socket;s=socket.create_connection(('127.0.0.1',{port}));s.sendall(b'hi');s.recv(10)"])
    srv.wait(timeout=N.scaled(10))
    lab.forget(srv)
    finish(lab, proc, "-k --pid")
    epbs = N.pcapng_records(out)["epbs"]
    N.check(len(epbs) == 6 and all(f":{srv.pid}" in " ".join(e["comments"]) for e in epbs),
            "-k and --pid from the options: the first 6 packets of the process's connection, each naming it",
            [(e["process"], e["comments"]) for e in epbs])
    check_gone(lab, "-k --pid")


def check_brace_names(lab, tshark, tmp):
    """Interface names with '{' and '}' reach Wireshark whole: listed, shown
    and captured on."""
    ns = ["ip", "-n", lab.cap_ns]
    N.run(ns + ["link", "add", "a{b}c", "type", "veth", "peer", "name", "x}{y"])
    try:
        for name in ("a{b}c", "x}{y"):
            N.run(ns + ["link", "set", name, "up"])
        cp = tshark.run(["-D"])
        listed = sorted(re.findall(r"^\d+\. (xdpcap:\S+) \((.*)\)$", cp.stdout, re.M))
        N.check(listed == [("xdpcap:a{b}c", "xdpcap capture on a{b}c"), ("xdpcap:cap0", "xdpcap capture on cap0"),
                           ("xdpcap:lo", "xdpcap capture on lo"),
                           ("xdpcap:x\\x7d{y", "xdpcap capture on x}\u2060{y")],
                "tshark -D lists 'a{b}c' and 'x}{y' whole (a word joiner after the '}' before '{')",
                cp.stdout + cp.stderr)
        out = os.path.join(tmp, "brace.pcapng")
        proc = tshark.start(["-i", "xdpcap:x\\x7d{y", "-c", "1", "-w", out, "-f", "udp port 9"])
        sender = ("import socket, time\n"
                  "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
                  "s.bind(('a{b}c', 0))\n"
                  "frame = bytes.fromhex('02000000ca0102000000ca020800'"
                  " '4500001c000100004011a8c6c6120001c6130001' '0009000900080000')\n"
                  "for _ in range(100):\n"
                  "    s.send(frame)\n"
                  "    time.sleep(0.1)\n")
        send = lab.track(subprocess.Popen(["ip", "netns", "exec", lab.cap_ns, "python3", "-c", sender],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        try:
            finish(lab, proc, "-i xdpcap:x\\x7d{y")
        finally:
            send.kill()
            send.wait()
        names = sorted({r["if_name"] for r in N.read_capture(out, tmp)})
        N.expect(len(names) == 1 and re.fullmatch(r"x\}\{y@cpu\d+", names[0]),
                 "tshark captured on x}{y through its escaped value", names)
    finally:
        N.run(ns + ["link", "del", "a{b}c"], check_rc=False)


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        os.chmod(tmp, 0o755)  # the unprivileged run reads it too
        # A copy every user can run, linked as the package links it.
        exe = os.path.join(tmp, "xdpcap")
        shutil.copy2(binary, exe)
        os.chmod(exe, 0o755)
        extcap_dir = os.path.join(tmp, "wireshark", "extcap")
        os.makedirs(extcap_dir)
        os.symlink(exe, os.path.join(extcap_dir, "xdpcap"))
        for d in (os.path.join(tmp, "wireshark"), extcap_dir):
            os.chmod(d, 0o755)
        tshark = Tshark(lab, tmp)

        # Wireshark's interface list.
        cp = tshark.run(["-D"])
        listed = sorted(re.findall(r"^\d+\. (xdpcap:\S+)", cp.stdout, re.M))
        N.check(listed == ["xdpcap:cap0", "xdpcap:lo"],
                "tshark -D lists the namespace's interfaces as xdpcap:cap0 and xdpcap:lo",
                cp.stdout + cp.stderr)
        check_brace_names(lab, tshark, tmp)

        # Ten frames, byte-exact.
        corpus = os.path.join(tmp, "corpus.pcap")
        frames = N.build_corpus(corpus, 10, seed=3)
        out = os.path.join(tmp, "ten.pcapng")
        proc = tshark.start(["-i", "xdpcap:cap0", "-c", "10", "-w", out])
        wait_attached(lab, proc)
        N.log("  info  " + lab.send(corpus, CPU, gap_us=1000))
        finish(lab, proc, "-c 10")
        rows = N.read_capture(out, tmp)
        N.check_exact(frames, [r["data"] for r in rows], "ten frames sent, the same ten captured, byte-exact")
        names = sorted({r["if_name"] for r in rows})
        N.expect(names == [f"cap0@cpu{CPU}"], f"frames are on xdpcap's interface cap0@cpu{CPU}", names)
        check_gone(lab, "-c 10")

        # A capture filter from tshark runs in xdpcap's kernel filter.
        other = os.path.join(tmp, "other.pcap")
        N.build_corpus(other, 12, kinds=("ipv4-tcp", "arp", "ipv4-icmp", "ipv6-icmp"), seed=4)
        udp = os.path.join(tmp, "udp.pcap")
        udp_frames = N.build_corpus(udp, 6, kinds=("ipv4-udp", "ipv6-udp"), seed=5)
        out = os.path.join(tmp, "udp.pcapng")
        proc = tshark.start(["-i", "xdpcap:cap0", "-f", "udp", "-c", str(len(udp_frames)), "-w", out])
        wait_attached(lab, proc)
        lab.send(other, CPU, gap_us=500)
        lab.send(udp, CPU, gap_us=500)
        finish(lab, proc, "-f udp")
        rows = N.read_capture(out, tmp)
        N.check_exact(udp_frames, [r["data"] for r in rows],
                      "with -f udp: the UDP frames captured, none of the 12 others sent before them")
        info = N.run(["capinfos", "-M", out]).stdout
        filters = set(re.findall(r"^\s*Filter string = (.*)$", info, re.M))
        N.expect(filters == {"udp"}, "xdpcap's interfaces record the kernel filter 'udp'", filters)
        check_gone(lab, "-f udp")

        check_process_options(lab, tshark, tmp)

        # The filter check Wireshark runs as one types.
        cp = N.run([binary, "--extcap-interface", "xdpcap:cap0", "--extcap-capture-filter", "tcp portx"],
                   check_rc=False)
        N.expect(cp.returncode != 0 and "syntax error" in cp.stdout,
                 "a bad capture filter: the reason on stdout, non-zero status", cp)
        cp = N.run([binary, "--extcap-interface", "xdpcap:cap0", "--extcap-capture-filter", "udp port 53"],
                   check_rc=False)
        N.expect(cp.returncode == 0 and cp.stdout == "", "a good capture filter: no output, status 0", cp)

        # Failures reach tshark as extcap errors. Never "-w /dev/null" here:
        # tshark 4.0 removes its output file after a capture that got nothing.
        nobody_dir = os.path.join(tmp, "nobody")
        os.mkdir(nobody_dir)
        shutil.chown(nobody_dir, "nobody")
        cp = Tshark(lab, tmp, user="nobody").run(
            ["-i", "xdpcap:cap0", "-c", "1", "-w", os.path.join(nobody_dir, "unprivileged.pcapng")])
        N.log("  info  unprivileged tshark: " + " | ".join(l for l in cp.stderr.splitlines() if l.strip()))
        N.expect(cp.returncode != 0, "unprivileged: tshark exits non-zero", cp.returncode)
        N.expect(re.search(re.escape(EXTCAP_ERROR) + r" xdpcap: capturing needs root", cp.stderr),
                 "unprivileged: tshark shows xdpcap's privilege error as an extcap error", cp.stderr)

        # XDP on both sides: by default a veth's received frames come from tc
        # ingress. Where the kernel can trace programs the second one shares
        # the hook instead (test_fault_two_captures): no error to show.
        if N.kernel_has_tracing():
            N.log("  info  this kernel traces the first capture's XDP program: a second one is not refused")
            return
        first = lab.xdpcap(binary, ["-w", os.path.join(tmp, "first.pcapng"), "--xdp-mode", "generic"])
        first.wait_listening()
        cp = tshark.run(["-i", "xdpcap:cap0", "-o", "extcap.xdpcap_cap0.xdpmode:generic", "-c", "1",
                         "-w", os.path.join(tmp, "in_the_way.pcapng")])
        N.log("  info  tshark beside another capture: "
              + " | ".join(l for l in cp.stderr.splitlines() if l.strip()))
        N.expect(cp.returncode != 0, "XDP program in the way: tshark exits non-zero", cp.returncode)
        # The program in the way is another xdpcap's: the line names its pid.
        N.expect(re.search(re.escape(EXTCAP_ERROR) + r" xdpcap: cap0 is already being captured by another xdpcap "
                           rf"\(pid {first.proc.pid}, ", cp.stderr),
                 "XDP program in the way: tshark shows xdpcap's error as an extcap error", cp.stderr)
        first.stop()
        N.expect(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still the null device")


if __name__ == "__main__":
    N.main(test, tools=("ip", "tshark", "capinfos", "tcpdump", "setpriv"))
