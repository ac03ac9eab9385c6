#!/usr/bin/env bash
# test_events_cluster.sh - a peer's liveness reaches the operator's tools (docs/events.md
# "peer_down", "peer_up"): two hosts in a mesh with keys, reports every 200 ms, each agent
# with --on-event running a script that appends its stdin to a file of its own.
#   1. Both agents up: each tells peer_up for the other (its first report).
#   2. h2's agent stops: h1's command gets peer_down for h2 (why "link" or "silent", with
#      silent_s), within --down-after and a period or two; h1 tells no peer_up meanwhile.
#   3. h2's agent starts again: h1's command gets a second peer_up for h2, and the new h2
#      agent's command a peer_up for h1.
#   4. h1's event counters: every child exited 0.
# Waits on the event files and the agents' logs, never fixed sleeps. About 15 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=events_cluster

lab_init dtevc
mlab_up 2
for i in 1 2; do HOOK[i]=$(event_hook "$WORK/events-h$i.jsonl"); done
start_host() {  # start_host I NAME: host I's agent, its events to events-hI.jsonl
	mlab_agent_start "$1" "$2" --rate 1000 --burst 1000 --period 200ms --stats-interval 10m --peers "$(mlab_peers "$1")" \
		--on-event "${HOOK[$1]}"
}
E1=$WORK/events-h1.jsonl
E2=$WORK/events-h2.jsonl
peer_events() { event_count "$1" "$2" peer "$3"; }  # FILE TYPE PEER: how many
peer_events_ge() { [ "$(peer_events "$1" "$2" "$3")" -ge "$4" ]; }

# --- 1. both up ---------------------------------------------------------------------------
MLAB_NO_WAIT=1 start_host 1 m1
MLAB_NO_WAIT=1 start_host 2 m2
for i in 1 2; do mlab_agent_wait "m$i" || die "the agent of h$i did not start"; done
mlab_wait_peers m1 1 10 h2 || die "h1 did not hear h2 within 10 s"
mlab_wait_peers m2 1 10 h1 || die "h2 did not hear h1 within 10 s"
wait_until 5 peer_events_ge "$E1" peer_up h2 1
check events_cluster/h1-up "h1's command got no peer_up for h2 once it heard it: $(tail -2 "$E1")" \
	peer_events_ge "$E1" peer_up h2 1
wait_until 5 peer_events_ge "$E2" peer_up h1 1
check events_cluster/h2-up "h2's command got no peer_up for h1 once it heard it: $(tail -2 "$E2")" \
	peer_events_ge "$E2" peer_up h1 1
UP0=$(peer_events "$E1" peer_up h2)

# --- 2. h2 stops: peer_down at h1 -----------------------------------------------------------
T_STOP=$(now_s)
agent_signal m2 TERM || die "h2's agent did not stop"
wait_until 15 peer_events_ge "$E1" peer_down h2 1
took=$(calc "$(date -r "$E1" +%s.%N) - $T_STOP")
check events_cluster/h1-down "h1's command got no peer_down for h2 within 15 s of h2's stop: $(tail -2 "$E1")" \
	peer_events_ge "$E1" peer_down h2 1
why=$(event_field "$E1" peer_down why peer h2)
silent=$(event_field "$E1" peer_down silent_s peer h2)
echo "peer_down for h2 at h1 ${took} s after h2's agent stopped (why $why, silent_s $silent)"
check events_cluster/down-why "peer_down's why: got $why, expected \"link\" or \"silent\"" \
	grep -qxE '"(link|silent)"' <<<"$why"
check_ge events_cluster/down-silent "peer_down's silent_s" "$silent" 0
check_eq events_cluster/no-up-while-down "peer_up events for h2 at h1 while h2 was down" \
	"$(peer_events "$E1" peer_up h2)" "$UP0"

# --- 3. h2 back: peer_up at h1, and at the new h2 for h1 ------------------------------------
: >"$E2"
T_START=$(now_s)
start_host 2 m2b || die "h2's agent did not start again"
wait_until 15 peer_events_ge "$E1" peer_up h2 $((UP0 + 1))
took=$(calc "$(date -r "$E1" +%s.%N) - $T_START")
check events_cluster/h1-up-again "h1's command got no second peer_up for h2 within 15 s of its restart: $(tail -2 "$E1")" \
	peer_events_ge "$E1" peer_up h2 $((UP0 + 1))
echo "peer_up for h2 at h1 ${took} s after h2's agent was started again"
wait_until 10 peer_events_ge "$E2" peer_up h1 1
check events_cluster/h2b-up "the restarted h2's command got no peer_up for h1: $(tail -2 "$E2")" \
	peer_events_ge "$E2" peer_up h1 1

# --- 4. h1's counters -------------------------------------------------------------------------
failures=$(json_num "$(json_get "$(stats_json "${M_PIN[1]}")" '.events')" command_failures)
check_eq events_cluster/command-failures "h1's --on-event failures" "$failures" 0
lab_finish
