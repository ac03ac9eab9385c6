#!/usr/bin/env bash
# test_join.sh - a node joining a running cluster (docs/cluster-scale.md "A node joining a
# running cluster"), with real agents: five hosts (the owner scheme needs five members), one
# source sprayed over all five at 20x the rate (rate 100/s, burst 50); h5's agent starts
# JOIN_AT seconds into the spray, while the other four throttle the source.
#   - h5 knows it joined a running cluster (its peers' reports name periods of 10 and more): the
#     first peer debit of the source started it empty there (join_sources_emptied >= 1);
#   - the cluster admits at most the budget (+10%) over the run, and from the join to the
#     end at most rate x that time + 10% (without the guard h5 would admit a burst more);
#   - h1..h4 debited exactly what their peers admitted (h5's reports included), and none of
#     them started the source empty: they came up one after the other (a few seconds apart
#     on a loaded machine, so the last ones hear a running cluster), but the source came
#     after all of them were up: it is new to the cluster, not in flight at their join.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=join

RATE=100
BURST=50
PERIOD=200ms
OFFER=$((20 * RATE))
SECS=9
JOIN_AT=4
# On an emulated CPU (make test-kernel's TCG guest, DT_EMULATED=1) h5's agent took longer to
# come up than the 5 s of spray left, so it never saw the source in flight: 40 s, h5 at 10 s.
emulated && SECS=40 JOIN_AT=10
HOSTS=5

lab_init dtjoin
mlab_up "$HOSTS"

budget() { calc "$BURST + $RATE * $1"; }
start_agent() {
	mlab_agent_start "$1" "j$1" --rate "$RATE" --burst "$BURST" --stats-interval 10m --period "$PERIOD" \
		--peers "$(mlab_peers "$1")" || die "the agent of h$1 did not start"
}

for i in 1 2 3 4; do start_agent "$i"; done
for i in 1 2 3 4; do
	others=()
	for j in 1 2 3 4; do [ "$j" -eq "$i" ] || others+=("h$j"); done
	mlab_wait_peers "j$i" 1 10 "${others[@]}" || die "the agent of h$i did not hear h1..h4 within 10 s"
done

# The scenario: the client comes after the agents that started first have heard each other
# for a while (three periods; cluster_core/join_guard.h: a source a peer reports for the period
# in flight when it was first heard, or the next, counts as in flight at a join).
sleep "$(calc "3 * ${PERIOD%ms} / 1000")"

A=198.18.1.1
echo "== one source at $OFFER/s over $HOSTS hosts for ${SECS}s; h5's agent starts ${JOIN_AT}s in"
spray_start j "$OFFER" "$SECS" "$A"
sleep "$JOIN_AT" # the scenario's timing: h5 joins while the source is throttled
t_join=$(now_s)
at_join=0 # what h1..h4 admitted before h5's agent started (h5 has no XDP program before it)
for i in 1 2 3 4; do
	n=$(source_num "$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)" "$A" passed)
	at_join=$((at_join + ${n:-0}))
done
start_agent 5
mlab_wait_peers j5 1 10 h1 h2 h3 h4 || die "h5's agent did not hear its peers within 10 s"
spray_wait j || die "pktgen failed"
mlab_wait_landed 10 "$A" $(mlab_mesh_specs 1 2 3 4)
mlab_snapshot j1 || die "agent stats failed"

elapsed=$(spray_elapsed j)
after=$(calc "${M_SNAP_T[j1]} - $t_join")
after=$(calc "($after > $elapsed - $JOIN_AT) ? $elapsed - $JOIN_AT : $after") # the spray ended before j1
total=$(snap_sum j1 "$A" passed)
since=$((total - at_join))
printf '  %-6s %8s %8s\n' HOST PASSED DEBITED
for ((i = 1; i <= HOSTS; i++)); do
	printf '  %-6s %8s %8s\n' "h$i" "$(snap_num j1 "$i" "$A" passed)" "$(snap_num j1 "$i" "$A" debited)"
done
emptied=$(json_num "${M_SNAP[j1:5]}" join_sources_emptied)
echo "  total $total, budget $(budget "$elapsed"); after the join $since in ${after}s (rate x that: $(calc "$RATE * $after")); h5 started $emptied sources empty"

check_ge join/h5/knows-it-joined "sources h5 started empty (join_sources_emptied)" "${emptied:-0}" 1
check_le join/within-budget "$A admitted over all hosts, budget $(budget "$elapsed") + 10%" "$total" \
	"$(calc "$(budget "$elapsed") * 1.1")"
check_le join/after-join "$A admitted from h5's start to the end ($after s): rate x that + 10%" "$since" \
	"$(calc "$RATE * $after * 1.1")"
bad=
for i in 1 2 3 4; do
	want=$(calc "$total - $(snap_num j1 "$i" "$A" passed)")
	got=$(snap_num j1 "$i" "$A" debited)
	[ "$got" -eq "$want" ] || bad+=" h$i debited $got, its peers passed $want;"
done
check join/debits-exact "$A:$bad" test -z "$bad"
emptied_early=
for i in 1 2 3 4; do
	n=$(json_num "${M_SNAP[j1:$i]}" join_sources_emptied)
	[ "${n:-0}" -eq 0 ] || emptied_early+=" h$i emptied $n source(s);"
done
check join/started-together-keep-bursts "a client new to the cluster was started empty:$emptied_early" test -z "$emptied_early"
lab_finish
