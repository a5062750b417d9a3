#!/usr/bin/python3
"""--tls-keys and --tls-keys-file: TLS secrets in the file as Decryption
Secrets Blocks, before the records that need them.

In the test's own namespaces, with a certificate made here (openssl req) and
Debian's servers in the generator namespace: Python's http.server over ssl
(HTTP/1.1) and nghttpd (HTTP/2), each offering TLS 1.2 and 1.3.

* -- COMMAND with --tls-keys (run as nobody, as through sudo): curl over
  HTTP/1.1 and HTTP/2, TLS 1.2 and 1.3, and a Python ssl client. tshark in
  one pass (no -2) shows every response, its body byte for byte as served;
  the command's SSLKEYLOGFILE is private and gone afterwards; the file is
  mode 0600 under umask 022; -r -v says each connection's keys are in the
  file; --discard-secrets writes a copy without any.
* The same through a pipe: -w - | tshark -r -.
* --tls-keys-file: a key log openssl s_client writes, started after xdpcap,
  truncated and rewritten, then replaced, during the capture: every
  connection decrypted, the lines there before the capture not written.
* Rotation (-C): every file decrypts on its own each connection whose
  handshake it holds, and holds the secrets of those only.
* Without either option: no Decryption Secrets Block, no SSLKEYLOGFILE in the
  command's environment (its /proc/PID/environ), a file of mode 0644.
"""

import glob
import os
import pwd
import re
import secrets
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CAP4, GEN4 = "198.18.44.1", "198.18.44.2"
PY_PORT, H2_PORT = 8444, 8445
DSB = 0x0000000A
TOOLS = N.REQUIRED_TOOLS + ("openssl", "curl", "nghttpd")


def address(lab):
    for ns, dev, v4 in ((lab.cap_ns, lab.cap_if, CAP4), (lab.gen_ns, lab.gen_if, GEN4)):
        N.run(["ip", "-n", ns, "addr", "add", f"{v4}/24", "dev", dev])
        N.run(["ip", "-n", ns, "link", "set", "lo", "up"])


PY_SERVER = """
import http.server, os, ssl, sys
os.chdir(sys.argv[1])
class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer((sys.argv[2], int(sys.argv[3])), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[4], sys.argv[5])
server.socket = context.wrap_socket(server.socket, server_side=True)
print("ready", flush=True)
server.serve_forever()
"""

# Python's ssl module logs its keys where SSLKEYLOGFILE says.
PY_CLIENT = """
import ssl, sys, urllib.request
context = ssl._create_unverified_context()
with urllib.request.urlopen(sys.argv[1], context=context) as response:
    body = response.read()
with open(sys.argv[2], "wb") as out:
    out.write(body)
"""


class Servers:
    """The certificate, the bodies served and the three servers."""

    def __init__(self, lab, tmp):
        self.lab = lab
        self.www = os.path.join(tmp, "www")
        os.makedirs(self.www)
        self.bodies = {}
        # Bodies of a few sizes: one TLS record, several, many TCP segments
        # (HTTP/2's below its 16 KiB frames). Text tshark prints unescaped.
        for i, size in enumerate((700, 5000, 40000, 3000, 9000, 1200, 2500, 6000, 4000, 800, 1500, 2000)):
            name = f"body{i}.txt"
            data = secrets.token_hex(size // 2)[:size].encode()
            with open(os.path.join(self.www, name), "wb") as f:
                f.write(data)
            self.bodies[name] = data
        self.key = os.path.join(tmp, "key.pem")
        self.cert = os.path.join(tmp, "cert.pem")
        N.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
               "-keyout", self.key, "-out", self.cert, "-days", "2", "-subj", "/CN=xdpcap-test",
               "-addext", f"subjectAltName=IP:{GEN4}"])
        os.chmod(tmp, 0o755)
        for path in [self.www, self.cert] + glob.glob(os.path.join(self.www, "*")):
            os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)

    def start(self):
        gen = self.lab.gen_ns
        py = self.lab.popen(gen, [N.PYTHON, "-c", PY_SERVER, self.www, GEN4, str(PY_PORT), self.cert, self.key],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        N.check(py.stdout.readline().strip() == "ready", "the Python HTTPS server listens")
        self.lab.popen(gen, ["nghttpd", "-a", GEN4, "-d", self.www, str(H2_PORT), self.key, self.cert],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_listening(H2_PORT)

    def wait_listening(self, port):
        end = time.monotonic() + N.scaled(10)
        while time.monotonic() < end:
            out = N.run(["ip", "netns", "exec", self.lab.gen_ns, "ss", "-Htln", f"sport = :{port}"]).stdout
            if out.strip():
                return
            time.sleep(0.05)
        raise N.TestFailure(f"no server listens on port {port}")

    def url(self, port, name):
        return f"https://{GEN4}:{port}/{name}"


# What each client run fetches: (how, port, body), curl's options by how.
CURL = {"h1-tls12": ["--http1.1", "--tls-max", "1.2"], "h1-tls13": ["--http1.1", "--tlsv1.3"],
        "h2-tls12": ["--http2", "--tls-max", "1.2"], "h2-tls13": ["--http2", "--tlsv1.3"]}


def client_script(servers, fetches, out, env_file=None):
    """A shell script fetching each (how, port, body) into OUT/body."""
    lines = ["set -e"]
    if env_file:
        lines.append(f"tr '\\0' '\\n' < /proc/$$/environ > {env_file}")
    for how, port, name in fetches:
        url = servers.url(port, name)
        if how == "python":
            lines.append(f"{N.PYTHON} -c '{PY_CLIENT}' {url} {out}/{name}")
        else:
            lines.append(f"curl -sSk --fail {' '.join(CURL[how])} -o {out}/{name} {url}")
    return "\n".join(lines)


def block_types(path):
    """The type of each block of a little-endian pcapng file, in order."""
    with open(path, "rb") as f:
        data = f.read()
    types, at = [], 0
    while at + 12 <= len(data):
        kind, length = struct.unpack_from("<II", data, at)
        if length < 12:
            break
        types.append(kind)
        at += length
    return types


def tshark_bodies(args, stdin=None):
    """Bodies of the HTTP/1.x and HTTP/2 responses tshark decrypts in one
    pass: {body: count}, as it reassembles them (HTTP/1's as text, HTTP/2's
    DATA in hex)."""
    cmd = ["tshark", "-n", "-o", "tls.keylog_file:", "-o", "tcp.desegment_tcp_streams:TRUE",
           "-Y", "http.response or http2.data.data", "-T", "fields",
           "-e", "http.file_data", "-e", "http2.data.data"] + args
    p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=N.scaled(60))
    N.check(p.returncode == 0, f"tshark {' '.join(args)} reads it", p.stderr[-2000:])
    found = {}
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        http1, _, http2 = line.partition("\t")
        bodies = [http1.encode()] if http1 else []
        bodies += [bytes.fromhex(v) for v in http2.split(",") if v]
        for data in bodies:
            found[data] = found.get(data, 0) + 1
    return found


def check_decrypted(found, servers, names, what):
    missing = [n for n in names if servers.bodies[n] not in found]
    N.check(not missing, f"{what}: tshark in one pass shows every response body byte for byte "
            f"({len(names)})", (missing, [len(b) for b in found]))


def no_key_log_left():
    return not glob.glob("/run/xdpcap-keys.*") and not glob.glob("/tmp/xdpcap-keys.*")


def with_command(lab, servers, tmp, binary):
    """--tls-keys -- COMMAND, as nobody through sudo: every connection
    decrypted in one pass, the file 0600, -r -v, --discard-secrets."""
    out = os.path.join(tmp, "got")
    os.makedirs(out)
    os.chmod(out, 0o1777)
    fetches = [("h1-tls12", PY_PORT, "body0.txt"), ("h1-tls13", PY_PORT, "body1.txt"),
               ("h1-tls13", PY_PORT, "body2.txt"), ("h2-tls12", H2_PORT, "body3.txt"),
               ("h2-tls13", H2_PORT, "body4.txt"), ("python", PY_PORT, "body5.txt")]
    env_file = os.path.join(out, "env")
    path = os.path.join(tmp, "keys.pcapng")
    nobody = pwd.getpwnam("nobody")
    sudo = ["env", f"SUDO_UID={nobody.pw_uid}", f"SUDO_GID={nobody.pw_gid}", "SUDO_USER=nobody"]
    script = client_script(servers, fetches, out, env_file)
    old_umask = os.umask(0o022)
    try:
        x = N.Xdpcap(lab, binary, None, argv=sudo + [binary, "-i", lab.cap_if, "-v", "-w", path, "--tls-keys",
                                                     "--", "/bin/sh", "-c", script])
        rc = x.wait(timeout=40)
    finally:
        os.umask(old_umask)
    N.check(rc == 0, "--tls-keys -- COMMAND: the command ran and the capture ended with it", (rc, x.err_lines))
    for _how, _port, name in fetches:
        with open(os.path.join(out, name), "rb") as f:
            N.check(f.read() == servers.bodies[name], f"the command fetched {name} whole")
    with open(env_file) as f:
        env = dict(l.split("=", 1) for l in f.read().splitlines() if "=" in l)
    keylog = env.get("SSLKEYLOGFILE", "")
    N.check(keylog.startswith(("/run/xdpcap-keys.", "/tmp/xdpcap-keys.")),
            "the command's SSLKEYLOGFILE names xdpcap's private key log", keylog)
    N.check(no_key_log_left(), "the private key log is removed with the capture", keylog)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    N.check(mode == 0o600, "a file with secrets is mode 0600 (umask 022)", oct(mode))
    types = block_types(path)
    N.check(types.count(DSB) >= len(fetches), "a Decryption Secrets Block per connection at least",
            types.count(DSB))
    check_decrypted(tshark_bodies(["-r", path]), servers, [f[2] for f in fetches], "--tls-keys -- COMMAND")
    held = [l for l in x.err_lines if "held for their secrets" in l]
    N.check(held and " 0 released without them" in held[0], "-v: every held connection got its secrets",
            x.err_lines)
    N.log(f"  tls   {held[0] if held else x.err_lines}")

    # -r -v: each connection's keys are in the file.
    p = subprocess.run([binary, "-r", path, "-v"], capture_output=True, text=True, timeout=N.scaled(20))
    said = [l for l in p.stderr.splitlines() if l.startswith("TLS ")]
    N.check(p.returncode == 0 and len(said) == len(fetches) and all(l.endswith(": keys in the file") for l in said),
            "-r -v: every TLS connection's keys are in the file", p.stderr)
    N.check(f"{len(fetches)} TLS connections' secrets in the file" in p.stderr,
            "-r -v: how many connections' secrets the file holds", p.stderr)

    # The copy without secrets holds none and is an ordinary file; the
    # copy with them keeps them, private.
    bare = os.path.join(tmp, "bare.pcapng")
    kept = os.path.join(tmp, "kept.pcapng")
    for copy, extra in ((bare, ["--discard-secrets"]), (kept, [])):
        p = subprocess.run([binary, "-r", path, "-w", copy] + extra, capture_output=True, text=True,
                           timeout=N.scaled(20))
        N.check(p.returncode == 0, f"-r -w {' '.join(extra)}", p.stderr)
    N.check(DSB not in block_types(bare), "--discard-secrets: the copy holds no Decryption Secrets Block")
    N.check(not tshark_bodies(["-r", bare]), "--discard-secrets: tshark decrypts nothing in the copy")
    N.check(block_types(kept).count(DSB) == types.count(DSB) and stat.S_IMODE(os.stat(kept).st_mode) == 0o600,
            "-r -w keeps the secrets, in a file of mode 0600")
    p = subprocess.run([binary, "-r", bare, "-v"], capture_output=True, text=True, timeout=N.scaled(20))
    N.check(not [l for l in p.stderr.splitlines() if l.startswith("TLS ")],
            "-r -v of a file without secrets says nothing of TLS keys", p.stderr)
    lab.assert_clean()


def through_pipe(lab, servers, tmp, binary):
    """-w - | tshark -r -: one pass from a pipe decrypts as well."""
    out = os.path.join(tmp, "pipe")
    os.makedirs(out)
    fetches = [("h2-tls13", H2_PORT, "body6.txt"), ("h1-tls12", PY_PORT, "body7.txt")]
    script = client_script(servers, fetches, out)
    x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-w", "-", "-v", "--immediate-mode", "--tls-keys",
                               "--", "/bin/sh", "-c", script], stdout=subprocess.PIPE)
    stream = x.proc.stdout.read()
    rc = x.wait(timeout=40)
    N.check(rc == 0, "--tls-keys -w -: the capture ended with the command", (rc, x.err_lines))
    N.log("  tls   " + " / ".join(l for l in x.err_lines if "TLS" in l))
    check_decrypted(tshark_bodies(["-r", "-"], stdin=stream), servers, [f[2] for f in fetches], "-w - | tshark -r -")


def followed_file(lab, servers, tmp, binary):
    """--tls-keys-file: s_client's key log, started after xdpcap, truncated
    and rewritten, then replaced."""
    keylog = os.path.join(tmp, "sclient.keys")
    stale = "CLIENT_RANDOM " + "ab" * 32 + " " + "cd" * 48 + "\n"
    with open(keylog, "w") as f:
        f.write(stale)
    path = os.path.join(tmp, "followed.pcapng")
    x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-w", path, "--tls-keys-file", keylog, "-v", "tcp"])
    x.wait_listening()
    names = ["body8.txt", "body9.txt", "body10.txt"]
    for i, name in enumerate(names):
        # The key log is read every 50 ms: the last client's lines are read
        # before the file is truncated or replaced under them.
        time.sleep(0.2)
        if i == 1:
            os.truncate(keylog, 0)
        elif i == 2:
            with open(keylog + ".new", "w"):
                pass
            os.rename(keylog + ".new", keylog)
        # Past the next read of the key log: what changed is seen before
        # the next client writes.
        time.sleep(0.2)
        tls = ["-tls1_2"] if i == 1 else []
        # The second connection's lines are written late, after the whole
        # exchange, by another writer: its packets wait for them.
        late = keylog + ".late" if i == 1 else None
        p = lab.popen(lab.cap_ns, ["openssl", "s_client", "-quiet", "-ign_eof", "-keylogfile", late or keylog,
                                   "-connect", f"{GEN4}:{PY_PORT}"] + tls,
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        got, _ = p.communicate(f"GET /{name} HTTP/1.0\r\nHost: {GEN4}\r\n\r\n".encode(), timeout=N.scaled(20))
        lab.forget(p)
        N.check(got.endswith(servers.bodies[name]), f"s_client fetched {name}")
        if late:
            time.sleep(0.15)
            with open(late) as f, open(keylog, "a") as out:
                out.write(f.read())
    rc = x.stop()
    N.check(rc == 0, "--tls-keys-file: the capture stopped cleanly", x.err_lines)
    said = " / ".join(l for l in x.err_lines if "TLS" in l)
    N.log(f"  tls   {said}")
    longest = re.search(r"(\d+) released without them after \d+ ms, the longest held (\d+) ms", said)
    N.check(longest and longest.group(1) == "0" and 150 <= int(longest.group(2)) < 500,
            "-v: the connection whose secrets came late was held for them, and none released without", said)
    check_decrypted(tshark_bodies(["-r", path]), servers, names,
                    "--tls-keys-file, truncated and replaced meanwhile")
    with open(path, "rb") as f:
        N.check(("ab" * 32).encode() not in f.read(), "the key log's lines from before the capture are not written")


def rotation(lab, servers, tmp, binary):
    """-C: each file holds the secrets of the connections whose ClientHello
    it holds (and of no other), and decrypts them on its own: TLS 1.3's
    EncryptedExtensions, right after the ServerHello, is read in one pass."""
    out = os.path.join(tmp, "rot")
    os.makedirs(out)
    names = ["body0.txt", "body9.txt", "body5.txt", "body10.txt", "body11.txt", "body7.txt"]
    fetches = [("h1-tls13", PY_PORT, n) for n in names]
    base = os.path.join(tmp, "ring.pcapng")
    x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-w", base, "-C", "6k", "--tls-keys",
                               "--", "/bin/sh", "-c", client_script(servers, fetches, out)])
    rc = x.wait(timeout=40)
    N.check(rc == 0, "-C --tls-keys: the capture ended with the command", (rc, x.err_lines))
    files = sorted(glob.glob(base + "*"))
    N.check(len(files) >= 3, "-C 6k: several files", files)
    decrypted = split = 0
    for path in files:
        name = os.path.basename(path)
        N.check(stat.S_IMODE(os.stat(path).st_mode) == 0o600, f"{name} is mode 0600")
        p = subprocess.run(["tshark", "-n", "-r", path, "-o", "tls.keylog_file:", "-Y", "tls.handshake",
                            "-T", "fields", "-e", "tcp.stream", "-e", "tls.handshake.type"],
                           capture_output=True, text=True, timeout=N.scaled(20))
        types = {}
        for line in p.stdout.splitlines():
            stream, _, kinds = line.partition("\t")
            types.setdefault(stream, set()).update(kinds.split(","))
        hellos = [s for s, t in types.items() if "1" in t]
        both = [s for s in hellos if "2" in types[s]]
        N.check(all("8" in types[s] for s in both),
                f"{name}: one pass decrypts each connection whose ClientHello and ServerHello it holds "
                f"({len(both)})", types)
        decrypted += len(both)
        split += len(hellos) - len(both)
        own = subprocess.run([binary, "-r", path, "-v"], capture_output=True, text=True, timeout=N.scaled(20))
        said = [l for l in own.stderr.splitlines() if l.startswith("TLS ")]
        N.check(len(said) == len(hellos) and all(l.endswith(": keys in the file") for l in said),
                f"{name}: the secrets of each connection whose ClientHello it holds ({len(hellos)})", own.stderr)
        secrets_in = [l for l in own.stderr.splitlines() if "connections' secrets in the file" in l]
        N.check(not hellos or (secrets_in and secrets_in[0].startswith(f"{len(hellos)} ")),
                f"{name}: no other connection's secrets", secrets_in)
    # A connection whose ServerHello went into the next file cannot be
    # decrypted in either; every other one is, and most are.
    N.check(decrypted + split == len(names) and decrypted >= len(names) // 2,
            "-C: every connection decrypts in the file of its handshake, but one the rotation split there",
            (decrypted, split, len(names)))


def without_option(lab, servers, tmp, binary):
    """No option: no block, no SSLKEYLOGFILE, an ordinary file mode."""
    out = os.path.join(tmp, "plain")
    os.makedirs(out)
    env_file = os.path.join(out, "env")
    path = os.path.join(tmp, "plain.pcapng")
    old_umask = os.umask(0o022)
    try:
        x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-w", path, "--", "/bin/sh", "-c",
                                   client_script(servers, [("h2-tls13", H2_PORT, "body0.txt")], out, env_file)])
        rc = x.wait(timeout=30)
    finally:
        os.umask(old_umask)
    N.check(rc == 0, "without --tls-keys: the capture ended with the command", (rc, x.err_lines))
    with open(env_file) as f:
        env = f.read()
    N.check("SSLKEYLOGFILE" not in env, "without --tls-keys: no SSLKEYLOGFILE in the command's environment")
    N.check(DSB not in block_types(path), "without --tls-keys: no Decryption Secrets Block")
    N.check(stat.S_IMODE(os.stat(path).st_mode) == 0o644, "without --tls-keys: the file is mode 0644")
    N.check(not tshark_bodies(["-r", path]), "without --tls-keys: nothing decrypts")


def test(binary):
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        address(lab)
        servers = Servers(lab, tmp)
        servers.start()
        started = time.monotonic()
        with_command(lab, servers, tmp, binary)
        through_pipe(lab, servers, tmp, binary)
        followed_file(lab, servers, tmp, binary)
        rotation(lab, servers, tmp, binary)
        without_option(lab, servers, tmp, binary)
        N.log(f"  time  {time.monotonic() - started:.1f} s of captures")
        N.check(no_key_log_left(), "no private key log left behind")


if __name__ == "__main__":
    N.main(test, tools=TOOLS)
