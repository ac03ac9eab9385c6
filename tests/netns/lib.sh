# lib.sh - helpers for the network-namespace tests and the demo (source it; needs bash, root).
#
# A lab is two network namespaces joined by one veth pair:
#
#   client namespace  $C_NS  $C_IF  198.18.0.1/15  2001:2::1/48   pktgen sends from here
#   host namespace    $H_NS  $H_IF  198.18.0.2/15  2001:2::2/48   agent (XDP) + sink
#
# The /15 and /48 are on-link on both sides, so spoofed sources from those ranges
# are valid for reverse-path filtering. Everything a lab creates is named after
# $LAB (PREFIX-PID) and removed by lab_cleanup on exit, whatever happened: the
# processes it started (by PID), its pin directories under /sys/fs/bpf (and the
# agent's lock files for them), its namespaces and its scratch directory.
#
# Commands enter a namespace with `nsenter --net=/run/netns/NAME`, never with
# `ip netns exec`: that one also gives the command a private mount namespace with a
# fresh /sys, so the pins the agent makes under /sys/fs/bpf would be invisible to
# every later command (agent stats, the next agent, the cleanup).
#
# Results: pass/fail print "PASS name" / "FAIL name: reason"; lab_finish exits 1
# if anything failed (and the logs of the failed run are printed first).

DT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
AGENT=${DT_AGENT:-$DT_ROOT/build/agent}   # DT_AGENT: test another build
PKTGEN=${DT_PKTGEN:-$DT_ROOT/build/pktgen}

LAB_V4_CLIENT=198.18.0.1
LAB_V4_HOST=198.18.0.2
LAB_V6_CLIENT=2001:2::1
LAB_V6_HOST=2001:2::2

FAILURES=0
declare -A LAB_PIDS=()  # name -> PID of every background process we started
LAB_NAMESPACES=()       # namespaces we created
LAB_PIN_DIRS=()         # pin directories our agents use
LAB_CLEANED=0

# --- results ------------------------------------------------------------------------

pass() { echo "PASS $1"; }
fail() {
	echo "FAIL $1: $2"
	FAILURES=$((FAILURES + 1))
}

# A setup step failed: nothing after it can be meaningful.
die() {
	fail "${TEST_NAME:-setup}" "$1"
	exit 1
}

# check NAME REASON CMD...: PASS if CMD succeeds, else FAIL with REASON.
check() {
	local name=$1 reason=$2
	shift 2
	if "$@"; then pass "$name"; else fail "$name" "$reason"; fi
}

# Numeric comparisons (integers or decimals), for use with check.
# An empty operand (a value that could not be read) never compares true.
num_cmp() { [ -n "$1" ] && [ -n "$3" ] && awk -v a="$1" -v b="$3" "BEGIN { exit !(a + 0 $2 b + 0) }"; }
num_eq() { num_cmp "$1" == "$2"; }
num_le() { num_cmp "$1" '<=' "$2"; }
num_ge() { num_cmp "$1" '>=' "$2"; }

# check_OP NAME WHAT ACTUAL LIMIT: e.g. check_le "x/budget" "passed" 251 252.
check_eq() { check "$1" "$2: got ${3:-nothing}, expected $4" num_eq "$3" "$4"; }
check_le() { check "$1" "$2: got ${3:-nothing}, expected at most $4" num_le "$3" "$4"; }
check_ge() { check "$1" "$2: got ${3:-nothing}, expected at least $4" num_ge "$3" "$4"; }

# calc EXPR: floating-point arithmetic, e.g. calc "50 + 100 * 2.01".
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }
floor() { awk -v x="$1" 'BEGIN { printf "%d", (x < 0 && x != int(x)) ? int(x) - 1 : int(x) }'; }

# Seconds since the epoch, with nanoseconds.
now_s() { date +%s.%N; }

# --- JSON (the fixed one-line formats of `agent stats --json` and `pktgen --json`) ---

# json_source JSON ADDR: the {"source":"ADDR",...} object of one source, or nothing.
json_source() {
	local re=${2//./\\.}
	grep -o "{\"source\":\"$re\"[^}]*}" <<<"$1"
}

# json_num JSON KEY: the first numeric value of KEY (top-level fields come first).
json_num() { grep -o "\"$2\":-\{0,1\}[0-9][0-9.]*" <<<"$1" | head -n 1 | cut -d: -f2; }

# source_num JSON ADDR KEY: KEY of source ADDR, or nothing if the source is absent.
source_num() {
	local obj
	obj=$(json_source "$1" "$2") || return 0
	json_num "$obj" "$3"
}

# --- the lab --------------------------------------------------------------------------

# lab_init PREFIX: names everything after PREFIX-PID and arranges the cleanup.
lab_init() {
	[ "$(id -u)" -eq 0 ] || { echo "FAIL setup: must run as root (namespaces, XDP)"; exit 1; }
	for bin in "$AGENT" "$PKTGEN"; do
		[ -x "$bin" ] || { echo "FAIL setup: $bin is missing; run make first"; exit 1; }
	done
	LAB=$1-$$
	C_NS=$LAB-c
	H_NS=$LAB-h
	C_IF=dt$$c # interface names are at most 15 characters
	H_IF=dt$$h
	PIN_DIR=/sys/fs/bpf/$LAB
	LAB_PIN_DIRS+=("$PIN_DIR")
	WORK=$(mktemp -d "/tmp/$LAB.XXXXXX")
	trap lab_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# lab_up: creates both namespaces and the veth pair, addresses them, reads the MACs.
lab_up() {
	local ns
	for ns in "$C_NS" "$H_NS"; do
		[ -e "/run/netns/$ns" ] && die "namespace $ns already exists"
		ip netns add "$ns" || die "cannot create namespace $ns"
		LAB_NAMESPACES+=("$ns")
		ip -n "$ns" link set lo up || die "cannot bring lo up in $ns"
	done
	ip -n "$C_NS" link add "$C_IF" type veth peer name "$H_IF" netns "$H_NS" ||
		die "cannot create the veth pair $C_IF/$H_IF"
	ip -n "$C_NS" addr add "$LAB_V4_CLIENT/15" dev "$C_IF" &&
		ip -n "$C_NS" addr add "$LAB_V6_CLIENT/48" dev "$C_IF" nodad &&
		ip -n "$H_NS" addr add "$LAB_V4_HOST/15" dev "$H_IF" &&
		ip -n "$H_NS" addr add "$LAB_V6_HOST/48" dev "$H_IF" nodad &&
		ip -n "$C_NS" link set "$C_IF" up &&
		ip -n "$H_NS" link set "$H_IF" up || die "cannot address or bring up $C_IF/$H_IF"
	H_MAC=$(link_mac "$H_NS" "$H_IF")
	C_MAC=$(link_mac "$C_NS" "$C_IF")
	[ -n "$H_MAC" ] && [ -n "$C_MAC" ] || die "cannot read the MAC addresses of $C_IF/$H_IF"
	# Static neighbours both ways: nothing in the lab ever waits on ARP/ND.
	ip -n "$C_NS" neigh replace "$LAB_V4_HOST" lladdr "$H_MAC" dev "$C_IF" nud permanent &&
		ip -n "$C_NS" neigh replace "$LAB_V6_HOST" lladdr "$H_MAC" dev "$C_IF" nud permanent &&
		ip -n "$H_NS" neigh replace "$LAB_V4_CLIENT" lladdr "$C_MAC" dev "$H_IF" nud permanent &&
		ip -n "$H_NS" neigh replace "$LAB_V6_CLIENT" lladdr "$C_MAC" dev "$H_IF" nud permanent ||
		die "cannot add static neighbour entries"
}

link_mac() { ip -n "$1" -o link show dev "$2" | sed -n 's|.*link/ether \([0-9a-f:]*\).*|\1|p'; }

# in_ns NS CMD...: runs CMD in the network namespace NS (and only that namespace).
in_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" -- "$@"
}

# xdp_attached: true if the host interface has an XDP program attached.
xdp_attached() { ip -n "$H_NS" link show dev "$H_IF" | grep -q 'xdp'; }

# pins_present [DIR]: true if the maps and the link are pinned in DIR.
pins_present() {
	local dir=${1:-$PIN_DIR} f
	for f in buckets stats policy config link; do
		[ -e "$dir/$f" ] || return 1
	done
}

# --- processes -------------------------------------------------------------------------

alive() { [ -e "/proc/$1" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

# wait_exit PID SECONDS: waits for PID (our child) to exit; sets EXIT_RC. False on timeout.
wait_exit() {
	local pid=$1 i
	for ((i = 0; i < $2 * 20; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	alive "$pid" && return 1
	wait "$pid" 2>/dev/null
	EXIT_RC=$?
	return 0
}

# wait_for_line FILE PATTERN PID SECONDS: waits until FILE has a line matching
# PATTERN (grep -E). False on timeout or if PID exits first.
wait_for_line() {
	local file=$1 pattern=$2 pid=$3 i
	for ((i = 0; i < $4 * 20; i++)); do
		grep -qE "$pattern" "$file" 2>/dev/null && return 0
		alive "$pid" || { grep -qE "$pattern" "$file" 2>/dev/null; return; }
		sleep 0.05
	done
	return 1
}

# stop_pid PID: SIGTERM, then SIGKILL after 5 s. (stderr off: no "Killed" job notices.)
stop_pid() {
	local pid=$1
	{
		alive "$pid" || { wait "$pid"; return 0; }
		kill -TERM "$pid"
		wait_exit "$pid" 5 && return 0
		kill -KILL "$pid"
		wait_exit "$pid" 5
	} 2>/dev/null
}

# --- the agent ---------------------------------------------------------------------------

# agent_start NAME [AGENT OPTIONS...]: starts build/agent on the host interface with
# our pin directory, logging to $WORK/agent-NAME.log, and waits until it has attached
# or taken over. Sets AGENT_PID. False (with the log printed) if it did not come up.
agent_start() {
	local name=$1 log=$WORK/agent-$1.log
	shift
	# nsenter (not a shell function) in the background, so that $! is the agent itself.
	nsenter --net="/run/netns/$H_NS" -- "$AGENT" --iface "$H_IF" --pin-dir "$PIN_DIR" "$@" \
		>"$log" 2>&1 &
	AGENT_PID=$!
	LAB_PIDS[agent-$name]=$AGENT_PID
	if ! wait_for_line "$log" '(attached|took over) dthrottle' "$AGENT_PID" 10; then
		echo "--- agent $name did not come up; its log:"
		cat "$log"
		return 1
	fi
}

agent_log() { echo "$WORK/agent-$1.log"; }

# agent_signal NAME SIGNAL: sends SIGNAL and waits (10 s) for the exit; sets EXIT_RC.
# (stderr off meanwhile: bash would report a SIGKILLed job as "Killed" noise.)
agent_signal() {
	local pid=${LAB_PIDS[agent-$1]}
	{ kill "-$2" "$pid" && wait_exit "$pid" 10; } 2>/dev/null
}

# agent_fg [AGENT ARGS...]: runs the agent in the host namespace in the foreground
# (bounded by 20 s); sets FG_RC and FG_OUT (stdout and stderr).
agent_fg() {
	FG_OUT=$(in_ns "$H_NS" timeout 20 "$AGENT" "$@" 2>&1)
	FG_RC=$?
}

# stats_json [DIR]: `agent stats --json` over every source, read from the pins.
stats_json() { "$AGENT" stats --pin-dir "${1:-$PIN_DIR}" --json --top 0; }

# --- traffic -------------------------------------------------------------------------------

# send_traffic OUT [PKTGEN SEND OPTIONS...]: pktgen send from the client namespace to
# the host (IPv4 sources to 198.18.0.2, IPv6 ones to 2001:2::2); its JSON goes to OUT.
# The caller gives the sources, --rate, --count and --duration.
send_traffic() {
	local out=$1
	shift
	in_ns "$C_NS" timeout 120 "$PKTGEN" send --iface "$C_IF" --dst-ip "$LAB_V4_HOST,$LAB_V6_HOST" \
		--dst-mac "$H_MAC" --dport 9999 --json "$@" >"$out" 2>"$out.err" || {
		echo "--- pktgen send failed:"
		cat "$out.err"
		return 1
	}
}

# send_traffic_bg NAME OUT [OPTIONS...]: the same in the background (see wait_traffic).
send_traffic_bg() {
	local name=$1 out=$2
	shift 2
	nsenter --net="/run/netns/$C_NS" -- timeout 120 "$PKTGEN" send --iface "$C_IF" \
		--dst-ip "$LAB_V4_HOST,$LAB_V6_HOST" --dst-mac "$H_MAC" --dport 9999 --json "$@" \
		>"$out" 2>"$out.err" &
	LAB_PIDS[send-$name]=$!
}

# wait_traffic NAME OUT: waits for a background sender (bounded by its own limits).
wait_traffic() {
	local pid=${LAB_PIDS[send-$1]}
	wait_exit "$pid" 130 && [ "$EXIT_RC" -eq 0 ] && return 0
	echo "--- pktgen send $1 failed:"
	cat "$2.err"
	return 1
}

# sink_start SECONDS: starts the UDP sink on port 9999 in the host namespace (output:
# $WORK/sink.json) and waits until it listens. SECONDS bounds it if never stopped.
sink_start() {
	nsenter --net="/run/netns/$H_NS" -- "$PKTGEN" sink --port 9999 --duration "$1" --json \
		>"$WORK/sink.json" 2>"$WORK/sink.err" &
	LAB_PIDS[sink]=$!
	wait_for_line "$WORK/sink.err" listening "${LAB_PIDS[sink]}" 10 || {
		echo "--- the sink did not start:"
		cat "$WORK/sink.err"
		return 1
	}
}

# sink_stop: lets in-flight datagrams land, then stops the sink; sets SINK_JSON.
# (Not in a $(...) subshell: only this shell can wait for its children.)
sink_stop() {
	local pid=${LAB_PIDS[sink]}
	sleep 0.3
	kill -INT "$pid" 2>/dev/null
	wait_exit "$pid" 5 && [ "$EXIT_RC" -eq 0 ] || return 1
	SINK_JSON=$(cat "$WORK/sink.json")
}

# --- cleanup ---------------------------------------------------------------------------------

# lab_cleanup: removes exactly what the lab created (installed as the EXIT trap).
lab_cleanup() {
	local rc=$? name dir ns f
	[ "$LAB_CLEANED" -eq 1 ] && return
	LAB_CLEANED=1
	trap - EXIT INT TERM
	for name in "${!LAB_PIDS[@]}"; do
		stop_pid "${LAB_PIDS[$name]}"
	done
	if [ "$FAILURES" -gt 0 ] || [ "$rc" -ne 0 ]; then
		for f in "$WORK"/agent-*.log; do
			[ -s "$f" ] || continue
			echo "--- $(basename "$f") (last 15 lines):"
			tail -n 15 "$f"
		done
	fi
	for dir in "${LAB_PIN_DIRS[@]}"; do
		[ -e "$dir" ] && rm -rf -- "$dir"
		rm -f -- "/run/dthrottle/${dir//\//_}.lock"
	done
	for ns in "${LAB_NAMESPACES[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "${WORK:-}" ] && rm -rf -- "$WORK"
	exit "$rc"
}

# lab_finish: the test's exit status.
lab_finish() {
	if [ "$FAILURES" -gt 0 ]; then
		echo "$FAILURES check(s) failed"
		exit 1
	fi
	exit 0
}
