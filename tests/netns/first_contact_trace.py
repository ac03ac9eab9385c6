#!/usr/bin/env python3
"""first_contact_trace.py DIR: where a new client's first second went, from a trace of
bench_cluster.sh's "first" scenario (BENCH_TRACE_DIR=D BENCH_AGENT_ARGS="--log-level debug":
DIR is D/1, D/2, ... one per run of the scenario). DIR/first.txt has a line per host
("hN FIRST_FRAME_UNIX_S ELAPSED_S ADMITTED"), DIR/hN.log the agents' logs.

Prints, per host, what it admitted of the client, when (seconds after the client's first
frame) it sent its first early report and applied the first relay of the client's hits,
and the delivery lag of every peer report and relay applied in the first 3 s (the time
from the sender's stamp to this host's applying it: queueing, CPU and the wire).
docs/cluster-scale.md "First contact" has what it showed."""
import datetime
import re
import sys

STAMP = re.compile(r"^(\S+)Z DEBUG (.*)$")
LAG = re.compile(r"sent (-?\d+) ms ago")


def unix_s(stamp):
    t = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


def events(path, start):
    """(seconds after start, message) of the debug lines in the first 3 s."""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        m = STAMP.match(line)
        if m and -0.1 <= unix_s(m.group(1)) - start <= 3:
            out.append((unix_s(m.group(1)) - start, m.group(2)))
    return out


def main(d):
    hosts = [line.split() for line in open(d + "/first.txt") if line.strip()]
    start = min(float(h[1]) for h in hosts)
    print("first frames %.3f s apart; admitted %d in all" %
          (max(float(h[1]) for h in hosts) - start, sum(int(h[3]) for h in hosts)))
    print("host  admitted  first early report  first relay applied")
    lags = []
    for name, _, _, admitted in hosts:
        ev = events("%s/%s.log" % (d, name), start)
        early = next((t for t, m in ev if m.startswith("early tick") and " 0 to send" not in m), None)
        relay = next((t for t, m in ev if m.startswith("relay from")), None)
        lags += [int(LAG.search(m).group(1)) for _, m in ev if m.startswith(("relay from", "report from"))]
        fmt = lambda t: "%.3f s" % t if t is not None else "-"
        print("%-5s %8s  %18s  %19s" % (name, admitted, fmt(early), fmt(relay)))
    if lags:
        lags.sort()
        print("delivery lag of %d reports and relays: median %d ms, 90th percentile %d ms, max %d ms" %
              (len(lags), lags[len(lags) // 2], lags[len(lags) * 9 // 10], lags[-1]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: first_contact_trace.py DIR (a run's directory under BENCH_TRACE_DIR)")
    main(sys.argv[1])
