#!/usr/bin/env bash
# test_query_local.sh - who may use a real agent's query socket and metrics port, and what
# a local user can hold there (docs/security.md "Who may use the query socket").
#
# 1. --query-listen on an address that is not loopback exits 2 naming --query-insecure
#    (the agent and `agent check` alike); a bare port is accepted (it binds 127.0.0.1).
# 2. One agent at a 1024 descriptor limit (prlimit, as under the unit), query socket with
#    the default mode and --query-socket-group nogroup, --query-admin-uids 1234, a packet
#    rule svc that is adaptive: the socket is 0660 root:nogroup; a client as nobody (in
#    nogroup, so it may connect) gets "ERR not allowed" for BUSY svc and the rule's factor
#    stays 1, while uid 1234's and root's BUSY are taken (the factor drops). Then a Python
#    process holds 2000 idle connections: the cap is clamped below the limit (logged), the
#    agent keeps its descriptors under 1024; a client of another user is answered at once
#    (the holder has more than half the slots), a new client of the holder's user at most
#    ~1 s later (once an idle connection may be evicted), both with their tag limit enforced.
# 3. A second agent with --query-idle-timeout 1s, --query-listen PORT and --metrics PORT
#    (bare ports): both listen on 127.0.0.1 only; an idle query connection is closed after
#    the timeout; 100 idle connections to the metrics port leave the agent's descriptors
#    within the metrics server's bound.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=query_local
T_START=$(now_s)

lab_init dtql
lab_up
chmod 0755 "$WORK" # a client as nobody must reach the socket inside
SOCK=$WORK/q.sock
clients_group

cat >"$WORK/rules.toml" <<'EOF'
version = 1

[[rule]]
name = "svc"
cidr = "198.18.7.0/24"
rate = 1000
burst = 1000
adaptive = { listen_port = 65001 }
EOF

# svc_num KEY: KEY of the adaptive rule svc in the agent's status (rewritten about once a second).
svc_num() { json_num "$(json_get "$(stats_json)" 'first(.adaptive[]? | select(.kind == "rule" and .name == "svc"))')" "$1"; }
ADAPTIVE_STATUS=/run/dthrottle/$(tr / _ <<<"$PIN_DIR").adaptive.json
status_after() { [ -e "$ADAPTIVE_STATUS" ] && num_cmp "$(stat -c %.3Y "$ADAPTIVE_STATUS")" '>' "$1"; }
fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

# --- 1. non-loopback TCP needs --query-insecure -------------------------------------------

out=$(in_ns "$H_NS" timeout 20 "$AGENT" --iface "$H_IF" --pin-dir "$PIN_DIR" --rate 10 --burst 5 \
	--query-listen "$LAB_V4_HOST:7800" 2>&1)
rc=$?
check_eq query_local/insecure-listen-exit "exit code with --query-listen $LAB_V4_HOST:7800 ($out)" "$rc" 2
check query_local/insecure-listen-message "the refusal does not name --query-insecure: $out" \
	grep -q -- "is not a loopback address.*--query-insecure" <<<"$out"
out=$("$AGENT" check --iface "$H_IF" --rate 10 --burst 5 --query-listen '*:7800' 2>&1)
rc=$?
check query_local/insecure-listen-check "agent check with --query-listen '*:7800' gave $rc: $out" \
	eval '[ "$rc" = 2 ] && grep -q -- --query-insecure <<<"$out"'
out=$("$AGENT" check --iface "$H_IF" --rate 10 --burst 5 --query-listen 7800 2>&1)
rc=$?
check query_local/bare-port-check "agent check with a bare --query-listen port gave $rc: $out" \
	eval '[ "$rc" = 0 ] && grep -q "^ok: query TCP 7800: loopback" <<<"$out"'

# --- 2. the socket's mode and group, the admin gate, 2000 idle connections -----------------

nsenter --net="/run/netns/$H_NS" -- prlimit --nofile=1024:1024 "$AGENT" --iface "$H_IF" --pin-dir "$PIN_DIR" \
	--rules "$WORK/rules.toml" --query-socket "$SOCK" --query-socket-group "$CLIENTS_GROUP" \
	--query-admin-uids 1234 --tag-rule 'user:=1/m/5' --stats-interval 10m >"$(agent_log a)" 2>&1 &
AGENT_PID=$!
LAB_PIDS[agent-a]=$AGENT_PID
wait_for_line "$(agent_log a)" 'attached dthrottle' "$AGENT_PID" 10 || die "agent a did not start: $(cat "$(agent_log a)")"

mode=$(stat -c '%a %G' "$SOCK")
check query_local/socket-mode "the socket is '$mode', expected '660 $CLIENTS_GROUP'" [ "$mode" = "660 $CLIENTS_GROUP" ]
check query_local/clamp-logged "the agent did not log its clamped connection cap" \
	grep -q 'query socket: at most 768 connections, not 4096: the descriptor limit is 1024' "$(agent_log a)"

t_busy=$(now_s)
got=$(query_ask --as 65534 "$SOCK" "BUSY svc" "user:n")
check query_local/busy-refused "nobody's 'BUSY svc' was answered '$got', expected 'ERR not allowed,OK'" \
	[ "$got" = "ERR not allowed,OK" ]
wait_until 3 status_after "$t_busy" || fail query_local/status "no adaptive status written since nobody's BUSY"
f=$(svc_num factor) n=$(svc_num busy_signals)
check query_local/busy-refused-factor "svc after nobody's BUSY: factor ${f:-nothing}, signals ${n:-nothing}; expected 1, 0" \
	eval 'num_eq "$f" 1 && num_eq "$n" 0'
check query_local/busy-refused-logged "the refusal was not logged" \
	grep -q 'query socket: refused BUSY from uid 65534: not in --query-admin-uids' "$(agent_log a)"
got=$(query_ask --as 1234 "$SOCK" "BUSY svc")
check query_local/busy-listed-uid "uid 1234's 'BUSY svc' was answered '$got', expected OK" [ "$got" = OK ]
got=$(query_ask "$SOCK" "BUSY svc")
check query_local/busy-root "root's 'BUSY svc' was answered '$got', expected OK" [ "$got" = OK ]
wait_until 3 eval 'n=$(svc_num busy_signals); num_eq "$n" 2'
f=$(svc_num factor)
check query_local/busy-taken "svc after the admins' BUSY: factor ${f:-nothing}, signals ${n:-nothing}; expected below 1, 2" \
	eval 'num_cmp "$f" "<" 1 && num_eq "$n" 2'

# 2000 idle connections from one process (its own descriptor limit raised), held until killed.
(
	ulimit -n 4096
	exec timeout 60 "$PYTHON" - "$SOCK" "$WORK/held" <<'PY'
import socket, sys, time
held = []
for _ in range(2000):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1])
        held.append(s)
    except OSError:
        s.close()
open(sys.argv[2], "w").write("%d\n" % len(held))
time.sleep(55)
PY
) &
LAB_PIDS[holder]=$!
wait_until 20 test -s "$WORK/held" || die "the holder did not open its connections"
fds=$(fd_count "$AGENT_PID")
check_le query_local/fds-bounded "descriptors of the agent with 2000 connections held" "$fds" 1000
# Another user's client at once: root holds more than half the slots, so it gives one up.
got=$(query_ask --as 65534 "$SOCK" user:9 user:9 user:9 user:9 user:9 user:9)
check query_local/other-user-at-once "nobody's new client got '$got' while root holds 2000 connections, expected OK x5 then NO" \
	[ "$got" = "OK,OK,OK,OK,OK,NO" ]
t0=$(now_s)
# A new client of the same user: answered once an idle connection may make room (1 s idle), enforced.
answered() { got=$(query_ask "$SOCK" user:1 user:1 user:1 user:1 user:1 user:1); [ "${got%%,*}" = OK ]; }
wait_until 5 answered
waited=$(calc "$(now_s) - $t0")
check query_local/new-client-answered "a new client got '$got' ${waited} s after 2000 idle connections, expected OK x5 then NO" \
	[ "$got" = "OK,OK,OK,OK,OK,NO" ]
check_le query_local/new-client-wait "seconds before a new client was answered" "$waited" 3
check query_local/agent-alive "agent a died under 2000 connections" alive "$AGENT_PID"
grep -q 'out of file descriptors' "$(agent_log a)" &&
	fail query_local/no-emfile "the agent ran out of descriptors: $(grep -m1 'out of file' "$(agent_log a)")" ||
	pass query_local/no-emfile
stop_pid "${LAB_PIDS[holder]}"
agent_signal a TERM
check_eq query_local/a-exit "exit code of agent a" "$EXIT_RC" 0
check query_local/socket-removed "agent a left $SOCK behind" [ ! -e "$SOCK" ]

# --- 3. idle timeout, bare ports on loopback, the metrics server's bound ---------------------

QPORT=7811
MPORT=9111
agent_start b --rate 1000 --burst 1000 --query-socket "$SOCK" --query-idle-timeout 1s \
	--query-listen "$QPORT" --metrics "$MPORT" --stats-interval 10m || die "agent b did not start"
listening=$(in_ns "$H_NS" ss -Hltn | awk '{ print $4 }' | sort | tr '\n' ' ')
check query_local/bare-ports-loopback "listening on '$listening', expected 127.0.0.1:$QPORT and 127.0.0.1:$MPORT only" \
	[ "$listening" = "127.0.0.1:$QPORT 127.0.0.1:$MPORT " ]

# An idle connection: closed after about 1 s (read until EOF, at most 5 s).
idle_s=$("$PYTHON" - "$SOCK" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
t0 = time.monotonic()
try:
    print("%.2f" % (time.monotonic() - t0) if s.recv(1) == b"" else "data")
except OSError as e:
    print("not closed (%s)" % e)
PY
)
check query_local/idle-closed "an idle connection: '$idle_s', expected closed after 1 to 2 s" \
	eval 'num_ge "$idle_s" 0.9 && num_le "$idle_s" 2'

base=$(fd_count "$AGENT_PID")
# 100 connections started at once (non-blocking: those beyond the kernel's backlog wait in
# SYN retries), then the agent's descriptors watched for 2 s: the most it ever held.
in_ns "$H_NS" "$PYTHON" - "$MPORT" "$WORK/mheld" <<'PY' &
import socket, sys, time
held = []
for _ in range(100):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", int(sys.argv[1])))
    held.append(s)
open(sys.argv[2], "w").write("%d\n" % len(held))
time.sleep(10)
PY
LAB_PIDS[mholder]=$!
wait_until 10 test -s "$WORK/mheld" || die "the metrics holder did not connect"
most=0
over_bound() {
	local n
	n=$(fd_count "$AGENT_PID")
	[ "$n" -gt "$most" ] && most=$n
	[ "$most" -gt $((base + 10)) ]
}
wait_until 2 over_bound
check_le query_local/metrics-fds "the agent's most descriptors over 2 s of 100 idle metrics connections (${base} before)" \
	"$most" $((base + 10))
stop_pid "${LAB_PIDS[mholder]}"
agent_signal b TERM
check_eq query_local/b-exit "exit code of agent b" "$EXIT_RC" 0

echo "query_local test: $(calc "$(now_s) - $T_START") s"
lab_finish
