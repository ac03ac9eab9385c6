#!/usr/bin/env bash
# test_bytes.sh - byte budgets with real packets: 1000-byte frames (Ethernet header
# included) against --rate 100kB/s --burst 5kB, in lib.sh's three-host lab. A load
# balancer sprays one source over the three hosts at 20x the rate (2000 frames/s, 2 MB/s)
# for 10 s. The budget of a source over T seconds is burst + rate x T bytes.
#   a. Local-only agents: every host alone holds the source to one budget, within 5%
#      (passed counts bytes: a whole number of frames, and passed + dropped = bytes sent);
#      a sender descheduled for longer than the bucket takes to fill (a loaded host, qemu's
#      emulation) offers nothing while the refill overflows: that refill (pktgen's
#      longest_gaps_s beyond the fill time) is credited to the lower bound.
#   b. Agents in a full mesh (reports every 100 ms, in bytes): the bytes admitted over all
#      hosts stay within 5% of one budget, and every host debited exactly the bytes its
#      peers admitted.
#   c. agent stats shows the rule in bytes.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=bytes

RATE=100000 # bytes per second
BURST=5000  # bytes
FRAME=1000  # bytes per frame, as XDP sees it
PERIOD=100ms
OFFER=$((20 * RATE / FRAME)) # frames per second, sprayed over all hosts
SECS=10
HOSTS=3
SRC=198.18.1.1
export SPRAY_OPTS="--size $FRAME"

lab_init dtbyt
mlab_up "$HOSTS"
declare -A CUR_AGENT=()

budget() { calc "$BURST + $RATE * $1"; }

# start_agents NAME local|mesh: one agent per host with the byte budget.
start_agents() { mlab_agents_start "$1" "$2" --rate 100kB/s --burst 5kB --stats-interval 10m; }

stop_agents() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do
		agent_signal "${CUR_AGENT[$i]}" TERM || die "agent ${CUR_AGENT[$i]} did not exit on SIGTERM"
	done
}

# rows SNAP SPRAY: per host, frames sent, bytes passed, dropped, debited.
rows() {
	local i
	printf '  %-6s %8s %12s %12s %12s\n' HOST FRAMES PASSED_B DROPPED_B DEBITED_B
	for ((i = 1; i <= HOSTS; i++)); do
		printf '  %-6s %8s %12s %12s %12s\n' "h$i" "$(spray_sent "$2" "$i" "$SRC")" \
			"$(snap_num "$1" "$i" "$SRC" passed)" "$(snap_num "$1" "$i" "$SRC" dropped)" \
			"$(snap_num "$1" "$i" "$SRC" debited)"
	done
}

# check_host_bytes NAME SNAP SPRAY I: passed is whole frames; passed + dropped = bytes sent.
check_host_bytes() {
	local passed dropped sent
	passed=$(snap_num "$2" "$4" "$SRC" passed)
	dropped=$(snap_num "$2" "$4" "$SRC" dropped)
	sent=$(spray_sent "$3" "$4" "$SRC")
	check_eq "$1/h$4/whole-frames" "h$4 passed bytes modulo the frame size" "$((passed % FRAME))" 0
	check_eq "$1/h$4/verdicts" "h$4 passed + dropped bytes vs $sent frames sent x $FRAME" \
		"$((passed + dropped))" "$((sent * FRAME))"
}

# within NAME WHAT GOT BUDGET [STALLED]: GOT within 5% of BUDGET, less the refill of STALLED
# seconds (the sender's gaps beyond the bucket's fill time: spray_stalled).
within() {
	local stalled=${5:-0}
	check_le "$1/within-budget" "$2, budget $4 B + 5%" "$3" "$(calc "$4 * 1.05")"
	check_ge "$1/near-budget" "$2, budget $4 B - 5% - the refill of ${stalled} s of the sender's stalls" "$3" \
		"$(calc "$4 * 0.95 - $RATE * $stalled")"
}
# A bucket near empty under a 20x load is full again after FILL seconds.
FILL=$(calc "($BURST - 2 * $FRAME) / $RATE")

# --- a. each host alone ------------------------------------------------------------------------
echo "== a. $SRC sprayed over $HOSTS local-only hosts: $OFFER frames/s of $FRAME B for ${SECS}s (100kB/s, burst 5kB)"
start_agents loc local
spray_start a "$OFFER" "$SECS" "$SRC"
spray_wait a || die "pktgen failed (local-only run)"
mlab_snapshot a || die "agent stats failed"
stop_agents
b_a=$(budget "$(spray_elapsed a)")
rows a a
echo "  budget per host: $b_a B"
for ((i = 1; i <= HOSTS; i++)); do
	got=$(snap_num a "$i" "$SRC" passed)
	stalled=$(spray_stalled a "$i" "$FILL")
	echo "  h$i alone: $got B passed = $(calc "100 * $got / $b_a")% of its budget; its sender stalled ${stalled} s" \
		"beyond the bucket's fill time ($FILL s)"
	within "bytes/a/h$i" "h$i alone admitted" "$got" "$b_a" "$stalled"
	check_host_bytes bytes/a a a "$i"
done

# --- b. the cluster ----------------------------------------------------------------------------
echo "== b. the same over a full mesh (reports every $PERIOD, in bytes)"
start_agents mesh mesh
spray_start b "$OFFER" "$SECS" "$SRC"
spray_wait b || die "pktgen failed (cluster run)"
mlab_wait_landed 10 "$SRC" $(mlab_mesh_specs) # the last reports reach every peer
mlab_snapshot b || die "agent stats failed"
b_b=$(budget "$(spray_elapsed b)")
rows b b
tot=$(snap_sum b "$SRC" passed)
echo "  total admitted: $tot B, budget $b_b B: $(calc "100 * $tot / $b_b")%"
within bytes/b/cluster "admitted over all hosts" "$tot" "$b_b"
bad=
for ((i = 1; i <= HOSTS; i++)); do
	check_host_bytes bytes/b b b "$i"
	want=$(($(snap_num b 1 "$SRC" passed) + $(snap_num b 2 "$SRC" passed) + $(snap_num b 3 "$SRC" passed) -
		$(snap_num b "$i" "$SRC" passed)))
	got=$(snap_num b "$i" "$SRC" debited)
	[ "$got" -eq "$want" ] || bad+=" h$i debited $got B, its peers passed $want B;"
done
check bytes/b/debits-exact "$SRC:$bad" test -z "$bad"

# --- c. display --------------------------------------------------------------------------------
text=$("$AGENT" stats --pin-dir "${M_PIN[1]}" --top 5)
echo "$text" | sed 's/^/  | /'
check bytes/c/stats-rate-in-bytes "agent stats does not show the rule as 100 kB/s" grep -q '100 kB/s' <<<"$text"
json=$("$AGENT" stats --pin-dir "${M_PIN[1]}" --json --top 5)
check bytes/c/stats-json-unit "agent stats --json has no \"unit\":\"bytes\" (its units: $(json_get "$json" '[.. | objects | .unit? | strings] | unique'))" \
	json_test "$json" 'any(.. | objects | .unit?; . == "bytes")'
stop_agents

lab_finish
