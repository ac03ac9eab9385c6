#!/usr/bin/env python3
"""timed_connects.py - N real TCP connects with curl, started at a steady rate, each timed.

  timed_connects.py N RATE HOST PORT EXPECT

Starts `curl telnet://HOST:PORT` N times, connect i at i/RATE seconds (never waiting for
an earlier one: a connect that waits for a SYN retransmit must not delay the next), each
bounded by --connect-timeout 4 and --max-time 5. Prints one line per connect, in order:
"ok SECONDS" (curl's time_connect) when it exited 0 and the server's first line was
EXPECT, else "fail CODE"; then "late SECONDS": the latest start behind its schedule (a
starved launcher would spread the connects past the flood). Run it in the client's
network namespace; it starts at most N processes, all reaped before it exits.
"""
import subprocess
import sys
import time


def main():
    n, rate, host, port, expect = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    if not 0 < n <= 10000 or not 0 < rate <= 1000:
        sys.exit("timed_connects.py: N from 1 to 10000, RATE from 0 to 1000 per second")
    cmd = ["curl", "-s", "--connect-timeout", "4", "--max-time", "5", "-w", "%{time_connect}",
           f"telnet://{host}:{port}"]
    procs, late, t0 = [], 0.0, time.monotonic()
    for i in range(n):
        due = t0 + i / rate
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
        late = max(late, time.monotonic() - due)
        procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL))
    for p in procs:
        out, _ = p.communicate(timeout=30)
        lines = out.decode(errors="replace").splitlines()
        if p.returncode == 0 and len(lines) >= 2 and lines[0] == expect:
            print(f"ok {lines[-1]}")
        else:
            print(f"fail {p.returncode}")
    print(f"late {late:.3f}")


if __name__ == "__main__":
    main()
