#!/usr/bin/python3
"""What --drops costs under a flood of drops, and what it costs when nothing is dropped.

Run as root:  bench/drops_flood.py --xdpcap build/src/xdpcap [--rounds 3]

A pair of network namespaces joined by a veth pair (cap0 with 198.18.92.1,
gen0 with 198.18.92.2); cap0's namespace has an nft rule that drops UDP
port 7777. trafgen sends 300 000 UDP frames from gen0, once to port 7777
(every frame dropped by the rule) and once to port 5555, where a socket
with a receive buffer large enough for all of them takes them (nothing
dropped). On a veth the receive path runs on the sender's CPU, so
trafgen's wall time includes what the receiver does with each frame, the
drop tracepoint too.

Side by side, in interleaved rounds: no capture, tcpdump, xdpcap, and
xdpcap --drops. Printed per setting (medians): trafgen's frames per second,
its ratio to the capture-free rate, and the drop records in the file
(counted on its :drop interfaces) against the frames the rule dropped.

Needs trafgen (netsniff-ng), nft, tcpdump and tshark.
"""

import argparse
import os
import re
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

NS_CAP, NS_GEN = f"df-cap-{os.getpid()}", f"df-gen-{os.getpid()}"
CAP_ADDR, GEN_ADDR = "198.18.92.1", "198.18.92.2"
FRAMES = 300_000


def run(*argv, check=True, **kw):
    return subprocess.run(argv, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def in_ns(ns, *argv, **kw):
    return run("ip", "netns", "exec", ns, *argv, **kw)


def setup():
    run("ip", "netns", "add", NS_CAP)
    run("ip", "netns", "add", NS_GEN)
    run("ip", "-n", NS_CAP, "link", "add", "cap0", "address", "02:00:00:00:ca:01", "type", "veth", "peer", "name",
        "gen0", "address", "02:00:00:00:9e:01", "netns", NS_GEN)
    run("ip", "-n", NS_CAP, "addr", "add", f"{CAP_ADDR}/24", "dev", "cap0")
    run("ip", "-n", NS_GEN, "addr", "add", f"{GEN_ADDR}/24", "dev", "gen0")
    run("ip", "-n", NS_CAP, "link", "set", "cap0", "up")
    run("ip", "-n", NS_GEN, "link", "set", "gen0", "up")
    in_ns(NS_CAP, "nft", "table inet df { chain c { type filter hook input priority 0; udp dport 7777 drop; }; }")
    time.sleep(1)


def teardown():
    run("ip", "netns", "del", NS_CAP, check=False)
    run("ip", "netns", "del", NS_GEN, check=False)


def trafgen_conf(path, dport):
    udp_len = 8 + 18
    ip = bytes.fromhex("4500") + (20 + udp_len).to_bytes(2, "big") + bytes.fromhex("000100004011") + b"\0\0" + \
        bytes([198, 18, 92, 2, 198, 18, 92, 1])
    words = [int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2)]
    total = sum(words)
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    ip = ip[:10] + (~total & 0xffff).to_bytes(2, "big") + ip[12:]
    frame = bytes.fromhex("02000000ca01020000009e010800") + ip + (5000).to_bytes(2, "big") + \
        dport.to_bytes(2, "big") + udp_len.to_bytes(2, "big") + b"\0\0" + b"x" * 18
    with open(path, "w") as f:
        f.write("{ " + ", ".join(f"0x{b:02x}" for b in frame) + " }\n")


def start_capture(setting, xdpcap, path):
    if setting == "none":
        time.sleep(2)  # as long as a capture is given to start
        return None
    if setting == "tcpdump":
        argv = ["tcpdump", "-i", "cap0", "-w", path, "-s", "65535"]
    else:
        argv = [xdpcap, "-i", "cap0", "-Q", "in", "-w", path] + (["--drops"] if setting == "xdpcap --drops" else [])
    p = subprocess.Popen(["ip", "netns", "exec", NS_CAP] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(2)
    return p


def stop_capture(p):
    if not p:
        return ""
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    return err


def start_sink():
    """A socket on port 5555 that holds every frame of a run (1 GiB buffer)."""
    code = ("import socket,time;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);"
            "s.setsockopt(socket.SOL_SOCKET,33,1<<30);"  # SO_RCVBUFFORCE
            f"s.bind(('{CAP_ADDR}',5555));print('ready',flush=True);time.sleep(86400)")
    p = subprocess.Popen(["ip", "netns", "exec", NS_CAP, sys.executable, "-c", code], stdout=subprocess.PIPE,
                         text=True)
    p.stdout.readline()
    return p


def measure(setting, xdpcap, tmp, conf, delivered):
    path = os.path.join(tmp, "out.pcapng")
    sink = start_sink() if delivered else None
    p = start_capture(setting, xdpcap, path)
    start = time.monotonic()
    cp = in_ns(NS_GEN, "taskset", "-c", "0", "trafgen", "--dev", "gen0", "--conf", conf, "-n", str(FRAMES),
               check=False)
    elapsed = time.monotonic() - start
    time.sleep(0.5)
    err = stop_capture(p)
    if sink:
        sink.kill()
        sink.wait()
    m = re.search(r"^(\d+) packets? dropped by the kernel's stack", err, re.M)
    counted = int(m.group(1)) if m else None
    records = drop_records_in(path) if counted is not None else None
    if os.path.exists(path):
        os.unlink(path)
    return {"pps": FRAMES / elapsed if cp.returncode == 0 else 0.0, "drop_records": records,
            "drops_counted": counted}


def drop_records_in(path):
    """Packet blocks on the file's IFACE@cpuN:drop interfaces (a little-endian pcapng walk)."""
    with open(path, "rb") as f:
        data = f.read()
    names, records, off = [], 0, 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12 or off + blen > len(data):
            break
        if btype == 1:  # IDB: its if_name option
            opt = off + 16
            name = ""
            while opt + 4 <= off + blen - 4:
                code, olen = struct.unpack_from("<HH", data, opt)
                if code == 0:
                    break
                if code == 2:
                    name = data[opt + 4:opt + 4 + olen].decode("utf-8", "replace")
                opt += 4 + ((olen + 3) & ~3)
            names.append(name)
        elif btype == 6:
            if_id = struct.unpack_from("<I", data, off + 8)[0]
            records += if_id < len(names) and names[if_id].endswith(":drop")
        off += blen
    return records


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xdpcap", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    xdpcap = os.path.abspath(args.xdpcap)
    settings = ["none", "tcpdump", "xdpcap", "xdpcap --drops"]
    traffic = {"dropped by nft (port 7777)": 7777, "delivered (port 5555)": 5555}
    results = {(t, s): [] for t in traffic for s in settings}
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        confs = {}
        for name, port in traffic.items():
            confs[name] = os.path.join(tmp, f"{port}.cfg")
            trafgen_conf(confs[name], port)
        try:
            setup()
            for rnd in range(args.rounds):
                for name, port in traffic.items():
                    for setting in settings:
                        r = measure(setting, xdpcap, tmp, confs[name], port == 5555)
                        results[(name, setting)].append(r)
                        print(f"round {rnd + 1} {name:<28} {setting:<15} {r}", flush=True)
        finally:
            teardown()
    med = statistics.median
    print("\n| traffic | capture on cap0 | trafgen frames/s | vs no capture | drop records written |")
    print("|---|---|---|---|---|")
    for name in traffic:
        base = med([r["pps"] for r in results[(name, "none")]])
        for setting in settings:
            rs = results[(name, setting)]
            pps = med([r["pps"] for r in rs])
            recs = [r["drop_records"] for r in rs if r["drop_records"] is not None]
            print(f"| {name} | {setting} | {pps:,.0f} | {pps / base:.2f} | "
                  f"{med(recs):,.0f} |" if recs else f"| {name} | {setting} | {pps:,.0f} | {pps / base:.2f} | - |")


if __name__ == "__main__":
    sys.exit(main())
