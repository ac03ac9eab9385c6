#!/usr/bin/env bash
# test: runs alone (timing-heavy: a flood at the generator's highest rate and timed connects)
# test_syncookies.sh - a real client inside a spoofed SYN flood of its own /16, with prefix
# budgets alone and with SYN cookies, side by side.
#
# The host runs a real TCP listener on port 8080 (line_server.py: one process, no fork a
# connection, so its answers are not late on a loaded machine) and an agent with one rule for
# SYNs to it: a per-source budget the client stays within, and a v4/16 prefix budget. A real
# client in the client namespace (the kernel's TCP stack, driven by timed_connects.py from
# one process so that a busy machine does not delay its starts) connects N times, paced,
# each connect timed and the listener's reply read, while pktgen --tcp-syn floods SYNs
# from random sources of the client's /16 at the highest rate it reaches (stopped once
# the client is done).
# Per phase:
#   1. prefix budgets alone: the fraction of connections that completed and how many took
#      1 s or more (a SYN retransmit) are reported; the flood's SYNs that reach the host
#      stay within the prefix budget (counted at the host by an nftables counter ahead of
#      conntrack, the client's own SYNs left out), and the flood did exceed it;
#   2. the same rule with syn_cookies = true (only if this agent build accepts the option,
#      else a SKIP line): at least 99% of the connections complete, none after a retransmit
#      (connect time under 1 s), and the flood's SYNs at the host stay within the budget.
#      A retransmit means a SYN or its answer was lost, or the answer came after the
#      client's 1 s SYN timer. The machine's own answer time tells which: the 90th
#      percentile of the connect times of the connections answered at the first SYN (under
#      1 s). On a real machine it is milliseconds, and any retransmit fails the check; on
#      one whose first answers take ANSWER_SLOW or more (qemu's TCG under this flood) a
#      late answer and a lost one look alike against the 1 s timer, so the retransmits get
#      a SKIP line with that answer time instead.
# The figures of both phases are printed side by side at the end, with the client's
# handshakes stage by stage (SYNs sent and retransmitted, SYN-ACKs got: cookies or the
# listener's, ACKs sent, what XDP passed, the agent's cookie counters, each veth queue's
# XDP_TX and XDP_TX errors); a retransmit's failure line carries them, to say where the SYN
# or its answer was lost. The client and the flood use a queue of the veth pair each (see
# "The lab's queues" below). Then (with syn_cookies) a
# reload follows the rule's port to 8081 in the SYNPROXY table, removes the table with a rule
# without syn_cookies, and installs it again with one (each waited for in `nft list`).
# A client whose connects started more than 1 s behind schedule (a machine too busy to measure) gets a SKIP line
# instead of its checks. About 25 s a phase on a quiet machine; everything it creates
# (namespaces, agent, listener, flood, nftables counter) goes with the lab.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=syncookies

PORT=8080
SRC_RATE=100    # per-source SYN budget: the client sends CONN_RATE (and any retransmits)
SRC_BURST=200
P16_RATE=200    # the /16 prefix budget the flood exhausts
P16_BURST=20
CONNS=${DT_SYNCOOKIE_CONNS:-200}
CONN_RATE=20    # client connections per second
# pktgen's ceiling: it sends as fast as it can. A lower DT_SYNCOOKIE_FLOOD_PPS tells a machine
# too slow for the full flood (qemu's TCG) from a defect: at a rate it keeps up with, the
# cookies' checks hold there too.
FLOOD_PPS=${DT_SYNCOOKIE_FLOOD_PPS:-10000000}
ANSWER_SLOW=0.25    # s: first answers this slow (p90) cannot be told from losses by a 1 s timer
FLOOD_SECS=$((CONNS / CONN_RATE * 3 + 30))  # a bound: the flood is stopped once the client is done
# Deadlines (s) for what the agent does on its own: the flood spending the /16 budget
# (SPENT_WAIT), a reload's SYNPROXY table (WAIT); the client's bound beyond its schedule
# (CLIENT_SLACK). Under qemu's TCG (DT_EMULATED=1, make test-kernel) the
# flood keeps the emulated CPUs busy, and the client's start (Python over 9p), `agent stats`
# and `nft list` take seconds each: the waits are longer there, and so are the bounds of the
# flood and of the client (at a host load of 60-98 the budgets phase's flood reached its 60 s
# bound before the client's last connect). Every wait returns once its state is there; what
# is checked is the same.
WAIT=5 SPENT_WAIT=30 CLIENT_SLACK=40
if emulated; then
	WAIT=60 SPENT_WAIT=120 CLIENT_SLACK=240 FLOOD_SECS=$((FLOOD_SECS * 5))
	echo "an emulated CPU (qemu TCG): waits of up to $WAIT s ($SPENT_WAIT s for the flood to spend the budget)," \
		"the flood bounded by $FLOOD_SECS s, the client by $((CONNS / CONN_RATE + CLIENT_SLACK)) s"
fi

syncookie_tools ethtool taskset
# The lab's queues. A veth end takes what its peer sends in a 256-frame ring per queue,
# drained in software on this machine's CPUs (a NIC's rings are deeper, drained by its
# hardware). With one queue the flood and the client share the host end's ring on the way
# in, and the flood's cookie SYN-ACKs and the client's share the client end's on the way
# back: under load the flood fills them (XDP_TX errors at the host end, up to 755 a run,
# TX drops at the client end) and a client SYN or its SYN-ACK is lost in the veth, a
# retransmit the lab made and not the agent. So the pair has two queues, the client runs on
# one CPU and the flood on another of the other parity: XPS sends each CPU's frames down its
# own queue, and a veth sends XDP_TX out to its peer's queue of the CPU that runs the XDP
# program (the CPU % queues), the one that sent the frame. The same XDP program on the same
# interface answers both, as before; each queue's counters tell the client's frames from
# the flood's. On a machine without two such CPUs the queue is shared (a NOTE line says so).
read -r -a CPUS <<<"$(/usr/bin/python3 -c 'import os; print(*sorted(c for c in os.sched_getaffinity(0) if c < 32))')"
CPU_CLIENT='' CPU_FLOOD=''
for c in "${CPUS[@]}"; do
	[ $((c % 2)) = 0 ] && [ -z "$CPU_CLIENT" ] && CPU_CLIENT=$c
	[ $((c % 2)) = 1 ] && [ -z "$CPU_FLOOD" ] && CPU_FLOOD=$c
done
PIN_CLIENT=() PIN_FLOOD=() # taskset -c CPU, or nothing
# DT_SYNCOOKIE_SHARED_QUEUE=1: the one shared queue, unpinned (the lab as it was, to compare).
if [ -n "$CPU_CLIENT" ] && [ -n "$CPU_FLOOD" ] && [ "${DT_SYNCOOKIE_SHARED_QUEUE:-0}" != 1 ]; then
	LAB_VETH_QUEUES=2 # queue 0: the client's (an even CPU), queue 1: the flood's (an odd one)
	PIN_CLIENT=(taskset -c "$CPU_CLIENT")
	PIN_FLOOD=(taskset -c "$CPU_FLOOD")
else
	LAB_VETH_QUEUES=1
	echo "NOTE syncookies: the client and the flood share one veth queue (CPUs ${CPUS[*]}," \
		"DT_SYNCOOKIE_SHARED_QUEUE=${DT_SYNCOOKIE_SHARED_QUEUE:-0})"
fi
lab_init dtsyn
lab_up
if [ "$LAB_VETH_QUEUES" = 2 ]; then
	for end in "$C_NS:$C_IF" "$H_NS:$H_IF"; do
		ip netns exec "${end%%:*}" sh -c "echo $(printf %x $((1 << CPU_CLIENT))) >/sys/class/net/${end#*:}/queues/tx-0/xps_cpus &&
			echo $(printf %x $((1 << CPU_FLOOD))) >/sys/class/net/${end#*:}/queues/tx-1/xps_cpus" ||
			die "cannot map CPU $CPU_CLIENT to queue 0 and CPU $CPU_FLOOD to queue 1 of ${end#*:} (XPS)"
	done
fi
# Replies to spoofed sources go to the client's MAC (dropped there, as the internet would
# drop them) instead of filling the host's neighbour table with unanswered ARP requests.
ip -n "$H_NS" route add 198.18.0.0/16 via "$LAB_V4_CLIENT" dev "$H_IF" onlink ||
	die "cannot route the flood's replies to the client namespace"
in_ns "$H_NS" sysctl -qw net.ipv4.tcp_max_syn_backlog=8192 || die "cannot set tcp_max_syn_backlog"
# The client's end drains what XDP_TX sends back out of the host's (lib/syncookies.sh).
pass_all_xdp "$C_NS:$C_IF"
line_listener "$H_NS" "$PORT" web || die "the TCP listener did not start"

# What reaches the host's stack (after XDP), before conntrack and SYNPROXY: 1. the flood's
# SYNs (every SYN to PORT but the client's own), 2. the client's SYNs (verified, or within the
# budget), 3. the client's bare ACKs (ACK alone: a cookie's, or of an open connection); all
# from the veth (SYNPROXY's own SYN and ACK to the listener come in over lo).
in_ns "$H_NS" nft -f - <<EOF || die "cannot add the test's nftables counters at the host"
table inet dtsyn_count {
	chain pre {
		type filter hook prerouting priority -400; policy accept;
		iifname $H_IF ip saddr != $LAB_V4_CLIENT tcp dport $PORT tcp flags & (syn | ack) == syn counter
		iifname $H_IF ip saddr $LAB_V4_CLIENT tcp dport $PORT tcp flags & (syn | ack) == syn counter
		iifname $H_IF ip saddr $LAB_V4_CLIENT tcp dport $PORT tcp flags & (syn | ack | fin | rst) == ack counter
	}
}
EOF
# The client's handshakes at the client (the flood's raw frames bypass netfilter): 1. SYNs
# sent (retransmits too), 2. bare ACKs sent; 3. SYN-ACKs received of window 0 (an XDP cookie's:
# SYNPROXY never answers a SYN here, it takes the ACK), 4. the listener's own.
in_ns "$C_NS" nft -f - <<EOF || die "cannot add the test's nftables counters at the client"
table inet dtsyn_client {
	chain out {
		type filter hook output priority -400; policy accept;
		ip daddr $LAB_V4_HOST tcp dport $PORT tcp flags & (syn | ack) == syn counter
		ip daddr $LAB_V4_HOST tcp dport $PORT tcp flags & (syn | ack | fin | rst) == ack counter
	}
	chain in {
		type filter hook prerouting priority -400; policy accept;
		ip saddr $LAB_V4_HOST ip daddr $LAB_V4_CLIENT tcp sport $PORT tcp flags & (syn | ack) == (syn | ack) tcp window 0 counter
		ip saddr $LAB_V4_HOST ip daddr $LAB_V4_CLIENT tcp sport $PORT tcp flags & (syn | ack) == (syn | ack) tcp window != 0 counter
	}
}
EOF
# nft_count NS TABLE CHAIN N: the packets of the Nth counter of CHAIN.
nft_count() { in_ns "$1" nft list chain inet "$2" "$3" | grep -o 'packets [0-9]*' | sed -n "$4p" | cut -d' ' -f2; }
flood_at_host() { nft_count "$H_NS" dtsyn_count pre 1; }
# eth_stat NS IF NAME: a counter of `ethtool -S IF` (0 if the driver has none of the name).
eth_stat() { in_ns "$1" ethtool -S "$2" | awk -v k="$3:" '$1 == k { v = $2 } END { print v + 0 }'; }
tx_dropped() { ip -n "$1" -s -j link show dev "$2" | jq '.[0].stats64.tx.dropped // 0'; }

# stages: the counters of the client's handshakes, "KEY VALUE" a line (the agent's since its
# start, the others since the lab's): what the client sent and got, what XDP passed, what the
# agent counted, each queue's frames at the host's XDP, its XDP_TX and their errors and the
# frames back at the client end (queue 0 the client's, 1 the flood's), and the frames each
# end dropped for its peer's full ring.
stages() {
	local doc q
	doc=$(stats_json)
	echo "syn_sent $(nft_count "$C_NS" dtsyn_client out 1)"
	echo "syn_retrans $(in_ns "$C_NS" nstat -asz --json TcpExtTCPSynRetrans | jq -r '.kernel.TcpExtTCPSynRetrans // 0')"
	echo "synack_cookie $(nft_count "$C_NS" dtsyn_client in 1)"
	echo "synack_listener $(nft_count "$C_NS" dtsyn_client in 2)"
	echo "ack_sent $(nft_count "$C_NS" dtsyn_client out 2)"
	echo "syn_passed $(nft_count "$H_NS" dtsyn_count pre 2)"
	echo "ack_passed $(nft_count "$H_NS" dtsyn_count pre 3)"
	for q in cookie_sent cookie_ack_valid cookie_ack_invalid verified_hits; do
		echo "$q $(json_num "$doc" "$q")"
	done
	for q in $(seq 0 $((LAB_VETH_QUEUES - 1))); do
		echo "q${q}_xdp $(eth_stat "$H_NS" "$H_IF" "rx_queue_${q}_xdp_packets")"
		echo "q${q}_tx $(eth_stat "$H_NS" "$H_IF" "rx_queue_${q}_xdp_tx")"
		echo "q${q}_tx_err $(eth_stat "$H_NS" "$H_IF" "rx_queue_${q}_xdp_tx_errors")"
		echo "q${q}_back $(eth_stat "$C_NS" "$C_IF" "rx_queue_${q}_xdp_packets")"
	done
	echo "c_tx_drop $(tx_dropped "$C_NS" "$C_IF")"
	echo "h_tx_drop $(tx_dropped "$H_NS" "$H_IF")"
}
# snap NAME TAG: stages into FIG[NAME:TAG:KEY].
snap() {
	local k v
	while read -r k v; do FIG[$1:$2:$k]=${v:-0}; done < <(stages)
}

# write_rules FILE [EXTRA]: the rule for SYNs to PORT (EXTRA: one more line, syn_cookies).
write_rules() { syn_rule "$1" "$PORT" "$SRC_RATE" "$SRC_BURST" "$P16_RATE" "$P16_BURST" "${2:-}"; }

# connect_all OUT: CONNS connects at CONN_RATE from the client namespace, each timed
# (timed_connects.py): "ok SECONDS" or "fail WHY" a line, then "late SECONDS".
connect_all() {
	in_ns "$C_NS" "${PIN_CLIENT[@]}" timeout $((CONNS / CONN_RATE + CLIENT_SLACK)) /usr/bin/python3 \
		"$DT_ROOT/tests/netns/timed_connects.py" \
		"$CONNS" "$CONN_RATE" "$LAB_V4_HOST" "$PORT" dthrottle-ok >"$1" 2>"$1.err" ||
		die "the client failed: $(cat "$1.err")"
}

# flood_start NAME: pktgen --tcp-syn from random sources of 198.18.1.0-198.18.254.255 (the
# client's /16 without the lab's own addresses) at its highest rate, until stopped (at most
# FLOOD_SECS; its --count at most 10^9, pktgen's largest).
flood_start() {
	nsenter --net="/run/netns/$C_NS" -- "${PIN_FLOOD[@]}" timeout $((FLOOD_SECS + 30)) "$PKTGEN" send --tcp-syn \
		--iface "$C_IF" --dst-ip "$LAB_V4_HOST" --dst-mac "$H_MAC" --dport "$PORT" \
		--src-range 198.18.1.0+65024 --src-random --rate "$FLOOD_PPS" \
		--count $((FLOOD_PPS * FLOOD_SECS < 1000000000 ? FLOOD_PPS * FLOOD_SECS : 1000000000)) \
		--duration "${FLOOD_SECS}s" --json \
		>"$WORK/flood-$1.json" 2>"$WORK/flood-$1.err" &
	LAB_PIDS[flood-$1]=$!
}

# prefix_spent: the /16 budget is spent: the agent has dropped the flood's SYNs, or (with
# syn_cookies) answered them with cookies (the flood is on).
prefix_spent() {
	local doc
	doc=$(stats_json)
	num_ge "$(($(json_num "$doc" dropped) + $(json_num "$doc" cookie_sent)))" 1000
}

declare -A FIG=()

# run_phase NAME RULES: agent up with RULES, flood on, the client's connects, the figures.
run_phase() {
	local name=$1 rules=$2 at0 cookies0 fj sent elapsed budget
	agent_start "$name" --rules "$rules" --stats-interval 10m || die "the agent ($name) did not start"
	at0=$(flood_at_host)
	cookies0=$(tcp_counter TcpExtSyncookiesSent)
	snap "$name" 0
	flood_start "$name"
	# Under qemu's TCG on a loaded host the flood's start and each stats read take seconds.
	wait_until "$SPENT_WAIT" prefix_spent || die "$name: the flood did not exhaust the prefix budget within $SPENT_WAIT s (dropped" \
		"$(json_num "$(stats_json)" dropped), cookies sent $(json_num "$(stats_json)" cookie_sent))"
	connect_all "$WORK/conn-$name.txt"
	kill -INT "${LAB_PIDS[flood-$name]}" 2>/dev/null # pktgen stops and prints what it sent
	wait_exit "${LAB_PIDS[flood-$name]}" 10 && [ "$EXIT_RC" -eq 0 ] ||
		die "$name: pktgen failed: $(cat "$WORK/flood-$name.err")"
	snap "$name" 1 # the flood stopped: the counters hold still while they are read
	for k in $(stages_keys); do FIG[$name:$k]=$((${FIG[$name:1:$k]:-0} - ${FIG[$name:0:$k]:-0})); done
	FIG[$name:syn_unverified]=$((${FIG[$name:syn_passed]} - ${FIG[$name:verified_hits]}))
	check "syncookies/$name/flood-throughout" "$name: the flood ended (after $FLOOD_SECS s) before the client's last connect" \
		json_test "$(cat "$WORK/flood-$name.json")" '.interrupted == true'
	fj=$(cat "$WORK/flood-$name.json")
	sent=$(json_num "$fj" sent)
	elapsed=$(json_num "$fj" elapsed_s)
	FIG[$name:flood_pps]=$(calc "$sent / $elapsed")
	FIG[$name:flood_sent]=$sent
	FIG[$name:at_host]=$(($(flood_at_host) - at0))
	FIG[$name:budget]=$(calc "$P16_BURST + $P16_RATE * ($elapsed + 0.5)")
	FIG[$name:host_cookies]=$(($(tcp_counter TcpExtSyncookiesSent) - cookies0))
	FIG[$name:done]=$(grep -c '^ok ' "$WORK/conn-$name.txt")
	FIG[$name:no_connect]=$(grep -c '^fail connect:timeout' "$WORK/conn-$name.txt")
	FIG[$name:no_reply]=$(grep -c '^fail reply' "$WORK/conn-$name.txt")
	FIG[$name:slow]=$(awk '$1 == "ok" && $2 >= 1 { n++ } END { print n + 0 }' "$WORK/conn-$name.txt")
	FIG[$name:p50]=$(awk '$1 == "ok" { print $2 }' "$WORK/conn-$name.txt" | sort -g | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "-" }')
	FIG[$name:max]=$(awk '$1 == "ok" { print $2 }' "$WORK/conn-$name.txt" | sort -g | tail -n 1)
	FIG[$name:answer_p90]=$(awk '$1 == "ok" && $2 < 1 { print $2 }' "$WORK/conn-$name.txt" | sort -g |
		awk '{ a[NR] = $1 } END { print NR ? a[int((NR * 9 + 9) / 10)] : "-" }')
	FIG[$name:late]=$(awk '$1 == "late" { print $2 }' "$WORK/conn-$name.txt")
	agent_signal "$name" TERM || die "the agent ($name) did not stop"
	check_le "syncookies/$name/flood-within-budget" \
		"$name: the flood's SYNs at the host (budget $P16_BURST + $P16_RATE/s over ${elapsed}s + 0.5 s)" \
		"${FIG[$name:at_host]}" "${FIG[$name:budget]}"
	check_ge "syncookies/$name/flood-exceeded-budget" "$name: flood SYNs sent (the test needs more than the budget)" \
		"$sent" "$(calc "${FIG[$name:budget]} * 10")"
}

stages_keys() { printf '%s\n' "${!FIG[@]}" | sed -n 's/^[a-z]*:0://p' | sort -u; }

# lost_where NAME: the stages of NAME's handshakes in a sentence, to tell where one was lost.
lost_where() {
	local n=$1 q
	printf 'the client sent %s SYNs (%s retransmitted) and %s bare ACKs; got %s cookie SYN-ACKs and %s of the listener;' \
		"${FIG[$n:syn_sent]}" "${FIG[$n:syn_retrans]}" "${FIG[$n:ack_sent]}" "${FIG[$n:synack_cookie]}" "${FIG[$n:synack_listener]}"
	printf ' XDP passed %s of its SYNs and %s of its ACKs; the agent: %s cookies sent (all), %s ACKs valid, %s invalid;' \
		"${FIG[$n:syn_passed]}" "${FIG[$n:ack_passed]}" "${FIG[$n:cookie_sent]}" "${FIG[$n:cookie_ack_valid]}" \
		"${FIG[$n:cookie_ack_invalid]}"
	for q in $(seq 0 $((LAB_VETH_QUEUES - 1))); do
		printf ' queue %s%s: %s frames at the host XDP, %s XDP_TX, %s XDP_TX errors (lost in the veth), %s frames back at the client end;' \
			"$q" "$([ "$LAB_VETH_QUEUES" = 2 ] && { [ "$q" = 0 ] && echo " (the client's)" || echo " (the flood's)"; })" \
			"${FIG[$n:q${q}_xdp]}" "${FIG[$n:q${q}_tx]}" "${FIG[$n:q${q}_tx_err]}" "${FIG[$n:q${q}_back]}"
	done
	printf ' frames dropped for a full ring: %s at the client end, %s at the host end\n' "${FIG[$n:c_tx_drop]}" "${FIG[$n:h_tx_drop]}"
}

# client_on_time NAME: the client's connects started on schedule (within 1 s), so its figures
# were measured inside the flood; else a SKIP line (a machine too busy to measure), false.
client_on_time() {
	num_le "${FIG[$1:late]}" 1 && return 0
	echo "SKIP syncookies/$1/client: its connects started up to ${FIG[$1:late]} s behind schedule" \
		"(the machine is too busy to measure them; the flood ran at ${FIG[$1:flood_pps]} SYN/s;" \
		"${FIG[$1:done]} of $CONNS completed, ${FIG[$1:slow]} after 1 s or more, first answers in p90" \
		"${FIG[$1:answer_p90]} s)"
	return 1
}

# no_retransmit NAME: none of NAME's connections took 1 s or more (a SYN retransmit); with
# some, a SKIP line instead of a FAIL if the machine's own first answers were too slow to
# tell a late answer from a lost one (p90 of the connects under 1 s at least ANSWER_SLOW).
no_retransmit() {
	local slow=${FIG[$1:slow]} answer=${FIG[$1:answer_p90]}
	if [ "$slow" != 0 ] && [ "$answer" != - ] && num_ge "$answer" "$ANSWER_SLOW"; then
		echo "SKIP syncookies/$1/no-retransmit: $slow connections took 1 s or more, but this machine's" \
			"first answers took up to $answer s (p90 of those under 1 s; a real one answers in ms): a late" \
			"answer and a lost one look alike against the client's 1 s SYN timer"
		return 0
	fi
	check_eq "syncookies/$1/no-retransmit" \
		"connections with cookies that took 1 s or more (first answers in p90 $answer s: a lost SYN or answer; $(lost_where "$1"))" "$slow" 0
}

# --- reload: the SYNPROXY table follows the syn_cookies rules' ports -------------------------
# table_has PORT: the agent's SYNPROXY table names PORT; table_gone: there is none.
table_has() { in_ns "$H_NS" nft list table inet dthrottle_synproxy 2>/dev/null | grep -qE "dport .*\b$1\b"; }
table_gone() { ! in_ns "$H_NS" nft list tables | grep -q dthrottle_synproxy; }
# reload_to FILE NAME: FILE becomes the rules, `agent reload` must take it (check NAME).
reload_to() {
	local out rc
	cp "$1" "$WORK/reload.toml"
	out=$("$AGENT" reload --pin-dir "$PIN_DIR" 2>&1)
	rc=$?
	check_eq "syncookies/reload/$2-exit" "agent reload ($2) exit code (it said: $out)" "$rc" 0
}
reload_phase() {
	sed "s/^dport = $PORT/dport = $((PORT + 1))/" "$WORK/cookies.toml" >"$WORK/cookies-next.toml"
	cp "$WORK/cookies.toml" "$WORK/reload.toml"
	agent_start reload --rules "$WORK/reload.toml" --stats-interval 10m || die "the agent (reload) did not start"
	check syncookies/reload/table-at-start "the SYNPROXY table does not name port $PORT within $WAIT s" wait_until "$WAIT" table_has "$PORT"
	reload_to "$WORK/cookies-next.toml" ports
	check syncookies/reload/ports-followed "the SYNPROXY table does not name port $((PORT + 1)) alone within $WAIT s of the reload" \
		wait_until "$WAIT" eval "table_has $((PORT + 1)) && ! table_has $PORT"
	reload_to "$WORK/budgets.toml" no-cookies
	check syncookies/reload/table-removed "the SYNPROXY table is still there $WAIT s after a reload without syn_cookies" \
		wait_until "$WAIT" table_gone
	check syncookies/reload/removal-logged "the agent did not log the table's removal" \
		grep -q 'no rule has syn_cookies any more' "$(agent_log reload)"
	reload_to "$WORK/cookies.toml" cookies-again
	check syncookies/reload/table-again "the SYNPROXY table does not name port $PORT again within $WAIT s" wait_until "$WAIT" table_has "$PORT"
	agent_signal reload TERM || die "the agent (reload) did not stop"
	check syncookies/reload/table-removed-at-exit "the SYNPROXY table is left after the agent's exit" table_gone
}

write_rules "$WORK/budgets.toml"
write_rules "$WORK/cookies.toml" "syn_cookies = true"
# The phase-2 detection below must only tell the option apart: the rest of the file is fine.
in_ns "$H_NS" "$AGENT" check --iface "$H_IF" --rules "$WORK/budgets.toml" >"$WORK/check.out" 2>&1 ||
	die "agent check refused the rules without syn_cookies: $(cat "$WORK/check.out")"
run_phase budgets "$WORK/budgets.toml"
client_on_time budgets # phase 1's client figures are reported, not checked

cookies_ok=0
if in_ns "$H_NS" "$AGENT" check --iface "$H_IF" --rules "$WORK/cookies.toml" >"$WORK/check.out" 2>&1; then
	cookies_ok=1
	run_phase cookies "$WORK/cookies.toml"
	check "syncookies/cookies/synproxy-logged" "the agent did not log its SYNPROXY setup" \
		grep -q 'SYNPROXY for the ACKs' "$(agent_log cookies)"
	if client_on_time cookies; then
		why="of $CONNS; not established within 4 s: ${FIG[cookies:no_connect]}, established but the listener's"
		why+=" reply not read within 5 s: ${FIG[cookies:no_reply]} (load $(cut -d' ' -f1-3 /proc/loadavg))"
		check_ge syncookies/cookies/completed "connections completed with cookies ($why)" \
			"${FIG[cookies:done]}" "$(calc "$CONNS * 0.99")"
		no_retransmit cookies
	fi
	check_eq syncookies/cookies/table-removed "nftables tables named dthrottle_synproxy left after the agent's exit" \
		"$(in_ns "$H_NS" nft list tables | grep -c dthrottle_synproxy)" 0
	reload_phase
else
	echo "SKIP syncookies/cookies: this agent does not accept syn_cookies = true ($(head -n 1 "$WORK/check.out"))"
fi

# --- the figures, side by side ---------------------------------------------------------------
row() {
	local what=$1 key=$2
	printf '%-46s %14s %14s\n' "$what" "${FIG[budgets:$key]:--}" "$([ "$cookies_ok" = 1 ] && echo "${FIG[cookies:$key]:--}" || echo skipped)"
}
printf '%-46s %14s %14s\n' "" "budgets alone" "syn cookies"
row "flood SYNs sent" flood_sent
row "flood rate (SYN/s)" flood_pps
row "flood SYNs at the host" at_host
row "their budget (burst + rate x time)" budget
row "host syncookies sent (TcpExtSyncookiesSent)" host_cookies
row "client connections completed (of $CONNS)" done
row "  of them after a retransmit (>= 1 s)" slow
row "  median connect time (s)" p50
row "  first answers, p90 of those under 1 s (s)" answer_p90
row "  longest connect time (s)" max
row "failed: not established within 4 s" no_connect
row "failed: no reply from the listener within 5 s" no_reply
row "  latest start behind schedule (s)" late
echo "the client's handshakes, stage by stage:"
row "  SYNs sent (retransmits too)" syn_sent
row "    retransmitted (TcpExtTCPSynRetrans)" syn_retrans
row "    passed by XDP (verified or within budget)" syn_passed
row "      unverified: within the budget (passed - verified hits)" syn_unverified
row "  SYN-ACKs received: cookies (window 0)" synack_cookie
row "  SYN-ACKs received: the listener's" synack_listener
row "  bare ACKs sent" ack_sent
row "    passed by XDP" ack_passed
row "  agent: cookies sent (to all)" cookie_sent
row "  agent: cookie ACKs valid" cookie_ack_valid
row "  agent: cookie ACKs invalid" cookie_ack_invalid
row "  agent: verified hits" verified_hits
for q in $(seq 0 $((LAB_VETH_QUEUES - 1))); do
	who=$([ "$LAB_VETH_QUEUES" = 2 ] && { [ "$q" = 0 ] && echo "client's " || echo "flood's "; })
	row "  host XDP, ${who}queue $q: frames" "q${q}_xdp"
	row "    XDP_TX" "q${q}_tx"
	row "    XDP_TX errors (lost in the veth)" "q${q}_tx_err"
	row "    frames back at the client end" "q${q}_back"
done
row "  dropped for a full ring: client end" c_tx_drop
row "  dropped for a full ring: host end" h_tx_drop
echo "syncookies: budgets alone $(calc "100 * ${FIG[budgets:done]} / $CONNS")% completed," \
	"${FIG[budgets:slow]} after a retransmit$([ "$cookies_ok" = 1 ] &&
		echo "; with cookies $(calc "100 * ${FIG[cookies:done]} / $CONNS")% completed, ${FIG[cookies:slow]} after a retransmit")"
lab_finish
