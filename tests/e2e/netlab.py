"""Shared harness of the xdpcap end-to-end tests.

Each test is a standalone script run as root with /usr/bin/python3 (Debian's,
which has scapy), the xdpcap binary as argv[1]:

    /usr/bin/python3 tests/e2e/test_X.py build/xdpcap

Exit status: 0 pass, 1 fail, 77 skip.  A skip (not root, binary missing, tool
missing, too few CPUs) becomes a failure when the environment variable CI is
set, because CI must run these tests.

What lives here:
  * NetLab: a context manager creating a unique pair of network namespaces
    joined by a veth pair (cap0 in the capture namespace, gen0 in the generator
    namespace), silent (no IPv6, no IPv4 address: no stray frames), removed
    unconditionally on exit, on exceptions and on SIGTERM/SIGINT/SIGHUP.
  * Xdpcap: one xdpcap process inside the capture namespace, with its stderr
    (and stdout, unless redirected) read by threads.
  * build_corpus(): unique Ethernet frames written with scapy to a classic pcap.
  * send(): runs send_frames.py pinned to one CPU inside the generator namespace.
  * verification helpers built on independent readers: tshark, capinfos,
    tcpdump (and a tiny classic pcap reader), plus a minimal pcapng block
    walker for the interface description blocks.

Only addresses of 198.18.0.0/15 and 2001:db8::/32 and locally administered MACs
appear in the frames, and the frames never leave the veth pair.
"""

import json
import os
import random
import re
import secrets
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
SENDER = os.path.join(HERE, "send_frames.py")
EXIT_PASS, EXIT_FAIL, EXIT_SKIP = 0, 1, 77
# Under emulation (the kernel-6.1 guest, tests/vm) everything is 10 to 50
# times slower: every time limit below is multiplied by this factor. It
# stretches waits, never what a check accepts.
TIME_SCALE = float(os.environ.get("XDPCAP_TIME_SCALE", "1"))
TEST_DEADLINE_S = 120         # a hang guard (times TIME_SCALE): a loaded host runs the tests at half speed
CMD_TIMEOUT_S = 20            # default timeout of one helper command (times TIME_SCALE)


def scaled(seconds):
    return seconds * TIME_SCALE

# ip, sysctl, capsh and bpftool live in /usr/sbin, which may not be on PATH
# (e.g. under meson test): make sure they are found, here and in children.
_path = os.environ.get("PATH", "").split(os.pathsep)
os.environ["PATH"] = os.pathsep.join(
    [p for p in _path if p] + [p for p in ("/usr/sbin", "/sbin", "/usr/bin", "/bin")
                               if p not in _path])

LISTENING_RE = re.compile(
    r"^listening on (\S+), link-type EN10MB \(Ethernet\), snapshot length (\d+) bytes$")


# --------------------------------------------------------------------------
# Outcomes and logging
# --------------------------------------------------------------------------

class TestFailure(Exception):
    """A check failed."""


class TestSkip(Exception):
    """The test cannot run here (becomes a failure under CI)."""


class Interrupted(BaseException):
    """SIGTERM/SIGINT/SIGHUP arrived: unwind and clean up."""


class Deadline(BaseException):
    """The test ran past TEST_DEADLINE_S."""


# XDPCAP_STEP_TIMES=1 (the guest stage sets it): each line starts with the
# seconds since the test began, to show where an emulated run spends its time.
STEP_TIMES = os.environ.get("XDPCAP_STEP_TIMES") == "1"
_STARTED = time.monotonic()


def log(msg=""):
    if STEP_TIMES and msg:
        msg = f"{time.monotonic() - _STARTED:6.1f}s {msg}"
    print(msg, flush=True)


def check(cond, what, detail=None):
    """Assert one property; print it either way."""
    if cond:
        log(f"  ok    {what}")
        return
    log(f"  FAIL  {what}")
    if detail is not None:
        for line in str(detail).splitlines() or [""]:
            log(f"        {line}")
    raise TestFailure(what if detail is None else f"{what}: {detail}")


FAILURES = []


def expect(cond, what, detail=None):
    """Like check(), but records the failure and carries on; main() fails at the end."""
    if cond:
        log(f"  ok    {what}")
        return True
    log(f"  FAIL  {what}")
    if detail is not None:
        for line in str(detail).splitlines() or [""]:
            log(f"        {line}")
    FAILURES.append(what)
    return False


# --------------------------------------------------------------------------
# Signals and cleanup
# --------------------------------------------------------------------------

_cleanups = []          # callables, most recent last
_cleanup_lock = threading.RLock()
_cleaning = 0
_pending_signal = None


def _on_signal(signum, _frame):
    global _pending_signal
    if _cleaning:
        _pending_signal = signum
        return
    raise Interrupted(f"signal {signal.Signals(signum).name}")


def _on_alarm(_signum, _frame):
    if _cleaning:
        return
    raise Deadline(f"test ran longer than {scaled(TEST_DEADLINE_S):.0f} s")


def install_signal_handlers():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(int(scaled(TEST_DEADLINE_S)))


def _register_cleanup(fn):
    with _cleanup_lock:
        _cleanups.append(fn)


def _unregister_cleanup(fn):
    with _cleanup_lock:
        if fn in _cleanups:
            _cleanups.remove(fn)


def run_cleanups():
    """Run every registered cleanup (LIFO), shielded from our own signal handlers."""
    global _cleaning
    _cleaning += 1
    try:
        while True:
            with _cleanup_lock:
                if not _cleanups:
                    break
                fn = _cleanups.pop()
            try:
                fn()
            except BaseException as e:  # keep cleaning whatever happens
                log(f"  cleanup error: {e!r}")
    finally:
        _cleaning -= 1


# --------------------------------------------------------------------------
# Test entry point
# --------------------------------------------------------------------------

REQUIRED_TOOLS = ("ip", "tshark", "capinfos", "tcpdump")


def main(test_fn, *, min_cpus=1, tools=REQUIRED_TOOLS):
    """Run test_fn(binary) and exit with 0/1/77."""
    name = os.path.basename(sys.argv[0])
    ci = bool(os.environ.get("CI"))

    def skip(reason):
        if ci:
            log(f"{name}: FAIL: would skip ({reason}), but CI is set: "
                "the end-to-end tests must run in CI")
            sys.exit(EXIT_FAIL)
        log(f"{name}: SKIP: {reason}")
        sys.exit(EXIT_SKIP)

    if len(sys.argv) < 2:
        skip(f"no binary given (usage: {PYTHON} {name} PATH/TO/xdpcap)")
    binary = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        skip("not running as root")
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        skip(f"binary {binary} does not exist or is not executable")
    for tool in tools:
        if shutil.which(tool) is None:
            skip(f"tool {tool} not found")
    ncpu = len(os.sched_getaffinity(0))
    if ncpu < min_cpus:
        skip(f"needs {min_cpus} CPUs, this process may use {ncpu}")

    install_signal_handlers()
    log(f"{name}: testing {binary}")
    status = EXIT_FAIL
    try:
        test_fn(binary)
        if FAILURES:
            log(f"{name}: FAIL: {len(FAILURES)} check(s) failed:")
            for f in FAILURES:
                log(f"  - {f}")
        else:
            status = EXIT_PASS
    except TestFailure as e:
        log(f"{name}: FAIL: {e}")
        for f in FAILURES:
            log(f"  - also failed: {f}")
    except TestSkip as e:
        run_cleanups()
        skip(str(e))
    except (Interrupted, Deadline) as e:
        log(f"{name}: FAIL: {e}")
    except Exception:
        traceback.print_exc(file=sys.stdout)
        log(f"{name}: FAIL: unexpected exception")
    finally:
        run_cleanups()
        signal.alarm(0)
    if status == EXIT_PASS:
        log(f"{name}: PASS")
    sys.exit(status)


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------

def run(cmd, *, timeout=CMD_TIMEOUT_S, check_rc=True, input=None, text=True):
    """Run a command to completion; return CompletedProcess.  Never hangs."""
    timeout = scaled(timeout)
    try:
        cp = subprocess.run(cmd, input=input, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, timeout=timeout, text=text)
    except subprocess.TimeoutExpired as e:
        raise TestFailure(f"command timed out after {timeout} s: {cmd}") from e
    if check_rc and cp.returncode != 0:
        raise TestFailure(f"command failed ({cp.returncode}): {' '.join(cmd)}\n"
                          f"stdout: {cp.stdout!s:.2000}\nstderr: {cp.stderr!s:.2000}")
    return cp


# --------------------------------------------------------------------------
# Namespaces and veth pair
# --------------------------------------------------------------------------

class Scoped:
    """A resource set up on entry and always torn down: on exit, on an
    exception during setup, and (through the cleanup registry) on signals.
    Subclasses provide _setup() and close()."""

    def __enter__(self):
        _register_cleanup(self.close)
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class NetLab(Scoped):
    """Two fresh network namespaces joined by a veth pair, cap0 <-> gen0.

    with NetLab(mtu=9000) as lab:
        lab.cap_ns, lab.gen_ns, lab.cap_if ("cap0"), lab.gen_if ("gen0")

    NetLab(pairs=N) makes N pairs between the same two namespaces: capI <-> genI
    (lab.cap_ifs, lab.gen_ifs); cap0/gen0 are the first.

    IPv6 is disabled (all/default/device) before the links go up and no IPv4
    address is assigned, so the kernel sends nothing on its own: only the frames
    a test sends cross the link.  On exit (normal, exception, signal) every
    process the lab started is killed and both namespaces are deleted.
    """

    def __init__(self, mtu=None, pairs=1):
        tag = f"xdpcapt-{os.getpid()}-{secrets.token_hex(3)}"
        self.cap_ns = f"{tag}-cap"
        self.gen_ns = f"{tag}-gen"
        self.cap_ifs = [f"cap{i}" for i in range(pairs)]
        self.gen_ifs = [f"gen{i}" for i in range(pairs)]
        self.cap_if = self.cap_ifs[0]
        self.gen_if = self.gen_ifs[0]
        self.mtu = mtu
        self.procs = []          # Popen objects started in our namespaces
        self._created = []

    def _setup(self):
        for ns in (self.cap_ns, self.gen_ns):
            run(["ip", "netns", "add", ns])
            self._created.append(ns)
            for scope in ("all", "default"):
                self.sysctl(ns, f"net.ipv6.conf.{scope}.disable_ipv6", "1")
            # New namespaces inherit IPv4 forwarding from the host's (which
            # a container engine may have turned on): a lab forwards nothing
            # unless its test says so.
            self.sysctl(ns, "net.ipv4.ip_forward", "0")
        devs = []
        for i, (cap, gen) in enumerate(zip(self.cap_ifs, self.gen_ifs)):
            run(["ip", "-n", self.cap_ns, "link", "add", cap, "address", f"02:00:00:00:ca:{i + 1:02x}",
                 "type", "veth", "peer", "name", gen, "address", f"02:00:00:00:9e:{i + 1:02x}",
                 "netns", self.gen_ns])
            devs += [(self.cap_ns, cap), (self.gen_ns, gen)]
        for ns, dev in devs:
            self.sysctl(ns, f"net.ipv6.conf.{dev}.disable_ipv6", "1")
            if self.mtu is not None:
                run(["ip", "-n", ns, "link", "set", "dev", dev, "mtu", str(self.mtu)])
        for ns, dev in devs:
            run(["ip", "-n", ns, "link", "set", "dev", dev, "up"])
        for ns, dev in devs:
            self._wait_up(ns, dev)
        log(f"  lab   namespaces {self.cap_ns} ({', '.join(self.cap_ifs)}) <-> {self.gen_ns} "
            f"({', '.join(self.gen_ifs)})" + (f", mtu {self.mtu}" if self.mtu else ""))

    def _wait_up(self, ns, dev, timeout=5.0):
        end = time.monotonic() + scaled(timeout)
        while True:
            info = self.link_info(ns, dev)
            if "LOWER_UP" in info.get("flags", []):
                return
            if time.monotonic() > end:
                raise TestFailure(f"{dev} in {ns} did not come up: {info}")
            time.sleep(0.02)

    def close(self):
        global _cleaning
        _cleaning += 1
        try:
            _unregister_cleanup(self.close)
            for p in self.procs:
                kill_process(p)
            self.procs = []
            for ns in reversed(self._created):
                # Any process still inside (started by us) would keep it alive.
                try:
                    cp = run(["ip", "netns", "pids", ns], check_rc=False, timeout=5)
                    for pid in cp.stdout.split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except (ProcessLookupError, ValueError):
                            pass
                except TestFailure as e:
                    log(f"  cleanup: {e}")
                try:
                    run(["ip", "netns", "delete", ns], check_rc=False, timeout=10)
                except TestFailure as e:
                    log(f"  cleanup: {e}")
            left = [ns for ns in self._created if ns in list_netns()]
            self._created = []
            if left:
                log(f"  cleanup: namespaces still present: {left}")
        finally:
            _cleaning -= 1

    # -- helpers --
    @staticmethod
    def sysctl(ns, key, value):
        run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{key}={value}"])

    @staticmethod
    def link_info(ns, dev):
        cp = run(["ip", "-j", "-d", "-n", ns, "link", "show", "dev", dev])
        data = json.loads(cp.stdout)
        return data[0] if data else {}

    def popen(self, ns, argv, **kw):
        p = subprocess.Popen(["ip", "netns", "exec", ns] + list(argv), **kw)
        self.procs.append(p)
        return p

    def track(self, p):
        """Kill p (a process we started outside the namespaces) on cleanup too."""
        self.procs.append(p)
        return p

    def forget(self, p):
        if p in self.procs:
            self.procs.remove(p)

    def xdp_state(self, dev=None):
        """Describe any XDP program on cap0 or dev ('' when none is attached)."""
        dev = dev or self.cap_if
        found = []
        info = self.link_info(self.cap_ns, dev)
        if "xdp" in info:
            found.append(f"json: xdp={info['xdp']}")
        text = run(["ip", "-d", "-n", self.cap_ns, "link", "show", "dev", dev]).stdout
        # The peer namespace name (link-netns xdpcapt-...) contains "xdp": drop it.
        text_wo_ns = re.sub(r"link-netns\s+\S+", "", text)
        text_wo_ns = re.sub(r"link-netnsid\s+\S+", "", text_wo_ns)
        if re.search(r"\bxdp\w*\b|\bprog/xdp\b|\bprog\b", text_wo_ns):
            found.append("text: " + " ".join(text.split()))
        return "; ".join(found)

    def xdp_prog(self):
        """(id, name) of the XDP program attached to cap0, or None."""
        info = self.link_info(self.cap_ns, self.cap_if)
        xdp = info.get("xdp")
        if not xdp:
            return None
        prog = xdp.get("prog") or {}
        pid = prog.get("id")
        if pid is None:
            for att in xdp.get("attached", []):
                pid = att.get("prog", {}).get("id", pid)
        name = prog.get("name")
        if pid is not None and not name:
            cp = run(["bpftool", "-j", "prog", "show", "id", str(pid)], check_rc=False)
            if cp.returncode == 0:
                name = json.loads(cp.stdout).get("name")
        return (pid, name)

    def tc_filters(self, dev=None, ns=None):
        """xdpcap's clsact filters on cap0 (or dev): `tc filter show` lines naming an xdpcap program.

        tcx links (Linux 6.6 and later) need no check: the kernel removes
        them with the last process holding them, even after SIGKILL."""
        dev = dev or self.cap_if
        found = []
        for point in ("ingress", "egress"):
            cp = run(["ip", "netns", "exec", ns or self.cap_ns, "tc", "filter", "show", "dev", dev, point],
                     check_rc=False)
            found += [f"{point}: {l.strip()}" for l in cp.stdout.splitlines() if "xdpcap" in l]
        return found

    def capture_state(self, dev=None):
        """What a capture left on cap0 (or dev): XDP and clsact filters ('' when nothing)."""
        parts = [self.xdp_state(dev)] + self.tc_filters(dev)
        return "; ".join(p for p in parts if p)

    def assert_clean(self, what="nothing of xdpcap remains attached to cap0 (XDP, tc)", timeout=2.0, dev=None):
        end = time.monotonic() + scaled(timeout)
        state = self.capture_state(dev)
        while state and time.monotonic() < end:
            time.sleep(0.05)
            state = self.capture_state(dev)
        check(state == "", what, state)

    # -- sending --
    def send(self, pcap_path, cpu, gap_us=0.0, timeout=30.0, gen_if=None):
        """Send every frame of pcap_path out of gen0 (or gen_if) from a process pinned to cpu.

        cpu may be a list: frame i is then sent from cpu[i % len(cpu)]."""
        cpu_arg = ",".join(map(str, cpu)) if isinstance(cpu, (list, tuple)) else str(cpu)
        argv = [PYTHON, SENDER, "--iface", gen_if or self.gen_if, "--cpu", cpu_arg,
                "--pcap", pcap_path, "--gap-us", str(gap_us)]
        p = self.popen(self.gen_ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
        try:
            out, err = p.communicate(timeout=scaled(timeout))
        except subprocess.TimeoutExpired:
            kill_process(p)
            raise TestFailure(f"sender timed out after {scaled(timeout)} s")
        finally:
            self.forget(p)
        if p.returncode != 0:
            raise TestFailure(f"sender failed ({p.returncode}): {err.strip()}")
        return err.strip()

    def xdpcap(self, binary, args, **kw):
        """Start BINARY -i cap0 ARGS inside the capture namespace."""
        return Xdpcap(self, binary, ["-i", self.cap_if] + list(args), **kw)


def build_bpf_object(source, tmp, defines=()):
    """Compile one of the tests' own BPF programs (tests/e2e/SOURCE) into tmp."""
    obj = os.path.join(tmp, os.path.basename(source).replace(".c", ".o"))
    multiarch = run(["gcc", "-print-multiarch"], check_rc=False).stdout.strip() or "x86_64-linux-gnu"
    run(["clang", "-O2", "-g", "-target", "bpf", "-idirafter", f"/usr/include/{multiarch}"]
        + [f"-D{d}" for d in defines] + ["-c", os.path.join(HERE, source), "-o", obj])
    return obj


class TcxProgram:
    """OBJ's tc program attached last on DEV's tcx ingress in namespace NS,
    through a BPF link this process holds (Debian 12's bpftool and tc predate
    tcx); close() detaches it. `id` is the program's id."""

    BPF_OBJ_GET, BPF_LINK_CREATE, BPF_TCX_INGRESS = 7, 28, 46
    CLONE_NEWNET = 0x40000000

    def __init__(self, ns, dev, obj, ifindex):
        import ctypes
        import platform
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._nr = {"x86_64": 321, "aarch64": 280}[platform.machine()]
        pin = f"/sys/fs/bpf/xdpcapt-{os.getpid()}-{secrets.token_hex(3)}"
        run(["bpftool", "prog", "load", obj, pin, "type", "classifier"])
        try:
            self.id = json.loads(run(["bpftool", "-j", "prog", "show", "pinned", pin]).stdout)["id"]
            path = ctypes.create_string_buffer(pin.encode())
            attr = struct.pack("=QII", ctypes.addressof(path), 0, 0).ljust(64, b"\0")
            prog_fd = self._bpf(self.BPF_OBJ_GET, attr)
        finally:
            os.unlink(pin)
        try:
            home = os.open("/proc/self/ns/net", os.O_RDONLY)
            there = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                self._setns(there)
                # ifindex is looked up in the caller's namespace.
                attr = struct.pack("=IIII", prog_fd, ifindex, self.BPF_TCX_INGRESS, 0).ljust(64, b"\0")
                self.link_fd = self._bpf(self.BPF_LINK_CREATE, attr)
            finally:
                self._setns(home)
                os.close(home)
                os.close(there)
        finally:
            os.close(prog_fd)
        log(f"  tcx   program {self.id} ({os.path.basename(obj)}) on {dev}'s tcx ingress in {ns}")

    def _bpf(self, cmd, attr):
        import ctypes
        buf = ctypes.create_string_buffer(attr, len(attr))
        fd = self._libc.syscall(self._nr, cmd, buf, len(attr))
        if fd < 0:
            raise TestFailure(f"bpf({cmd}) failed: {os.strerror(ctypes.get_errno())}")
        return fd

    def _setns(self, fd):
        import ctypes
        if self._libc.setns(fd, self.CLONE_NEWNET) != 0:
            raise TestFailure(f"setns failed: {os.strerror(ctypes.get_errno())}")

    def run_count(self):
        """How often it ran (kernel.bpf_stats_enabled must be 1)."""
        cp = run(["bpftool", "-j", "prog", "show", "id", str(self.id)])
        return int(json.loads(cp.stdout).get("run_cnt", 0))

    def close(self):
        if self.link_fd >= 0:
            os.close(self.link_fd)
            self.link_fd = -1


def _held_fds(pid):
    """The fields of /proc/PID/fdinfo, one dict per open file descriptor."""
    fdinfo = f"/proc/{pid}/fdinfo"
    try:
        entries = os.listdir(fdinfo)
    except OSError:
        return
    for fd in entries:
        fields = {}
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                for line in f:
                    key, _, value = line.partition(":")
                    fields[key] = value.strip()
        except OSError:
            continue
        yield fields


def held_programs(pid):
    """{id: name} of the BPF programs process `pid` holds file descriptors of."""
    ids = {int(fields["prog_id"]) for fields in _held_fds(pid) if "prog_id" in fields}
    programs = {}
    for pid_ in sorted(ids):
        cp = run(["bpftool", "-j", "prog", "show", "id", str(pid_)], check_rc=False)
        if cp.returncode == 0:
            programs[pid_] = json.loads(cp.stdout).get("name", "")
    return programs


def held_maps(pid):
    """{name: max_entries} of the BPF maps process `pid` holds: by file
    descriptor, or through a program it holds one of (xdpcap keeps only the
    descriptors it still uses once its programs are loaded)."""
    map_ids = set()
    for fields in _held_fds(pid):
        if "map_id" in fields:
            map_ids.add(int(fields["map_id"]))
        elif "prog_id" in fields:
            cp = run(["bpftool", "-j", "prog", "show", "id", fields["prog_id"]], check_rc=False)
            if cp.returncode == 0:
                map_ids.update(json.loads(cp.stdout).get("map_ids", []))
    maps = {}
    for map_id in sorted(map_ids):
        cp = run(["bpftool", "-j", "map", "show", "id", str(map_id)], check_rc=False)
        if cp.returncode == 0:
            shown = json.loads(cp.stdout)
            maps[shown.get("name", "")] = shown.get("max_entries", 0)
    return maps


def possible_cpus():
    """How many CPUs the kernel may bring online (/sys/devices/system/cpu/possible)."""
    count = 0
    with open("/sys/devices/system/cpu/possible") as f:
        for part in f.read().strip().split(","):
            first, _, last = part.partition("-")
            count += int(last or first) - int(first) + 1
    return count


def programs_alive(ids):
    """Which of the program ids still exist."""
    return [i for i in ids if run(["bpftool", "prog", "show", "id", str(i)], check_rc=False).returncode == 0]


def wait_programs_gone(ids, timeout=2.0):
    """Poll until none of the program ids exists (the kernel frees them a
    little after their last holder); return those still alive."""
    end = time.monotonic() + scaled(timeout)
    alive = programs_alive(ids)
    while alive and time.monotonic() < end:
        time.sleep(0.05)
        alive = programs_alive(ids)
    return alive


def kernel_has_tracing():
    """Whether the kernel has the tracing program type (fentry/fexit)."""
    out = run(["bpftool", "feature", "probe", "kernel"], check_rc=False).stdout
    return "program_type tracing is available" in out


def link_info_promiscuity(lab):
    """cap0's promiscuity count, as `ip -d link show` reports it."""
    return int(lab.link_info(lab.cap_ns, lab.cap_if).get("promiscuity", -1))


def cpus():
    """CPUs this test may use, sorted (the sender pins itself to one of them)."""
    return sorted(os.sched_getaffinity(0))


def list_netns():
    cp = run(["ip", "netns", "list"], check_rc=False, timeout=5)
    return [line.split()[0] for line in cp.stdout.splitlines() if line.strip()]


def kill_process(p, grace=2.0):
    """Terminate (then kill) one process we started."""
    if p.poll() is not None:
        return
    try:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        p.kill()
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    except ProcessLookupError:
        pass


# --------------------------------------------------------------------------
# xdpcap process
# --------------------------------------------------------------------------

class Xdpcap:
    """One xdpcap process in the capture namespace.

    stderr is always read by a thread (lines in .err_lines).  stdout is read by
    a thread too (bytes in .out) unless `stdout` is given (e.g. PIPE, to be
    handed to a reader process, or a file).
    """

    def __init__(self, lab, binary, args, stdout=None, ns=None, argv=None):
        self.lab = lab
        self.argv = argv if argv is not None else [binary] + list(args)
        self.err_lines = []
        self.out = bytearray()
        self._listening = threading.Event()
        self._own_stdout = stdout is None
        ns = ns or lab.cap_ns
        log(f"  run   ip netns exec {ns} {' '.join(self.argv)}")
        self.proc = lab.popen(ns, self.argv, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE if stdout is None else stdout,
                              stderr=subprocess.PIPE)
        self._t_err = threading.Thread(target=self._read_err, daemon=True)
        self._t_err.start()
        self._t_out = None
        if self._own_stdout:
            self._t_out = threading.Thread(target=self._read_out, daemon=True)
            self._t_out.start()

    def _read_err(self):
        for raw in iter(self.proc.stderr.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.err_lines.append(line)
            if line.startswith("listening on "):
                self._listening.set()
        self.proc.stderr.close()

    def _read_out(self):
        while True:
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                break
            self.out += chunk
        self.proc.stdout.close()

    @property
    def stdout_pipe(self):
        return self.proc.stdout

    def wait_listening(self, timeout=10.0):
        """Wait for the 'listening on' line; fail if xdpcap exits or times out."""
        timeout = scaled(timeout)
        end = time.monotonic() + timeout
        while not self._listening.wait(0.05):
            if self.proc.poll() is not None:
                self._t_err.join(2)
                raise TestFailure(f"xdpcap exited ({self.proc.returncode}) before "
                                  f"listening; stderr: {self.err_lines}")
            if time.monotonic() > end:
                raise TestFailure(f"no 'listening on' line within {timeout} s; "
                                  f"stderr: {self.err_lines}")
        return next(l for l in self.err_lines if l.startswith("listening on "))

    def send_signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout=10.0):
        """Wait for exit; kill and fail on timeout.  Returns the exit code."""
        timeout = scaled(timeout)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_process(self.proc)
            self._join()
            raise TestFailure(f"xdpcap did not exit within {timeout} s; "
                              f"stderr so far: {self.err_lines}")
        self._join()
        self.lab.forget(self.proc)
        return rc

    def stop(self, sig=signal.SIGINT, timeout=10.0):
        self.send_signal(sig)
        return self.wait(timeout)

    def _join(self):
        self._t_err.join(5)
        if self._t_out is not None:
            self._t_out.join(5)

    @property
    def returncode(self):
        return self.proc.returncode

    @property
    def stderr(self):
        return "\n".join(self.err_lines)


def run_xdpcap(lab, binary, args, ns=None, timeout=10.0):
    """Run xdpcap to completion (for commands expected to fail fast)."""
    x = Xdpcap(lab, binary, args, ns=ns)
    rc = x.wait(timeout)
    return rc, bytes(x.out).decode("utf-8", "replace"), list(x.err_lines)


# --------------------------------------------------------------------------
# Frame corpus
# --------------------------------------------------------------------------

MARKER = b"XDPCAPT!"
KINDS = ("ipv4-udp", "ipv4-tcp", "ipv4-icmp", "ipv6-udp", "ipv6-icmp", "arp", "vlan-ipv4-udp")


def _frame(kind, seq, size, rng):
    """One Ethernet frame of exactly `size` bytes (or its minimum), unique by seq."""
    from scapy.layers.l2 import ARP, Dot1Q, Ether
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
    from scapy.packet import Raw

    src_mac = "02:00:5e:%02x:%02x:%02x" % ((seq >> 16) & 0xff, (seq >> 8) & 0xff, seq & 0xff)
    eth = Ether(src=src_mac, dst="02:00:00:00:ca:01")
    v4src = f"198.18.{(seq >> 8) & 0xff}.{seq & 0xff}"
    v4dst = f"198.19.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    v6src = f"2001:db8::{(seq >> 16) & 0xffff:x}:{seq & 0xffff:x}"
    v6dst = f"2001:db8:1::{rng.randrange(1, 0xffff):x}"
    tag = MARKER + struct.pack("!I", seq)

    if kind == "ipv4-udp":
        hdr = eth / IP(src=v4src, dst=v4dst, id=seq & 0xffff) / UDP(sport=40000 + seq % 20000, dport=9)
    elif kind == "ipv4-tcp":
        hdr = eth / IP(src=v4src, dst=v4dst, id=seq & 0xffff) / TCP(
            sport=40000 + seq % 20000, dport=80, seq=(seq * 7919) & 0xffffffff, flags="PA")
    elif kind == "ipv4-icmp":
        hdr = eth / IP(src=v4src, dst=v4dst, id=seq & 0xffff) / ICMP(type=8, id=0x5844, seq=seq & 0xffff)
    elif kind == "ipv6-udp":
        hdr = eth / IPv6(src=v6src, dst=v6dst, fl=seq & 0xfffff) / UDP(sport=40000 + seq % 20000, dport=9)
    elif kind == "ipv6-icmp":
        hdr = eth / IPv6(src=v6src, dst=v6dst, fl=seq & 0xfffff) / ICMPv6EchoRequest(id=0x5844, seq=seq & 0xffff)
    elif kind == "arp":
        hdr = Ether(src=src_mac, dst="ff:ff:ff:ff:ff:ff") / ARP(
            op=1, hwsrc=src_mac, psrc=v4src, pdst=v4dst)
    elif kind == "vlan-ipv4-udp":
        hdr = eth / Dot1Q(vlan=100 + seq % 50, prio=seq % 8) / IP(
            src=v4src, dst=v4dst, id=seq & 0xffff) / UDP(sport=40000 + seq % 20000, dport=9)
    else:
        raise ValueError(kind)

    base = len(bytes(hdr))
    room = max(size - base, len(tag))
    fill = (tag + bytes((seq + i) & 0xff for i in range(max(0, room - len(tag)))))[:room]
    if kind == "arp":
        frame = bytes(hdr) + fill           # Ethernet trailer after the ARP body
    else:
        frame = bytes(hdr / Raw(load=fill))
    return frame


def build_corpus(path, count=200, sizes=None, kinds=KINDS, seed=1):
    """Write `count` unique frames to a classic pcap (linktype 1); return them.

    Sizes cycle through `sizes` (default: the edges 60, 64, 1514 and a spread
    in between); kinds cycle through IPv4 UDP/TCP/ICMP, IPv6 UDP/ICMPv6, ARP
    and 802.1Q-tagged IPv4.  A frame whose headers plus the 12-byte marker do
    not fit the requested size is made just large enough.
    """
    from scapy.utils import wrpcap
    from scapy.layers.l2 import Ether

    rng = random.Random(seed)
    if sizes is None:
        sizes = [60, 64, 1514, 65, 128, 256, 512, 1000, 1499, 1513, 100, 1200]
    frames = []
    for i in range(count):
        seq = (seed << 16) + i
        size = sizes[i % len(sizes)] if i < 2 * len(sizes) else rng.randrange(60, 1515)
        frames.append(_frame(kinds[i % len(kinds)], seq, size, rng))
    if len(set(frames)) != len(frames):
        raise TestFailure("corpus frames are not unique")
    wrpcap(path, [Ether(f) for f in frames], linktype=1)
    written = read_pcap(path)
    if [r[2] for r in written] != frames:
        raise TestFailure("corpus pcap does not round-trip")
    return frames


def write_frames(path, frames):
    """Write raw frames (bytes) to a classic pcap without scapy's re-encoding."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
        t = int(time.time())
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", t, i, len(fr), len(fr)))
            f.write(fr)


def jumbo_frame(seq, size):
    """One IPv4/UDP frame of exactly `size` bytes (for MTU 9000 tests)."""
    return _frame("ipv4-udp", seq, size, random.Random(seq))


# --------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------

def read_pcap(path):
    """Classic pcap -> list of (caplen, origlen, data)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise TestFailure(f"{path}: not a classic pcap file (magic {magic.hex()})")
    linktype = struct.unpack(e + "I", data[20:24])[0]
    if linktype != 1:
        raise TestFailure(f"{path}: link type {linktype}, expected 1")
    recs = []
    off = 24
    while off < len(data):
        if off + 16 > len(data):
            raise TestFailure(f"{path}: truncated record header")
        _s, _f, caplen, origlen = struct.unpack(e + "IIII", data[off:off + 16])
        off += 16
        if off + caplen > len(data):
            raise TestFailure(f"{path}: truncated record")
        recs.append((caplen, origlen, data[off:off + caplen]))
        off += caplen
    return recs


TSHARK_FIELDS = ("frame.interface_id", "frame.interface_name", "frame.len", "frame.cap_len",
                 "frame.interface_queue", "frame.drop_count")


def tshark_frames(path, timeout=CMD_TIMEOUT_S):
    """Per-frame fields from tshark, as a list of dicts (file order)."""
    argv = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t"]
    for fld in TSHARK_FIELDS:
        argv += ["-e", fld]
    cp = run(argv, timeout=timeout)
    rows = []
    for line in cp.stdout.splitlines():
        parts = line.split("\t")
        parts += [""] * (len(TSHARK_FIELDS) - len(parts))
        d = dict(zip(("if_id", "if_name", "len", "cap_len", "queue", "drop_count"), parts))
        for k in ("if_id", "len", "cap_len", "queue", "drop_count"):
            d[k] = int(d[k]) if d[k] != "" else None
        rows.append(d)
    return rows


def capinfos_count(path):
    cp = run(["capinfos", "-c", "-M", path])
    m = re.search(r"^Number of packets:\s*(\d+)\s*$", cp.stdout, re.M)
    if not m:
        raise TestFailure(f"capinfos output without a packet count: {cp.stdout!r}")
    return int(m.group(1))


def capinfos_interfaces(path):
    """capinfos' interface listing: list of dicts with encapsulation, snaplen, name."""
    cp = run(["capinfos", "-M", path])
    ifaces = []
    cur = None
    for line in cp.stdout.splitlines():
        m = re.match(r"^Interface #(\d+) info:", line)
        if m:
            cur = {"index": int(m.group(1))}
            ifaces.append(cur)
            continue
        if cur is None:
            continue
        m = re.match(r"^\s+(Name|Encapsulation|Capture length)\s*=\s*(.*)$", line)
        if m:
            cur[m.group(1)] = m.group(2).strip()
    return ifaces


def tcpdump_count(path):
    cp = run(["tcpdump", "-nn", "-r", path])
    return len([l for l in cp.stdout.splitlines() if l.strip()])


def tcpdump_convert(path, out):
    """Let libpcap read the pcapng and write it again as classic pcap."""
    run(["tcpdump", "-nn", "-r", path, "-w", out])
    return read_pcap(out)


def expert_check(path):
    """Run the MIME-reader structural check; return (errors, warnings, raw output).

    tshark's "MIME Files Format" reader dissects the pcapng blocks themselves
    (as frames of the File-PCAPNG dissector); `-z expert` lists expert items.
    Tried on this machine (tshark 4.0): a well-formed file prints nothing at
    all and exits 0; a file cut short or with garbage appended gives an
    "Errors (1)" table with "Malformed Packet (Exception occurred)"; a wrong
    trailing block length gives "Block length in trailer differs from block
    length in header"; a packet block naming a missing interface gives "No
    Interface Description before block that requires it".  tshark still exits
    0 in all of these, so the table is what counts: clean means no Errors
    section (and exit status 0, nothing on stderr but the root warning).
    """
    cp = run(["tshark", "-n", "-r", path, "-X", "read_format:MIME Files Format",
              "-q", "-z", "expert"], check_rc=False)
    errors, warns = [], []
    if cp.returncode != 0:
        errors.append(f"tshark exit status {cp.returncode}")
    section = None
    for line in cp.stdout.splitlines():
        m = re.match(r"^(Errors|Warns|Notes|Chats|Comments) \(\d+\)", line)
        if m:
            section = m.group(1)
            target = errors if section == "Errors" else warns if section == "Warns" else None
            if target is not None:
                target.append(line.strip())
            continue
        if line.startswith("=") or "Frequency" in line or not line.strip():
            continue
        if section == "Errors":
            errors.append("  " + line.strip())
        elif section == "Warns":
            warns.append("  " + line.strip())
    for line in cp.stderr.splitlines():
        if line.strip() and not line.startswith("Running as user"):
            errors.append(f"stderr: {line.strip()}")
    return errors, warns, cp.stdout


# --------------------------------------------------------------------------
# pcapng block walker (only what the checks need)
# --------------------------------------------------------------------------

def pcapng_blocks(path):
    """Yield (type, body) of each block of a pcapng file (first section's order)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x0a\x0d\x0d\x0a":
        raise TestFailure(f"{path}: does not start with a pcapng section header block")
    bom = data[8:12]
    if bom == b"\x4d\x3c\x2b\x1a":
        e = "<"
    elif bom == b"\x1a\x2b\x3c\x4d":
        e = ">"
    else:
        raise TestFailure(f"{path}: bad byte-order magic {bom.hex()}")
    off = 0
    while off < len(data):
        if off + 12 > len(data):
            raise TestFailure(f"{path}: truncated block at offset {off}")
        btype, blen = struct.unpack(e + "II", data[off:off + 8])
        if blen < 12 or blen % 4 or off + blen > len(data):
            raise TestFailure(f"{path}: bad block length {blen} at offset {off}")
        trailer = struct.unpack(e + "I", data[off + blen - 4:off + blen])[0]
        if trailer != blen:
            raise TestFailure(f"{path}: block at {off}: trailing length {trailer} != {blen}")
        yield e, btype, data[off + 8:off + blen - 4]
        off += blen


def parse_options(e, raw):
    opts = []
    off = 0
    while off + 4 <= len(raw):
        code, olen = struct.unpack(e + "HH", raw[off:off + 4])
        off += 4
        if code == 0:
            break
        opts.append((code, raw[off:off + olen]))
        off += (olen + 3) & ~3
    return opts


def pcapng_idbs(path):
    """List of IDBs: dict(linktype, snaplen, name, description, tsresol)."""
    idbs = []
    for e, btype, body in pcapng_blocks(path):
        if btype != 1:
            continue
        linktype, _res, snaplen = struct.unpack(e + "HHI", body[:8])
        d = {"linktype": linktype, "snaplen": snaplen, "name": None,
             "description": None, "tsresol": None}
        for code, val in parse_options(e, body[8:]):
            if code == 2:
                d["name"] = val.decode("utf-8", "replace")
            elif code == 3:
                d["description"] = val.decode("utf-8", "replace")
            elif code == 9 and val:
                d["tsresol"] = val[0]
        idbs.append(d)
    return idbs


# --------------------------------------------------------------------------
# Comparisons
# --------------------------------------------------------------------------

def multiset_diff(sent, got):
    """(missing, extra, duplicated) between two lists of bytes."""
    from collections import Counter
    cs, cg = Counter(sent), Counter(got)
    missing = [f for f in cs if cg[f] < cs[f]]
    extra = [f for f in cg if cs[f] == 0]
    dup = [f for f in cg if cs[f] and cg[f] > cs[f]]
    return missing, extra, dup


def describe_frames(frames, limit=5):
    out = []
    for f in frames[:limit]:
        out.append(f"len {len(f)}: {f[:48].hex()}")
    if len(frames) > limit:
        out.append(f"... and {len(frames) - limit} more")
    return "\n".join(out)


def stderr_count(err_lines, what="captured"):
    """N from 'N packets captured' (None if absent)."""
    for line in err_lines:
        m = re.match(rf"^(\d+) packets? {what}$", line.strip())
        if m:
            return int(m.group(1))
    return None


# --------------------------------------------------------------------------
# Whole-capture checks shared by several tests
# --------------------------------------------------------------------------

def read_capture(path, workdir):
    """Frames of a pcapng capture, joined from two independent readers.

    tshark gives the per-frame pcapng metadata (interface id/name, lengths,
    queue, drop count); libpcap (tcpdump -r F -w classic.pcap) gives the bytes.
    Both list frames in file order, so row i of one is record i of the other.
    Each row: if_id, if_name, len, cap_len, queue, drop_count, data.
    """
    rows = tshark_frames(path)
    classic = os.path.join(workdir, os.path.basename(path) + ".classic.pcap")
    recs = tcpdump_convert(path, classic)
    if len(rows) != len(recs):
        raise TestFailure(f"tshark reads {len(rows)} frames but libpcap {len(recs)}")
    for i, (row, (caplen, origlen, data)) in enumerate(zip(rows, recs)):
        if row["cap_len"] != caplen or row["len"] != origlen:
            raise TestFailure(f"frame {i}: tshark says len {row['len']} cap {row['cap_len']}, "
                              f"libpcap says len {origlen} cap {caplen}")
        row["data"] = data
    return rows


def check_readers_agree(path, expected):
    """tshark, capinfos and tcpdump all count `expected` packets."""
    n_tshark = len(run(["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.number"])
                   .stdout.split())
    n_capinfos = capinfos_count(path)
    n_tcpdump = tcpdump_count(path)
    expect(n_tshark == n_capinfos == n_tcpdump == expected,
           f"tshark, capinfos and tcpdump -r all count {expected} packets",
           f"tshark {n_tshark}, capinfos {n_capinfos}, tcpdump {n_tcpdump}")


def check_structure(path):
    errors, warns, _ = expert_check(path)
    expect(not errors, "MIME-reader structural check (tshark -z expert) reports no errors",
           "\n".join(errors))
    if warns:
        log("  note  expert warnings: " + "; ".join(warns))


def check_idbs(path, iface="cap0"):
    """All IDBs: EN10MB, one snaplen, if_name IFACE@cpuN (distinct).  Returns them."""
    idbs = pcapng_idbs(path)
    expect(len(idbs) >= 1, f"file has interface description blocks ({len(idbs)})")
    expect(all(i["linktype"] == 1 for i in idbs), "every IDB has link type 1 (EN10MB)",
           [i["linktype"] for i in idbs])
    snaplens = sorted({i["snaplen"] for i in idbs})
    expect(len(snaplens) == 1, f"every IDB has the same snaplen {snaplens}")
    names = [i["name"] for i in idbs]
    expect(all(n and re.fullmatch(rf"{re.escape(iface)}@cpu\d+", n) for n in names)
           and len(set(names)) == len(names),
           f"IDB names are distinct {iface}@cpuN", names)
    ci = capinfos_interfaces(path)
    expect(len(ci) == len(idbs) and all(c.get("Encapsulation", "").startswith("Ethernet")
                                        for c in ci),
           "capinfos lists the same interfaces, all Ethernet",
           [(c.get("Name"), c.get("Encapsulation")) for c in ci])
    return idbs


def check_exact(sent, got, what="every sent frame captured exactly once, byte-exact"):
    missing, extra, dup = multiset_diff(sent, got)
    detail = []
    if missing:
        detail.append(f"{len(missing)} sent frame(s) missing:\n" + describe_frames(missing))
    if extra:
        detail.append(f"{len(extra)} captured frame(s) never sent:\n" + describe_frames(extra))
    if dup:
        detail.append(f"{len(dup)} frame(s) captured more than once:\n" + describe_frames(dup))
    return expect(not detail and len(got) == len(sent), what, "\n".join(detail)
                  or f"sent {len(sent)}, captured {len(got)}")


# The start-up warning where received VLAN tags cannot be restored (no kfunc,
# as on Debian's 6.1, generic mode, trace mode): expected there, and checked
# word for word by test_rx_vlan.py.
# A NIC's remedy is its own rxvlan; a veth's is its peer's txvlan (the peer
# by name where it is in the same namespace).
RX_VLAN_WARNING = re.compile(r"^xdpcap: warning: received VLAN tags missing on (\S+) \(.+\); "
                             r"('ethtool -K \1 rxvlan off' keeps them"
                             r"|'ethtool -K (\S+|PEER) txvlan off' on its peer"
                             r"( \((ifindex \d+, )?another namespace\))? keeps them)$")


# On a veth, auto mode picks generic XDP mode and says what that costs.
VETH_GENERIC_WARNING = re.compile(r"^xdpcap: warning: (\S+) is a veth: generic XDP mode leaves its traffic as it "
                                  r"was, but received VLAN tags will be missing and frames that tc redirects into it "
                                  r"can be missed; '--xdp-mode native' sees both and changes the traffic \(veth's "
                                  r"NAPI ring, the peer's segmentation offload\)$")


def process_gone(pid):
    """The process has ended (a zombie waiting for its reaper counts)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def messages(err_lines, prefix="xdpcap: "):
    """xdpcap's own error and warning lines, less the received-VLAN warning and the veth line."""
    return [l for l in err_lines
            if l.startswith(prefix) and not RX_VLAN_WARNING.match(l) and not VETH_GENERIC_WARNING.match(l)]


def check_listening(x, iface="cap0", snaplen=None):
    line = next((l for l in x.err_lines if l.startswith("listening on ")), "")
    m = LISTENING_RE.match(line)
    ok = bool(m) and m.group(1) == iface and (snaplen is None or int(m.group(2)) == snaplen)
    expect(ok, f"stderr has 'listening on {iface}, link-type EN10MB (Ethernet), "
               f"snapshot length {snaplen if snaplen is not None else 'N'} bytes'", repr(line))
    return int(m.group(2)) if m else None


# --------------------------------------------------------------------------
# Fault-test helpers: statistics lines, full pcapng walk, tmpfs, flood sender
# --------------------------------------------------------------------------

FLOODER = os.path.join(HERE, "flood_frames.py")

STATS_CPU_RE = re.compile(
    r"^\s*cpu(\d+): (\d+) seen, (\d+) sampled, (\d+) written, (\d+) ring full, "
    r"(\d+) other output errors, (\d+) reported lost, (\d+) malformed, (\d+) after count, "
    r"(\d+) not written, (\d+) written out of order"
    r"(?:, \d+ not whole in the ring)?(?:, (\d+) kept by filter)?(?:, (\d+) skipped by sampling)?$")
STATS_CPU_KEYS = ("seen", "sampled", "written", "ring_full", "other_errors", "reported_lost",
                  "malformed", "after_count", "not_written", "out_of_order")
_STATS_TOTAL_RES = (
    ("captured", re.compile(r"^(\d+) packets? captured$")),
    ("received", re.compile(r"^(\d+) packets? received by filter$")),
    ("dropped", re.compile(r"^(\d+) packets? dropped by kernel$")),
    ("not_written", re.compile(r"^(\d+) packets? not written to the output$")),
    ("malformed", re.compile(r"^(\d+) records? refused as malformed$")),
    ("out_of_order", re.compile(r"^(\d+) packets? written out of order$")),
    ("skipped", re.compile(r"^(\d+) packets? skipped by sampling \(1 in \d+ kept\)$")),
    ("after_end", re.compile(r"^(\d+) packets? not written: (?:the count of -c was reached|"
                             r"the last file of -W was complete)$")),
)
# SIGUSR1's statistics: the totals on one line after this marker.
STATS_INTERIM_PREFIX = "interim statistics: "


def parse_stats(err_lines):
    """Every statistics block on stderr, in order.

    A block starts at "N packet(s) captured"; it holds the totals (captured,
    received, dropped, and not_written / malformed / out_of_order / skipped /
    after_end, 0 when their optional lines are absent) and, with -v, a dict per CPU (keys
    STATS_CPU_KEYS, kept_by_filter, skipped) under "cpus".  SIGUSR1's one-line
    totals (after STATS_INTERIM_PREFIX) start a block with "interim" True.
    Also checks the singular/plural spelling ("1 packet captured").
    """
    blocks = []
    cur = None
    for raw in err_lines:
        line = raw.rstrip()
        m = STATS_CPU_RE.match(line)
        if m:
            if cur is not None:
                c = dict(zip(STATS_CPU_KEYS, (int(v) for v in m.groups()[1:11])))
                c["kept_by_filter"] = int(m.group(12)) if m.group(12) else None
                c["skipped"] = int(m.group(13)) if m.group(13) else 0
                cur["cpus"][int(m.group(1))] = c
                cur["lines"].append(line)
            continue
        interim = line.startswith(STATS_INTERIM_PREFIX)
        phrases = line[len(STATS_INTERIM_PREFIX):].split(", ") if interim else [line.strip()]
        for phrase in phrases:
            key = None
            for k, rx in _STATS_TOTAL_RES:
                m = rx.match(phrase)
                if m:
                    key = k
                    break
            if key is None:
                continue
            if key == "captured":
                cur = {"captured": None, "received": None, "dropped": None, "not_written": 0,
                       "malformed": 0, "out_of_order": 0, "skipped": 0, "after_end": 0,
                       "cpus": {}, "lines": [], "grammar_ok": True, "interim": interim}
                blocks.append(cur)
            elif cur is None:
                continue
            n = int(m.group(1))
            cur[key] = n
            cur["lines"].append(line)
            # "1 packet captured" but "0 packets ...", "2 packets ...".
            if (n == 1) != (phrase.split()[1] in ("packet", "record")):
                cur["grammar_ok"] = False
    return blocks


def final_stats(err_lines):
    """The last statistics block on stderr (the end-of-capture one), or None."""
    blocks = parse_stats(err_lines)
    return blocks[-1] if blocks else None


def _offered(c):
    """Of a per-CPU line: the packets offered for sampling (kept by the
    filter with one, all seen without)."""
    kept = c.get("kept_by_filter")
    return c["seen"] if kept is None else kept


def check_stats_identity(st, what="statistics", per_cpu=True, final=True):
    """received = captured + dropped + after count + not written + malformed,
    the same per CPU, and the per-CPU lines add up to the totals."""
    if st is None:
        check(False, f"{what}: a statistics block was printed")
    expect(st["received"] is not None and st["dropped"] is not None,
           f"{what}: 'received by filter' and 'dropped by kernel' lines present", st["lines"])
    expect(st["grammar_ok"], f"{what}: singular/plural spelled right", st["lines"])
    cpus = st["cpus"]
    after = sum(c["after_count"] for c in cpus.values())
    lhs = st["received"]
    rhs = (st["captured"] + (st["dropped"] or 0) + after + st["not_written"] + st["malformed"]
           + st.get("skipped", 0))
    expect(lhs == rhs,
           f"{what}: received ({lhs}) = captured + dropped + after count + not written "
           f"+ malformed + skipped by sampling ({rhs})", "\n".join(st["lines"]))
    if not per_cpu:
        return
    expect(len(cpus) >= 1, f"{what}: per-CPU lines present ({len(cpus)})", st["lines"])
    bad = []
    for cpu, c in sorted(cpus.items()):
        rhs = (c["written"] + c["ring_full"] + c["other_errors"] + c["after_count"]
               + c["not_written"] + c["malformed"] + c.get("skipped", 0))
        if _offered(c) != rhs:
            bad.append(f"cpu{cpu}: seen {c['seen']} != {rhs}: {c}")
    expect(not bad, f"{what}: per CPU, seen = written + ring full + other output errors + "
                    "after count + not written + malformed", "\n".join(bad))
    if final:
        bad = [f"cpu{cpu}: {c}" for cpu, c in sorted(cpus.items())
               if _offered(c) != c["sampled"] + c["ring_full"] + c["other_errors"] + c.get("skipped", 0)
               or c["sampled"] != (c["written"] + c["after_count"] + c["not_written"]
                                   + c["malformed"])]
        expect(not bad, f"{what}: per CPU, seen = sampled + ring full + other output errors, "
                        "and every sample was read: sampled = written + after count + "
                        "not written + malformed", "\n".join(bad))
    sums = {k: sum(c[k] for c in cpus.values()) for k in STATS_CPU_KEYS}
    pairs = [("captured", st["captured"], sums["written"]),
             ("received", st["received"], sum(_offered(c) for c in cpus.values())),
             ("dropped", st["dropped"], sums["ring_full"] + sums["other_errors"]),
             ("not written", st["not_written"], sums["not_written"]),
             ("malformed", st["malformed"], sums["malformed"]),
             ("written out of order", st["out_of_order"], sums["out_of_order"])]
    wrong = [f"{name}: total {t}, per-CPU sum {s}" for name, t, s in pairs if t != s]
    expect(not wrong, f"{what}: the per-CPU lines add up to the totals", "\n".join(wrong))


PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_IDB, PCAPNG_EPB, PCAPNG_ISB = 1, 6, 5
PCAPNG_KNOWN_TYPES = {PCAPNG_SHB, PCAPNG_IDB, 2, 3, 4, PCAPNG_ISB, PCAPNG_EPB, 0x0A,
                      0xBAD, 0x40000BAD}


def pcapng_walk(path):
    """Walk a pcapng file that may end in one incomplete block.

    Returns (endian, blocks, tail, problems): blocks = complete blocks as
    (offset, type, body); tail = None, or a description of the bytes after the
    last complete block (an incomplete block); problems = structural errors
    (bad/mismatched lengths, unknown types, a tail that cannot be the start of
    a block).  Walking stops at the first problem.
    """
    with open(path, "rb") as f:
        data = f.read()
    problems = []
    if len(data) < 12 or data[:4] != b"\x0a\x0d\x0d\x0a":
        return "<", [], None, [f"does not start with a section header block "
                               f"({len(data)} bytes: {data[:16].hex()})"]
    bom = data[8:12]
    if bom == b"\x4d\x3c\x2b\x1a":
        e = "<"
    elif bom == b"\x1a\x2b\x3c\x4d":
        e = ">"
    else:
        return "<", [], None, [f"bad byte-order magic {bom.hex()}"]
    blocks = []
    tail = None
    off = 0
    while off < len(data):
        left = len(data) - off
        if left < 8:
            tail = {"offset": off, "have": left, "type": None, "length": None}
            break
        btype, blen = struct.unpack(e + "II", data[off:off + 8])
        if btype not in PCAPNG_KNOWN_TYPES:
            problems.append(f"unknown block type 0x{btype:x} at offset {off}")
            break
        if blen < 12 or blen % 4:
            problems.append(f"bad block length {blen} at offset {off}")
            break
        if blen > left:
            tail = {"offset": off, "have": left, "type": btype, "length": blen}
            break
        trailer = struct.unpack(e + "I", data[off + blen - 4:off + blen])[0]
        if trailer != blen:
            problems.append(f"block at offset {off}: trailing length {trailer} != {blen}")
            break
        blocks.append((off, btype, data[off + 8:off + blen - 4]))
        off += blen
    return e, blocks, tail, problems


def pcapng_records(path, allow_tail=False):
    """IDBs, EPBs and ISBs of a pcapng file, parsed.

    Returns dict(idbs=[{name, snaplen, linktype}], epbs=[{if_id, caplen,
    origlen, data, dropcount, flags, hashes=[(algorithm, bytes)], comments, process=(pid, tid) or None}], isbs=[{if_id, ifrecv, ifdrop, osdrop,
    usrdeliv, filteraccept, starttime, endtime}], tail, problems).  Without
    allow_tail an incomplete final block is a problem too.
    """
    e, blocks, tail, problems = pcapng_walk(path)
    if tail is not None and not allow_tail:
        problems = problems + [f"incomplete final block: {tail}"]
    idbs, epbs, isbs = [], [], []
    for off, btype, body in blocks:
        if btype == PCAPNG_IDB:
            linktype, _r, snaplen = struct.unpack(e + "HHI", body[:8])
            name = None
            for code, val in parse_options(e, body[8:]):
                if code == 2:
                    name = val.decode("utf-8", "replace")
            idbs.append({"linktype": linktype, "snaplen": snaplen, "name": name})
        elif btype == PCAPNG_EPB:
            if_id, ts_high, ts_low, caplen, origlen = struct.unpack(e + "IIIII", body[:20])
            pad = (caplen + 3) & ~3
            rec = {"if_id": if_id, "caplen": caplen, "origlen": origlen, "ts": (ts_high << 32) | ts_low,
                   "data": body[20:20 + caplen], "dropcount": None, "flags": None,
                   "hashes": [], "comments": [], "process": None}
            for code, val in parse_options(e, body[20 + pad:]):
                if code == 8 and len(val) == 8:
                    rec["process"] = struct.unpack(e + "II", val)
                if code == 4 and len(val) == 8:
                    rec["dropcount"] = struct.unpack(e + "Q", val)[0]
                elif code == 2 and len(val) == 4:
                    rec["flags"] = struct.unpack(e + "I", val)[0]
                elif code == 3 and len(val) >= 1:
                    rec["hashes"].append((val[0], val[1:]))
                elif code == 1:
                    rec["comments"].append(val.decode("utf-8", "replace"))
            epbs.append(rec)
        elif btype == PCAPNG_ISB:
            isbs.append(parse_isb(e, body))
    return {"idbs": idbs, "epbs": epbs, "isbs": isbs, "tail": tail, "problems": problems,
            "blocks": blocks}


def idb_cpu(idb):
    """CPU number from an IDB named IFACE@cpuN (None if it is not so named)."""
    m = re.search(r"@cpu(\d+)$", idb.get("name") or "")
    return int(m.group(1)) if m else None


def check_isbs_match_stats(recs, st, what="ISBs"):
    """One ISB per IDB whose counters equal the per-CPU statistics lines:
    isb_ifrecv = seen, isb_osdrop = ring full + other output errors + malformed,
    isb_usrdeliv = written."""
    idbs, isbs = recs["idbs"], recs["isbs"]
    expect(len(isbs) == len(idbs) and sorted(i["if_id"] for i in isbs) == list(range(len(idbs))),
           f"{what}: one interface statistics block per interface ({len(isbs)} ISBs, "
           f"{len(idbs)} IDBs)", [i["if_id"] for i in isbs])
    bad = []
    for isb in isbs:
        if isb["if_id"] >= len(idbs):
            bad.append(f"ISB for unknown interface {isb['if_id']}")
            continue
        cpu = idb_cpu(idbs[isb["if_id"]])
        c = st["cpus"].get(cpu)
        if c is None:
            bad.append(f"interface {isb['if_id']} (cpu {cpu}): no per-CPU statistics line")
            continue
        want = {"ifrecv": c["seen"],
                "osdrop": c["ring_full"] + c["other_errors"] + c["malformed"],
                "usrdeliv": c["written"]}
        got = {k: isb.get(k) for k in want}
        if got != want:
            bad.append(f"interface {isb['if_id']} (cpu{cpu}): ISB {got}, stderr {want}")
        else:
            log(f"  info  ISB cpu{cpu}: {got}")
    expect(not bad, f"{what}: isb_ifrecv = seen, isb_osdrop = ring full + other output errors "
                    "+ malformed, isb_usrdeliv = written (per CPU)", "\n".join(bad))


def staged_frames(pid):
    """Frames the BPF programs of process `pid` hold staged in their per-CPU
    batches (bpf/sample.h's map "stage"), summed over the CPUs: (frames in
    the batches, {counters key: frames of that key}). None when the process
    holds no such map. Read with bpftool through the map's BTF, so only a
    field's name is relied on, not the entry's layout."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                m = re.search(r"^map_id:\s*(\d+)", f.read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    maps = json.loads(run(["bpftool", "-j", "map", "show"]).stdout or "[]")
    stage = [m["id"] for m in maps if m.get("id") in ids and m.get("name") == "stage"]
    if not stage:
        return None
    entries = json.loads(run(["bpftool", "-j", "map", "dump", "id", str(stage[0])]).stdout or "[]")
    frames, by_key = 0, {}
    for entry in entries:
        value = entry["formatted"]["value"]
        frames += value["batch"]["frames"]
        for key, k in enumerate(value["keys"]):
            if k["frames"]:
                by_key[key] = by_key.get(key, 0) + k["frames"]
    return frames, by_key


class _ScratchMount(Scoped):
    """A file system mounted on a fresh temporary directory. close()
    unmounts it (lazily if something still holds it), removes the directory
    and then calls _release() for what else the mount needed."""

    path = None
    _mounted = False

    def _mount(self, argv, what):
        import tempfile
        self.path = tempfile.mkdtemp(prefix="xdpcapt-mnt-")
        run(argv + [self.path])
        self._mounted = True
        log(f"  lab   {what} on {self.path}")

    def _release(self):
        pass

    def close(self):
        global _cleaning
        _cleaning += 1
        try:
            _unregister_cleanup(self.close)
            if self.path and self._mounted:
                cp = run(["umount", self.path], check_rc=False, timeout=10)
                if cp.returncode != 0:
                    log(f"  cleanup: umount {self.path}: {cp.stderr.strip()}; lazy unmount")
                    run(["umount", "-l", self.path], check_rc=False, timeout=10)
                self._mounted = False
            if self.path and os.path.isdir(self.path):
                try:
                    os.rmdir(self.path)
                except OSError as e:
                    log(f"  cleanup: rmdir {self.path}: {e}")
            self.path = None
            self._release()
        finally:
            _cleaning -= 1


class Tmpfs(_ScratchMount):
    """A small tmpfs mounted on a fresh temporary directory; always unmounted.

    with Tmpfs("256k") as fs: fs.path ...   (ro=True mounts it read-only)
    The unmount is registered as a cleanup, so it also runs on signals and
    deadlines; it falls back to a lazy unmount if something still holds it.
    """

    def __init__(self, size="256k", ro=False):
        self.size = size
        self.ro = ro

    def _setup(self):
        opts = f"size={self.size},mode=0755" + (",ro" if self.ro else "")
        self._mount(["mount", "-t", "tmpfs", "-o", opts, "xdpcapt-tmpfs"], f"tmpfs ({opts})")


class LoopExt4(_ScratchMount):
    """A small ext4 on a loop-mounted image file, on a fresh temporary
    directory; always unmounted and the image removed, as Tmpfs.

    with LoopExt4("2M") as fs: fs.path ...
    No journal, no reserved blocks: its free space is what a capture can fill.
    """

    def __init__(self, size="2M"):
        self.size = size
        self.image = None

    def _setup(self):
        import tempfile
        fd, self.image = tempfile.mkstemp(prefix="xdpcapt-ext4-", suffix=".img", dir="/var/tmp")
        os.close(fd)
        run(["truncate", "-s", self.size, self.image])
        run(["mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-m", "0", self.image])
        self._mount(["mount", "-o", "loop", self.image], f"ext4 ({self.size}, loop)")

    def _release(self):
        if self.image and os.path.exists(self.image):
            os.unlink(self.image)
        self.image = None


def mounted_at(path):
    """True if something is mounted exactly at path."""
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def start_flood(lab, pcap_path, cpu, seconds=None, rounds=None, timeout=10.0):
    """Start flood_frames.py in the generator namespace; returns the Popen once
    it sends (its signal handlers set: a SIGTERM from then on ends it with its
    count, where one during a slow interpreter start-up would kill it)."""
    argv = [PYTHON, FLOODER, "--iface", lab.gen_if, "--cpu", str(cpu), "--pcap", pcap_path]
    argv += ["--seconds", str(seconds)] if seconds is not None else ["--rounds", str(rounds)]
    p = lab.popen(lab.gen_ns, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([p.stdout], [], [], scaled(timeout))
    line = p.stdout.readline() if ready else ""
    if line.strip() != "flood_frames: sending":
        kill_process(p)
        err = p.stderr.read() if p.stderr else ""
        lab.forget(p)
        raise TestFailure(f"flood sender did not start within {scaled(timeout)} s: {line.strip()} {err.strip()}")
    return p


def finish_flood(lab, p, timeout=30.0):
    """Wait for a flood sender; return the number of frames it sent."""
    timeout = scaled(timeout)
    try:
        _out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_process(p)
        raise TestFailure(f"flood sender did not finish within {timeout} s")
    finally:
        lab.forget(p)
    if p.returncode != 0:
        raise TestFailure(f"flood sender failed ({p.returncode}): {err.strip()}")
    m = re.search(r"sent (\d+) frames", err)
    if not m:
        raise TestFailure(f"flood sender printed no count: {err.strip()}")
    log("  info  " + err.strip())
    return int(m.group(1))


def wait_exit(proc, timeout):
    """Poll proc until it exits; return (returncode, seconds waited) or (None, timeout)."""
    timeout = scaled(timeout)
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        rc = proc.poll()
        if rc is not None:
            return rc, time.monotonic() - t0
        time.sleep(0.005)
    rc = proc.poll()
    return rc, time.monotonic() - t0


def tshark_isbs(path, timeout=CMD_TIMEOUT_S):
    """ISB counters as tshark's MIME-reader pcapng dissector reads them (an
    independent reader): list of dicts if_id, ifrecv, osdrop, usrdeliv, in
    file order.  Only for small files: the whole file is one dissected frame."""
    flds = ["pcapng.block.type", "pcapng.interface_id",
            "pcapng.options.option.data.interface.received",
            "pcapng.options.option.data.interface.dropped_by_os",
            "pcapng.options.option.data.interface.delivered_to_user"]
    argv = ["tshark", "-n", "-r", path, "-X", "read_format:MIME Files Format", "-T", "fields",
            "-E", "separator=\t", "-E", "aggregator=,"]
    for f in flds:
        argv += ["-e", f]
    cp = run(argv, timeout=timeout)
    cols = (cp.stdout.rstrip("\n").split("\n")[0].split("\t") + [""] * len(flds))[:len(flds)]
    vals = [[int(v, 0) for v in c.split(",") if v != ""] for c in cols]
    types, ids, recv, osdrop, deliv = vals
    isb_ids = []
    it = iter(ids)
    for t in types:
        if t in (PCAPNG_EPB, PCAPNG_ISB):
            i = next(it, None)
            if t == PCAPNG_ISB:
                isb_ids.append(i)
    n = len(isb_ids)
    if not (len(recv) == len(osdrop) == len(deliv) == n):
        raise TestFailure(f"tshark ISB fields do not line up: {n} ISBs, received {recv}, "
                          f"dropped_by_os {osdrop}, delivered_to_user {deliv}")
    return [{"if_id": isb_ids[k], "ifrecv": recv[k], "osdrop": osdrop[k], "usrdeliv": deliv[k]}
            for k in range(n)]


def pcapng_last_blocks(path, n):
    """The last n complete blocks of a (possibly huge) pcapng file, read
    backwards through the trailing length fields: list of (type, body) in file
    order.  Returns fewer if the walk meets an inconsistency (then the caller's
    checks fail)."""
    e = "<"
    with open(path, "rb") as f:
        head = f.read(12)
        if head[8:12] == b"\x1a\x2b\x3c\x4d":
            e = ">"
        end = f.seek(0, os.SEEK_END)
        out = []
        while end > 0 and len(out) < n:
            if end < 12:
                break
            f.seek(end - 4)
            blen = struct.unpack(e + "I", f.read(4))[0]
            if blen < 12 or blen % 4 or blen > end:
                break
            f.seek(end - blen)
            blk = f.read(blen)
            btype, hlen = struct.unpack(e + "II", blk[:8])
            if hlen != blen:
                break
            out.append((btype, blk[8:-4]))
            end -= blen
    out.reverse()
    return e, out


def parse_isb(e, body):
    rec = {"if_id": struct.unpack(e + "I", body[:4])[0]}
    names = {2: "starttime", 3: "endtime", 4: "ifrecv", 5: "ifdrop", 6: "filteraccept",
             7: "osdrop", 8: "usrdeliv"}
    for code, val in parse_options(e, body[12:]):
        if code == 1:
            rec["comment"] = val.decode("utf-8", "replace")
        elif code in names and len(val) == 8:
            rec[names[code]] = struct.unpack(e + "Q", val)[0]
    return rec


def proc_status(pid):
    """VmRSS in KiB and number of open fds of a process (None, None if gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), None)
        nfd = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return None, None
    return rss, nfd


def pcapng_leading_idbs(path, limit=1 << 20):
    """IDBs of the first section, read from the file's start only (for files
    too big to load): list of dicts linktype, snaplen, name."""
    with open(path, "rb") as f:
        data = f.read(limit)
    e = ">" if data[8:12] == b"\x1a\x2b\x3c\x4d" else "<"
    idbs = []
    off = 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack(e + "II", data[off:off + 8])
        if blen < 12 or off + blen > len(data):
            break
        if btype == PCAPNG_IDB:
            body = data[off + 8:off + blen - 4]
            linktype, _r, snaplen = struct.unpack(e + "HHI", body[:8])
            name = None
            for code, val in parse_options(e, body[8:]):
                if code == 2:
                    name = val.decode("utf-8", "replace")
            idbs.append({"linktype": linktype, "snaplen": snaplen, "name": name})
        elif btype != PCAPNG_SHB:
            break
        off += blen
    return idbs
