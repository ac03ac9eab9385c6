#!/usr/bin/env python3
"""chunked_post.py HOST PORT PATH MIB: one HTTP/1.1 POST with a chunked body of MIB MiB
(1 MiB chunks) to HOST:PORT, as a hostile local user would send it; prints the status
line the server answered ("none" if it closed without one). Bounded: 20 s in all."""
import select
import socket
import sys
import time


def post(host, port, path, mib):
    deadline = time.monotonic() + 20
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: dthrottle\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
    chunk = b"100000\r\n" + b"x" * 0x100000 + b"\r\n"
    answer = b""
    try:
        for _ in range(mib):
            if time.monotonic() > deadline:
                break
            if not answer and select.select([s], [], [], 0)[0]:
                answer = s.recv(4096)  # an answer before the body: read it while it is there
            s.sendall(chunk)
        s.sendall(b"0\r\n\r\n")
    except OSError:
        pass  # the server closed before taking the body: what it should do
    if not answer:
        try:
            answer = s.recv(4096)
        except OSError:
            pass
    s.close()
    line = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    return line or "none"


if __name__ == "__main__":
    print(post(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
