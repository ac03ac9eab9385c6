#!/usr/bin/env python3
"""tcp_spoof.py - spoofed TCP segments for the netns tests: what an attacker sends in a
peer's name to reach local services past the cluster exemption (docs/security.md).

  tcp_spoof.py --src ADDR:PORT --dst ADDR:PORT --rate PPS --count N [--secs S]

Sends N bare TCP segments (no connection behind them) from ADDR:PORT to ADDR:PORT over a
raw IPv4 socket bound to the source address (which must be this namespace's own), paced
at PPS: four segments in turn, SYN, ACK, RST and PSH+ACK (random sequence numbers). Stops
after N segments or S seconds (default 60). Prints {"sent":N,"elapsed_s":T}. Only
addresses in 198.18.0.0/15 are accepted.
"""
import argparse
import ipaddress
import json
import os
import socket
import struct
import time

FLAGS = (0x02, 0x10, 0x04, 0x18)  # SYN, ACK, RST, PSH+ACK
TEST_NET = ipaddress.ip_network("198.18.0.0/15")


def endpoint(text):
    host, _, port = text.rpartition(":")
    addr = ipaddress.IPv4Address(host)
    if addr not in TEST_NET:
        raise argparse.ArgumentTypeError(f"{host} is not a test address (198.18.0.0/15)")
    return str(addr), int(port)


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    return ~(s + (s >> 16)) & 0xFFFF


def segment(src, dst, flags):
    """A 20-byte TCP header from src to dst, with its checksum over the pseudo-header."""
    seq, ack = struct.unpack("!II", os.urandom(8))
    hdr = struct.pack("!HHIIBBHHH", src[1], dst[1], seq, ack if flags & 0x10 else 0, 5 << 4, flags, 64240, 0, 0)
    pseudo = socket.inet_aton(src[0]) + socket.inet_aton(dst[0]) + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(hdr))
    return hdr[:16] + struct.pack("!H", checksum(pseudo + hdr)) + hdr[18:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", type=endpoint, required=True)
    ap.add_argument("--dst", type=endpoint, required=True)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--secs", type=float, default=60)
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    s.bind((a.src[0], 0))
    segs = [segment(a.src, a.dst, f) for f in FLAGS]
    sent, t0 = 0, time.monotonic()
    while sent < a.count and time.monotonic() - t0 < a.secs:
        s.sendto(segs[sent % len(segs)], (a.dst[0], 0))
        sent += 1
        delay = t0 + sent / a.rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(json.dumps({"sent": sent, "elapsed_s": round(time.monotonic() - t0, 3)}, separators=(",", ":")))


if __name__ == "__main__":
    main()
