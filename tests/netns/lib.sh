# lib.sh - helpers for the network-namespace tests and the demo (source it; needs bash, root).
#
# Two kinds of lab: the single-host lab below (lab_up), and a multi-host lab for the
# cluster (mlab_up: a client, N hosts with one agent each, a control bridge; see "the
# multi-host lab" further down). The single-host lab is two namespaces and a veth pair:
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
# Debian's python3 first: the suites use the Python packages `make deps` installs for it
# (python3-zmq), and a version manager's shim ahead of it on root's PATH (pyenv's took
# 1.4 s a call on a loaded machine) would turn every timed poll into a measure of itself.
[ -x /usr/bin/python3 ] && case ":$PATH:" in :/usr/bin:*) ;; *) PATH=/usr/bin:$PATH ;; esac
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

# sleep_to T0 D: sleeps until D seconds after T0 (now_s; not at all if that has passed):
# for a fault or a phase that lasts a given time, never for "long enough" (poll instead).
sleep_to() { sleep "$(awk -v t0="$1" -v d="$2" -v now="$(now_s)" 'BEGIN { t = t0 + d - now; printf "%.3f", (t > 0 ? t : 0) }')"; }

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

# scratch_init NAME: for the suites without a lab (no namespaces, no BPF): checks that
# the agent is built and makes WORK, /tmp/dthrottle-NAME.XXXXXX, removed at exit.
scratch_init() {
	[ -x "$AGENT" ] || { echo "FAIL setup: $AGENT is missing; run make first"; exit 1; }
	WORK=$(mktemp -d "/tmp/dthrottle-$1.XXXXXX")
	trap 'rm -rf -- "$WORK"' EXIT
}

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

# alive PID: the process runs (a zombie, or a /proc entry whose stat cannot be read any
# more because it is being torn down, counts as gone).
alive() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

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

# wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds (true), or until
# SECONDS (decimals allowed) have passed (false: CMD failed on its last try too). CMD runs
# in this shell: it may set variables. For a state the agent exposes (a counter in
# `agent stats --json`, a status file), not for letting time pass.
wait_until() {
	local end
	end=$(awk -v now="$(now_s)" -v d="$1" 'BEGIN { printf "%.3f", now + d }')
	shift
	until "$@"; do
		num_ge "$(now_s)" "$end" && return 1
		sleep 0.1
	done
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
	mlab_agent_wait "$name"
}

agent_log() { echo "$WORK/agent-$1.log"; }

# agent_signal NAME SIGNAL: sends SIGNAL and waits (10 s) for the exit; sets EXIT_RC.
# (stderr off meanwhile: bash would report a SIGKILLed job as "Killed" noise.)
agent_signal() {
	local pid=${LAB_PIDS[agent-$1]}
	{ kill "-$2" "$pid" && wait_exit "$pid" 10; } 2>/dev/null && return 0
	# Still there: say where it is stuck, for the report.
	echo "agent $1 (pid $pid) still alive 10 s after SIG$2: $(cat "/proc/$pid/stat" 2>/dev/null)"
	echo "  wchan: $(cat "/proc/$pid/wchan" 2>/dev/null); kernel stack:"
	sed 's/^/    /' "/proc/$pid/stack" 2>/dev/null | head -20
	echo "  threads (tid state wchan):"
	for t in /proc/"$pid"/task/*; do
		[ -e "$t/stat" ] && echo "    ${t##*/} $(awk '{ print $3 }' "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
	done
	return 1
}

# agent_fg [AGENT ARGS...]: runs the agent in the host namespace in the foreground
# (bounded by 20 s); sets FG_RC and FG_OUT (stdout and stderr).
agent_fg() {
	FG_OUT=$(in_ns "$H_NS" timeout 20 "$AGENT" "$@" 2>&1)
	FG_RC=$?
}

# stats_json [DIR]: `agent stats --json` over every source, read from the pins.
stats_json() { "$AGENT" stats --pin-dir "${1:-$PIN_DIR}" --json --top 0; }

# query_ask [--as UID] SOCKET LINE...: one connection to the query socket SOCKET, the LINEs
# pipelined; the answers joined by ',' ("error: ..." if it cannot connect). A client as UID
# runs with group nogroup and no other groups.
query_ask() {
	local as=()
	if [ "$1" = --as ]; then # the system's python: a pyenv shim under /root is root's only
		as=(setpriv --reuid "$2" --regid 65534 --clear-groups /usr/bin/python3)
		shift 2
	fi
	[ ${#as[@]} -gt 0 ] || as=("${PYTHON:-python3}")
	"${as[@]}" - "$@" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
try:
    s.connect(sys.argv[1])
    s.sendall(b"".join(t.encode() + b"\n" for t in sys.argv[2:]))
    want, got = len(sys.argv) - 2, b""
    while got.count(b"\n") < want:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    print(",".join(got.decode().split("\n")[:want]))
except OSError as e:
    print("error: %s" % e)
PY
}

# sources_seen ADDR...: every ADDR has packets passed or dropped in our pins (a sender is
# under way); for wait_until.
sources_seen() {
	local json src passed dropped
	json=$(stats_json) || return 1
	for src in "$@"; do
		passed=$(source_num "$json" "$src" passed) dropped=$(source_num "$json" "$src" dropped)
		[ $((${passed:-0} + ${dropped:-0})) -ge 1 ] || return 1
	done
}

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
	# A previous sink's "listening" line must not count for this one: the redirection
	# below empties sink.err only once the background child runs, maybe after the wait
	# read it (datagrams sent then reach a port nothing listens on: Udp NoPorts).
	rm -f "$WORK/sink.json" "$WORK/sink.err"
	SINK_READ0=$(udp_counter InDatagrams)
	nsenter --net="/run/netns/$H_NS" -- "$PKTGEN" sink --port 9999 --duration "$1" --json \
		>"$WORK/sink.json" 2>"$WORK/sink.err" &
	LAB_PIDS[sink]=$!
	wait_for_line "$WORK/sink.err" listening "${LAB_PIDS[sink]}" 10 || {
		echo "--- the sink did not start:"
		cat "$WORK/sink.err"
		return 1
	}
}

# sink_stop [EXPECT]: stops the sink; sets SINK_JSON. With EXPECT (the datagrams the test
# expects delivered), first waits (up to 10 s) until the sink has read that many: under
# load the host's stack may deliver them well after pktgen returned. Without it, lets
# in-flight datagrams land for 0.3 s. (Not in a $(...) subshell: only this shell can wait
# for its children.)
sink_stop() {
	local pid=${LAB_PIDS[sink]}
	if [ -n "${1:-}" ]; then
		wait_until 10 sink_has_read "$1" ||
			echo "the sink read $(($(udp_counter InDatagrams) - SINK_READ0)) datagrams in 10 s; $1 expected"
	else
		sleep 0.3 # datagrams still on their way: the sink reports its counts only as it exits
	fi
	kill -INT "$pid" 2>/dev/null
	wait_exit "$pid" 5 && [ "$EXIT_RC" -eq 0 ] || return 1
	SINK_JSON=$(cat "$WORK/sink.json")
}

# udp_counter FIELD: FIELD (InDatagrams, NoPorts) of the host namespace's UDP, IPv4 and
# IPv6 summed. The kernel counts InDatagrams as a program reads a datagram: with the sink
# the only UDP reader there, it is what the sink has received so far.
udp_counter() {
	in_ns "$H_NS" awk -v f="$1" '
		FILENAME ~ /snmp6$/ { if ($1 == "Udp6" f) n += $2; next }
		$1 == "Udp:" { if (!col) { for (i = 2; i <= NF; i++) if ($i == f) col = i } else n += $col }
		END { print n + 0 }' /proc/net/snmp /proc/net/snmp6
}

# sink_has_read N: the sink has read N datagrams since sink_start (for wait_until).
sink_has_read() { [ $(($(udp_counter InDatagrams) - SINK_READ0)) -ge "$1" ]; }

# listener_start PORT: a real TCP listener (socat, IPv4 and IPv6) on PORT in the host
# namespace that answers each connection with one line; waits until it listens.
listener_start() {
	nsenter --net="/run/netns/$H_NS" -- socat "TCP6-LISTEN:$1,ipv6only=0,reuseaddr,fork,backlog=4096" \
		SYSTEM:'echo dthrottle-ok' >"$WORK/listener-$1.log" 2>&1 &
	LAB_PIDS[listener-$1]=$!
	wait_until 10 listening_on "$1" || {
		echo "--- the TCP listener on port $1 did not start:"
		cat "$WORK/listener-$1.log"
		return 1
	}
}

# listening_on PORT: a TCP socket listens on PORT in the host namespace.
listening_on() { [ -n "$(in_ns "$H_NS" ss -Hltn "sport = :$1")" ]; }

# syn_recv_count PORT: the host namespace's half-open connections to PORT (a SYN answered
# with a SYN-ACK whose ACK has not come): what a SYN flood leaves at the listener.
syn_recv_count() { in_ns "$H_NS" ss -Htn state syn-recv "sport = :$1" | wc -l; }

# tcp_counter NAME: a TCP counter of the host namespace as nstat names it (TcpInSegs,
# TcpInCsumErrors, TcpExtSyncookiesSent, TcpExtListenDrops...), IPv4 and IPv6 together.
tcp_counter() { in_ns "$H_NS" nstat -asz --json "$1" | grep -o "\"$1\":[0-9]*" | head -n 1 | cut -d: -f2; }

# --- the multi-host lab -----------------------------------------------------------------------
#
# A load balancer spreading its clients over N hosts, each with its own agent:
#
#   client $C_NS ─ ${M_CIF[i]} ══veth══ ${M_DIF[i]} ─ host i, ns ${M_NS[i]}: data 198.18.0.1i/16 and
#                  (one link per host)                 2001:2::1i/64 (the agent's XDP is here)
#   host i ${M_KIF[i]} ══veth══ ${M_SWIF[i]} ─ bridge $M_BR in ns $SW_NS: control 198.19.0.1i/24
#   hub (mlab_hub_up) $HUB_NS ══veth══ bridge: control 198.19.0.100/24
#
# Data and control are separate links: the agents' reports never cross the XDP program
# under test, and a partition is just `ip link set down` of one host's control link
# (mlab_cut) while its clients still reach it. Hosts are numbered 1..N (N <= 9); host i
# is node "hI" in the cluster and pins its maps in ${M_PIN[i]}. No IPv6 link-local
# addresses are generated (addrgenmode none), so no stray ND/MLD frame reaches XDP.
#
# Call lab_init first; lab_cleanup removes all of it. Traffic: spray_start sprays
# sources over every host (one pktgen per host link, each at an equal share of the rate).

M_BR=
SW_NS=
HUB_NS=
HUB_CTL=198.19.0.100
M_HOSTS=0
M_NS=() M_CIF=() M_DIF=() M_KIF=() M_SWIF=() M_IP=() M_IP6=() M_MAC=() M_CTL=() M_PIN=()
declare -A M_SNAP=()   # "NAME:I" -> host I's `agent stats --json` of snapshot NAME
declare -A M_SNAP_T=() # NAME -> when snapshot NAME was taken (seconds)

# mlab_ns_add NS: creates namespace NS (recorded for the cleanup) with lo up.
mlab_ns_add() {
	[ -e "/run/netns/$1" ] && die "namespace $1 already exists"
	ip netns add "$1" || die "cannot create namespace $1"
	LAB_NAMESPACES+=("$1")
	ip -n "$1" link set lo up || die "cannot bring lo up in $1"
}

# mlab_ctl_port NS IF SWIF ADDR: a control link from NS (IF, ADDR/24) to the bridge (SWIF).
mlab_ctl_port() {
	local ns=$1 ifname=$2 swif=$3 addr=$4
	ip -n "$ns" link add "$ifname" type veth peer name "$swif" netns "$SW_NS" &&
		ip -n "$ns" link set "$ifname" addrgenmode none &&
		ip -n "$SW_NS" link set "$swif" addrgenmode none master "$M_BR" up &&
		ip -n "$ns" addr add "$addr/24" dev "$ifname" &&
		ip -n "$ns" link set "$ifname" up || die "cannot create the control link $ifname of $ns"
}

# mlab_up N: the client, the switch and N host namespaces with their links (see above).
mlab_up() {
	local n=$1 i
	[ "$n" -ge 1 ] && [ "$n" -le 9 ] || die "mlab_up: 1 to 9 hosts, not $n"
	M_HOSTS=$n
	SW_NS=$LAB-sw
	M_BR=dt$$br
	mlab_ns_add "$C_NS"
	mlab_ns_add "$SW_NS"
	ip -n "$SW_NS" link add "$M_BR" type bridge &&
		ip -n "$SW_NS" link set "$M_BR" addrgenmode none up || die "cannot create the bridge $M_BR"
	for ((i = 1; i <= n; i++)); do
		M_NS[i]=$LAB-h$i
		M_CIF[i]=dt$$c$i
		M_DIF[i]=dt$$d$i
		M_KIF[i]=dt$$k$i
		M_SWIF[i]=dt$$s$i
		M_IP[i]=198.18.0.1$i
		M_IP6[i]=2001:2::1$i
		M_CTL[i]=198.19.0.1$i
		M_PIN[i]=/sys/fs/bpf/$LAB-h$i
		LAB_PIN_DIRS+=("${M_PIN[i]}")
		mlab_ns_add "${M_NS[i]}"
		# The /16 and /64 are on-link: spoofed sources from them pass reverse-path checks.
		ip -n "$C_NS" link add "${M_CIF[i]}" type veth peer name "${M_DIF[i]}" netns "${M_NS[i]}" &&
			ip -n "$C_NS" link set "${M_CIF[i]}" addrgenmode none &&
			ip -n "${M_NS[i]}" link set "${M_DIF[i]}" addrgenmode none &&
			ip -n "${M_NS[i]}" addr add "${M_IP[i]}/16" dev "${M_DIF[i]}" &&
			ip -n "${M_NS[i]}" addr add "${M_IP6[i]}/64" dev "${M_DIF[i]}" nodad &&
			ip -n "$C_NS" link set "${M_CIF[i]}" up &&
			ip -n "${M_NS[i]}" link set "${M_DIF[i]}" up || die "cannot create the data link of host $i"
		M_MAC[i]=$(link_mac "${M_NS[i]}" "${M_DIF[i]}")
		[ -n "${M_MAC[i]}" ] || die "cannot read the MAC address of ${M_DIF[i]}"
		mlab_ctl_port "${M_NS[i]}" "${M_KIF[i]}" "${M_SWIF[i]}" "${M_CTL[i]}"
	done
}

# mlab_hub_up: a namespace for `agent hub`, on the control bridge at $HUB_CTL.
mlab_hub_up() {
	HUB_NS=$LAB-hub
	mlab_ns_add "$HUB_NS"
	mlab_ctl_port "$HUB_NS" "dt$$k0" "dt$$s0" "$HUB_CTL"
}

# mlab_cut I / mlab_heal I: takes host I's control link down (a partition: it neither
# hears nor is heard by the cluster; its data link stays up) / back up.
mlab_cut() { ip -n "${M_NS[$1]}" link set "${M_KIF[$1]}" down; }
mlab_heal() { ip -n "${M_NS[$1]}" link set "${M_KIF[$1]}" up; }

# mlab_peers I [PORT]: the report endpoints of every host but I, comma-separated.
mlab_peers() {
	local i out=
	for ((i = 1; i <= M_HOSTS; i++)); do
		[ "$i" -eq "$1" ] || out+=${out:+,}${M_CTL[i]}:${2:-7700}
	done
	echo "$out"
}

# mlab_others I: the node ids of every host but I (hJ, space-separated).
mlab_others() {
	local i
	for ((i = 1; i <= M_HOSTS; i++)); do [ "$i" -eq "$1" ] || printf 'h%s ' "$i"; done
}

# --- cluster keys: a cluster runs with keys unless the test asks for none ---------------------
#
# A cluster without keys refuses to start (docs/security.md), so the lab makes them, once:
# `agent keygen hI` for every host (node id hI; its .pub names the endpoint ${M_CTL[i]}:7700)
# and `agent keygen hub --role hub` (endpoint $HUB_CTL:7701), all in $WORK/mlab-keys, which is
# also every agent's and the hub's --curve-peers directory (only *.pub files are read there).
# mlab_agent_start and mlab_hub_start add them to every cluster they start (--peers,
# --peers-file, --listen, --hub; `agent hub` always) unless the caller chose: --curve-key
# given (its own keys) or --insecure-cluster given. MLAB_INSECURE=1: every cluster of the
# call is started with --insecure-cluster instead (tests that mean to run without keys).

# mlab_keys: makes the lab's keys if they are not there yet; prints nothing. MLAB_KEYS: their
# directory. (Made once per lab whatever the caller: the files, not a variable, say so.)
MLAB_KEYS=
mlab_keys() {
	local i
	MLAB_KEYS=$WORK/mlab-keys
	[ -e "$MLAB_KEYS/hub.pub" ] && return 0
	mkdir -p "$MLAB_KEYS" || die "cannot create $MLAB_KEYS"
	for ((i = 1; i <= M_HOSTS; i++)); do
		"$AGENT" keygen "h$i" --dir "$MLAB_KEYS" --endpoint "${M_CTL[i]}:7700" >/dev/null ||
			die "agent keygen h$i failed"
	done
	"$AGENT" keygen hub --role hub --dir "$MLAB_KEYS" --endpoint "$HUB_CTL:7701" >/dev/null ||
		die "agent keygen hub failed"
}

# mlab_security NAME ARGS...: sets MLAB_SEC to the options that secure a start of key NAME
# (hI or hub) with ARGS: the lab's keys, --insecure-cluster (MLAB_INSECURE=1), or nothing
# (not a cluster, or the caller chose). For an agent, only ARGS with a cluster count.
mlab_security() {
	local key=$1 a cluster=0
	shift
	[ "$key" = hub ] && cluster=1
	MLAB_SEC=()
	for a in "$@"; do
		case $a in
		--curve-key | --curve-key=* | --insecure-cluster) return 0 ;;
		-p | --peers | --peers=* | --peers-file | --peers-file=* | --listen | --listen=* | --hub | --hub=*) cluster=1 ;;
		esac
	done
	[ "$cluster" = 1 ] || return 0
	if [ "${MLAB_INSECURE:-0}" = 1 ]; then
		MLAB_SEC=(--insecure-cluster)
	else
		mlab_keys
		MLAB_SEC=(--curve-key "$MLAB_KEYS/$key.key" --curve-peers "$MLAB_KEYS")
	fi
}

# mlab_agent_start I NAME [AGENT OPTIONS...]: starts host I's agent (node id hI, on its
# data link, its own pin directory), logging to $WORK/agent-NAME.log, and waits until it
# has attached or taken over. Sets AGENT_PID. False (log printed) if it did not come up.
# A cluster gets the lab's key hI (see mlab_security). MLAB_DEFAULT_ID=1: no --node-id (the
# agent's default one: the key's node id, or without keys the host name and a MAC hash).
# MLAB_NO_WAIT=1: returns once started; mlab_agent_wait NAME waits (agents of several hosts
# then load their programs at the same time: the verifier's second or so each, overlapped).
mlab_agent_start() {
	local i=$1 name=$2 log=$WORK/agent-$2.log id=(--node-id "h$1")
	shift 2
	[ "${MLAB_DEFAULT_ID:-0}" = 1 ] && id=()
	mlab_security "h$i" "$@"
	nsenter --net="/run/netns/${M_NS[i]}" -- "$AGENT" --iface "${M_DIF[i]}" --pin-dir "${M_PIN[i]}" \
		"${id[@]}" "${MLAB_SEC[@]}" "$@" >"$log" 2>&1 &
	AGENT_PID=$!
	LAB_PIDS[agent-$name]=$AGENT_PID
	[ "${MLAB_NO_WAIT:-0}" = 1 ] || mlab_agent_wait "$name"
}

# mlab_agent_wait NAME: waits until agent NAME (agent_start, mlab_agent_start) has attached or taken over.
# False (log printed) if it did not come up within 10 s.
mlab_agent_wait() {
	local log=$WORK/agent-$1.log
	wait_for_line "$log" '(attached|took over) dthrottle' "${LAB_PIDS[agent-$1]}" 10 && return 0
	echo "--- agent $1 did not come up; its log:"
	cat "$log"
	return 1
}

# mlab_agents_start NAME local|mesh|hub [AGENT OPTIONS...]: one agent per host 1..HOSTS,
# NAME1, NAME2, ... (CUR_AGENT[I], an array the caller declares), with the OPTIONS and, in a
# cluster, --period $PERIOD and the mesh's --peers or the hub at $HUB_CTL:7701. Starts them
# all, then waits until each has attached and, in a cluster, has heard every other one
# (within 10 s); dies naming the first that did not.
# shellcheck disable=SC2153 # HOSTS and PERIOD are the caller's
mlab_agents_start() {
	local name=$1 mode=$2 i opts
	shift 2
	for ((i = 1; i <= HOSTS; i++)); do
		opts=("$@")
		case $mode in
		mesh) opts+=(--period "$PERIOD" --peers "$(mlab_peers "$i")") ;;
		hub) opts+=(--period "$PERIOD" --hub "$HUB_CTL:7701") ;;
		esac
		MLAB_NO_WAIT=1 mlab_agent_start "$i" "$name$i" "${opts[@]}" || die "the $mode agent of h$i did not start"
		# shellcheck disable=SC2004,SC2034 # the caller's array (associative: the $ is needed)
		CUR_AGENT[$i]=$name$i
	done
	for ((i = 1; i <= HOSTS; i++)); do
		mlab_agent_wait "$name$i" || die "the $mode agent of h$i did not start"
	done
	[ "$mode" = local ] && return
	for ((i = 1; i <= HOSTS; i++)); do
		# shellcheck disable=SC2046
		mlab_wait_peers "$name$i" 1 10 $(mlab_others "$i") ||
			die "the $mode agent of h$i did not hear every peer within 10 s"
	done
}

# mlab_hub_start NAME [HUB OPTIONS...]: starts `agent hub` in $HUB_NS on port 7701 (agents:
# --hub $HUB_CTL:7701), logging to $WORK/agent-NAME.log; waits until it relays. With the
# lab's key "hub" unless the caller chose (see mlab_security).
mlab_hub_start() {
	local name=$1 log=$WORK/agent-$1.log
	shift
	mlab_security hub "$@"
	nsenter --net="/run/netns/$HUB_NS" -- "$AGENT" hub --listen "$HUB_CTL:7701" "${MLAB_SEC[@]}" "$@" \
		>"$log" 2>&1 &
	LAB_PIDS[agent-$name]=$!
	wait_for_line "$log" 'hub relaying' "${LAB_PIDS[agent-$name]}" 10 || {
		echo "--- hub $name did not come up; its log:"
		cat "$log"
		return 1
	}
}

# count_lines FILE PATTERN: lines of FILE matching PATTERN (grep -E), 0 if none.
count_lines() { grep -cE "$2" "$1" 2>/dev/null || true; }

# wait_for_lines FILE PATTERN N PID SECONDS: waits (SECONDS: a whole number) until FILE
# has N lines matching PATTERN. False on timeout or if PID exits first.
wait_for_lines() {
	local i
	for ((i = 0; i < $5 * 20; i++)); do
		[ "$(count_lines "$1" "$2")" -ge "$3" ] && return 0
		alive "$4" || break
		sleep 0.05
	done
	[ "$(count_lines "$1" "$2")" -ge "$3" ]
}

# mlab_wait_peers NAME N SECONDS PEER...: waits until agent NAME has logged
# "peer PEER is up" N times for every PEER (N > 1: it came back up after a loss).
mlab_wait_peers() {
	local name=$1 n=$2 secs=$3 peer
	shift 3
	for peer in "$@"; do
		wait_for_lines "$WORK/agent-$name.log" "peer $peer is up" "$n" "${LAB_PIDS[agent-$name]}" "$secs" ||
			return 1
	done
}

# spray_start NAME RATE SECONDS SOURCES [LIMIT]: the load balancer: one pktgen per host
# link, each sending SOURCES (comma-separated, round-robin) at RATE/N frames per second
# for SECONDS (bounded by count), and LIMIT seconds at most (default SECONDS + 3; stop
# earlier with spray_stop). Host I's result goes to $WORK/spray-NAME-I.json.
# SPRAY_OPTS: more pktgen send options for every sender (e.g. "--size 1000").
spray_start() {
	local name=$1 secs=$3 sources=$4 limit=${5:-$(($3 + 3))} i rate count
	rate=$(calc "$2 / $M_HOSTS")
	count=$(floor "$(calc "$rate * $secs")")
	for ((i = 1; i <= M_HOSTS; i++)); do
		nsenter --net="/run/netns/$C_NS" -- timeout $((limit + 10)) "$PKTGEN" send --iface "${M_CIF[i]}" \
			--dst-ip "${M_IP[i]},${M_IP6[i]}" --dst-mac "${M_MAC[i]}" --dport 9999 --json \
			--sources "$sources" --rate "$rate" --count "$count" --duration "${limit}s" ${SPRAY_OPTS:-} \
			>"$WORK/spray-$name-$i.json" 2>"$WORK/spray-$name-$i.err" &
		LAB_PIDS[spray-$name-$i]=$!
	done
}

# spray_wait NAME: waits for every sender of NAME; false (errors printed) if one failed.
spray_wait() {
	local i ok=0
	for ((i = 1; i <= M_HOSTS; i++)); do
		wait_exit "${LAB_PIDS[spray-$1-$i]}" 200 && [ "$EXIT_RC" -eq 0 ] && continue
		echo "--- pktgen send $1 to host $i failed:"
		cat "$WORK/spray-$1-$i.err"
		ok=1
	done
	return $ok
}

# spray_stop NAME: ends every sender of NAME now (each still prints its counts).
spray_stop() {
	local i
	for ((i = 1; i <= M_HOSTS; i++)); do kill -TERM "${LAB_PIDS[spray-$1-$i]}" 2>/dev/null; done
	spray_wait "$1"
}

# spray_sent NAME I SRC: frames of SRC sent to host I. spray_total NAME SRC: to all.
# mlab_send_bg NAME I DST [PKTGEN SEND OPTIONS...]: pktgen send from the client over host
# I's link to DST, port 9999, in the background (bounded by 30 s); JSON in $WORK/NAME.json.
# The caller gives the sources, --rate, --count and --duration. See senders_wait.
mlab_send_bg() {
	local name=$1 i=$2 dst=$3
	shift 3
	nsenter --net="/run/netns/$C_NS" -- timeout 30 "$PKTGEN" send --iface "${M_CIF[i]}" --dst-ip "$dst" \
		--dst-mac "${M_MAC[i]}" --dport 9999 --json "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" &
	LAB_PIDS[$name]=$!
}

# senders_wait NAME...: waits for the background senders NAME (mlab_send_bg); a sender that
# failed ends the test (die), its error printed.
senders_wait() {
	local p
	for p in "$@"; do
		wait_exit "${LAB_PIDS[$p]}" 40 && [ "$EXIT_RC" -eq 0 ] && continue
		cat "$WORK/$p.err"
		die "pktgen $p failed"
	done
}

spray_sent() { source_num "$(cat "$WORK/spray-$1-$2.json")" "$3" sent; }
spray_total() {
	local i n sum=0
	for ((i = 1; i <= M_HOSTS; i++)); do
		n=$(spray_sent "$1" "$i" "$2")
		sum=$((sum + ${n:-0}))
	done
	echo "$sum"
}

# spray_elapsed NAME: the longest first-to-last frame time of NAME's senders (seconds).
spray_elapsed() {
	local i
	for ((i = 1; i <= M_HOSTS; i++)); do json_num "$(cat "$WORK/spray-$1-$i.json")" elapsed_s; done |
		awk 'BEGIN { m = 0 } $1 + 0 > m { m = $1 + 0 } END { print m }'
}

# mlab_snapshot NAME: every host's `agent stats --json` (read from the pins, with or
# without a running agent) and the time, kept as snapshot NAME. False if one failed.
mlab_snapshot() {
	local i
	M_SNAP_T[$1]=$(now_s)
	for ((i = 1; i <= M_HOSTS; i++)); do
		M_SNAP[$1:$i]=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0) || return 1
	done
}

# snap_num NAME I SRC KEY: KEY of source SRC on host I in snapshot NAME (0 if absent).
snap_num() {
	local v
	v=$(source_num "${M_SNAP[$1:$2]}" "$3" "$4")
	echo "${v:-0}"
}

# snap_sum NAME SRC KEY: KEY of source SRC summed over every host in snapshot NAME.
snap_sum() {
	local i sum=0
	for ((i = 1; i <= M_HOSTS; i++)); do sum=$(calc "$sum + $(snap_num "$1" "$i" "$2" "$3")"); done
	echo "$sum"
}

# --- the reports have landed ------------------------------------------------------------------
#
# Instead of sleeping "long enough" after a run: poll the hosts' counters until what they
# debited matches what their peers admitted (every hit reported and applied), or, where
# some hits are never charged (a partition), until no host's debits move any more.

# mlab_debits_match SRC SPEC...: on a fresh snapshot (named "landed"), every SPEC
# "HOST:FROM,FROM..." holds: HOST debited exactly what the hosts FROM passed of SRC
# ("3:": nothing at all).
mlab_debits_match() {
	local src=$1 spec host from want i
	shift
	mlab_snapshot landed || return 1
	for spec in "$@"; do
		host=${spec%%:*} from=${spec#*:} want=0
		for i in ${from//,/ }; do want=$((want + $(snap_num landed "$i" "$src" passed))); done
		[ "$(snap_num landed "$host" "$src" debited)" -eq "$want" ] || return 1
	done
}

# mlab_mesh_specs [HOST...]: the SPECs of a full mesh (each HOST, default every host,
# hears every other host), for mlab_debits_match / mlab_wait_landed.
mlab_mesh_specs() {
	local hosts=("$@") i j from
	[ ${#hosts[@]} -gt 0 ] || for ((i = 1; i <= M_HOSTS; i++)); do hosts+=("$i"); done
	for i in "${hosts[@]}"; do
		from=
		for ((j = 1; j <= M_HOSTS; j++)); do [ "$j" -eq "$i" ] || from+=${from:+,}$j; done
		printf '%s:%s ' "$i" "$from"
	done
}

# mlab_wait_landed SECONDS SRC SPEC...: waits (at most SECONDS) until mlab_debits_match
# SRC SPEC... holds. On a timeout it says so and returns false: the checks that follow
# report what is missing.
mlab_wait_landed() {
	local secs=$1
	shift
	wait_until "$secs" mlab_debits_match "$@" && return 0
	echo "  (the debits of $1 did not match ${*:2} within ${secs}s)"
	return 1
}

# mlab_debits_steady SRC SECONDS: true once no host's debited count of SRC has changed for
# SECONDS (call it through wait_until; its state lives in MLAB_STEADY_*). For runs where
# some hits are never charged, so that no exact count can be awaited.
MLAB_STEADY_SIG= MLAB_STEADY_T=0
mlab_debits_steady() {
	local sig= i
	mlab_snapshot steady || return 1
	for ((i = 1; i <= M_HOSTS; i++)); do sig+="$(snap_num steady "$i" "$1" debited) "; done
	if [ "$sig" != "$MLAB_STEADY_SIG" ]; then
		MLAB_STEADY_SIG=$sig MLAB_STEADY_T=${M_SNAP_T[steady]}
		return 1
	fi
	num_ge "$(calc "${M_SNAP_T[steady]} - $MLAB_STEADY_T")" "$2"
}

# mlab_wait_steady SECONDS SRC QUIET: waits (at most SECONDS) until mlab_debits_steady SRC
# QUIET holds; says so on a timeout.
mlab_wait_steady() {
	MLAB_STEADY_SIG= MLAB_STEADY_T=0
	wait_until "$1" mlab_debits_steady "$2" "$3" && return 0
	echo "  (the debits of $2 still moved after ${1}s)"
	return 1
}

# mlab_reports_fresh SINCE MAX_AGE_MS: every host's cluster status (rewritten every second)
# was written after SINCE (now_s seconds) and shows every peer up, its last report younger
# than MAX_AGE_MS: what was queued while the peers could not hear each other is drained.
mlab_reports_fresh() {
	local since_ms i doc ages a
	since_ms=$(awk -v t="$1" 'BEGIN { printf "%d", t * 1000 }')
	for ((i = 1; i <= M_HOSTS; i++)); do
		doc=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0 | grep -o '"cluster":{.*') || return 1
		num_ge "$(json_num "$doc" written_unix_ms)" "$since_ms" || return 1
		grep -q '"up":false' <<<"$doc" && return 1
		ages=$(grep -o '"last_age_ms":[0-9]*' <<<"$doc" | cut -d: -f2)
		[ -n "$ages" ] || return 1
		for a in $ages; do [ "$a" -le "$2" ] || return 1; done
	done
}

# mlab_reporting SRC HOST...: the HOSTs together admitted some of SRC and each debited some
# of its peers' hits: the reports flow (a cluster under way, before a fault is injected).
# Not every host need admit: whichever bucket refills first admits, and a host whose peers'
# debits keep it at zero may admit none of a sprayed source for long.
mlab_reporting() {
	local src=$1 i passed=0
	shift
	mlab_snapshot reporting || return 1
	for i in "$@"; do
		[ "$(snap_num reporting "$i" "$src" debited)" -gt 0 ] || return 1
		passed=$((passed + $(snap_num reporting "$i" "$src" passed)))
	done
	[ "$passed" -gt 0 ]
}

# mlab_check_under_way CHECK SRC SECONDS HOST...: a check that mlab_reporting holds within
# SECONDS of now (a run's setup before a fault is injected, not a timing claim: reports land
# within a period or two, but each poll is an `agent stats` call per host, which takes
# seconds on a loaded machine). Says how long it took, or what each host had.
mlab_check_under_way() {
	local check=$1 src=$2 secs=$3 t0 i seen=
	shift 3
	t0=$(now_s)
	if wait_until "$secs" mlab_reporting "$src" "$@"; then
		pass "$check"
		echo "  the hosts admitted and every host debited $src $(calc "$(now_s) - $t0") s after the check began"
		return 0
	fi
	for i in "$@"; do
		seen+="h$i passed $(snap_num reporting "$i" "$src" passed) debited $(snap_num reporting "$i" "$src" debited); "
	done
	fail "$check" "the hosts did not admit $src, or not every host debited it, within $secs s: $seen"
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
		# The agent's lock, and its cluster status files if it was killed.
		rm -f -- "/run/dthrottle/${dir//\//_}".{lock,attach,bans,cluster.json,cluster.txt,explain.req,explain.json}
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
