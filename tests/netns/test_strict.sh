#!/usr/bin/env bash
# test_strict.sh - strict tags: one budget decided by Redis for several real agents.
#
# Two agents on the two ends of one veth pair (namespaces $H_NS and $C_NS, as in
# test_tags.sh), each with a query socket in $WORK, both naming one redis-server of
# our own on a unix socket in $WORK (--redis). Tag rules, rate 1 every 0.2 s, burst 1:
#   s:  strict, on_redis_error = "deny"   ([[tag]] in a rules file)
#   l:  strict, fall back to the local bucket  (--tag-rule 'l:=5/1!strict-local')
# 1. Many concurrent clients (threads, each its own connection, half on each agent)
#    ask for one strict tag for T seconds: the OK answers over all clients never
#    exceed 1 + floor(T / 0.2) (exact count; T measured around all the queries).
# 2. The same load while redis-server is killed (SIGKILL) mid-run: every answer is
#    still OK or NO, no connection is dropped, both agents stay up.
# 3. With Redis gone: s: (deny) is refused, l: (local) is served from each agent's
#    own bucket; both are logged and counted.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=strict
command -v redis-server >/dev/null || { echo "FAIL setup: redis-server is missing; run make deps"; exit 1; }

lab_init dtstr
lab_up
B_PIN=$PIN_DIR-b
LAB_PIN_DIRS+=("$B_PIN")

REDIS_SOCK=$WORK/redis.sock
redis-server --port 0 --unixsocket "$REDIS_SOCK" --unixsocketperm 700 --save '' --appendonly no \
	--dir "$WORK" --logfile "$WORK/redis.log" &
LAB_PIDS[redis]=$!
wait_until 5 test -S "$REDIS_SOCK"
[ -S "$REDIS_SOCK" ] || die "redis-server did not come up (see $WORK/redis.log)"

cat >"$WORK/rules.toml" <<'EOF'
version = 1
[[tag]]
prefix = "s:"
rate = 5
burst = 1
strict = true
on_redis_error = "deny"
EOF
COMMON=(--rate 1000 --burst 1000 --rules "$WORK/rules.toml" --tag-rule 'l:=5/1!strict-local'
	--redis "$REDIS_SOCK" --redis-timeout 50ms --stats-interval 10m)
agent_start a "${COMMON[@]}" --query-socket "$WORK/a.sock" || die "agent a did not start"
nsenter --net="/run/netns/$C_NS" -- "$AGENT" --iface "$C_IF" --pin-dir "$B_PIN" "${COMMON[@]}" \
	--query-socket "$WORK/b.sock" >"$WORK/agent-b.log" 2>&1 &
LAB_PIDS[agent-b]=$!
wait_for_line "$WORK/agent-b.log" 'attached dthrottle' "${LAB_PIDS[agent-b]}" 10 || die "agent b did not start"

# load SECONDS CLIENTS TAG... : CLIENTS threads (alternately on a.sock and b.sock), each
# asking its tags in turn every 2 ms for SECONDS (at most 5000 queries each). Prints
# "T ok:TAG=N... no=N bad=N": T the wall time around all queries, bad = answers other
# than OK/NO plus connections that failed.
load() {
	"$PYTHON" - "$WORK" "$@" <<'PY'
import socket, sys, threading, time
work, secs, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
tags = sys.argv[4:]
ok = {t: 0 for t in tags}
tot = {"no": 0, "bad": 0}
lock = threading.Lock()
start = threading.Barrier(n + 1)
def client(i):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(f"{work}/{'ab'[i % 2]}.sock")
    start.wait()
    mine = {t: 0 for t in tags}
    no = bad = 0
    end = time.monotonic() + secs
    try:
        for q in range(5000):
            if time.monotonic() >= end:
                break
            t = tags[q % len(tags)]
            s.sendall(t.encode() + b"\n")
            a = b""
            while not a.endswith(b"\n"):
                c = s.recv(16)
                if not c:
                    raise OSError("connection closed")
                a += c
            if a == b"OK\n":
                mine[t] += 1
            elif a == b"NO\n":
                no += 1
            else:
                bad += 1
            time.sleep(0.002)
    except OSError:
        bad += 1
    with lock:
        for t in tags:
            ok[t] += mine[t]
        tot["no"] += no
        tot["bad"] += bad
threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
start.wait()
t0 = time.monotonic()
for t in threads:
    t.join()
elapsed = time.monotonic() - t0
print(f"{elapsed:.3f}", " ".join(f"ok:{t}={ok[t]}" for t in tags), f"no={tot['no']}", f"bad={tot['bad']}")
PY
}
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# 1. The budget, exactly: 16 clients on 2 agents, one strict tag, 3 s.
out=$(load 3 16 s:shared)
echo "budget run: $out"
T=${out%% *}
oks=$(field "$out" ok:s:shared)
nos=$(field "$out" no)
budget=$((1 + $(floor "$(calc "$T / 0.2")")))
check budget/within "$oks OK answers in ${T}s over 2 agents and 16 clients, budget 1 + floor(T/0.2) = $budget" \
	num_le "${oks:-999999}" "$budget"
check budget/used "$oks OK answers in ${T}s: the strict tag must still be served (Redis decides)" num_ge "${oks:-0}" 2
check budget/contended "$nos NO answers: the load must exceed the budget for the test to mean anything" \
	num_ge "${nos:-0}" $((budget * 4))
check budget/valid-answers "bad answers or connections: $(field "$out" bad)" [ "$(field "$out" bad)" = 0 ]

# 2. Redis killed mid-run (SIGKILL once the 2 s load's queries reach it): nothing crashes.
redis_commands() { redis-cli -s "$REDIS_SOCK" info stats 2>/dev/null | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p'; }
redis_reached() { num_ge "$(redis_commands)" "$1"; }
before=$(redis_commands)
load 2 8 s:mid l:mid >"$WORK/mid.out" &
load_pid=$!
wait_until 2 redis_reached $((${before:-0} + 50)) || echo "  (the load's queries had not reached Redis within 2 s)"
kill -KILL "${LAB_PIDS[redis]}"
wait "${LAB_PIDS[redis]}" 2>/dev/null
unset 'LAB_PIDS[redis]'
wait "$load_pid"
out=$(cat "$WORK/mid.out")
echo "redis killed mid-run: $out"
check kill/valid-answers "answers other than OK/NO, or dropped connections, while redis died: $(field "$out" bad)" \
	[ "$(field "$out" bad)" = 0 ]
check kill/agent-a-alive "agent a exited" alive "$AGENT_PID"
check kill/agent-b-alive "agent b exited" alive "${LAB_PIDS[agent-b]}"

# 3. Redis gone: deny refuses every s: query, local serves l: from each agent's bucket
# (burst 1 at 5/s per agent: at most 2 * (1 + floor(T/0.2)) over both agents).
out=$(load 1.5 8 s:after l:after)
echo "after redis died: $out"
T=${out%% *}
s_ok=$(field "$out" ok:s:after)
l_ok=$(field "$out" ok:l:after)
local_budget=$((2 * (1 + $(floor "$(calc "$T / 0.2")"))))
check down/deny-refuses "s:after (on_redis_error deny) got $s_ok OK answers without Redis, expected 0" [ "$s_ok" = 0 ]
check down/local-serves "l:after (on_redis_error local) got $l_ok OK answers, expected at least 2 (one bucket per agent)" \
	num_ge "${l_ok:-0}" 2
check down/local-bounded "l:after got $l_ok OK answers, over the 2 agents' local budgets ($local_budget)" \
	num_le "${l_ok:-999999}" "$local_budget"
check down/logged "agent a did not log the Redis failure" grep -q 'strict tags: redis did not answer' "$(agent_log a)"
check down/agents-alive "an agent exited" alive "$AGENT_PID"
check down/agents-alive-b "agent b exited" alive "${LAB_PIDS[agent-b]}"

lab_finish
