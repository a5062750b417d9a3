#!/usr/bin/python3
"""End-to-end: --tls-keylog reads the TLS keys of processes already running
from OpenSSL 3 (libssl.so.3) with uprobes, without their cooperation.

Usage (root): /usr/bin/python3 tests/e2e/test_tls_uprobes.py PATH/TO/xdpcap

In the capture namespace a Python HTTPS server (the ssl module) starts an
`openssl s_server -www` as its child, both before xdpcap, and neither logs
keys. xdpcap --pid SERVER --follow-forks --tls-keylog FILE captures cap0 while
`openssl s_client` in the other namespace talks to each server with TLS 1.2
and TLS 1.3 (SHA-384 and SHA-256 suites), writing its own key log
(-keylogfile): the oracle. Checked:
  * the key log xdpcap wrote holds exactly the lines the clients logged
    (CLIENT_RANDOM; the handshake, first traffic and exporter secrets),
    each once, and is mode 0600 although the umask allows more;
  * tshark, given that key log, decrypts every request and response of a
    capture of every packet made at the same time with -k --tls-keys, and
    so does it in one pass with only the secrets that file holds;
  * the uprobes are attached while it runs;
  * a gnutls-cli (another TLS library) selected with --pid gets one line
    saying its keys are not captured, and nothing is written for it;
"""

import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netlab as N  # noqa: E402

CAP4, GEN4 = "198.18.44.1", "198.18.44.2"
WWW_PORT, HTTPS_PORT = 4433, 4443
UPROBE_PREFIX = "xdpcap_ssl_"

# The Python HTTPS server; its child is openssl s_server -www. It prints
# "ready" once both listen.
SERVER = r"""
import http.server, ssl, subprocess, sys
cert, key, addr, port, www_port = sys.argv[1:6]
child = subprocess.Popen(["openssl", "s_server", "-accept", www_port, "-cert", cert, "-key", key, "-www"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
for line in child.stdout:
    if line.strip() == "ACCEPT":
        break
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("served " + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server = http.server.HTTPServer((addr, int(port)), Handler)
server.socket = context.wrap_socket(server.socket, server_side=True)
print("ready", child.pid, flush=True)
try:
    server.serve_forever()
finally:
    child.kill()
"""

# (port, s_client options, request path): TLS 1.2 and 1.3 to each server.
CONNECTIONS = [
    (WWW_PORT, ["-tls1_2"], "/"),
    (WWW_PORT, ["-tls1_3"], "/"),
    (HTTPS_PORT, ["-tls1_2"], "/a"),
    (HTTPS_PORT, ["-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256"], "/b"),
]


def address(lab):
    for ns, dev, v4 in ((lab.cap_ns, lab.cap_if, CAP4), (lab.gen_ns, lab.gen_if, GEN4)):
        N.run(["ip", "-n", ns, "addr", "add", f"{v4}/24", "dev", dev])
        N.run(["ip", "-n", ns, "link", "set", "lo", "up"])


def make_certificate(tmp):
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    N.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=xdpcap-test"])
    return cert, key


def key_lines(path):
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def uprobes_held(x):
    return sorted(n for n in N.held_programs(x.proc.pid).values() if n.startswith(UPROBE_PREFIX))


def client(lab, port, options, path, keylog):
    request = f"GET {path} HTTP/1.0\r\nHost: {CAP4}\r\n\r\n"
    cp = N.run(["ip", "netns", "exec", lab.gen_ns, "openssl", "s_client", "-connect", f"{CAP4}:{port}",
                "-keylogfile", keylog, "-ign_eof", "-quiet"] + options, input=request, check_rc=False)
    # Python's server closes without a close_notify, which s_client calls an error.
    N.check(cp.stdout.startswith("HTTP/1.0 200"), f"s_client {' '.join(options)} to port {port} got its answer",
            (cp.stdout[:200], cp.stderr))


def recovered(lab, tmp, binary, cert, key):
    server = lab.popen(lab.cap_ns, ["/usr/bin/python3", "-c", SERVER, cert, key, CAP4, str(HTTPS_PORT),
                                    str(WWW_PORT)], stdout=subprocess.PIPE, text=True)
    words = server.stdout.readline().split()
    N.check(len(words) == 2 and words[0] == "ready", "the servers listen", words)
    www_server = int(words[1])
    capture, keys = os.path.join(tmp, "tls.pcapng"), os.path.join(tmp, "keys.log")
    # Beside it, a capture of every packet with the secrets in the file
    # (--tls-keys): the --pid one leaves out each connection's first
    # packets, which reach a listening socket no process has used since
    # xdpcap started.
    plain = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-w", capture, "-k", "--tls-keys"])
    plain.wait_listening()
    # Anyone may read what the umask allows: the key log is still 0600.
    old_umask = os.umask(0o022)
    try:
        x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-w", os.path.join(tmp, "selected.pcapng"), "--pid",
                                   str(server.pid), "--follow-forks", "--tls-keylog", keys])
        x.wait_listening()
    finally:
        os.umask(old_umask)
    held = uprobes_held(x)
    truth = []
    for i, (port, options, path) in enumerate(CONNECTIONS):
        keylog = os.path.join(tmp, f"client{i}.keys")
        client(lab, port, options, path, keylog)
        truth += key_lines(keylog)
    # The last handshake's keys reach the file when its probes fire: soon.
    deadline = time.monotonic() + N.scaled(5)
    while sorted(key_lines(keys)) != sorted(truth) and time.monotonic() < deadline:
        time.sleep(0.1)
    N.check(x.stop() == 0, "xdpcap stopped cleanly", x.stderr)
    N.check(plain.stop() == 0, "xdpcap -k stopped cleanly", plain.stderr)
    os.kill(www_server, signal.SIGKILL)
    server.kill()
    server.wait()
    lab.forget(server)
    N.check(held and all(n.startswith(UPROBE_PREFIX) for n in held), "uprobes attached while capturing", held)
    got = key_lines(keys)
    N.expect(len(got) == len(set(got)), "each key log line once", got)
    N.check(sorted(got) == sorted(truth), f"the {len(truth)} lines the clients logged, recovered from the servers",
            {"missing": sorted(set(truth) - set(got)), "wrong": sorted(set(got) - set(truth))})
    N.check(stat.S_IMODE(os.stat(keys).st_mode) == 0o600, "the key log is mode 0600",
            oct(os.stat(keys).st_mode))
    # The test's ports are no TLS or HTTP port tshark knows: decode as both.
    # s_server -www's page ends with the connection: its body is not waited for.
    ports = [a for p in (WWW_PORT, HTTPS_PORT) for a in ("-d", f"tcp.port=={p},tls", "-d", f"tls.port=={p},http")]
    fields = ["-o", "http.desegment_body:FALSE"] + ports + ["-Y", "http", "-T", "fields", "-e", "http.request.uri",
                                                          "-e", "http.response.code"]
    # The -k capture's file with --tls-keylog's key log, and on its own.
    for what, args in (("given the key log", ["-r", capture, "-o", f"tls.keylog_file:{keys}"]),
                       ("with the file's own secrets, in one pass", ["-r", capture])):
        cp = N.run(["tshark", "-n"] + args + fields)
        lines = cp.stdout.splitlines()
        requests = sorted(l.split("\t")[0] for l in lines if l.split("\t")[0])
        responses = [l for l in lines if l.endswith("\t200")]
        N.check(requests == sorted(path for _, _, path in CONNECTIONS) and len(responses) == len(CONNECTIONS),
                f"tshark, {what}, decrypts every request and response", cp.stdout)


def other_library(lab, tmp, binary, cert):
    """gnutls-cli, connected before xdpcap starts: one line, no key."""
    server = lab.popen(lab.cap_ns, ["openssl", "s_server", "-accept", str(WWW_PORT), "-cert", cert,
                                    "-key", os.path.join(tmp, "key.pem"), "-www"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    N.check(any(line.strip() == "ACCEPT" for line in server.stdout), "s_server listens")
    gnutls = lab.popen(lab.gen_ns, ["gnutls-cli", "--insecure", "-p", str(WWW_PORT), CAP4],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    N.check(any("Handshake was completed" in gnutls.stdout.readline() for _ in range(60)),
            "gnutls-cli connected")
    keys = os.path.join(tmp, "gnutls.keys")
    x = N.Xdpcap(lab, binary, ["-i", lab.cap_if, "-w", os.path.join(tmp, "gnutls.pcapng"), "--pid",
                               str(gnutls.pid), "--tls-keylog", keys])
    x.wait_listening()
    gnutls.communicate(f"GET / HTTP/1.0\r\nHost: {CAP4}\r\n\r\n", timeout=N.scaled(10))
    lab.forget(gnutls)
    N.check(x.stop() == 0, "xdpcap stopped cleanly", x.stderr)
    server.kill()
    server.wait()
    lab.forget(server)
    said = [l for l in N.messages(x.err_lines) if "gnutls-cli" in l]
    N.check(said == [f"xdpcap: gnutls-cli (pid {gnutls.pid}) uses no OpenSSL 3 library (libssl.so.3): its TLS keys are "
                     "not captured"], "one line names the process of another TLS library", x.err_lines)
    N.check(key_lines(keys) == [], "no key for it", key_lines(keys))


def test(binary):
    if not os.path.exists("/usr/bin/gnutls-cli"):
        raise N.TestSkip("gnutls-cli (gnutls-bin) not installed")
    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        address(lab)
        cert, key = make_certificate(tmp)
        recovered(lab, tmp, binary, cert, key)
        other_library(lab, tmp, binary, cert)
        lab.assert_clean()


if __name__ == "__main__":
    N.main(test, tools=N.REQUIRED_TOOLS + ("openssl",))
