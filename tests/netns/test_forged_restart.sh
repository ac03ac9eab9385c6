#!/usr/bin/env bash
# test_forged_restart.sh - a forged restart changes nothing: three hosts in a
# full mesh without keys (after the key default: --insecure-cluster), and a hostile
# member (tests/netns/zmtp_forger.py, in h3's namespace, on a port h1 subscribes to) that
# publishes, every period, a report in h2's name from a new boot, sent "ten years from
# now". Before, h1 took it as h2's restart and dropped every later report of the real h2
# as a duplicate: h1 stopped charging h2's hits and admitted a sprayed client's budget
# by itself. Now h1 refuses it while the real h2 keeps reporting (counted: rejected
# "restart refused", h2's boot_rejected), and a source sprayed over the three hosts gets
# one budget, every host debiting exactly what its peers admitted.
# b. A message of 1.5 MiB published to `agent hub`: the hub drops that connection
#    (ZMQ_MAXMSGSIZE, 1 MiB) instead of relaying it; the agents behind it see nothing
#    of it and keep hearing each other.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=forged_restart
# The forged restart needs no key: the mesh and the hub run without them (lib.sh).
MLAB_INSECURE=1

RATE=100
BURST=50
PERIOD=200ms
OFFER=$((20 * RATE)) # frames per second, sprayed over all hosts
SECS=8
HOSTS=3
FORGER_PORT=7790
SRC=198.18.7.1

lab_init dtfrg
mlab_up "$HOSTS"

# cluster_json I: host I's cluster status (the "cluster" document of agent stats --json).
cluster_json() {
	"$AGENT" stats --pin-dir "${M_PIN[$1]}" --json --top 0 |
		python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin).get("cluster", {})))'
}

# cluster_field I EXPR: a Python expression over host I's cluster status `c` (0 if absent).
cluster_field() {
	cluster_json "$1" | python3 -c "import json, sys
c = json.load(sys.stdin)
peer = lambda n: next((p for p in c.get('peers', []) if p['node_id'] == n), {})
try:
    print(int($2))
except (KeyError, TypeError, StopIteration):
    print(0)"
}

refused_restarts() { cluster_field 1 "c['rejected'].get('restart refused', 0)"; }

# The hostile member: bound in h3's namespace, forging only once the mesh is up.
nsenter --net="/run/netns/${M_NS[3]}" -- timeout 90 python3 "$DT_ROOT/tests/netns/zmtp_forger.py" \
	--bind "${M_CTL[3]}:$FORGER_PORT" --node-id h2 --go-file "$WORK/forge.go" --secs 60 \
	>"$WORK/forger.log" 2>&1 &
LAB_PIDS[forger]=$!
wait_for_line "$WORK/forger.log" '^listening' "${LAB_PIDS[forger]}" 10 || die "the forger did not start: $(cat "$WORK/forger.log")"

for ((i = 1; i <= HOSTS; i++)); do
	peers=$(mlab_peers "$i")
	[ "$i" -eq 1 ] && peers+=",${M_CTL[3]}:$FORGER_PORT" # h1 also hears the hostile member
	mlab_agent_start "$i" "frg$i" --rate "$RATE" --burst "$BURST" --stats-interval 10m --period "$PERIOD" \
		--peers "$peers" || die "the agent of h$i did not start"
done
for ((i = 1; i <= HOSTS; i++)); do
	# shellcheck disable=SC2046 # mlab_others: the node ids, one word each
	mlab_wait_peers "frg$i" 1 10 $(mlab_others "$i") || die "the agent of h$i did not hear every peer within 10 s"
done
wait_for_line "$WORK/forger.log" '^subscriber' "${LAB_PIDS[forger]}" 10 || die "h1 did not subscribe to the forger"

echo "== h2's reports forged to h1 every period (a new boot, sent ten years ahead), while the real h2 reports"
acc0=$(cluster_field 1 "peer('h2')['accepted']")
sent0=$(cluster_field 2 "c['counters']['messages_sent']")
t0=$(now_s)
touch "$WORK/forge.go"
for ((k = 0; k < 50; k++)); do # until h1 has refused a few forgeries (bounded: 5 s)
	[ "$(refused_restarts)" -ge 3 ] && break
	sleep 0.1
done
check_ge forged_restart/h1/refuses "forged restarts h1 refused (rejected \"restart refused\")" "$(refused_restarts)" 3

echo "== $SRC sprayed over $HOSTS hosts at $OFFER/s for ${SECS}s (rate $RATE/s, burst $BURST)"
spray_start frg "$OFFER" "$SECS" "$SRC"
spray_wait frg || die "pktgen failed"
# The last period's reports: wait until every host has debited what its peers admitted
# (bounded: 3 s; the checks below say which one did not).
debits_complete() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do
		[ "$(snap_num frg "$i" "$SRC" debited)" -ge \
			$(($(snap_sum frg "$SRC" passed) - $(snap_num frg "$i" "$SRC" passed))) ] || return 1
	done
}
for ((k = 0; k < 30; k++)); do
	mlab_snapshot frg || die "agent stats failed"
	debits_complete && break
	sleep 0.1
done

budget=$(calc "$BURST + $RATE * $(spray_elapsed frg)")
total=$(snap_sum frg "$SRC" passed)
printf '  %-6s %8s %8s %8s %8s\n' HOST SENT PASSED DROPPED DEBITED
for ((i = 1; i <= HOSTS; i++)); do
	printf '  %-6s %8s %8s %8s %8s\n' "h$i" "$(spray_sent frg "$i" "$SRC")" "$(snap_num frg "$i" "$SRC" passed)" \
		"$(snap_num frg "$i" "$SRC" dropped)" "$(snap_num frg "$i" "$SRC" debited)"
done
printf '  total %9s %8s, budget %s (x %s)\n' "$(spray_total frg "$SRC")" "$total" "$budget" "$(calc "$total / $budget")"

for ((i = 1; i <= HOSTS; i++)); do
	want=$(($(snap_sum frg "$SRC" passed) - $(snap_num frg "$i" "$SRC" passed)))
	check_eq "forged_restart/h$i/charges-its-peers" "hits of $SRC h$i debited (what its peers admitted)" \
		"$(snap_num frg "$i" "$SRC" debited)" "$want"
done
# Under the attack h1 admitted the whole budget by itself (821 of 883 measured): it heard none
# of h2's hits. That is checked exactly above (h1 debits what h2 admitted) and below (h1
# accepts h2's reports); how one budget splits between the hosts is not (a host may admit
# little of a sprayed source: on a loaded machine h1 479, h2 43, h3 330 of 852, every debit exact).
check_le forged_restart/one-budget "$SRC admitted over all hosts (budget $budget + 10%)" "$total" "$(calc "1.1 * $budget")"
check_ge forged_restart/near-budget "$SRC admitted over all hosts (budget $budget - 10%)" "$total" "$(calc "0.9 * $budget")"
check_eq forged_restart/h1/h2-not-restarted "restarts of h2 seen by h1" "$(cluster_field 1 "peer('h2')['restarts']")" 0
check_ge forged_restart/h1/h2-boot-rejected "h2's new boots h1 refused (peers[h2].boot_rejected)" \
	"$(cluster_field 1 "peer('h2')['boot_rejected']")" 3
# Before, every report of the real h2 after the forgery was dropped as a duplicate. (h2
# sends a report only when it has hits or a heartbeat is due: count what it sent.)
sent=$(($(cluster_field 2 "c['counters']['messages_sent']") - sent0))
check_ge forged_restart/h1/h2-accepted "h2's reports h1 accepted while forged (0.8 x the $sent h2 sent)" \
	"$(($(cluster_field 1 "peer('h2')['accepted']") - acc0))" "$(calc "0.8 * $sent")"
check_ge forged_restart/h2/reported "messages h2 sent while forged (a report a period while it admits hits)" "$sent" 10
check_eq forged_restart/h1/h2-up "h2 up on h1" "$(cluster_field 1 "peer('h2')['up']")" 1

# A stranger-triggered line is rate-limited (5 per 10 s, then a count of those held back).
# The count comes with the first line of the next 10 s window, and the forger still sends
# every period: wait for it (bounded: 12 s; the run so far is 9-11 s, about one window).
for ((k = 0; k < 120; k++)); do
	grep -q 'similar lines suppressed' "$WORK/agent-frg1.log" && break
	sleep 0.1
done
lines=$(count_lines "$WORK/agent-frg1.log" 'rejected a report from h2 of a new boot')
limit=$(calc "5 * ($(floor "$(calc "($(now_s) - $t0) / 10")") + 2)") # windows need not start at t0
check_le forged_restart/h1/log-limited "h1's log lines about refused restarts (5 per 10 s; $(refused_restarts) refused)" \
	"$lines" "$limit"
check forged_restart/h1/log-counts-suppressed "h1's log does not say how many lines it held back" \
	grep -q 'similar lines suppressed' "$WORK/agent-frg1.log"

stop_pid "${LAB_PIDS[forger]}"
echo "  forger: $(tail -n 1 "$WORK/forger.log")"

# --- b. an oversized message to the hub -------------------------------------------------------
echo "== b. a 1.5 MiB message published to agent hub (maximum 1 MiB)"
for ((i = 1; i <= HOSTS; i++)); do agent_signal "frg$i" TERM || die "agent frg$i did not stop"; done
mlab_hub_up
mlab_hub_start hub || die "the hub did not start"
declare -A CUR_AGENT=() # mlab_agents_start's: host -> name of its agent
mlab_agents_start hub hub --rate "$RATE" --burst "$BURST" --stats-interval 10m
big=$(nsenter --net="/run/netns/${M_NS[3]}" -- timeout 20 python3 "$DT_ROOT/tests/netns/zmtp_forger.py" \
	--connect "$HUB_CTL:7701" --oversized $((1536 * 1024)))
check_eq forged_restart/b/hub-drops-it "the hub kept the connection that sent 1.5 MiB (forger: $big)" \
	"$([ "$big" = closed ] && echo 1 || echo 0)" 1
for ((i = 1; i <= HOSTS; i++)); do
	check_eq "forged_restart/b/h$i/never-got-it" "oversized messages h$i received" \
		"$(cluster_field "$i" "c['rejected'].get('oversized', 0)")" 0
	check_eq "forged_restart/b/h$i/peers-stay-up" "'is down' lines in h$i's log" \
		"$(count_lines "$WORK/agent-hub$i.log" 'is down')" 0
done
lab_finish
