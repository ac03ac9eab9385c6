#!/usr/bin/env bash
# test_hub_pair.sh - two summing hubs (`agent hub --aggregate`, docs/hub.md), no single
# point of failure: three agents publish to both hubs and take one hub's aggregates at a
# time; the hub h1 takes its sums from is killed (SIGKILL) in the middle of a sprayed run.
# Checks: every agent took aggregates (not relayed reports), h1 switched to the other hub,
# the sprayed client still gets one budget (within 10%), and no host was charged more
# than its peers admitted (no report charged twice across the failover).
set -u
. "$(dirname "$0")/lib.sh"

RATE=100
BURST=50
HOSTS=3
SECS=8
OFFER=2000
SRC=198.18.7.1
HUB2_CTL=198.19.0.101

lab_init dthubp
mlab_up "$HOSTS"
mlab_hub_up
HUB2_NS=$LAB-hub2
mlab_ns_add "$HUB2_NS"
mlab_ctl_port "$HUB2_NS" "dt$$kx" "dt$$sx" "$HUB2_CTL"
mlab_keys
"$AGENT" keygen hub2 --role hub --dir "$MLAB_KEYS" --endpoint "$HUB2_CTL:7701" >/dev/null || die "keygen hub2 failed"
T_START=$(now_s)

# hub_start NAME NS ADDR: a summing hub with the lab's key NAME.
hub_start() {
	local log=$WORK/agent-$1.log
	nsenter --net="/run/netns/$2" -- "$AGENT" hub --aggregate --listen "$3:7701" --curve-key "$MLAB_KEYS/$1.key" \
		--curve-peers "$MLAB_KEYS" >"$log" 2>&1 &
	LAB_PIDS[agent-$1]=$!
	wait_for_line "$log" 'hub aggregating' "${LAB_PIDS[agent-$1]}" 10 || { cat "$log"; die "hub $1 did not start"; }
}

# agg I KEY: host I's aggregate counter KEY (its cluster status).
agg() {
	# shellcheck disable=SC2016 # jq's own $k
	json_get "$("$AGENT" stats --pin-dir "${M_PIN[$1]}" --json --top 0)" '.cluster.aggregates[$k] // empty' --arg k "$2"
}
all_aggregating() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do num_ge "$(agg "$i" applied)" 5 || return 1; done
}

hub_start hub "$HUB_NS" "$HUB_CTL"
hub_start hub2 "$HUB2_NS" "$HUB2_CTL"
for ((i = 1; i <= HOSTS; i++)); do
	mlab_agent_start "$i" "h$i" --rate "$RATE" --burst "$BURST" --stats-interval 10m --period 200ms \
		--down-after 1s --hub "$HUB_CTL:7701,$HUB2_CTL:7701" || die "agent h$i did not start"
done
wait_until 20 all_aggregating || die "not every agent applied aggregates within 20 s"
pass hub-pair/agents-take-aggregates

active=$(agg 1 active_hub)
case $active in hub) victim=hub ;; hub2) victim=hub2 ;; *) die "h1 names no active hub: '$active'" ;; esac
echo "  h1 takes its sums from $victim: killing it 3 s into an ${SECS} s spray"
spray_start p "$OFFER" "$SECS" "$SRC"
sleep 3 # the kill must fall in the middle of the run (a time into it, not a state)
{ kill -KILL "${LAB_PIDS[agent-$victim]}" && wait "${LAB_PIDS[agent-$victim]}"; } 2>/dev/null
spray_wait p || die "pktgen failed"
wait_until 10 mlab_debits_steady "$SRC" 1 || echo "  (the debits still moved after 10 s)"
mlab_snapshot p || die "agent stats failed"

check_ge hub-pair/h1-failed-over "h1's failovers to the other hub" "$(agg 1 failovers)" 1
survivor=$([ "$victim" = hub ] && echo hub2 || echo hub)
check "hub-pair/h1-now-on-$survivor" "h1's active hub: $(agg 1 active_hub)" test "$(agg 1 active_hub)" = "$survivor"
budget=$(calc "$BURST + $RATE * $(spray_elapsed p)")
total=$(snap_sum p "$SRC" passed)
echo "  admitted $total of $(spray_total p "$SRC") sent, budget $budget: $(calc "$total / $budget")x"
check_le hub-pair/one-budget "admitted over the budget (x)" "$(calc "$total / $budget")" 1.10
bad=
for ((i = 1; i <= HOSTS; i++)); do
	want=0
	for ((j = 1; j <= HOSTS; j++)); do [ "$j" -eq "$i" ] || want=$((want + $(snap_num p "$j" "$SRC" passed))); done
	got=$(snap_num p "$i" "$SRC" debited)
	echo "  h$i debited $got of its peers' $want; overlaps refused $(agg "$i" overlaps), replayed $(agg "$i" replayed), own hits subtracted $(agg "$i" own_hits_subtracted)"
	[ "$got" -le "$want" ] || bad+=" h$i debited $got > $want;"
	num_ge "$got" "$(calc "0.8 * $want")" || bad+=" h$i debited only $got of $want;"
done
check hub-pair/charged-once "${bad:-}" test -z "$bad"
echo "hub pair test: $(calc "$(now_s) - $T_START") s"
lab_finish
