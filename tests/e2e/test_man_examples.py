#!/usr/bin/python3
"""End-to-end: every command of the man page's EXAMPLES section works as written.

Usage (root): /usr/bin/python3 tests/e2e/test_man_examples.py PATH/TO/xdpcap PATH/TO/xdpcap.8

The commands are read from the page itself (the .EX blocks of EXAMPLES),
with eth0 and eth1's number 3 (in tcpdump -D) replaced by the lab's cap0 and cap1, and run in
order in one directory, as a user would type them: a capture runs while
frames (DNS queries among them) cross the link and stops by itself (-c) or
on ^C; then it must have exited 0 without an error line, and left the files
the page says it writes. `xdpcap -r`, tshark and capinfos must read them.
"""

import glob
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
import test_text_tcp as T  # noqa: E402

A4, B4 = bytes([198, 18, 75, 1]), bytes([198, 18, 75, 2])


def examples(page):
    """The command lines of the EXAMPLES section's .EX blocks, unescaped."""
    with open(page) as f:
        source = f.read()
    section = source.split(".SH EXAMPLES", 1)[1].split("\n.SH ", 1)[0]
    commands = []
    for block in re.findall(r"^\.EX\n(.*?)^\.EE", section, re.M | re.S):
        for line in block.splitlines():
            line = line.replace("\\-", "-").replace("\\(aq", "'").replace("\\e", "\\")
            if line.split(" ", 1)[0] in ("xdpcap", "tshark", "capinfos"):
                commands.append(line)
    return commands


def frames():
    """UDP DNS queries and TCP segments, enough for -c 1000."""
    out = []
    for i in range(1100):
        if i % 2:
            query = struct.pack("!HHHHHH", i, 0x0100, 1, 0, 0, 0) + b"\x07example\x03com\x00\x00\x01\x00\x01"
            udp = struct.pack("!HHHH", 40000 + i % 1000, 53, 8 + len(query), 0) + query
            h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0, A4, B4)
            h = h[:10] + struct.pack("!H", T.checksum(h)) + h[12:]
            out.append(T.MAC_B + T.MAC_A + b"\x08\x00" + h + udp)
        else:
            out.append(T.ipv4(A4, B4, T.tcp(41000, 80, T.ACK, 1000 + i, 2000)))
    return out


class Example:
    """One command, run through sh in the capture namespace, in `cwd`."""

    def __init__(self, lab, command, cwd):
        self.command = command
        self.err = []
        self.out = bytearray()
        self.listening = threading.Event()
        N.log(f"  run   {command}")
        self.proc = lab.popen(lab.cap_ns, ["sh", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.threads = [threading.Thread(target=self._read_err, daemon=True),
                        threading.Thread(target=self._read_out, daemon=True)]
        for t in self.threads:
            t.start()

    def _read_err(self):
        for raw in iter(self.proc.stderr.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.err.append(line)
            if line.startswith("listening on "):
                self.listening.set()

    def _read_out(self):
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):
            self.out += chunk

    def interrupt(self):
        """^C for xdpcap: SIGINT to it (the shell around it would die of
        one); a reader after it in a pipeline then ends at the end of its
        input."""
        if self.proc.poll() is not None:
            return
        pids = subprocess.run(["pgrep", "-g", str(self.proc.pid), "-x", "xdpcap"], stdout=subprocess.PIPE,
                              text=True).stdout.split()
        for pid in pids:
            os.kill(int(pid), signal.SIGINT)

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout=N.scaled(timeout))
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            rc = None
        for t in self.threads:
            t.join(5)
        return rc

    def errors(self):
        return [l for l in self.err if l.startswith("xdpcap: ") and not l.startswith("xdpcap: warning: ")]


def test(binary, page):
    commands = examples(page)
    N.check(len(commands) >= 10, "the EXAMPLES section holds the commands", commands)
    bindir = os.path.dirname(os.path.abspath(binary))
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab(pairs=2) as lab:
        os.chmod(tmp, 0o755)
        pcap = os.path.join(tmp, "traffic.pcap")
        N.write_frames(pcap, frames())
        # The example's "-i 3" is eth1's number in tcpdump -D: here cap1's.
        listed = N.run(["ip", "netns", "exec", lab.cap_ns, "tcpdump", "-D"]).stdout.splitlines()
        number = next(l.split(".", 1)[0] for l in listed if l.split(".", 1)[1].split(" ", 1)[0] == lab.cap_ifs[1])
        for command in commands:
            line = command.replace("eth0", lab.cap_if).replace("-i 3 ", f"-i {number} ")
            # The binary under test, wherever the command names it.
            line = re.sub(r"(^|\| )xdpcap ", lambda m: m.group(1) + binary + " ", line)
            x = Example(lab, f"PATH={bindir}:$PATH {line}", tmp)
            if command.startswith("xdpcap -r") or not command.startswith("xdpcap"):
                rc = x.wait(30)
            else:
                N.check(x.listening.wait(N.scaled(15)) or x.proc.poll() is not None,
                        f"{command}: starts listening", x.err)
                for i, gen_if in enumerate(lab.gen_ifs if f"-i {number}" in line else [lab.gen_if]):
                    lab.send(pcap, N.cpus()[0], gap_us=20 if i == 0 else 200, gen_if=gen_if)
                time.sleep(N.scaled(0.5))
                x.interrupt()
                rc = x.wait(30)
            N.expect(rc == 0 and not x.errors(), f"{command}: exits 0 without an error",
                     (rc, x.err[-5:]))
            if "-w -" in command:
                N.expect(x.out.count(b"\n") >= 100, f"{command}: tshark prints the packets", x.out[-300:])
            elif command.startswith("xdpcap -r") and "-w" not in command:
                lines = x.out.decode().splitlines()
                N.expect(len(lines) >= 100 and all(".53: " in l for l in lines),
                         f"{command}: prints the DNS packets, and only them", lines[:3])
            elif command.startswith("xdpcap -i") and command.endswith("-c 10"):
                N.expect(x.out.decode().count("\n") == 10, f"{command}: ten packet lines", x.out[-300:])
            elif "--drops" in command:
                lines = x.out.decode().splitlines()
                N.expect(len(lines) >= 500 and all(".53: " in l for l in lines),
                         f"{command}: prints the DNS queries", lines[:3])
            elif command.startswith("capinfos"):
                N.expect(b"cap0@cpu" in x.out, f"{command}: lists the per-CPU interfaces", x.out[-300:])
        # The files the page says the commands write.
        for name, count in (("out.pcapng", 1100), ("head.pcapng", 1000), ("dns.pcapng", 550)):
            path = os.path.join(tmp, name)
            N.expect(os.path.exists(path) and N.capinfos_count(path) == count, f"{name} holds {count} packets",
                     os.path.exists(path) and N.capinfos_count(path))
        both = os.path.join(tmp, "both.pcapng")
        N.expect(os.path.exists(both) and N.capinfos_count(both) == 2200,
                 "both.pcapng holds the packets of both interfaces", os.path.exists(both) and N.capinfos_count(both))
        N.expect(os.path.exists(os.path.join(tmp, "ring.pcapng0")), "the ring starts with ring.pcapng0",
                 os.listdir(tmp))
        deadline = time.monotonic() + N.scaled(10)
        while not glob.glob(os.path.join(tmp, "cap0-*.pcapng.gz")) and time.monotonic() < deadline:
            time.sleep(0.1)
        N.expect(glob.glob(os.path.join(tmp, "cap0-*.pcapng.gz")) != [],
                 "-G 60 -z gzip: the file, closed at ^C, is compressed", os.listdir(tmp))


if __name__ == "__main__":
    page = sys.argv.pop(2) if len(sys.argv) > 2 else None
    N.main(lambda binary: test(binary, page))
