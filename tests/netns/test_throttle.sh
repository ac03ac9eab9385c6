#!/usr/bin/env bash
# test_throttle.sh - real packets through the XDP throttle on a veth pair.
#
# Agent on the host side with rate 100/s, burst 50. From the client side, pktgen
# offers ~1000 pps from each of four spoofed IPv4 sources and one IPv6 source for
# ~2 s. For every source:
#   - passed (XDP's count) is within its budget burst + rate x T: at most the budget
#     + 2 (edges), at least 80% of it (the sender really did exceed the rate);
#   - dropped = sent - passed (every frame sent got a verdict);
#   - the sink in the host namespace received exactly `passed` datagrams: what XDP
#     passed reached the socket, nothing it dropped did.
# Then SIGTERM: the agent exits 0, the XDP program is detached and the pins are gone.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=throttle

RATE=100
BURST=50
SOURCES=(198.18.1.1 198.18.1.2 198.18.1.3 198.18.1.4 2001:2:0:11::)
PER_SOURCE_PPS=1000
SECONDS_OFFERED=2

lab_init dtnet
lab_up
sink_start 30 || die "the UDP sink did not start"
agent_start main --rate "$RATE" --burst "$BURST" --stats-interval 10m ||
	die "the agent did not attach"
check throttle/xdp-attached "ip link shows no XDP program on $H_IF after the agent started" xdp_attached
check throttle/native-mode "the agent did not attach in native mode on veth: $(grep -o '([a-z]* mode)' "$(agent_log main)")" \
	grep -q '(native mode)' "$(agent_log main)"

total_pps=$((PER_SOURCE_PPS * ${#SOURCES[@]}))
sources_csv=$(IFS=,; echo "${SOURCES[*]}")
send_traffic "$WORK/sent.json" --sources "$sources_csv" --rate "$total_pps" \
	--count $((total_pps * SECONDS_OFFERED)) --duration $((SECONDS_OFFERED + 2))s ||
	die "pktgen send failed"
sent_json=$(cat "$WORK/sent.json")
sink_stop || die "the sink did not exit cleanly"
sink_json=$SINK_JSON
stats=$(stats_json) || die "agent stats --json failed"

elapsed=$(json_num "$sent_json" elapsed_s)
budget=$(calc "$BURST + $RATE * $elapsed")
max_passed=$(calc "$(floor "$budget") + 2")
min_passed=$(calc "0.8 * $budget")
echo "offered ${PER_SOURCE_PPS} pps per source for ${elapsed} s: budget per source $budget" \
	"(allowed $min_passed..$max_passed passed)"
printf '%-14s %8s %8s %8s %9s\n' SOURCE SENT PASSED DROPPED DELIVERED
for src in "${SOURCES[@]}"; do
	sent=$(source_num "$sent_json" "$src" sent)
	passed=$(source_num "$stats" "$src" passed)
	dropped=$(source_num "$stats" "$src" dropped)
	delivered=$(source_num "$sink_json" "$src" received)
	printf '%-14s %8s %8s %8s %9s\n' "$src" "${sent:--}" "${passed:--}" "${dropped:--}" "${delivered:-0}"
	check_ge "throttle/$src/offered" "frames sent from $src" "$sent" $((PER_SOURCE_PPS * SECONDS_OFFERED * 9 / 10))
	check_le "throttle/$src/within-budget" "$src passed more than burst + rate x ${elapsed}s + 2" "$passed" "$max_passed"
	check_ge "throttle/$src/near-budget" "$src passed far less than its budget $budget" "$passed" "$min_passed"
	check_eq "throttle/$src/dropped" "$src dropped != sent - passed ($sent - $passed)" "$dropped" "$((sent - passed))"
	check_eq "throttle/$src/delivered" "$src: datagrams the sink received vs XDP passed ($passed)" "${delivered:-0}" "$passed"
done
check_eq throttle/sink-socket-drops "datagrams lost in the sink's socket buffer" "$(json_num "$sink_json" socket_drops)" 0

# SIGTERM: clean exit, program detached, pins removed.
agent_signal main TERM || die "the agent did not exit within 10 s of SIGTERM"
check_eq throttle/sigterm-exit-code "agent exit code after SIGTERM" "$EXIT_RC" 0
check throttle/sigterm-detached "ip link still shows XDP on $H_IF after SIGTERM" \
	eval '! xdp_attached'
check throttle/sigterm-unpinned "pins remain after SIGTERM: $(ls "$PIN_DIR" 2>/dev/null | tr '\n' ' ')" \
	test ! -e "$PIN_DIR"
check throttle/sigterm-logged "the agent did not log its detach" \
	grep -q 'SIGTERM received: detaching' "$(agent_log main)"

lab_finish
