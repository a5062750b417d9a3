#!/usr/bin/python3
"""One TCP connection that carries SIZE bytes each way, for the super-frame test.

  bulk_tcp.py server ADDR PORT SIZE   (prints "ready", then "server OK" or "server BAD")
  bulk_tcp.py client ADDR PORT SIZE   (prints "client OK" or "client BAD")

The client uploads payload("up", SIZE), the server answers with
payload("down", SIZE); each side checks what it received.
"""

import hashlib
import socket
import sys


def payload(seed, size):
    """SIZE bytes that differ all along, so a stream rebuilt out of order shows."""
    out = bytearray()
    block = 0
    while len(out) < size:
        out += hashlib.sha256(f"{seed}-{block}".encode()).digest() * 64
        block += 1
    return bytes(out[:size])


def receive(sock, size):
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def main():
    role, addr, port, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    if role == "server":
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((addr, port))
        listener.listen(1)
        print("ready", flush=True)
        conn, _ = listener.accept()
        ok = receive(conn, size) == payload("up", size)
        conn.sendall(payload("down", size))
        conn.shutdown(socket.SHUT_WR)
        conn.recv(1)
        conn.close()
        print("server " + ("OK" if ok else "BAD"), flush=True)
    else:
        conn = socket.create_connection((addr, port), timeout=60)
        conn.sendall(payload("up", size))
        ok = receive(conn, size) == payload("down", size)
        conn.close()
        print("client " + ("OK" if ok else "BAD"), flush=True)


if __name__ == "__main__":
    main()
