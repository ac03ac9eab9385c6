#!/usr/bin/env bash
# test: runs alone (timing-heavy: a flood at the generator's highest rate and timed connects)
# test_syncookies.sh - a real client inside a spoofed SYN flood of its own /16, with prefix
# budgets alone and with SYN cookies, side by side.
#
# The host runs a real TCP listener (socat) on port 8080 and an agent with one rule for
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
# The figures of both phases are printed side by side at the end. Then (with syn_cookies) a
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

for tool in socat nft clang; do
	command -v "$tool" >/dev/null || { echo "FAIL setup: $tool is missing (scripts/deps.sh installs it)"; exit 1; }
done
lab_init dtsyn
lab_up
# Replies to spoofed sources go to the client's MAC (dropped there, as the internet would
# drop them) instead of filling the host's neighbour table with unanswered ARP requests.
ip -n "$H_NS" route add 198.18.0.0/16 via "$LAB_V4_CLIENT" dev "$H_IF" onlink ||
	die "cannot route the flood's replies to the client namespace"
in_ns "$H_NS" sysctl -qw net.ipv4.tcp_max_syn_backlog=8192 || die "cannot set tcp_max_syn_backlog"
# A frame XDP sends back out of a veth (XDP_TX: the SYN-ACK of a cookie) waits in the peer
# end's ring, which is drained only while the peer has an XDP program of its own (with GRO
# alone the first 256 frames fill it, and every later one is an xdp_tx_error): the client's
# end gets one that passes everything. A physical NIC needs nothing of the kind.
PASS_OBJ=$WORK/foreign.bpf.o
clang -O2 -g -target bpf -I"/usr/include/$(uname -m)-linux-gnu" -c "$DT_ROOT/tests/netns/foreign.bpf.c" \
	-o "$PASS_OBJ" || die "cannot build the pass-all XDP program (tests/netns/foreign.bpf.c)"
ip -n "$C_NS" link set dev "$C_IF" xdp obj "$PASS_OBJ" sec xdp ||
	die "cannot attach the pass-all XDP program to $C_IF (XDP_TX on a veth needs one at the peer end)"
listener_start "$PORT" || die "the TCP listener did not start"

# The flood's SYNs that reach the host's stack (after XDP), before conntrack and SYNPROXY:
# every SYN to PORT but the client's own.
in_ns "$H_NS" nft -f - <<EOF || die "cannot add the test's nftables counter"
table inet dtsyn_count {
	chain pre {
		type filter hook prerouting priority -400; policy accept;
		ip saddr != $LAB_V4_CLIENT tcp dport $PORT tcp flags & (syn | ack) == syn counter
	}
}
EOF
flood_at_host() { in_ns "$H_NS" nft list chain inet dtsyn_count pre | grep -o 'packets [0-9]*' | cut -d' ' -f2; }

# write_rules FILE [EXTRA]: the rule for SYNs to PORT (EXTRA: one more line, syn_cookies).
write_rules() {
	cat >"$1" <<EOF
version = 1
[[rule]]
name = "web-syn"
cidr = "0.0.0.0/0"
proto = "tcp"
dport = $PORT
syn = true
rate = $SRC_RATE
burst = $SRC_BURST
prefix_limits = [ { prefix = "v4/16", rate = $P16_RATE, burst = $P16_BURST } ]
${2:-}
EOF
}

# connect_all OUT: CONNS connects at CONN_RATE from the client namespace, each timed
# (timed_connects.py): "ok SECONDS" or "fail WHY" a line, then "late SECONDS".
connect_all() {
	in_ns "$C_NS" timeout $((CONNS / CONN_RATE + 40)) /usr/bin/python3 "$DT_ROOT/tests/netns/timed_connects.py" \
		"$CONNS" "$CONN_RATE" "$LAB_V4_HOST" "$PORT" dthrottle-ok >"$1" 2>"$1.err" ||
		die "the client failed: $(cat "$1.err")"
}

# flood_start NAME: pktgen --tcp-syn from random sources of 198.18.1.0-198.18.254.255 (the
# client's /16 without the lab's own addresses) at its highest rate, until stopped (at most
# FLOOD_SECS).
flood_start() {
	nsenter --net="/run/netns/$C_NS" -- timeout $((FLOOD_SECS + 30)) "$PKTGEN" send --tcp-syn \
		--iface "$C_IF" --dst-ip "$LAB_V4_HOST" --dst-mac "$H_MAC" --dport "$PORT" \
		--src-range 198.18.1.0+65024 --src-random --rate "$FLOOD_PPS" \
		--count $((FLOOD_PPS * FLOOD_SECS)) --duration "${FLOOD_SECS}s" --json \
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
	flood_start "$name"
	wait_until 10 prefix_spent || die "$name: the flood did not exhaust the prefix budget within 10 s"
	connect_all "$WORK/conn-$name.txt"
	kill -INT "${LAB_PIDS[flood-$name]}" 2>/dev/null # pktgen stops and prints what it sent
	wait_exit "${LAB_PIDS[flood-$name]}" 10 && [ "$EXIT_RC" -eq 0 ] ||
		die "$name: pktgen failed: $(cat "$WORK/flood-$name.err")"
	check "syncookies/$name/flood-throughout" "$name: the flood ended (after $FLOOD_SECS s) before the client's last connect" \
		grep -q '"interrupted":true' "$WORK/flood-$name.json"
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
		"connections with cookies that took 1 s or more (first answers in p90 $answer s: a lost SYN or answer)" "$slow" 0
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
	check syncookies/reload/table-at-start "the SYNPROXY table does not name port $PORT within 5 s" wait_until 5 table_has "$PORT"
	reload_to "$WORK/cookies-next.toml" ports
	check syncookies/reload/ports-followed "the SYNPROXY table does not name port $((PORT + 1)) alone within 5 s of the reload" \
		wait_until 5 eval "table_has $((PORT + 1)) && ! table_has $PORT"
	reload_to "$WORK/budgets.toml" no-cookies
	check syncookies/reload/table-removed "the SYNPROXY table is still there 5 s after a reload without syn_cookies" \
		wait_until 5 table_gone
	check syncookies/reload/removal-logged "the agent did not log the table's removal" \
		grep -q 'no rule has syn_cookies any more' "$(agent_log reload)"
	reload_to "$WORK/cookies.toml" cookies-again
	check syncookies/reload/table-again "the SYNPROXY table does not name port $PORT again within 5 s" wait_until 5 table_has "$PORT"
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
		check_ge syncookies/cookies/completed "connections completed with cookies (of $CONNS)" \
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
echo "syncookies: budgets alone $(calc "100 * ${FIG[budgets:done]} / $CONNS")% completed," \
	"${FIG[budgets:slow]} after a retransmit$([ "$cookies_ok" = 1 ] &&
		echo "; with cookies $(calc "100 * ${FIG[cookies:done]} / $CONNS")% completed, ${FIG[cookies:slow]} after a retransmit")"
lab_finish
