#!/usr/bin/env bash
# demo.sh - dthrottle on real packets, in a throwaway lab (`make demo`, as root).
#
# Builds nothing (make does that first). Creates two network namespaces joined by a
# veth pair, attaches the agent to the host side (rate 100/s, burst 50), floods it
# for 5 s from five spoofed sources (one polite, four far over the limit) with
# pktgen, and prints, per source, what was offered, what XDP passed and dropped,
# what the host's UDP socket really received, and the budget the throttle allows.
# Removes everything it created. Exit status 1 if the throttle misbehaved.
set -uo pipefail
source "$(dirname "$0")/../tests/netns/lib.sh"
TEST_NAME=demo

RATE=100
BURST=50
SECS=5
# source:packets per second offered
OFFERS=(198.18.1.1:50 198.18.1.2:300 198.18.1.3:500 198.18.1.4:1000 2001:2::1:1:800)

lab_init dtdemo
cat <<EOF
dthrottle demo: every source address gets a bucket of $BURST packets that refills at $RATE
packets per second. A source may send $BURST packets at once, then $RATE per second; past that,
the XDP program drops its packets before the kernel spends any work on them. So in $SECS s no
source can get more than $BURST + $RATE x $SECS = $((BURST + RATE * SECS)) packets through, however fast it sends.

Lab: namespaces $C_NS (sender) and $H_NS (protected host), veth $C_IF <-> $H_IF,
198.18.0.0/15 and 2001:2::/48 only. Everything is removed at the end.
EOF
lab_up
sink_start 60 || die "the UDP sink did not start"
agent_start demo --rate "$RATE" --burst "$BURST" --stats-interval 10m ||
	die "the agent did not attach"
echo "agent: $(grep -o 'attached dthrottle.*' "$(agent_log demo)" | sed 's/, up to.*//')"
echo
echo "Sending for $SECS s from ${#OFFERS[@]} spoofed sources..."
for offer in "${OFFERS[@]}"; do
	src=${offer%:*} pps=${offer##*:}
	send_traffic_bg "$src" "$WORK/sent-$src.json" --sources "$src" --rate "$pps" \
		--count $((pps * SECS)) --duration $((SECS + 1))s
done
for offer in "${OFFERS[@]}"; do
	src=${offer%:*}
	wait_traffic "$src" "$WORK/sent-$src.json" || die "pktgen send from $src failed"
done
sink_stop || die "the sink did not exit cleanly"
stats=$(stats_json) || die "agent stats --json failed"

echo
printf '%-13s %9s %8s %7s %8s %7s %10s  %s\n' SOURCE OFFERING SENT PASSED DROPPED BUDGET DELIVERED VERDICT
bad=0
for offer in "${OFFERS[@]}"; do
	src=${offer%:*} pps=${offer##*:}
	sent_json=$(cat "$WORK/sent-$src.json")
	sent=$(source_num "$sent_json" "$src" sent)
	elapsed=$(json_num "$sent_json" elapsed_s)
	passed=$(source_num "$stats" "$src" passed)
	dropped=$(source_num "$stats" "$src" dropped)
	delivered=$(source_num "$SINK_JSON" "$src" received)
	budget=$(floor "$(calc "$BURST + $RATE * $elapsed")")
	# The budget is burst + rate x (time from this source's first to last packet);
	# allow 2 packets for the edges of that window.
	if [ -z "$passed" ] || [ -z "$sent" ]; then
		verdict="WRONG: no counts for this source"
	elif [ "$dropped" -ne $((sent - passed)) ]; then
		verdict="WRONG: passed + dropped != sent"
	elif [ "${delivered:-0}" -ne "$passed" ]; then
		verdict="WRONG: the host received ${delivered:-0}, XDP passed $passed"
	elif [ "$sent" -le "$budget" ]; then
		if [ "$dropped" -eq 0 ]; then verdict="ok: under the limit, nothing dropped"
		else verdict="WRONG: dropped packets of a source under its limit"; fi
	elif [ "$passed" -gt $((budget + 2)) ]; then
		verdict="WRONG: passed more than its budget"
	elif [ "$((passed * 10))" -lt $((budget * 8)) ]; then
		verdict="WRONG: passed far less than its budget"
	else
		verdict="ok: held to its budget, $((dropped * 100 / sent))% dropped"
	fi
	[[ $verdict == ok* ]] || bad=$((bad + 1))
	printf '%-13s %5s pps %8s %7s %8s %7s %10s  %s\n' "$src" "$pps" "$sent" "${passed:--}" \
		"${dropped:--}" "$budget" "${delivered:-0}" "$verdict"
done
cat <<EOF

OFFERING/SENT: what pktgen sent from that (spoofed) address. PASSED/DROPPED: the XDP
program's verdicts (agent stats). BUDGET: $BURST + $RATE/s x the seconds the source sent.
DELIVERED: datagrams the host's UDP socket received, an independent count of what got through.
EOF
echo
if [ "$bad" -gt 0 ]; then
	echo "demo: the throttle misbehaved for $bad source(s)"
	FAILURES=$bad
	exit 1
fi
echo "demo: ok - the polite source lost nothing, every flooding source was held to its budget."
exit 0
