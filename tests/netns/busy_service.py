#!/usr/bin/env python3
"""busy_service.py - a real TCP service that can be made busy, and its clients, for
tests/netns/test_adaptive.sh (the agent's built-in busy signal: a listener whose accept
queue is full, read with NETLINK_SOCK_DIAG; agent/adaptive/listen_watch.h).

  busy_service.py serve --port P --backlog N --busy-file F --duration S
      Listens on 0.0.0.0:P with listen(N). Healthy (F absent): accepts every pending
      connection at once and closes it. Busy (F present): stops calling accept(), as an
      overloaded server does, so its clients fill the accept queue (the kernel queues
      N + 1 connections, then drops further SYNs and counts ListenOverflows). Healthy
      again: accepts and closes everything queued. Prints "listening" once, then
      "busy <time>" / "healthy <time>" (epoch seconds) on every change, flushed.
      Exits after S seconds or on SIGTERM, printing how many connections it accepted.

  busy_service.py clients --addr A --port P --rate R --max-open M --duration S
      The service's clients: every 1/R s opens a non-blocking connection to A:P, with at
      most M open at a time; closes each once the service has closed it, or after 2 s
      (a connection still in the accept queue stays there after that). At most R x S
      connections in all; exits after S seconds or on SIGTERM, printing its counts.

Both only ever use the port and address given (the test gives its own namespace's).
"""
import argparse
import errno
import os
import select
import signal
import socket
import sys
import time

POLL_S = 0.02  # how often the server looks at its control file
CLIENT_HOLD_S = 2.0


class Stop(Exception):
    pass


def on_term(*_):
    raise Stop()


def say(*words):
    print(*words, flush=True)


def serve(a):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.port))
    ls.listen(a.backlog)
    ls.setblocking(False)
    say("listening", a.port, "backlog", a.backlog)
    deadline = time.monotonic() + a.duration
    busy = False
    accepted = 0
    try:
        while time.monotonic() < deadline:
            now_busy = os.path.exists(a.busy_file)
            if now_busy != busy:
                busy = now_busy
                say("busy" if busy else "healthy", f"{time.time():.3f}")
            if busy:
                time.sleep(POLL_S)
                continue
            ready, _, _ = select.select([ls], [], [], POLL_S)
            while ready:
                try:
                    conn, _ = ls.accept()
                except BlockingIOError:
                    break
                conn.close()
                accepted += 1
    except Stop:
        pass
    say("done: accepted", accepted)


def clients(a):
    deadline = time.monotonic() + a.duration
    budget = int(a.rate * a.duration)
    interval = 1.0 / a.rate
    open_socks = {}  # socket -> when opened
    opened = closed_by_service = given_up = 0
    next_open = time.monotonic()
    try:
        while time.monotonic() < deadline:
            now = time.monotonic()
            # The service accepted and closed: EOF (or an error) on a readable socket.
            readable = select.select(list(open_socks), [], [], 0)[0] if open_socks else []
            for s in readable:
                try:
                    data = s.recv(1)
                except OSError:
                    data = b""
                if not data:
                    closed_by_service += 1
                    del open_socks[s]
                    s.close()
            for s, t in list(open_socks.items()):
                if now - t >= CLIENT_HOLD_S:
                    given_up += 1
                    del open_socks[s]
                    s.close()
            if now >= next_open and opened < budget and len(open_socks) < a.max_open:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                if s.connect_ex((a.addr, a.port)) in (0, errno.EINPROGRESS):
                    open_socks[s] = now
                    opened += 1
                else:
                    s.close()
                next_open = now + interval
            time.sleep(min(interval, POLL_S))
    except Stop:
        pass
    for s in open_socks:
        s.close()
    say("done: opened", opened, "closed by the service", closed_by_service, "given up", given_up)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--backlog", type=int, default=4)
    s.add_argument("--busy-file", required=True)
    s.add_argument("--duration", type=float, required=True)
    c = sub.add_parser("clients")
    c.add_argument("--addr", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--rate", type=float, default=50)
    c.add_argument("--max-open", type=int, default=16)
    c.add_argument("--duration", type=float, required=True)
    a = p.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    if a.cmd == "serve":
        serve(a)
    else:
        clients(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
