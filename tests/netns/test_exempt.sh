#!/usr/bin/env bash
# test_exempt.sh - only the cluster's own traffic is exempt from throttling, not every
# packet from a peer's address (before, a UDP flood spoofed from a peer's address
# passed at 18x its budget).
#
# Two agents on the two ends of one veth pair (a in $H_NS at 198.18.0.2, b in $C_NS at
# 198.18.0.1), peering over that throttled link with CurveZMQ, at rate 1/s burst 2 per
# source: far less than their own reports need (5 a second each way, and the TCP acks
# and heartbeats), so the cluster only works if its TCP is exempt. Then a UDP flood from
# b's address (pktgen, 3000 frames/s for 3 s) to a's report port 7700, and then spoofed
# TCP from b's address and report port 7700 to a's port 22 (tcp_spoof.py, SYN, ACK, RST
# and PSH+ACK in turn, 1000 a second for 3 s): segments of no connection, which the
# exemption passed unthrottled, ahead of bans and the deny list. Checked:
#   a. a logged its exemption: TCP from b's report port and to its own --listen port;
#   b. the UDP flood is throttled like any source: a admitted at most burst + rate x T of
#      it (T: the flood's duration and the receiver's lag) and dropped the rest, and counted none of it exempt;
#   c. so is the spoofed TCP from b's report port: at most burst + rate x T admitted, the
#      rest dropped, none of it counted exempt;
#   d. meanwhile the cluster went on: each agent applied its peer's reports (at least 60%
#      of the periods of the flood window), both stayed up, and a counted exempt packets.
# Takes about 15 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=exempt

RATE=1
BURST=2
PERIOD_S=0.2
FLOOD_PPS=3000
SECS=3
TCP_PPS=1000
PORT=7700
# T is the sender's own span; a frame is decided when the receiver's NAPI runs, a little
# later for the last ones: 50 ms of lag allowed, 0.5 s on an emulated CPU (make test-kernel's
# TCG guest admitted a 6th frame of a 2.9996 s flood: a lag of 0.4 ms was enough).
LAG_S=0.05
emulated && LAG_S=0.5

lab_init dtexm
lab_up
B_PIN=$PIN_DIR-b
LAB_PIN_DIRS+=("$B_PIN")

# Keys: each agent allows the other's (agent keygen NAME --endpoint: the peer it speaks for).
mkdir -p "$WORK/ka" "$WORK/kb" "$WORK/a-knows" "$WORK/b-knows"
"$AGENT" keygen a --dir "$WORK/ka" --endpoint "$LAB_V4_HOST:$PORT" >/dev/null &&
	"$AGENT" keygen b --dir "$WORK/kb" --endpoint "$LAB_V4_CLIENT:$PORT" >/dev/null || die "agent keygen failed"
cp "$WORK/kb/b.pub" "$WORK/a-knows/" && cp "$WORK/ka/a.pub" "$WORK/b-knows/" || die "cannot copy the public keys"

COMMON=(--rate "$RATE" --burst "$BURST" --period 200ms --stats-interval 10m)
agent_start a "${COMMON[@]}" --node-id a --peers "$LAB_V4_CLIENT:$PORT" \
	--curve-key "$WORK/ka/a.key" --curve-peers "$WORK/a-knows" || die "agent a did not start"
nsenter --net="/run/netns/$C_NS" -- "$AGENT" --iface "$C_IF" --pin-dir "$B_PIN" "${COMMON[@]}" --node-id b \
	--peers "$LAB_V4_HOST:$PORT" --curve-key "$WORK/kb/b.key" --curve-peers "$WORK/b-knows" \
	>"$WORK/agent-b.log" 2>&1 &
LAB_PIDS[agent-b]=$!
wait_for_line "$WORK/agent-b.log" 'attached dthrottle' "${LAB_PIDS[agent-b]}" 10 || die "agent b did not start"
wait_for_line "$WORK/agent-b.log" 'peer a is up' "${LAB_PIDS[agent-b]}" 10 || die "b never heard a"
wait_for_line "$(agent_log a)" 'peer b is up' "$AGENT_PID" 10 || die "a never heard b"

# a. The exemption as logged: b's address, TCP only, the cluster's ports only.
check exempt/logged "a did not log its exemption of b's cluster traffic (from and to port $PORT)" \
	grep -q "the cluster's own connections pass unthrottled: 2 entries; +$LAB_V4_CLIENT tcp from port $PORT, +$LAB_V4_CLIENT tcp to port $PORT" \
	"$(agent_log a)"

b_stats() { nsenter --net="/run/netns/$C_NS" "$AGENT" stats --pin-dir "$B_PIN" --json --top 0; }
# Each agent's status (rewritten every second) shows its peer's subscription before the
# "before" reading: a subscription still missing there would count as a reconnect below.
both_subscribed() {
	num_ge "$(json_num "$(stats_json)" subscribers_joined)" 1 && num_ge "$(json_num "$(b_stats)" subscribers_joined)" 1
}
wait_until 10 both_subscribed || die "a and b did not both show their peer's subscription (subscribers_joined) within 10 s"
# The status files are rewritten about once a second, each agent at its own instant. Each
# side's count is read from a file written after the one it is compared with (a's "before"
# after b's, b's "after" after a's, ...): no message sent before one reading can be missing
# from the other's for want of a rewrite.
status_file() { echo "/run/dthrottle/$(tr / _ <<<"$1").cluster.json"; }
A_STATUS=$(status_file "$PIN_DIR") B_STATUS=$(status_file "$B_PIN")
mtime() { stat -c %.9Y "$1"; }
written_after() { awk -v m="$(mtime "$1")" -v t="$2" 'BEGIN { exit !(m > t + 0.1) }'; }
# status_after FILE T: waits until FILE was rewritten more than 0.1 s after the time T.
status_after() { wait_until 3 written_after "$1" "$2" || die "$1 was not rewritten within 3 s"; }
B0=$(b_stats) || die "agent stats of b failed"                    # the base of what b applies
status_after "$A_STATUS" "$(mtime "$B_STATUS")"
A0=$(stats_json) || die "agent stats of a failed"
status_after "$B_STATUS" "$(mtime "$A_STATUS")"
B0_SENT=$(b_stats) || die "agent stats of b failed"               # the base of what b sends

# b. A UDP flood from b's address to a's report port.
send_traffic "$WORK/flood.json" --sources "$LAB_V4_CLIENT" --dport "$PORT" --rate "$FLOOD_PPS" \
	--count $((FLOOD_PPS * SECS)) --duration "$((SECS + 2))s" || die "the flood could not be sent"
sleep 0.2 # the last frames are counted
A_MID=$(stats_json) || die "agent stats of a failed"              # after the UDP flood
# c. Then spoofed TCP from b's address and report port to a's port 22 (no connection).
in_ns "$C_NS" timeout 30 "$DT_ROOT/tests/netns/tcp_spoof.py" --src "$LAB_V4_CLIENT:$PORT" --dst "$LAB_V4_HOST:22" \
	--rate "$TCP_PPS" --count $((TCP_PPS * SECS)) --secs $((SECS + 2)) >"$WORK/tcp.json" 2>"$WORK/tcp.err" ||
	die "the spoofed TCP could not be sent: $(cat "$WORK/tcp.err")"
sleep 0.4 # two periods: the last reports of the window land
status_after "$B_STATUS" "$(date +%s.%N)"
B1=$(b_stats) || die "agent stats of b failed"                    # what b sent
status_after "$A_STATUS" "$(mtime "$B_STATUS")"
A1=$(stats_json) || die "agent stats of a failed"                 # a applied all of it
status_after "$B_STATUS" "$(mtime "$A_STATUS")"
B2=$(b_stats) || die "agent stats of b failed"                    # b applied all a sent
# check_throttled NAME WHAT SENT PASSED DROPPED BUDGET EXEMPT: SENT of WHAT were offered (100x
# BUDGET at least, or the test proves nothing); a admitted BUDGET of them (+ 1 for rounding),
# dropped the rest, and counted at most a tenth of SENT packets exempt meanwhile (the
# cluster's TCP only, not WHAT). Checks exempt/NAME-offered, -throttled, -dropped, -not-exempt.
check_throttled() {
	local name=$1 what=$2 sent=$3 passed=$4 dropped=$5 budget=$6 exempt=$7
	check_ge "exempt/$name-offered" "$what sent (100x the budget at least, or the test proves nothing)" \
		"$sent" "$(calc "100 * $budget")"
	check_le "exempt/$name-throttled" "$what a admitted (the budget, + 1 for rounding)" \
		"$passed" "$(calc "$budget + 1")"
	check_ge "exempt/$name-dropped" "$what a dropped" "$dropped" "$(calc "$sent - $budget - 1")"
	check_le "exempt/$name-not-exempt" "packets a counted exempt meanwhile (the cluster's TCP only, not $what)" \
		"$exempt" "$(calc "$sent / 10")"
}
fj=$(cat "$WORK/flood.json")
sent=$(json_num "$fj" sent)
secs=$(json_num "$fj" elapsed_s)
passed=$(source_num "$A_MID" "$LAB_V4_CLIENT" passed)
dropped=$(source_num "$A_MID" "$LAB_V4_CLIENT" dropped)
budget=$(calc "$BURST + $RATE * ($secs + $LAG_S)")
echo "flood from $LAB_V4_CLIENT (a's peer b) to UDP port $PORT: $sent frames in ${secs}s; a admitted ${passed:-none}," \
	"dropped ${dropped:-none}; budget $budget (burst $BURST + $RATE/s x (${secs}s + ${LAG_S}s of lag))"
udp_exempt=$(($(json_num "$A_MID" exempt) - $(json_num "$A0" exempt)))
check_throttled flood "flood frames from a's peer's address" "$sent" "$passed" "$dropped" "$budget" "$udp_exempt"

tj=$(cat "$WORK/tcp.json")
tcp_sent=$(json_num "$tj" sent)
tcp_secs=$(json_num "$tj" elapsed_s)
tcp_passed=$(($(source_num "$A1" "$LAB_V4_CLIENT" passed) - ${passed:-0}))
tcp_dropped=$(($(source_num "$A1" "$LAB_V4_CLIENT" dropped) - ${dropped:-0}))
tcp_exempt=$(($(json_num "$A1" exempt) - $(json_num "$A_MID" exempt)))
tcp_budget=$(calc "$BURST + $RATE * ($tcp_secs + 0.3 + $LAG_S)") # + the pause between the floods
echo "spoofed TCP from $LAB_V4_CLIENT:$PORT (b's report port) to port 22: $tcp_sent segments in ${tcp_secs}s;" \
	"a admitted $tcp_passed, dropped $tcp_dropped, counted $tcp_exempt packets exempt; budget $tcp_budget"
check_throttled tcp "spoofed segments from b's report port to port 22" "$tcp_sent" "$tcp_passed" "$tcp_dropped" \
	"$tcp_budget" "$tcp_exempt"
exempt_delta=$((udp_exempt + tcp_exempt))

# d. The cluster went on meanwhile: its TCP passed, exempt. With keys in a full mesh a
# quiet agent says "alive" through its link (ZMTP pings every second, a link silent for
# 1.2 s after a ping is dropped) and sends a signed heartbeat every 20 s only (docs/cluster-scale.md
# "Cadence"): each must hear all the other sent (but one in flight), and neither link
# may have dropped (a dropped link reconnects: a new subscriber on the other's port).
min_reports=$(floor "$(calc "0.6 * ($secs + $tcp_secs) / $PERIOD_S")")
a_heard=$(($(json_num "$A1" messages_applied) - $(json_num "$A0" messages_applied)))
b_heard=$(($(json_num "$B2" messages_applied) - $(json_num "$B0" messages_applied)))
a_sent=$(($(json_num "$A1" messages_sent) - $(json_num "$A0" messages_sent)))
b_sent=$(($(json_num "$B1" messages_sent) - $(json_num "$B0_SENT" messages_sent)))
echo "during the floods: a applied $a_heard of b's $b_sent reports, b applied $b_heard of a's $a_sent; a counted $exempt_delta packets exempt"
check_eq exempt/links-held "subscribers that connected again to a and b during the floods (a link dropped)" \
	"$(($(json_num "$A1" subscribers_joined) + $(json_num "$B1" subscribers_joined) - $(json_num "$A0" subscribers_joined) - $(json_num "$B0" subscribers_joined)))" 0
check_ge exempt/a-hears-b "b's reports a applied during the floods (of $b_sent sent)" "$a_heard" "$((b_sent - 1))"
check_ge exempt/b-hears-a "a's reports b applied during the floods (of $a_sent sent)" "$b_heard" "$((a_sent - 1))"
check_ge exempt/cluster-tcp-exempt "packets a counted exempt (the cluster's TCP)" "$exempt_delta" "$min_reports"
check exempt/a-no-peer-down "a logged b down" bash -c "! grep -q 'peer b is down' '$(agent_log a)'"
check exempt/b-no-peer-down "b logged a down" bash -c "! grep -q 'peer a is down' '$WORK/agent-b.log'"

agent_signal a TERM || fail exempt/stop-a "agent a did not exit on SIGTERM"
agent_signal b TERM || fail exempt/stop-b "agent b did not exit on SIGTERM"
lab_finish
