#!/usr/bin/env bash
# test: runs alone (timing-heavy: tests/run_all.sh starts nothing beside it)
# test_cluster_faults.sh - cluster faults never punish a client: a healed partition and
# lost peer traffic, with real agents in lib.sh's 3-host lab (rate 100/s, burst 50,
# reports every 200 ms, the default --report-max-age of 10 periods: 2 s).
#
# One source sprayed round-robin over the 3 hosts at 2000 frames/s (20x the rate).
#   a. A 20 s partition once the cluster is at work: the peers' port (7700) blocked both ways with nftables in every
#      host's namespace, so each host is alone. During it each host grants the rate on its
#      own (about 3x in all, as the gossip reference expects). After the heal: no second
#      without admissions beyond the horizon (2 s), and the admitted rate within 10% of
#      the rate over the 30 s after (per second, from the agents' stats).
#   b. 15% of the peer traffic dropped (nftables numgen, both ways) for 10 s: the cluster
#      still admits one budget (burst + rate x T) within 8%, plus the hits of reports that
#      arrived stale (not charged by design), which stay under 25% of it (see the checks).
# Takes about 75 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=cluster_faults

RATE=100
BURST=50
PERIOD=200ms
HORIZON=2 # s: the default --report-max-age, 10 periods
OFFER=$((20 * RATE))
HOSTS=3
PORT=7700
PART=20  # s of partition
AFTER=30 # s measured after the heal

command -v nft >/dev/null || die "nft (package nftables) is needed: make deps"
lab_init dtflt
mlab_up "$HOSTS"
declare -A CUR_AGENT=()

# nft_block I / nft_loss I PERCENT / nft_clear I: host I's peer traffic (port $PORT,
# either direction) dropped entirely / PERCENT% of it at random / nothing dropped. One
# table of our own in the host's namespace, gone with the namespace.
nft_apply() {
	local v=$2
	printf '%s\n' "table inet dtfaults {" \
		"  chain in { type filter hook input priority 0; policy accept; tcp dport $PORT $v; tcp sport $PORT $v; }" \
		"  chain out { type filter hook output priority 0; policy accept; tcp dport $PORT $v; tcp sport $PORT $v; }" \
		"}" | nsenter --net="/run/netns/${M_NS[$1]}" -- nft -f -
}
nft_block() { nft_apply "$1" drop; }
nft_loss() { nft_apply "$1" "numgen random mod 100 < $2 drop"; }
nft_clear() { nsenter --net="/run/netns/${M_NS[$1]}" -- nft delete table inet dtfaults; }

start_mesh() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do
		mlab_agent_start "$i" "$1$i" --rate "$RATE" --burst "$BURST" --stats-interval 10m \
			--period "$PERIOD" --peers "$(mlab_peers "$i")" || die "the agent of h$i did not start"
		CUR_AGENT[$i]=$1$i
	done
	for ((i = 1; i <= HOSTS; i++)); do
		# shellcheck disable=SC2046
		mlab_wait_peers "$1$i" 1 10 $(mlab_others "$i") || die "the agent of h$i did not hear every peer within 10 s"
	done
}

# cluster_counter I KEY: a counter of host I's cluster status (agent stats --json).
cluster_counter() {
	local v
	v=$(json_num "$("$AGENT" stats --pin-dir "${M_PIN[$1]}" --json --top 0)" "$2")
	echo "${v:-0}"
}

T_START=$(now_s)
start_mesh flt

# --- a. a 20 s partition, then the heal -------------------------------------------------------
A=198.18.6.1
echo "== a. one source at $OFFER/s over $HOSTS hosts; every host cut off from its peers for ${PART}s (nftables), then healed"
# The senders' bound is generous (the run takes about 60 s; under make test-kernel's emulated
# CPU (DT_EMULATED=1) each of the window's 30 snapshots reads three agents for seconds, and
# 180 s ended the traffic before the window did): they are stopped once the window after the
# heal is measured.
A_SECS=$((3 * (5 + PART + AFTER + 5)))
emulated && A_SECS=600
spray_start a "$OFFER" "$A_SECS" "$A"
mlab_check_under_way cluster_faults/a/under-way "$A" 10 1 2 3
# The partition's window starts once every host is cut off: its first snapshot is taken after
# the block (reading three agents takes seconds on an emulated CPU, during which the hosts
# still shared one budget).
for ((i = 1; i <= HOSTS; i++)); do nft_block "$i" || die "cannot block port $PORT in h$i"; done
t0=$(now_s)
mlab_snapshot a-cut || die "agent stats failed"
sleep_to "$t0" "$PART" # the partition lasts PART seconds
mlab_snapshot a-heal || die "agent stats failed"
for ((i = 1; i <= HOSTS; i++)); do nft_clear "$i" || die "cannot unblock port $PORT in h$i"; done
t_heal=$(now_s)
per_second=()
prev=$(snap_sum a-heal "$A" passed)
dark=()
for ((k = 1; k <= AFTER; k++)); do
	sleep_to "$t_heal" "$k" # one sample a second: the admitted rate per second after the heal
	mlab_snapshot "a-$k" || die "agent stats failed"
	cur=$(snap_sum "a-$k" "$A" passed)
	per_second+=($((cur - prev)))
	[ $((cur - prev)) -gt 0 ] || [ "$k" -le "$HORIZON" ] || dark+=("$k")
	prev=$cur
done
spray_stop a || die "pktgen failed (partition)"
part=$(calc "${M_SNAP_T[a-heal]} - ${M_SNAP_T[a-cut]}")
span=$(calc "${M_SNAP_T[a-$AFTER]} - ${M_SNAP_T[a-heal]}")
after=$(($(snap_sum "a-$AFTER" "$A" passed) - $(snap_sum a-heal "$A" passed)))
after_rate=$(calc "$after / $span")
echo "  during the partition (${part}s), admitted per host (rate x ${part}s = $(calc "$RATE * $part")):"
split_total=0
for ((i = 1; i <= HOSTS; i++)); do
	n=$(($(snap_num a-heal "$i" "$A" passed) - $(snap_num a-cut "$i" "$A" passed)))
	split_total=$((split_total + n))
	echo "    h$i: $n"
	check_le "cluster_faults/a/h$i/enforces-alone" "h$i admitted during the partition (burst + rate x ${part}s + 10%)" \
		"$n" "$(calc "$BURST + 1.1 * $RATE * $part")"
	check_ge "cluster_faults/a/h$i/grants-the-rate" "h$i admitted during the partition (rate x ${part}s - 15%)" \
		"$n" "$(calc "0.85 * $RATE * $part")"
done
echo "    in all $split_total: $(calc "$split_total / ($RATE * $part)")x the rate"
echo "  after the heal, admitted per second: ${per_second[*]}"
echo "  over ${span}s after the heal: $after admitted, $after_rate/s (rate $RATE)"
for ((i = 1; i <= HOSTS; i++)); do
	echo "    h$i: stale messages $(cluster_counter "$i" stale_messages) ($(cluster_counter "$i" stale_hits) hits not" \
		"charged), recovered $(cluster_counter "$i" recovered), resent $(cluster_counter "$i" resent_messages)"
done
check cluster_faults/a/no-dark-second "seconds after the heal (beyond the ${HORIZON}s horizon) without any admission: ${dark[*]:-}" \
	test "${#dark[@]}" -eq 0
check_le cluster_faults/a/rate-after-max "admitted/s over ${span}s after the heal (rate + 10%)" "$after_rate" "$(calc "1.1 * $RATE")"
check_ge cluster_faults/a/rate-after-min "admitted/s over ${span}s after the heal (rate - 10%)" "$after_rate" "$(calc "0.9 * $RATE")"

# --- b. lost peer traffic ---------------------------------------------------------------------
B=198.18.6.2
LOSS=15
B_SECS=10
echo
echo "== b. ${LOSS}% of the peer traffic dropped (nftables numgen, both ways), one source at $OFFER/s for ${B_SECS}s"
for ((i = 1; i <= HOSTS; i++)); do nft_loss "$i" "$LOSS" || die "cannot drop peer traffic in h$i"; done
declare -A RESENT0=() STALE0=()
for ((i = 1; i <= HOSTS; i++)); do
	RESENT0[$i]=$(cluster_counter "$i" resent_messages)
	STALE0[$i]=$(cluster_counter "$i" stale_hits)
done
spray_start b "$OFFER" "$B_SECS" "$B"
spray_wait b || die "pktgen failed (loss)"
mlab_wait_landed 5 "$B" $(mlab_mesh_specs) # the last reports (and their retransmissions) arrive
mlab_snapshot b || die "agent stats failed"
for ((i = 1; i <= HOSTS; i++)); do nft_clear "$i"; done
budget=$(calc "$BURST + $RATE * $(spray_elapsed b)")
tot=$(snap_sum b "$B" passed)
# STALE: hits of reports that arrived older than --report-max-age, not charged by design
# (cluster.md): a TCP stall of the lossy link beyond it lets the other hosts admit unaware.
printf '  %-6s %8s %8s %8s %8s\n' HOST PASSED DEBITED RESENT STALE
stale_b=0
for ((i = 1; i <= HOSTS; i++)); do
	stale=$(($(cluster_counter "$i" stale_hits) - ${STALE0[$i]}))
	stale_b=$((stale_b + stale))
	printf '  %-6s %8s %8s %8s %8s\n' "h$i" "$(snap_num b "$i" "$B" passed)" "$(snap_num b "$i" "$B" debited)" \
		"$(($(cluster_counter "$i" resent_messages) - ${RESENT0[$i]}))" "$stale"
done
echo "  total $tot of a budget of $budget: $(calc "$tot / $budget")x; hits not charged as stale: $stale_b"
# TCP resends a lost segment after at least 200 ms (more with backoff), and while a report
# waits the other hosts admit without knowing: measured 3.4-4.2% over the budget with the
# machine to itself, 5.7% once beside another suite on 2 cores. The bound allows 8%; 15% on
# an emulated CPU, where every report lags more (11% under make test-kernel's TCG). A report
# that a backed-off resend or a starved agent delays past --report-max-age is not charged
# (counted as stale): each of its hits may be admitted once more elsewhere, so the bound
# adds them, and stale-bounded keeps them few (beside two busy loops on 2 cores: 0-72 of
# about 1,050 in three runs).
OVER=8
emulated && OVER=15
check_le cluster_faults/b/within-budget \
	"admitted over all hosts with ${LOSS}% peer loss (budget $budget + $OVER% + $stale_b hits that arrived stale)" \
	"$tot" "$(calc "(1 + $OVER / 100) * $budget + $stale_b")"
check_le cluster_faults/b/stale-bounded "hits of reports that arrived stale (not charged), at most 25% of the budget" \
	"$stale_b" "$(calc "0.25 * $budget")"
check_ge cluster_faults/b/near-budget "admitted over all hosts with ${LOSS}% peer loss (budget $budget - 10%)" \
	"$tot" "$(calc "0.9 * $budget")"

for ((i = 1; i <= HOSTS; i++)); do
	agent_signal "${CUR_AGENT[$i]}" TERM || die "agent ${CUR_AGENT[$i]} did not exit on SIGTERM"
done
echo
echo "cluster faults test: $(calc "$(now_s) - $T_START") s"
lab_finish
