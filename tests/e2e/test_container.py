#!/usr/bin/python3
"""End-to-end: --container keeps a podman container's packets and names it.

Usage (root): /usr/bin/python3 tests/e2e/test_container.py PATH/TO/xdpcap

A podman container (runc, an image imported from a local busybox root file
system, its storage under the test's own directory) joins the capture
namespace's network (`--network ns:`), so its sockets are local to cap0.
Its `nc` keeps a connection to a server in the other namespace open while a
process outside the container makes its own. The oracles: `ss -tnpi` in the
namespace names the host pid of the container's nc while the connection is
open, and /proc/PID/cgroup holds the container's ID.
  * xdpcap -i cap0 --container NAME: exactly the container's connection,
    every packet naming nc with that pid, ", container NAME" in its comment;
    the other process's packets are not in the file;
  * -k alone: the container's packets say ", container ID12" (its ID's first
    12 characters), the other process's none;
  * two containers behind one bridge, captured on A's host-side veth (no
    socket in the capture's namespace): --container A keeps both directions
    of A's conversation with B and nothing else, each packet naming its
    sender in option 8 and both containers' nc, sender first, in its comment;
    meanwhile -i any's text column names each host-side veth after its
    container ("xva0(xdpcapt-a) In"), and --container A without -i captures
    A's veth alone, tshark's interface description naming A;
  * a container started during -i any, its veth made first as podman's
    network setup makes it: its traffic under its host-side veth, named
    after it in the text column and the interface description; stopped
    (its veth deleted), it leaves its ISB and the capture goes on; started
    again behind a new veth, --container NAME without -i, running since
    before the restart, follows it there; afterwards nothing is attached
    and no program of either xdpcap is left;
  * run from the other namespace, --container NAME --container-netns finds
    cap0 inside the container's network namespace, where without it there is
    no such interface;
  * an unknown container and a stopped one: one line, exit 1, nothing
    attached;
  * a fake podman first on PATH that hangs, fails with "Error: database is
    locked", or floods its output: one line saying which, exit 1 within the
    timeout, no fake podman process left; Ctrl-C while it hangs ends xdpcap
    at once, the fake podman with it.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402
import test_process as P  # noqa: E402

CAP4, GEN4 = "198.18.42.1", "198.18.42.2"
PORT = 7470
# Two containers on one bridge of the capture namespace (the host's stand-in).
A4, B4 = "198.18.44.2", "198.18.44.3"
PAIR_PORT = 7471
# A container started during the capture, behind a veth of its own.
LATE_HOST4, LATE4 = "198.18.45.1", "198.18.45.2"
LATE_PORT = 7472


class Podman:
    """podman with its storage and configuration under `tmp`."""

    def __init__(self, tmp):
        self.tmp = tmp
        storage = os.path.join(tmp, "storage.conf")
        with open(storage, "w") as f:
            f.write('[storage]\ndriver = "overlay"\n'
                    f'graphroot = "{tmp}/graph"\nrunroot = "{tmp}/run"\n')
        conf = os.path.join(tmp, "containers.conf")
        with open(conf, "w") as f:
            f.write('[containers]\ndefault_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]\n'
                    '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
                    f'events_logfile_path = "{tmp}/events.log"\n')
        self.env = dict(os.environ, CONTAINERS_STORAGE_CONF=storage, CONTAINERS_CONF=conf)
        self.names = []
        self.image = None

    def run(self, *args, check_rc=True, timeout=120):
        cp = subprocess.run(["podman"] + list(args), env=self.env, capture_output=True, text=True,
                            timeout=N.scaled(timeout), stdin=subprocess.DEVNULL)
        if check_rc and cp.returncode != 0:
            raise N.TestFailure(f"podman {' '.join(args)}: {cp.returncode}: {cp.stderr.strip()}")
        return cp

    def build_image(self):
        root = os.path.join(self.tmp, "rootfs")
        os.makedirs(os.path.join(root, "bin"))
        shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
        for tool in ("sh", "nc", "wget", "sleep", "cat"):
            os.symlink("busybox", os.path.join(root, "bin", tool))
        tar = os.path.join(self.tmp, "rootfs.tar")
        N.run(["tar", "-C", root, "-cf", tar, "."])
        self.image = "localhost/xdpcapt-bb:1"
        self.run("import", "-q", tar, self.image)

    def start(self, name, netns, *cmd):
        self.names.append(name)
        self.run("run", "-d", "--name", name, "--network", f"ns:/run/netns/{netns}", self.image, *cmd)
        return int(self.run("inspect", "-f", "{{.State.Pid}}", name).stdout.strip())

    def close(self):
        for name in self.names:
            self.run("rm", "-f", "-t", "0", name, check_rc=False)
        if self.image:
            self.run("rmi", "-f", self.image, check_rc=False)
        subprocess.run(["umount", "-R", os.path.join(self.tmp, "graph")], capture_output=True)


def server(lab, count):
    """A TCP server in the other namespace answering `count` connections once each closes."""
    p = lab.popen(lab.gen_ns, ["/usr/bin/python3", "-S", "-c",
                               "import socket\n"
                               f"l=socket.socket();l.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
                               f"l.bind(('{GEN4}',{PORT}));l.listen(16)\n"
                               "print('ready',flush=True)\n"
                               f"for _ in range({count}):\n"
                               "  c,_=l.accept()\n"
                               "  while c.recv(4096): pass\n"
                               "  c.sendall(b'ok');c.close()\n"],
                  stdout=subprocess.PIPE, text=True)
    N.check(p.stdout.readline().strip() == "ready", "the server listens")
    return p


def nc_pid_by_ss(lab):
    """The host pid ss names for the container's open connection (the oracle)."""
    end = time.monotonic() + N.scaled(10)
    while time.monotonic() < end:
        ss = N.run(["ip", "netns", "exec", lab.cap_ns, "ss", "-tnpi", "state", "established",
                    f"( dport = :{PORT} )"]).stdout
        for part in ss.split("users:(("):
            if part.startswith('"nc"'):
                pid = int(part.split("pid=")[1].split(",")[0])
                local = [w for w in ss.split() if w.startswith(CAP4 + ":")]
                return pid, int(local[0].split(":")[1])
        time.sleep(0.1)
    raise N.TestFailure("ss shows no nc connection from the container")


def container_round(lab, pod, tmp, binary, name, args, ns=None):
    """One capture while the container's nc and an outside client each connect once."""
    srv = server(lab, 2)
    path = os.path.join(tmp, f"{name}-{len(os.listdir(tmp))}.pcapng")
    x = N.Xdpcap(lab, binary, args + ["-w", path], ns=ns)
    x.wait_listening()
    # The container's nc holds its connection until its stdin (a sleep) ends.
    pod.start(name, lab.cap_ns, "sh", "-c", f"sleep 2 | nc {GEN4} {PORT}")
    nc_pid, nc_port = nc_pid_by_ss(lab)
    with open(f"/proc/{nc_pid}/cgroup") as f:
        cgroup = f.read()
    cid = pod.run("inspect", "-f", "{{.Id}}", name).stdout.strip()
    N.check(cid in cgroup, "the oracle: ss's nc is in the container's cgroup", (cgroup, cid))
    other = lab.popen(lab.cap_ns, ["/usr/bin/python3", "-S", "-c",
                                   "import socket,sys\n"
                                   f"s=socket.create_connection(('{GEN4}',{PORT}))\n"
                                   "print(s.getsockname()[1],flush=True)\n"
                                   "s.sendall(b'x');s.shutdown(socket.SHUT_WR);s.recv(10)\n"],
                      stdout=subprocess.PIPE, text=True)
    other_port = int(other.stdout.readline())
    other.wait(timeout=N.scaled(10))
    lab.forget(other)
    srv.wait(timeout=N.scaled(30))
    lab.forget(srv)
    time.sleep(N.scaled(0.5))
    N.check(x.stop() == 0, f"{name}: xdpcap stopped cleanly", x.stderr)
    pod.run("rm", "-f", "-t", "0", name)
    pod.names.remove(name)
    frames = P.frames_of(N.pcapng_records(path))
    return frames, nc_pid, nc_port, other_port, cid


def container_process(pod, name, comm):
    """The host pid of the container's process `comm` (the oracle: in the
    container's cgroup), and the container's ID."""
    cid = pod.run("inspect", "-f", "{{.Id}}", name).stdout.strip()
    end = time.monotonic() + N.scaled(10)
    while time.monotonic() < end:
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/comm") as f, open(f"/proc/{d}/cgroup") as g:
                    if f.read().strip() == comm and cid in g.read():
                        return int(d), cid
            except OSError:
                continue
        time.sleep(0.05)
    raise N.TestFailure(f"no {comm} in container {name}")


def two_containers(lab, pod, tmp, binary):
    """Containers A and B behind one bridge, captured on A's host-side veth,
    where neither's socket is in the capture's namespace: --container A keeps
    both directions of their conversation and nothing else; each packet names
    its sender in option 8, and both ends in its comment, sender first."""
    cap = lab.cap_ns
    namespaces = {"a": f"{cap}-a", "b": f"{cap}-b"}
    made = []
    try:
        N.run(["ip", "-n", cap, "link", "add", "xbr0", "type", "bridge"])
        for side, addr in (("a", A4), ("b", B4)):
            ns = namespaces[side]
            N.run(["ip", "netns", "add", ns])
            made.append(ns)
            N.run(["ip", "-n", cap, "link", "add", f"xv{side}0", "type", "veth", "peer", "name", "eth0", "netns", ns])
            N.run(["ip", "-n", cap, "link", "set", f"xv{side}0", "master", "xbr0", "up"])
            N.run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
            for dev in ("eth0", "lo"):
                N.run(["ip", "-n", ns, "link", "set", dev, "up"])
        N.run(["ip", "-n", cap, "link", "set", "xbr0", "up"])
        shared = os.path.join(tmp, "pair")
        os.makedirs(shared)
        # Both wait for the capture: A's listener and B's connection are
        # made while xdpcap runs.
        wait = "while [ ! -e /x/go ]; do sleep 0.05; done"
        commands = {"a": f"{wait}; (echo pong; sleep 2) | nc -l -p {PAIR_PORT}",
                    "b": f"{wait}; sleep 1; (echo ping; sleep 1) | nc {A4} {PAIR_PORT}"}
        for side in ("a", "b"):
            name = f"xdpcapt-{side}"
            pod.names.append(name)
            pod.run("run", "-d", "--name", name, "-v", f"{shared}:/x", "--network", f"ns:/run/netns/{namespaces[side]}",
                    pod.image, "sh", "-c", commands[side])
        path = os.path.join(tmp, "pair.pcapng")
        x = N.Xdpcap(lab, binary, ["-i", "xva0", "--container", "xdpcapt-a", "-w", path])
        # Beside it: -i any's text lines, and --container A without -i.
        any_path = os.path.join(tmp, "any.pcapng")
        any_x = N.Xdpcap(lab, binary, ["-i", "any", "-n", "-w", any_path, "--print", f"tcp port {PAIR_PORT}"])
        host_side = os.path.join(tmp, "host-side.pcapng")
        side_x = N.Xdpcap(lab, binary, ["--container", "xdpcapt-a", "-w", host_side])
        x.wait_listening()
        any_x.wait_listening()
        side_listening = side_x.wait_listening()
        open(os.path.join(shared, "go"), "w").close()
        a_pid, _ = container_process(pod, "xdpcapt-a", "nc")
        b_pid, b_id = container_process(pod, "xdpcapt-b", "nc")
        listed = N.run(["ip", "netns", "exec", cap, binary, "-D"]).stdout.splitlines()
        entries = {l.split(".", 1)[1].split(" ")[0]: l for l in listed if "." in l}
        N.check(", container xdpcapt-a, podman," in entries.get("xva0", "") and
                ", container xdpcapt-b, podman," in entries.get("xvb0", "") and
                "container" not in entries.get("xbr0", "-"),
                "-D names the container at each host-side veth's other end, and none at the bridge", listed)
        for side in ("a", "b"):
            pod.run("wait", f"xdpcapt-{side}", timeout=30)
        time.sleep(N.scaled(0.3))
        N.check(x.stop() == 0, "two containers: xdpcap stopped cleanly", x.stderr)
        N.check(any_x.stop() == 0 and side_x.stop() == 0, "-i any and --container A without -i stopped cleanly",
                (any_x.stderr, side_x.stderr))
        host_side_veths(binary, any_x, any_path, side_x, side_listening, host_side)
        frames = P.frames_of(N.pcapng_records(path))
        mine = [f for f in frames if f[3] == 6 and PAIR_PORT in (f[1], f[2])]
        N.check(len(mine) >= 6 and len(mine) == len(frames) and mine[0][5] == 0x02,
                "--container A on A's host-side veth: the conversation with B from its SYN, nothing else",
                (len(mine), len(frames), [(f[1], f[2], hex(f[5]), f[0]["process"], f[0]["comments"])
                                          for f in frames[:4]]))
        a_words, b_words = f"nc:{a_pid}, container xdpcapt-a", f"nc:{b_pid}, container {b_id[:12]}"
        from_b = [f for f in mine if f[2] == PAIR_PORT]
        N.check(from_b and len(from_b) < len(mine), "--container A: both directions",
                (len(from_b), len(mine)))
        wrong = [(f[1], f[2], hex(f[5]), f[0]["process"], f[0]["comments"]) for f in mine
                 if (f[0]["process"] or (0,))[0] != (b_pid if f in from_b else a_pid) or
                 (f"proc {b_words} > {a_words}" if f in from_b else f"proc {a_words} > {b_words}")
                 not in f[0]["comments"]]
        N.check(not wrong, f"two containers: each of the {len(mine)} packets names its sender, then its receiver",
                wrong[:4])
        lab.assert_clean(dev="xva0")
    finally:
        for side in ("a", "b"):
            name = f"xdpcapt-{side}"
            if name in pod.names:
                pod.run("rm", "-f", "-t", "0", name, check_rc=False)
                pod.names.remove(name)
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "-n", cap, "link", "del", "xbr0"], capture_output=True)


def wait_line(x, text, timeout=5):
    """Until xdpcap `x` has written the line `text` on stderr."""
    end = time.monotonic() + N.scaled(timeout)
    while text not in x.err_lines and time.monotonic() < end:
        time.sleep(0.05)
    N.check(text in x.err_lines, f"xdpcap says '{text}'", x.err_lines)


def late_container(lab, pod, tmp, binary):
    """A container started while -i any runs, stopped, and started again
    behind a new veth while --container NAME without -i runs: each time its
    veth is made first, as podman's network setup does, and the container's
    nc connects to a server on the host side once per start."""
    cap, ns, name = lab.cap_ns, f"{lab.cap_ns}-d", "xdpcapt-d"

    def plug(dev):
        N.run(["ip", "netns", "add", ns])
        N.run(["ip", "-n", cap, "link", "add", dev, "type", "veth", "peer", "name", "eth0", "netns", ns])
        N.run(["ip", "-n", cap, "addr", "add", f"{LATE_HOST4}/24", "dev", dev])
        N.run(["ip", "-n", ns, "addr", "add", f"{LATE4}/24", "dev", "eth0"])
        for where, dev_ in ((ns, "lo"), (ns, "eth0"), (cap, dev)):
            N.run(["ip", "-n", where, "link", "set", dev_, "up"])

    def unplug(dev):
        subprocess.run(["ip", "-n", cap, "link", "del", dev], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    srv = lab.popen(cap, ["/usr/bin/python3", "-S", "-c",
                          "import socket\n"
                          "l=socket.socket();l.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
                          f"l.bind(('0.0.0.0',{LATE_PORT}));l.listen(4)\n"
                          "print('ready',flush=True)\n"
                          "for _ in range(2):\n"
                          "  c,_=l.accept()\n"
                          "  while c.recv(4096): pass\n"
                          "  c.sendall(b'ok');c.close();print('done',flush=True)\n"],
                    stdout=subprocess.PIPE, text=True)
    any_path, side_path = os.path.join(tmp, "late-any.pcapng"), os.path.join(tmp, "late-side.pcapng")
    any_x = side_x = None
    try:
        N.check(srv.stdout.readline().strip() == "ready", "the host-side server listens")
        any_x = N.Xdpcap(lab, binary, ["-i", "any", "-n", "-w", any_path, "--print", f"tcp port {LATE_PORT}"])
        any_x.wait_listening()
        plug("xdd0")
        wait_line(any_x, "xdpcap: xdd0 joined the capture")
        pod.names.append(name)
        pod.run("run", "-d", "--name", name, "--network", f"ns:/run/netns/{ns}", pod.image,
                "sh", "-c", f"sleep 1; echo one | nc {LATE_HOST4} {LATE_PORT}; sleep 60")
        side_x = N.Xdpcap(lab, binary, ["--container", name, "-w", side_path])
        side_x.wait_listening()
        N.check(srv.stdout.readline().strip() == "done", "the container's first connection is answered")
        # Stopped: podman's teardown deletes its veth.
        pod.run("stop", "-t", "0", name)
        unplug("xdd0")
        for x in (any_x, side_x):
            wait_line(x, "xdpcap: xdd0 went away; capture goes on")
        plug("xdd1")
        pod.run("start", name)
        N.check(srv.stdout.readline().strip() == "done", "the restarted container's connection is answered")
        srv.wait(timeout=N.scaled(10))
        lab.forget(srv)
        wait_line(side_x, "xdpcap: xdd1 joined the capture")
        time.sleep(N.scaled(0.3))
        held = {**N.held_programs(any_x.proc.pid), **N.held_programs(side_x.proc.pid)}
        pod.run("stop", "-t", "0", name)
        unplug("xdd1")
        wait_line(any_x, "xdpcap: xdd1 went away; capture goes on")
        N.check(any_x.stop() == 0 and side_x.stop() == 0, "late container: both captures stopped cleanly",
                (any_x.stderr, side_x.stderr))
    finally:
        for x in (any_x, side_x):
            if x and x.proc.poll() is None:
                x.stop()
        if name in pod.names:
            pod.run("rm", "-f", "-t", "0", name, check_rc=False)
            pod.names.remove(name)
        for dev in ("xdd0", "xdd1"):
            unplug(dev)
    late_checks(lab, binary, any_x, any_path, side_path, held)


def late_checks(lab, binary, any_x, any_path, side_path, held):
    """What the late container's captures hold, and what they left."""
    lines = [l for l in any_x.out.decode("utf-8", "replace").splitlines() if f".{LATE_PORT}" in l]
    column = {}
    for line in lines:
        column.setdefault(tuple(line.split()[1:3]), 0)
        column[tuple(line.split()[1:3])] += 1
    N.check(set(column) == {(f"xdd{n}(xdpcapt-d)", d) for n in (0, 1) for d in ("In", "Out")} and
            all(count >= 3 for count in column.values()),
            "-i any: the late container's connections, before and after its restart, each under its veth "
            "named after it, both directions", (column, lines[:4]))
    fields = ["frame.interface_name", "frame.interface_description", "tcp.dstport", "tcp.flags.syn"]
    rows = {}
    for path in (any_path, side_path):
        cp = N.run(["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t"] +
                   [w for f in fields for w in ("-e", f)])
        rows[path] = [r.split("\t") for r in cp.stdout.splitlines()]
    late = [r for r in rows[any_path] if len(r) == 4 and r[0].startswith("xdd")]
    N.check(len(late) >= 12 and all(", container xdpcapt-d, podman), CPU " in r[1] for r in late),
            "-i any: the late container's veths, described with its name",
            {(r[0], r[1]) for r in late})
    side = rows[side_path]
    after = [r for r in side if len(r) == 4 and r[0].startswith("xdd1@cpu")]
    N.check(all(len(r) == 4 and r[0].startswith(("xdd0@cpu", "xdd1@cpu")) and
                ", container xdpcapt-d, podman), CPU " in r[1] for r in side) and
            len(after) >= 6 and any(r[2] == str(LATE_PORT) and r[3] in ("1", "True") for r in after),
            "--container without -i: after the restart, the container's connection from its SYN on its new "
            "veth, described with its name", ({(r[0], r[1]) for r in side}, len(after)))
    recs = N.pcapng_records(any_path)
    left = [i for i, idb in enumerate(recs["idbs"]) if (idb["name"] or "").startswith(("xdd0@", "xdd1@"))]
    with_isb = {isb["if_id"] for isb in recs["isbs"]}
    N.check(left and all(i in with_isb for i in left) and not recs["problems"],
            "-i any: each interface of the stopped container leaves its statistics (ISB)",
            (left, sorted(with_isb), recs["problems"]))
    capinfos = N.run(["capinfos", "-c", "-M", any_path], check_rc=False)
    dump = N.run(["tcpdump", "-n", "-r", any_path, f"tcp port {LATE_PORT}"], check_rc=False)
    N.check(capinfos.returncode == 0 and dump.returncode == 0 and len(dump.stdout.splitlines()) == len(lines),
            "capinfos and tcpdump -r read -i any's file, every packet of the late container",
            (capinfos.returncode, capinfos.stderr[-300:], dump.returncode, dump.stderr[-300:],
             len(dump.stdout.splitlines()), len(lines)))
    remaining = [l.split(":")[1].strip().split("@")[0]
                 for l in N.run(["ip", "-n", lab.cap_ns, "-o", "link", "show"]).stdout.splitlines()]
    attached = {dev: lab.capture_state(dev) for dev in remaining}
    N.check(not any(attached.values()), "late container: nothing of either capture attached to the remaining "
            "interfaces", attached)
    N.check(held and not N.wait_programs_gone(list(held)),
            "late container: no program of either xdpcap is left after they exit", held)


def host_side_veths(binary, any_x, any_path, side_x, side_listening, path):
    """-i any names each container's host-side veth after it in the text
    column, and so does -r of its file; --container A without -i takes A's
    veth alone, every packet of the conversation, its interface description
    naming A."""
    lines = [l for l in any_x.out.decode("utf-8", "replace").splitlines() if f".{PAIR_PORT}" in l]
    column = {}
    for line in lines:
        words = line.split()
        column.setdefault((words[1], words[2]), 0)
        column[(words[1], words[2])] += 1
    replayed = N.run([binary, "-r", any_path, "-n"]).stdout.splitlines()
    N.check([l.split()[1:3] for l in replayed] == [l.split()[1:3] for l in lines],
            "-r of -i any's file: the same column, containers named", (replayed[:2], lines[:2]))
    N.check({dev for dev, _ in column} == {"xva0(xdpcapt-a)", "xvb0(xdpcapt-b)"} and
            all(direction in ("In", "Out") for _, direction in column),
            "-i any: each container's host-side veth is named after it in the column", (column, lines[:4]))
    N.check(column.get(("xva0(xdpcapt-a)", "In"), 0) >= 3 and column.get(("xva0(xdpcapt-a)", "Out"), 0) >= 3,
            "-i any: A's veth carries both directions", column)
    N.check(side_listening.startswith("listening on xva0,") and
            not [l for l in side_x.err_lines if l.startswith("listening on ") and "xva0" not in l],
            "--container A without -i: listens on A's host-side veth alone", side_x.err_lines)
    cp = N.run(["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-e", "frame.interface_name",
                "-e", "frame.interface_description", "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.flags.syn"])
    rows = [line.split("\t") for line in cp.stdout.splitlines()]
    pair = [r for r in rows if len(r) == 5 and str(PAIR_PORT) in (r[2], r[3])]
    N.check(len(pair) >= 6 and any(r[4] in ("1", "True") for r in pair),
            "--container A without -i: A's conversation with B from its SYN", (len(pair), rows[:4]))
    N.check(all(r[0].startswith("xva0@cpu") and r[1].startswith("xva0 (ifindex ") and
                ", container xdpcapt-a, podman), CPU " in r[1] for r in rows),
            "--container A without -i: every frame on A's veth (if_name the device's), its description naming A",
            {(r[0], r[1]) for r in rows})


FAKE_ENGINES = {
    # Hangs, with a child of its own.
    "hang": "/bin/sleep 60 &\necho $$ $! > {pids}\nwait\n",
    "locked": "echo $$ > {pids}\necho 'time=\"2026\" level=warning msg=\"retrying\"' >&2\n"
              "echo 'Error: database is locked' >&2\nexit 125\n",
    "flood": "echo $$ > {pids}\nexec /usr/bin/yes '[{{\"Name\": \"xdpcapt\"}}]'\n",
}


def kill_left(pids):
    """Whatever a failed check left running."""
    for pid in pids:
        if not N.process_gone(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def fake_engines(tmp, binary):
    """A podman on PATH that hangs, fails with its own message, floods its
    output, or is waited for when Ctrl-C comes: one line saying which, exit 1
    within the 5 s timeout (the signal's own end for Ctrl-C), no fake podman
    process left."""
    for case, interrupt in (("hang", False), ("locked", False), ("flood", False), ("hang", True)):
        bin_dir = os.path.join(tmp, f"fake-{case}-{interrupt}")
        os.makedirs(bin_dir)
        pids = os.path.join(bin_dir, "pids")
        with open(os.path.join(bin_dir, "podman"), "w") as f:
            f.write("#!/bin/sh\n" + FAKE_ENGINES[case].format(pids=pids))
        os.chmod(os.path.join(bin_dir, "podman"), 0o755)
        env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin")
        began = time.monotonic()
        # No such interface: should the container be found after all, nothing
        # is attached outside the test's namespaces.
        p = subprocess.Popen([binary, "-i", "xdpcapt-none0", "--container", "xdpcapt-fake", "-w", "/dev/null"],
                             env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            if interrupt:
                end = time.monotonic() + N.scaled(5)
                while not os.path.exists(pids) and time.monotonic() < end:
                    time.sleep(0.02)
                time.sleep(0.1)
                p.send_signal(signal.SIGINT)
            _out, err = p.communicate(timeout=N.scaled(15))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        took = time.monotonic() - began
        lines = err.splitlines()
        with open(pids) as f:
            left = [int(w) for w in f.read().split()]
        end = time.monotonic() + N.scaled(1)
        while not all(N.process_gone(q) for q in left) and time.monotonic() < end:
            time.sleep(0.02)
        try:
            N.check(all(N.process_gone(q) for q in left), f"fake podman ({case}{', Ctrl-C' if interrupt else ''}): "
                    "no process of it is left", [q for q in left if not N.process_gone(q)])
        finally:
            kill_left(left)
        if interrupt:
            N.check(p.returncode == -signal.SIGINT and took < N.scaled(3),
                    "fake podman hanging, Ctrl-C: xdpcap ends at once, as SIGINT ends it", (p.returncode, took, lines))
            continue
        expected = {"hang": "podman inspect gave no answer within 5 s (stopped)",
                    "locked": "podman inspect failed: Error: database is locked",
                    "flood": "podman inspect wrote more than 1 MiB (stopped)"}[case]
        N.check(p.returncode == 1 and lines == [f"xdpcap: --container xdpcapt-fake: {expected}"],
                f"fake podman ({case}): one line saying so, exit 1", (p.returncode, lines))
        N.check(took < N.scaled(8), f"fake podman ({case}): within the 5 s timeout", took)


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp:
        fake_engines(tmp, binary)
    if not shutil.which("podman") or not shutil.which("runc"):
        raise N.TestSkip("podman and runc are not installed (scripts/deps.sh installs them)")
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        for ns, dev, addr in ((lab.cap_ns, lab.cap_if, CAP4), (lab.gen_ns, lab.gen_if, GEN4)):
            N.run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
            N.run(["ip", "-n", ns, "link", "set", "lo", "up"])
        work = os.path.join(tmp, "podman")
        os.makedirs(work)
        pod = Podman(work)
        os.environ.update(CONTAINERS_STORAGE_CONF=pod.env["CONTAINERS_STORAGE_CONF"],
                          CONTAINERS_CONF=pod.env["CONTAINERS_CONF"])
        caps = os.path.join(tmp, "caps")
        os.makedirs(caps)
        try:
            pod.build_image()
            # --container: the container is found by name once it runs; the
            # capture starts after it, so a first container holds the name.
            pod.start("xdpcapt-web", lab.cap_ns, "sleep", "60")
            frames, nc_pid, nc_port, other_port, cid = container_round(
                lab, pod, caps, binary, "xdpcapt-nc", ["-i", lab.cap_if, "-k"])
            mine = P.packets_of_port(frames, nc_port, 6, PORT)
            ends = [P.local_end(f, nc_port) for f in mine]
            N.check(len(mine) >= 6 and all(e and e[1] == nc_pid for e in ends),
                    "-k: the container's connection names ss's nc pid", (len(mine), nc_pid))
            N.check(all(e[0] == f"nc:{nc_pid}, container {cid[:12]}" for e in ends),
                    "-k: each of its packets says the container's short ID", mine[0][0]["comments"])
            others = P.packets_of_port(frames, other_port, 6, PORT)
            N.check(others and all("container" not in " ".join(f[0]["comments"]) for f in others),
                    "-k: the outside process's packets name no container", others[0][0]["comments"] if others else None)

            # --container NAME, the container running before the capture.
            srv = server(lab, 2)
            pod.start("xdpcapt-held", lab.cap_ns, "sh", "-c", f"sleep 3; sleep 2 | nc {GEN4} {PORT}")
            path = os.path.join(caps, "held.pcapng")
            x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "--container", "xdpcapt-held", "-w", path])
            x.wait_listening()
            nc_pid, nc_port = nc_pid_by_ss(lab)
            other = lab.popen(lab.cap_ns, ["/usr/bin/python3", "-S", "-c",
                                           "import socket\n"
                                           f"s=socket.create_connection(('{GEN4}',{PORT}))\n"
                                           "s.sendall(b'x');s.shutdown(socket.SHUT_WR);s.recv(10)\n"])
            other.wait(timeout=N.scaled(10))
            lab.forget(other)
            srv.wait(timeout=N.scaled(30))
            lab.forget(srv)
            time.sleep(N.scaled(0.5))
            N.check(x.stop() == 0, "--container: xdpcap stopped cleanly", x.stderr)
            frames = P.frames_of(N.pcapng_records(path))
            mine = P.packets_of_port(frames, nc_port, 6, PORT)
            N.check(len(mine) >= 6 and len(mine) == len(frames),
                    "--container: exactly the container's connection is kept", (len(mine), len(frames)))
            N.check(all((P.local_end(f, nc_port) or ("",))[0] == f"nc:{nc_pid}, container xdpcapt-held"
                        for f in mine),
                    "--container: each packet names nc and the container by name",
                    [(f[0]["process"], f[0]["comments"]) for f in mine[:3]])
            lab.assert_clean()

            # --container-netns, from the other namespace: cap0 is the container's.
            rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if, "--container", "xdpcapt-web", "-c", "1",
                                                        "-w", "/dev/null"], ns=lab.gen_ns)
            N.check(rc == 1 and len(err) == 1 and "cap0" in err[0],
                    "without --container-netns, cap0 is not in xdpcap's namespace (one line)", (rc, err))
            x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "--container", "xdpcapt-web", "--container-netns",
                                       "-w", os.path.join(caps, "netns.pcapng")], ns=lab.gen_ns)
            x.wait_listening()
            N.check(x.stop() == 0, "--container-netns: cap0 is found and captured inside the container's "
                    "network namespace", x.stderr)
            lab.assert_clean()

            two_containers(lab, pod, caps, binary)
            late_container(lab, pod, caps, binary)

            for who, words in (("unknown", "no running podman or docker container"), ("stopped", "is not running")):
                target = "xdpcapt-nosuch" if who == "unknown" else "xdpcapt-web"
                if who == "stopped":
                    pod.run("stop", "-t", "0", "xdpcapt-web")
                rc, _out, err = N.run_xdpcap(lab, binary, ["-i", lab.cap_if, "--container", target,
                                                            "-w", "/dev/null"])
                N.check(rc == 1 and len(err) == 1 and words in err[0], f"--container {who}: one line, exit 1",
                        (rc, err))
                lab.assert_clean()
        finally:
            pod.close()


if __name__ == "__main__":
    N.main(test)
