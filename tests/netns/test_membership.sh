#!/usr/bin/env bash
# test_membership.sh - the cluster's membership and security with real agents (lib.sh's
# multi-host lab: a client, three hosts, a control bridge; rate 100/s, burst 50, reports
# every 200 ms, each source sprayed over the hosts at 20x the rate for 4 s).
#   a. Peers from --peers-file, changed by `agent reload`: h3 added to h1's and h2's files
#      (the outcome line; then one budget over the three: debits exact, total within 10%);
#      a broken file keeps the peers (FILE:LINE, exit 1); h3 removed again (h3's file
#      emptied): h1 and h2 forget h3, nobody debits what the other side admitted, and the
#      cluster admits about two budgets (h1 + h2 one, h3 alone one). Every message h1 and h2
#      receive comes on its sender's own link, which proves it (h3's too, once reloaded in).
#   b. `agent hub` with CurveZMQ: h1 and h2 (keys allowed by the hub) share one budget
#      through it; h3, whose key the hub does not know, is refused (logged by the hub) and
#      neither hears nor is heard (h3 logs the refusal); once its key is added and the hub
#      gets SIGHUP, h3's next retry (every 3 s) gets in.
#   c. Three agents with the same host name (namespaces share it) and no --node-id, all
#      with one peers file listing the three (each its own endpoint too): the default node
#      ids differ, every agent hears the others, no node id clash, one budget.
#   d. An agent started without a cluster whose --config file gets peers: a reload says
#      that joining needs a restart.
# Takes about 45 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=membership

RATE=100
BURST=50
PERIOD=200ms
OFFER=$((20 * RATE))
SECS=4
HOSTS=3

lab_init dtmem
mlab_up "$HOSTS"
declare -A CUR_AGENT=()
T_START=$(now_s)

budget() { calc "$BURST + $RATE * $1"; }
logged() { [ "$(count_lines "$WORK/agent-$1.log" "$2")" -ge "$3" ]; }
lacks() { ! grep -qE "$1" <<<"$2"; }

# run_spray NAME SRC SPEC...: sprays SRC over every host for SECS seconds, waits until
# the last reports have landed (every SPEC "HOST:FROM,..." of mlab_debits_match: who hears
# whom in this run), then snapshots NAME.
run_spray() {
	spray_start "$1" "$OFFER" "$SECS" "$2"
	spray_wait "$1" || die "pktgen failed ($1)"
	mlab_wait_landed 10 "$2" "${@:3}"
	mlab_snapshot "$1" || die "agent stats failed ($1)"
	host_rows "$1" "$2"
}

host_rows() {
	local i
	printf '  %-6s %8s %8s %8s %8s\n' HOST SENT PASSED DROPPED DEBITED
	for ((i = 1; i <= HOSTS; i++)); do
		printf '  %-6s %8s %8s %8s %8s\n' "h$i" "$(spray_sent "$1" "$i" "$2")" "$(snap_num "$1" "$i" "$2" passed)" \
			"$(snap_num "$1" "$i" "$2" dropped)" "$(snap_num "$1" "$i" "$2" debited)"
	done
	echo "  total passed $(snap_sum "$1" "$2" passed), budget $(budget "$(spray_elapsed "$1")")"
}

# check_heard NAME SNAP SRC HOST FROM...: HOST debited exactly what the hosts FROM passed.
check_heard() {
	local name=$1 snap=$2 src=$3 host=$4 want=0 i got
	shift 4
	for i in "$@"; do want=$((want + $(snap_num "$snap" "$i" "$src" passed))); done
	got=$(snap_num "$snap" "$host" "$src" debited)
	check "$name" "h$host debited $got, expected exactly what ${*/#/h} passed: $want" test "$got" -eq "$want"
}

# check_total NAME SNAP SRC LOW HIGH: the total admitted within [LOW, HIGH] x budget.
check_total() {
	local b tot
	b=$(budget "$(spray_elapsed "$2")")
	tot=$(snap_sum "$2" "$3" passed)
	check_ge "$1/min" "$3 admitted over all hosts ($4 x budget $b)" "$tot" "$(calc "$4 * $b")"
	check_le "$1/max" "$3 admitted over all hosts ($5 x budget $b)" "$tot" "$(calc "$5 * $b")"
}

stop_agents() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do
		agent_signal "${CUR_AGENT[$i]}" TERM || die "agent ${CUR_AGENT[$i]} did not exit on SIGTERM"
	done
}

# reload I: `agent reload` of host I's agent; sets OUT and RC.
reload() {
	OUT=$("$AGENT" reload --pin-dir "${M_PIN[$1]}" 2>&1)
	RC=$?
	echo "  reload h$1 (exit $RC): $OUT"
}

# peers_of I LIST...: writes host I's peers file with the control addresses of hosts LIST.
peers_of() {
	local f=$WORK/peers-$1 j
	shift
	echo "# peers of this host (test_membership)" >"$f"
	for j in "$@"; do echo "${M_CTL[j]}:7700   # h$j" >>"$f"; done
}

cluster_peers() { json_get "$(stats_json "${M_PIN[$1]}")" '.cluster.peers // empty'; }
# unproved I: host I's messages received that their link did not prove (cluster/link_senders.h):
# 0 in a mesh of literal addresses, whose every message comes on its sender's own connection.
unproved() {
	json_get "$(stats_json "${M_PIN[$1]}")" '.cluster.counters | .messages_received - .link_authenticated'
}
h3_unlisted() { lacks '"node_id":"h3"' "$(cluster_peers "$1")"; }

# --- a. peers added and removed by a reload ---------------------------------------------------
echo "== a. peers from --peers-file, added and removed by agent reload"
peers_of 1 2
peers_of 2 1
peers_of 3 1 2
for i in 1 2 3; do
	MLAB_NO_WAIT=1 mlab_agent_start "$i" "file$i" --rate "$RATE" --burst "$BURST" --stats-interval 10m --period "$PERIOD" \
		--peers-file "$WORK/peers-$i" || die "the agent of h$i did not start"
	CUR_AGENT[$i]=file$i
done
for i in 1 2 3; do mlab_agent_wait "file$i" || die "the agent of h$i did not start"; done
mlab_wait_peers file1 1 10 h2 && mlab_wait_peers file2 1 10 h1 && mlab_wait_peers file3 1 10 h1 h2 ||
	die "the agents did not hear their first peers within 10 s"
check membership/a/not-yet "h1 heard h3 before h3 was in its peers file" test "$(count_lines "$WORK/agent-file1.log" 'peer h3 is up')" -eq 0

peers_of 1 2 3
peers_of 2 1 3
for i in 1 2; do
	reload "$i"
	check_eq "membership/a/h$i/add-exit" "agent reload exit code (h3 added)" "$RC" 0
	check "membership/a/h$i/add-outcome" "unexpected outcome: $OUT" \
		test "$OUT" = "reloaded: peers: 1 added (${M_CTL[3]}:7700); 2 peers"
	check "membership/a/h$i/hears-h3" "h$i did not log 'peer h3 is up' within 5 s of the reload" mlab_wait_peers "file$i" 1 5 h3
done
A=198.18.1.1
run_spray a-added "$A" $(mlab_mesh_specs)
for i in 1 2 3; do check_heard "membership/a/added/h$i/debits-exact" a-added "$A" "$i" $(for j in 1 2 3; do [ "$j" -ne "$i" ] && echo "$j"; done); done
check_total membership/a/added/one-budget a-added "$A" 0.9 1.1
for i in 1 2; do
	check_eq "membership/a/added/h$i/proved-by-link" "h$i's messages not proved by their link after h3 joined by a reload" \
		"$(unproved "$i")" 0
done

# A broken file: nothing changes.
cp "$WORK/peers-1" "$WORK/peers-1.good"
echo "${M_CTL[3]}   # no port" >>"$WORK/peers-1"
reload 1
check_eq membership/a/broken/exit "agent reload exit code for a broken peers file" "$RC" 1
check membership/a/broken/file-line "the message does not name $WORK/peers-1:4: $OUT" grep -qF "$WORK/peers-1:4: " <<<"$OUT"
check membership/a/broken/kept "the message does not say the 2 peers stay: $OUT" grep -qF "the previous 2 peers stay" <<<"$OUT"
check membership/a/broken/alive "h1's agent exited after a broken reload" alive "${LAB_PIDS[agent-file1]}"
cp "$WORK/peers-1.good" "$WORK/peers-1"

peers_of 1 2
peers_of 2 1
peers_of 3
for i in 1 2; do
	reload "$i"
	check_eq "membership/a/h$i/remove-exit" "agent reload exit code (h3 removed)" "$RC" 0
	check "membership/a/h$i/remove-outcome" "unexpected outcome: $OUT" \
		test "$OUT" = "reloaded: peers: 1 removed (${M_CTL[3]}:7700); 1 peer"
	check "membership/a/h$i/forgot-h3" "h$i did not log 'peer h3 removed: forgotten'" logged "file$i" 'peer h3 removed: forgotten' 1
done
reload 3
check "membership/a/h3/remove-outcome" "unexpected outcome: $OUT" \
	test "$OUT" = "reloaded: peers: 2 removed (${M_CTL[1]}:7700, ${M_CTL[2]}:7700); 0 peers"
# The status files (rewritten every second) drop h3 within 3 s.
for i in 1 2; do
	wait_until 3 h3_unlisted "$i"
	p=$(cluster_peers "$i")
	check "membership/a/h$i/h3-not-listed" "h$i's agent stats still lists h3 3 s after the reload: $p" lacks '"node_id":"h3"' "$p"
done
B=198.18.2.1
run_spray a-removed "$B" 1:2 2:1 3:
check_heard membership/a/removed/h1/debits-h2-only a-removed "$B" 1 2
check_heard membership/a/removed/h2/debits-h1-only a-removed "$B" 2 1
check_heard membership/a/removed/h3/debits-nothing a-removed "$B" 3
check_total membership/a/removed/two-budgets a-removed "$B" 1.7 2.2
check_ge membership/a/buckets-kept "$A's buckets after the reloads (h1 still holds its state: dropped count)" \
	"$(source_num "$(stats_json "${M_PIN[1]}")" "$A" dropped)" "$(snap_num a-added 1 "$A" dropped)"
stop_agents

# --- b. the hub with CurveZMQ ---------------------------------------------------------------
echo
echo "== b. agent hub with CurveZMQ: h1 and h2 allowed, h3's key unknown to the hub"
KEYS=$WORK/keys
mkdir -p "$KEYS" "$WORK/hub-allows" "$WORK/agents-know"
"$AGENT" keygen hub --dir "$KEYS" --endpoint "$HUB_CTL:7701" >/dev/null || die "agent keygen hub failed"
for i in 1 2 3; do "$AGENT" keygen "h$i" --dir "$KEYS" >/dev/null || die "agent keygen h$i failed"; done
cp "$KEYS/h1.pub" "$KEYS/h2.pub" "$WORK/hub-allows/"
# The agents check every report against its node's key (end to end, the hub only relays):
# they know every node's .pub besides the hub's.
cp "$KEYS/hub.pub" "$KEYS/h1.pub" "$KEYS/h2.pub" "$KEYS/h3.pub" "$WORK/agents-know/"
mlab_hub_up
mlab_hub_start hub --curve-key "$KEYS/hub.key" --curve-peers "$WORK/hub-allows" || die "the Curve hub did not start"
check membership/b/hub-curve-on "the hub did not log 'CurveZMQ on'" logged hub 'CurveZMQ on: 2 agent keys allowed' 1
for i in 1 2 3; do
	MLAB_NO_WAIT=1 mlab_agent_start "$i" "sec$i" --rate "$RATE" --burst "$BURST" --stats-interval 10m --period "$PERIOD" \
		--hub "$HUB_CTL:7701" --curve-key "$KEYS/h$i.key" --curve-peers "$WORK/agents-know" ||
		die "the Curve agent of h$i did not start"
	CUR_AGENT[$i]=sec$i
done
for i in 1 2 3; do mlab_agent_wait "sec$i" || die "the Curve agent of h$i did not start"; done
mlab_wait_peers sec1 1 10 h2 && mlab_wait_peers sec2 1 10 h1 || die "h1 and h2 did not hear each other through the Curve hub within 10 s"
pass membership/b/allowed-hear-each-other
check membership/b/refused-logged "the hub did not log refusing h3 (198.19.0.13)" \
	wait_for_line "$WORK/agent-hub.log" "refused an agent from ${M_CTL[3]}: its public key" "${LAB_PIDS[agent-hub]}" 5
C=198.18.3.1
run_spray b "$C" 1:2 2:1 3:
check_heard membership/b/h1/debits-h2 b "$C" 1 2
check_heard membership/b/h2/debits-h1 b "$C" 2 1
check_heard membership/b/h3/hears-nothing b "$C" 3
check_ge membership/b/h3-admitted "h3 passed (it must admit something for the debits to mean anything)" \
	"$(snap_num b 3 "$C" passed)" 1
pair=$(($(snap_num b 1 "$C" passed) + $(snap_num b 2 "$C" passed)))
b_b=$(budget "$(spray_elapsed b)")
check_le membership/b/pair-one-budget "h1 + h2 admitted (one budget $b_b + 10%)" "$pair" "$(calc "1.1 * $b_b")"
check_ge membership/b/pair-near-budget "h1 + h2 admitted (one budget $b_b - 10%)" "$pair" "$(calc "0.9 * $b_b")"
check membership/b/h3-hears-nobody "h3 heard a peer through the hub" test "$(count_lines "$WORK/agent-sec3.log" 'peer h[12] is up')" -eq 0
check membership/b/h3-logs-refusal "h3 did not log that the hub refused its key" \
	logged sec3 "hub $HUB_CTL:7701 refused our CurveZMQ handshake \\(authentication failed, status 400\\)" 1
# The hub reads its allowlist again on SIGHUP: h3 gets in without a restart.
cp "$KEYS/h3.pub" "$WORK/hub-allows/"
kill -HUP "${LAB_PIDS[agent-hub]}"
check membership/b/hub-reloaded "the hub did not log its reloaded allowlist" \
	wait_for_line "$WORK/agent-hub.log" 'reloaded .*: 3 agent keys allowed' "${LAB_PIDS[agent-hub]}" 5
check membership/b/h3-admitted-after-reload "h3 did not hear h1 and h2 within 8 s of the hub's reload (it retries every 3 s)" \
	mlab_wait_peers sec3 1 8 h1 h2
check membership/b/h1-hears-h3-after-reload "h1 did not hear h3 within 5 s of h3 hearing it" mlab_wait_peers sec1 1 5 h3
signed_ok() { [ -n "$1" ] && lacks 'unsigned|unknown_node|bad_signature' "$1"; }
for i in 1 2 3; do
	rej=$(json_get "$(stats_json "${M_PIN[$i]}")" '.cluster.rejected // empty')
	check "membership/b/h$i/signatures-verified" "h$i rejected its peers' signed reports: $rej" \
		signed_ok "$rej"
done
stop_agents

# --- c. the same host name, default node ids --------------------------------------------------
echo
echo "== c. three agents with the same host name ($(hostname)), no --node-id, one peers file for all"
declare -A IDS=()
peers_of all 1 2 3 # one file for every host, each one's own endpoint included
for i in 1 2 3; do
	# Without keys: with a key the agent's node id is the key's (hI), not the default one.
	MLAB_NO_WAIT=1 MLAB_DEFAULT_ID=1 MLAB_INSECURE=1 mlab_agent_start "$i" "same$i" --rate "$RATE" --burst "$BURST" \
		--stats-interval 10m --period "$PERIOD" --peers-file "$WORK/peers-all" || die "the agent of h$i did not start"
	CUR_AGENT[$i]=same$i
done
for i in 1 2 3; do
	mlab_agent_wait "same$i" || die "the agent of h$i did not start"
	wait_for_line "$WORK/agent-same$i.log" 'cluster: node ' "${LAB_PIDS[agent-same$i]}" 5
	IDS[$i]=$(sed -n 's/.*cluster: node \([^,]*\),.*/\1/p' "$WORK/agent-same$i.log" | head -n 1)
done
echo "  node ids: ${IDS[1]} ${IDS[2]} ${IDS[3]}"
check membership/c/ids-differ "default node ids are not all distinct: ${IDS[*]}" \
	test "$(printf '%s\n' "${IDS[@]}" | sort -u | wc -l)" -eq 3
check membership/c/ids-named-after-host "node id ${IDS[1]} does not start with the host name $(hostname)" \
	test "${IDS[1]#"$(hostname)-"}" != "${IDS[1]}"
for i in 1 2 3; do
	others=()
	for j in 1 2 3; do [ "$j" -ne "$i" ] && others+=("${IDS[$j]}"); done
	check "membership/c/h$i/hears-both" "h$i did not log both peers up within 10 s" mlab_wait_peers "same$i" 1 10 "${others[@]}"
done
D=198.18.4.1
run_spray c "$D" $(mlab_mesh_specs)
for i in 1 2 3; do check_heard "membership/c/h$i/debits-exact" c "$D" "$i" $(for j in 1 2 3; do [ "$j" -ne "$i" ] && echo "$j"; done); done
check_total membership/c/one-budget c "$D" 0.9 1.1
for i in 1 2 3; do
	check "membership/c/h$i/no-clash" "h$i logged a node id clash" test "$(count_lines "$WORK/agent-same$i.log" 'uses our node id')" -eq 0
done
stop_agents

# --- d. peers written into the --config file of an agent without a cluster ---------------------
echo
echo "== d. an agent without a cluster gets peers in its --config file: a reload says it cannot join"
printf 'rate = %s\nburst = %s\n' "$RATE" "$BURST" >"$WORK/single.conf"
mlab_agent_start 1 single --config "$WORK/single.conf" --stats-interval 10m || die "the single agent did not start"
echo "peers = ${M_CTL[2]}:7700" >>"$WORK/single.conf"
reload 1
check_eq membership/d/exit "agent reload exit code (peers ignored: reloaded in part)" "$RC" 1
check membership/d/says-restart "the outcome does not say a restart is needed: $OUT" \
	grep -qF "peers: ignored, the agent runs without a cluster (restart it to join one)" <<<"$OUT"
agent_signal single TERM || die "the single agent did not exit on SIGTERM"

echo
echo "membership test: $(calc "$(now_s) - $T_START") s"
lab_finish
