#!/usr/bin/env python3
"""timed_connects.py - N real TCP connects through the kernel's stack, at a steady rate, each timed.

  timed_connects.py N RATE HOST PORT EXPECT

Opens connection i at i/RATE seconds (never waiting for an earlier one: a connect that
waits for a SYN retransmit must not delay the next), all from one process with
non-blocking sockets, so that a busy machine does not push the starts late as a process
per connect would. Each connection must be established within 4 s (the kernel retransmits
a lost SYN after 1 s and 3 s, as for any client) and have sent its first line within 5 s.
Prints one line per connection, in order: "ok SECONDS" (from connect() to established)
when the server's first line was EXPECT, else "fail WHY"; then "late SECONDS": the latest
start behind its schedule. Run it in the client's network namespace; at most N sockets,
all closed before it exits.
"""
import errno
import selectors
import socket
import sys
import time

CONNECT_TIMEOUT, TOTAL_TIMEOUT = 4.0, 5.0


class Conn:
    def __init__(self, i, sock, started):
        self.i, self.sock, self.started = i, sock, started
        self.connected_after = None
        self.data = b""


def start(sel, i, addr, results):
    s = socket.socket(socket.AF_INET6 if ":" in addr[0] else socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    c = Conn(i, s, time.monotonic())
    rc = s.connect_ex(addr)
    if rc not in (0, errno.EINPROGRESS):
        results[i] = f"fail connect:{errno.errorcode.get(rc, rc)}"
        s.close()
        return
    sel.register(s, selectors.EVENT_WRITE, c)


def finish(sel, c, results, line):
    results[c.i] = line
    sel.unregister(c.sock)
    c.sock.close()


def on_event(sel, c, expect, results):
    now = time.monotonic()
    if c.connected_after is None:
        err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            return finish(sel, c, results, f"fail connect:{errno.errorcode.get(err, err)}")
        c.connected_after = now - c.started
        sel.modify(c.sock, selectors.EVENT_READ, c)
        return
    try:
        chunk = c.sock.recv(256)
    except OSError as e:
        return finish(sel, c, results, f"fail recv:{errno.errorcode.get(e.errno, e.errno)}")
    c.data += chunk
    if b"\n" in c.data or not chunk:
        first = c.data.split(b"\n", 1)[0].decode(errors="replace")
        line = f"ok {c.connected_after:.6f}" if first == expect else f"fail reply:{first[:40]!r}"
        finish(sel, c, results, line)


def expire(sel, results):
    now = time.monotonic()
    for key in list(sel.get_map().values()):
        c = key.data
        if c.connected_after is None and now - c.started >= CONNECT_TIMEOUT:
            finish(sel, c, results, "fail connect:timeout")
        elif now - c.started >= TOTAL_TIMEOUT:
            finish(sel, c, results, "fail reply:timeout")


def main():
    n, rate, host, port, expect = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    if not 0 < n <= 10000 or not 0 < rate <= 1000:
        sys.exit("timed_connects.py: N from 1 to 10000, RATE from 0 to 1000 per second")
    sel, results, late, nxt = selectors.DefaultSelector(), [None] * n, 0.0, 0
    t0 = time.monotonic()
    while nxt < n or sel.get_map():
        now = time.monotonic()
        while nxt < n and now >= t0 + nxt / rate:
            late = max(late, now - (t0 + nxt / rate))
            start(sel, nxt, (host, port), results)
            nxt += 1
        wait = 0.05 if nxt >= n else min(0.05, max(0.0, t0 + nxt / rate - time.monotonic()))
        for key, _ in sel.select(timeout=wait):
            on_event(sel, key.data, expect, results)
        expire(sel, results)
    for r in results:
        print(r)
    print(f"late {late:.3f}")


if __name__ == "__main__":
    main()
