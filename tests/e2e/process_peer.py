#!/usr/bin/python3
"""A test's own client or server process, named, for process attribution.

  process_peer.py NAME tcp-server ADDR PORT     accept one connection, read to EOF, answer, close
  process_peer.py NAME tcp-client ADDR PORT [fork|thread]
                                                connect, send, read the answer; `fork`: a child
                                                (named NAME-kid) sends; `thread`: a thread sends
  process_peer.py NAME udp-client ADDR PORT     one datagram, wait for the answer
  process_peer.py NAME udp-server ADDR PORT     answer one datagram
  process_peer.py NAME ping ADDR                one ICMP echo over a ping socket
  process_peer.py NAME tcp-hold ADDR PORT       accept one connection and never read it

Each prints "ready" once listening (servers) and then, once done, one line
"pid PID tid TID port LOCALPORT peer REMOTEPORT" naming who sent the data (the
child, the thread); a ping's ports are its echo identifier.
The command name is set to NAME (15 bytes at most) before any socket exists.
"""

import os
import socket
import sys
import threading
import time


def set_name(name):
    with open("/proc/self/comm", "w") as f:
        f.write(name[:15])


def family_of(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def report(pid, tid, port, peer):
    print(f"pid {pid} tid {tid} port {port} peer {peer}", flush=True)


def main():
    name, role = sys.argv[1], sys.argv[2]
    set_name(name)
    addr = sys.argv[3]
    fam = family_of(addr)
    if role == "ping":
        proto = socket.IPPROTO_ICMPV6 if fam == socket.AF_INET6 else socket.IPPROTO_ICMP
        s = socket.socket(fam, socket.SOCK_DGRAM, proto)
        echo = bytes([128 if fam == socket.AF_INET6 else 8, 0, 0, 0, 0, 0, 0, 1]) + b"xdpcap-ping"
        s.sendto(echo, (addr, 0))
        s.settimeout(10)
        s.recvfrom(2048)
        report(os.getpid(), threading.get_native_id(), s.getsockname()[1], s.getsockname()[1])
        return
    port = int(sys.argv[4])
    if role in ("tcp-server", "tcp-hold"):
        ls = socket.socket(fam, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((addr, port))
        ls.listen(1)
        print("ready", flush=True)
        c, _ = ls.accept()
        if role == "tcp-hold":
            print("accepted", flush=True)
            sys.stdin.read()  # until the test closes it
            return
        while c.recv(65536):
            pass
        peer = c.getpeername()[1]
        c.sendall(b"answer")
        c.close()
        report(os.getpid(), threading.get_native_id(), port, peer)
        return
    if role == "udp-server":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.bind((addr, port))
        print("ready", flush=True)
        data, peer = s.recvfrom(2048)
        s.sendto(b"answer", peer)
        report(os.getpid(), threading.get_native_id(), port, peer[1])
        return
    if role == "udp-client":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.sendto(b"question", (addr, port))
        s.settimeout(10)
        s.recvfrom(2048)
        report(os.getpid(), threading.get_native_id(), s.getsockname()[1], port)
        return
    if role == "tcp-client":
        how = sys.argv[5] if len(sys.argv) > 5 else ""
        s = socket.create_connection((addr, port), timeout=10)
        local = s.getsockname()[1]
        if how == "fork":
            # The handshake was the parent's; the data is the child's.
            time.sleep(0.3)
            child = os.fork()
            if child == 0:
                set_name(name + "-kid")
                s.sendall(b"from the child")
                s.shutdown(socket.SHUT_WR)
                s.recv(65536)
                report(os.getpid(), threading.get_native_id(), local, port)
                os._exit(0)
            s.close()
            os.waitpid(child, 0)
            return
        if how == "thread":
            time.sleep(0.3)
            sent = {}

            def send():
                s.sendall(b"from a thread")
                s.shutdown(socket.SHUT_WR)
                s.recv(65536)
                sent["tid"] = threading.get_native_id()

            t = threading.Thread(target=send)
            t.start()
            t.join()
            report(os.getpid(), sent["tid"], local, port)
            return
        s.sendall(b"question")
        s.shutdown(socket.SHUT_WR)
        s.recv(65536)
        report(os.getpid(), threading.get_native_id(), local, port)
        return
    sys.exit(f"unknown role {role}")


if __name__ == "__main__":
    main()
