#!/usr/bin/env python3
"""wire_breakdown.py PCAP PORT T0 T1 T2 [SERVED_BYTES]: what one host's control link received,
by kind, from a capture of that link (tcpdump -w, Ethernet, snap length 128 or more), as
bench_cluster.sh's light scenario takes it of h1: an idle window [T0, T1) and the scenario's
window [T1, T2) (unix seconds), and the window less the idle rate over its length.

Every frame is counted whole (its length on the wire, as the link's rx_bytes counts it):
  ACKs      TCP segments without payload (ACKs of what the host sent, SYN, FIN)
  pings     ZMTP heartbeats: PING and PONG commands, alone in a segment (9 and 7 bytes
            of TCP payload; 42 and 40 inside a CurveZMQ MESSAGE)
  messages  every other segment with payload: reports, signed heartbeats, directed
            batches, relays, resend requests, subscriptions (a ping that shares a segment
            with a message is counted here)
  other     anything not TCP over IPv4
Each kind is split by the side of the connection it came from: "from publishers" (the
peers' PUB sockets, source port PORT: what they send to this host's subscriber) and "from
subscribers" (destination port PORT: the peers' SUB sockets connected to this host)."""
import struct
import sys

PING_SIZES = {7, 9, 40, 42}
KINDS = ("ACKs", "pings", "messages", "other")


def frames(path):
    """(unix seconds, wire length, first bytes) of each frame of a pcap file."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise SystemExit("%s: not a pcap file" % path)
        for order in "<>":
            magic = struct.unpack(order + "I", head[:4])[0]
            if magic in (0xA1B2C3D4, 0xA1B23C4D):
                break
        else:
            raise SystemExit("%s: not a pcap file (pcapng? write it with tcpdump -w)" % path)
        nano = magic == 0xA1B23C4D
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, orig = struct.unpack(order + "IIII", rec)
            data = f.read(incl)
            yield sec + frac / (1e9 if nano else 1e6), orig, data


def classify(data, port):
    """(kind, side) of an Ethernet frame; side is "pub", "sub" or "-"."""
    if len(data) < 34 or data[12:14] != b"\x08\x00" or data[23] != 6:
        return "other", "-"
    ihl = (data[14] & 15) * 4
    ip_len = struct.unpack(">H", data[16:18])[0]
    tcp = 14 + ihl
    if len(data) < tcp + 13:
        return "other", "-"
    sport, dport = struct.unpack(">HH", data[tcp:tcp + 4])
    payload = ip_len - ihl - (data[tcp + 12] >> 4) * 4
    side = "pub" if sport == port else "sub" if dport == port else "-"
    if payload <= 0:
        return "ACKs", side
    return ("pings" if payload in PING_SIZES else "messages"), side


def tally(path, port, t0, t1, t2):
    """{(window, kind, side): [frames, bytes]} for the windows "idle" and "window"."""
    out = {}
    for ts, length, data in frames(path):
        if t0 <= ts < t1:
            win = "idle"
        elif t1 <= ts < t2:
            win = "window"
        else:
            continue
        kind, side = classify(data, port)
        for key in ((win, kind, side), (win, kind, "all"), (win, "all", "all")):
            c = out.setdefault(key, [0, 0])
            c[0] += 1
            c[1] += length
    return out


def main(argv):
    if len(argv) not in (6, 7):
        raise SystemExit(__doc__.split("\n\n")[0])
    path, port = argv[1], int(argv[2])
    t0, t1, t2 = (float(x) for x in argv[3:6])
    served = float(argv[6]) if len(argv) == 7 else 0
    if not t0 < t1 < t2:
        raise SystemExit("T0 < T1 < T2, not %s %s %s" % (t0, t1, t2))
    out = tally(path, port, t0, t1, t2)
    idle_s, win_s = t1 - t0, t2 - t1
    print("  h1's control link by kind (bytes / frames): idle %.1f s, window %.1f s; the window less "
          "the idle rate%s" % (idle_s, win_s, " (x of the %d bytes served)" % served if served else ""))
    rows = [(k, s) for k in KINDS for s in ("pub", "sub", "all")] + [("all", "all")]
    for kind, side in rows:
        idle = out.get(("idle", kind, side), [0, 0])
        win = out.get(("window", kind, side), [0, 0])
        if not idle[0] and not win[0]:
            continue
        less = win[1] - idle[1] * win_s / idle_s
        name = kind if side == "all" else "  %s from %s" % (kind, "publishers" if side == "pub" else
                                                             "subscribers" if side == "sub" else "elsewhere")
        ratio = " (%.2fx)" % (less / served) if served else ""
        print("    %-28s idle %8d / %6d (%7.0f/s)  window %8d / %6d  less idle %9.0f%s" %
              (name, idle[1], idle[0], idle[1] / idle_s, win[1], win[0], less, ratio))


if __name__ == "__main__":
    main(sys.argv)
