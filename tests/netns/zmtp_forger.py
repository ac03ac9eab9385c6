#!/usr/bin/env python3
"""zmtp_forger.py - a hostile cluster member for the netns tests: a ZeroMQ PUB endpoint
(ZMTP 3.0, NULL mechanism, written out by hand: no pyzmq needed) that publishes forged
peer reports to every agent that subscribes to it.

  zmtp_forger.py --bind ADDR:PORT --node-id ID --go-file PATH [--period-ms 200] [--secs 60]
  zmtp_forger.py --connect ADDR:PORT --oversized BYTES

Once PATH exists, every period it publishes one empty report (no hits) in the name of
node ID, from a boot of its own (a fixed random boot id), seq 1, 2, ..., sent "ten years
from now": a forged restart. Before, a receiver took it as ID's restart and
dropped the real ID's reports as duplicates. It prints one line per subscriber and, at
the end, "forged N" (messages sent to all subscribers). Bounded: exits after --secs.

With --connect it is a publisher connecting to a hub's frontend (XSUB) instead, sending
one message of BYTES bytes, and prints "closed" if the hub then drops the connection
within 3 s (its maximum message size), else "still open".
"""
import argparse
import os
import select
import socket
import struct
import time

TEN_YEARS_MS = 10 * 365 * 86400 * 1000


def greeting():
    # signature, version 3.0, mechanism NULL, as-server 0, filler
    return b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31


def frame(body, command=False):
    flags = 0x04 if command else 0x00
    if len(body) < 256:
        return bytes([flags, len(body)]) + body
    return bytes([flags | 0x02]) + struct.pack(">Q", len(body)) + body


def ready():
    prop = b"\x0bSocket-Type" + struct.pack(">I", 3) + b"PUB"
    return frame(b"\x05READY" + prop, command=True)


def report(node_id, boot_id, seq, sent_ms):
    """An empty v2 report (peer_protocol.h): header (to everyone), no rule groups, no tags."""
    nid = node_id.encode()
    return (b"DTRP" + bytes([2, 0, len(nid)]) + nid + b"\x00" +
            struct.pack("<QQQQHH", boot_id, seq, 1, sent_ms, 0, 1) + b"\x00" + b"\x00")


class Subscriber:
    """One connected SUB socket: greeted, readied; its PINGs answered with PONGs."""

    def __init__(self, conn):
        self.conn = conn
        self.buf = b""
        self.greeted = False
        conn.setblocking(False)
        conn.sendall(greeting() + ready())

    def read(self):
        try:
            data = self.conn.recv(65536)
        except BlockingIOError:
            return True
        if not data:
            return False
        self.buf += data
        if not self.greeted:
            if len(self.buf) < 64:
                return True
            self.buf, self.greeted = self.buf[64:], True
        while len(self.buf) >= 2:  # frames: answer PING, ignore READY and subscriptions
            flags = self.buf[0]
            head, size = (9, struct.unpack(">Q", self.buf[1:9])[0]) if flags & 0x02 else (2, self.buf[1])
            if len(self.buf) < head + size:
                break
            body, self.buf = self.buf[head:head + size], self.buf[head + size:]
            if flags & 0x04 and body[:5] == b"\x04PING":
                self.send(frame(b"\x04PONG" + body[7:], command=True))
        return True

    def send(self, data):
        try:
            self.conn.setblocking(True)
            self.conn.sendall(data)
            self.conn.setblocking(False)
            return True
        except OSError:
            return False


def send_oversized(endpoint, size):
    host, port = endpoint.rsplit(":", 1)
    conn = socket.create_connection((host, int(port)), timeout=3)
    conn.sendall(greeting() + ready())
    got = b""
    while len(got) < 64:  # the hub's greeting: it speaks ZMTP
        chunk = conn.recv(64 - len(got))
        if not chunk:
            print("closed before the greeting", flush=True)
            return
        got += chunk
    try:
        conn.sendall(frame(b"DTRP" + b"\0" * (size - 4)))
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if not conn.recv(65536):
                print("closed", flush=True)
                return
    except (ConnectionResetError, BrokenPipeError):
        print("closed", flush=True)
        return
    except socket.timeout:
        pass
    print("still open", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bind")
    ap.add_argument("--connect")
    ap.add_argument("--oversized", type=int, default=0)
    ap.add_argument("--node-id")
    ap.add_argument("--go-file")
    ap.add_argument("--period-ms", type=int, default=200)
    ap.add_argument("--secs", type=float, default=60)
    a = ap.parse_args()
    if a.connect:
        send_oversized(a.connect, a.oversized)
        return
    host, port = a.bind.rsplit(":", 1)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((host, int(port)))
    lsock.listen(8)
    print("listening on %s" % a.bind, flush=True)
    subs = []
    boot_id = struct.unpack("<Q", os.urandom(8))[0]
    seq, forged = 0, 0
    end = time.monotonic() + a.secs
    next_send = time.monotonic()
    while time.monotonic() < end:
        ready_socks, _, _ = select.select([lsock] + [s.conn for s in subs], [], [], 0.05)
        for sock in ready_socks:
            if sock is lsock:
                conn, peer = lsock.accept()
                subs.append(Subscriber(conn))
                print("subscriber %s:%d" % peer, flush=True)
        subs = [s for s in subs if s.conn not in ready_socks or s.read()]
        now = time.monotonic()
        if now < next_send or not os.path.exists(a.go_file):
            continue
        next_send = now + a.period_ms / 1000
        seq += 1
        msg = frame(report(a.node_id, boot_id, seq, int(time.time() * 1000) + TEN_YEARS_MS))
        for s in subs:
            forged += s.send(msg)
    print("forged %d" % forged, flush=True)


if __name__ == "__main__":
    main()
