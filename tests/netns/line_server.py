#!/usr/bin/env python3
"""line_server.py - a real TCP server that answers every connection with one line, at once.

  line_server.py PORT LINE [--duration S]

Listens on PORT, IPv4 and IPv6 (one dual-stack socket, backlog 4096), and in one process
without a fork or a thread per connection: every connection the kernel has established is
accepted as soon as the listener is readable, sent LINE and a newline, and closed. So its
answer time is the kernel's and one accept(), whatever the machine's load, where a server
that forks a process (and a shell) per connection answers a burst late on a busy machine.
Prints "listening" once it listens, and at its end "answered N" (connections served).
Exits on SIGTERM or SIGINT, or after S seconds (default 600: a bound, the test stops it).
Run it in the namespace whose address it should serve.
"""
import selectors
import signal
import socket
import sys
import time


def listen(port):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.listen(4096)
    s.setblocking(False)
    return s


def serve_pending(lsock, reply):
    """Accepts what the kernel has established (at most 1024 at a time), answering each."""
    n = 0
    for _ in range(1024):
        try:
            conn, _ = lsock.accept()
        except (BlockingIOError, InterruptedError):
            break
        except OSError:  # a connection reset before accept(): nothing to answer
            continue
        try:
            conn.settimeout(1.0)  # a few bytes into a fresh socket's buffer: never waits
            conn.sendall(reply)
            n += 1
        except OSError:
            pass
        finally:
            conn.close()
    return n


def main():
    args = sys.argv[1:]
    duration = 600.0
    if len(args) == 4 and args[2] == "--duration":
        duration = float(args[3])
        args = args[:2]
    if len(args) != 2:
        sys.exit("usage: line_server.py PORT LINE [--duration S]")
    port, reply = int(args[0]), (args[1] + "\n").encode()
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    lsock = listen(port)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ)
    print("listening", flush=True)
    answered, end = 0, time.monotonic() + duration
    while not stop and time.monotonic() < end:
        if sel.select(timeout=0.5):
            answered += serve_pending(lsock, reply)
    print(f"answered {answered}", flush=True)


if __name__ == "__main__":
    main()
