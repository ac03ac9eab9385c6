# traffic.sh - traffic in the single-host lab: pktgen senders (client namespace), the UDP
# sink and the TCP listener (host namespace), and what a sender's bucket let through
# (budget_check).
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

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

# sender_stalled JSON FILL: the seconds a pktgen sender (its JSON report) spent in gaps
# longer than FILL (each of its longest gaps less FILL): a bucket that fills in FILL seconds
# wastes its refill beyond that while the sender offers nothing, which no bucket could give.
sender_stalled() {
	jq --argjson fill "$2" '[.longest_gaps_s[]? | select(. > $fill) | . - $fill] | add // 0' "$1" 2>/dev/null ||
		echo 0
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

# line_listener NS PORT NAME: a real TCP server in namespace NS on PORT (IPv4 and IPv6,
# tests/netns/line_server.py: one process, no fork a connection) that answers every
# connection with the line dthrottle-ok at once and closes it; logs to $WORK/listener-NAME.log,
# waits until it says it listens and ss sees it (30 s: Python's start under qemu's TCG took
# more than 10), else prints its log and is false.
line_listener() {
	local ns=$1 port=$2 name=$3
	nsenter --net="/run/netns/$ns" -- /usr/bin/python3 "$DT_ROOT/tests/netns/line_server.py" "$port" dthrottle-ok \
		>"$WORK/listener-$name.log" 2>&1 &
	LAB_PIDS[listener-$name]=$!
	wait_for_line "$WORK/listener-$name.log" '^listening$' "${LAB_PIDS[listener-$name]}" 30 &&
		wait_until 10 listening_in "$ns" "$port" && return 0
	echo "--- the TCP listener $name on port $port in $ns did not start:"
	cat "$WORK/listener-$name.log"
	return 1
}

# listening_in NS PORT: a TCP socket listens on PORT in namespace NS.
listening_in() { [ -n "$(in_ns "$1" ss -Hltn "sport = :$2")" ]; }

# syn_recv_count PORT: the host namespace's half-open connections to PORT (a SYN answered
# with a SYN-ACK whose ACK has not come): what a SYN flood leaves at the listener.
syn_recv_count() { in_ns "$H_NS" ss -Htn state syn-recv "sport = :$1" | wc -l; }

# tcp_counter NAME: a TCP counter of the host namespace as nstat names it (TcpInSegs,
# TcpInCsumErrors, TcpExtSyncookiesSent, TcpExtListenDrops...), IPv4 and IPv6 together.
tcp_counter() { in_ns "$H_NS" nstat -asz --json "$1" | jq -r --arg k "$1" '.kernel[$k] // 0'; }

# budget_check NAME SRC SENT_JSON: a sender's source SRC (SENT_JSON: its pktgen report) under
# one bucket of $RATE and $BURST: its passed (from the pins) against burst + rate x elapsed, at
# most 2 over, at least 95%; dropped = sent - passed.
budget_check() {
	local name=$1 src=$2 sent_json=$3 stats sent passed dropped elapsed budget
	stats=$(stats_json) || die "agent stats --json failed"
	sent=$(source_num "$sent_json" "$src" sent)
	passed=$(source_num "$stats" "$src" passed)
	dropped=$(source_num "$stats" "$src" dropped)
	elapsed=$(json_num "$sent_json" elapsed_s)
	budget=$(calc "$BURST + $RATE * $elapsed")
	echo "$name: $src sent ${sent:-?} in ${elapsed:-?} s, passed ${passed:-?} (budget $budget), dropped ${dropped:-?}"
	check_le "$name/$src/within-budget" "$src passed more than burst + rate x ${elapsed}s + 2" "$passed" \
		"$(calc "$(floor "$budget") + 2")"
	check_ge "$name/$src/near-budget" "$src passed less than 95% of its budget $budget" "$passed" \
		"$(calc "0.95 * $budget")"
	check_eq "$name/$src/dropped" "$src dropped != sent - passed" "$dropped" "$((${sent:-0} - ${passed:-0}))"
}
