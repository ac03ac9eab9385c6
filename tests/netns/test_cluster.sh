#!/usr/bin/env bash
# test_cluster.sh - one budget per source across three hosts: real agents peering over
# ZeroMQ, real packets (lib.sh's multi-host lab: a client, three hosts, a control bridge).
#
# A load balancer sprays each source evenly over the three hosts (one pktgen per host
# link, each at a third of the rate), at 20x the rate (rate 100/s, burst 50, reports
# every 200 ms). The budget of a source over T seconds is burst + rate x T.
#   a. Local-only agents (no peers) admit about 3 budgets, one per host; agents in a
#      full mesh admit one budget (within 10%), and every host debited exactly what its
#      peers admitted.
#   b. Three sources at once (two IPv4, one IPv6): each held to its own budget.
#   c. SIGKILL h3's agent once the run is under way: h1 and h2 log it down and keep enforcing between
#      them; h3's XDP program keeps enforcing alone from its pinned state, hearing
#      nothing. Bound on the total: the budget plus what one lone bucket can admit while
#      deaf, burst + rate x D (D: from the kill until h3's new agent hears its peers),
#      because what h1 and h2 admitted meanwhile is never debited on h3 (expected: about
#      budget + rate x D). The restarted agent takes over, h1 and h2 log it up again, and
#      it reports what its XDP program admitted meanwhile (h1, h2: debits exact).
#   d. Partition h2 (its control link down) for 3 s once the run is under way: each side enforces on what it hears
#      (h2 alone grants its own share, h1 + h3 theirs); after the heal both sides log
#      each other up; what the sides admitted during the partition, sent while they could
#      not hear each other, is not charged (longer than --report-max-age, 2 s: see
#      test_cluster_faults.sh), no host debits more than its peers passed, and the
#      cluster admits `rate` again (last 3 s of the run, within 15%).
#   e. The same as (a) through an `agent hub` in its own namespace: within 10%.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=cluster

RATE=100
BURST=50
PERIOD=200ms
PERIOD_S=0.2
OFFER=$((20 * RATE)) # frames per second per source, sprayed over all hosts
SECS=10
HOSTS=3

lab_init dtclu
mlab_up "$HOSTS"
declare -A CUR_AGENT=() # host -> name of its running agent

# --- helpers ---------------------------------------------------------------------------------

budget() { calc "$BURST + $RATE * $1"; }
ratio() { calc "$1 / $2"; }

# start_agents NAME local|mesh|hub: one agent per host (NAME1..NAME3); in a cluster,
# waits until every agent has heard every other one.
start_agents() { mlab_agents_start "$1" "$2" --rate "$RATE" --burst "$BURST" --stats-interval 10m; }

# stop_agents: SIGTERM every running agent (detach, unpin: the next run starts afresh).
stop_agents() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do
		agent_signal "${CUR_AGENT[$i]}" TERM || die "agent ${CUR_AGENT[$i]} did not exit on SIGTERM"
		check_eq "cluster/stop/${CUR_AGENT[$i]}" "exit code of agent ${CUR_AGENT[$i]} after SIGTERM" "$EXIT_RC" 0
	done
}

# host_rows SNAP SPRAY SRC: per host, frames sent, passed, dropped, debited; then totals.
host_rows() {
	local snap=$1 spray=$2 src=$3 i
	printf '  %-6s %8s %8s %8s %8s\n' HOST SENT PASSED DROPPED DEBITED
	for ((i = 1; i <= HOSTS; i++)); do
		printf '  %-6s %8s %8s %8s %8s\n' "h$i" "$(spray_sent "$spray" "$i" "$src")" \
			"$(snap_num "$snap" "$i" "$src" passed)" "$(snap_num "$snap" "$i" "$src" dropped)" \
			"$(snap_num "$snap" "$i" "$src" debited)"
	done
	printf '  %-6s %8s %8s %8s %8s\n' total "$(spray_total "$spray" "$src")" \
		"$(snap_sum "$snap" "$src" passed)" "$(snap_sum "$snap" "$src" dropped)" \
		"$(snap_sum "$snap" "$src" debited)"
}

# check_budget NAME SRC ADMITTED BUDGET TOLERANCE: ADMITTED within TOLERANCE (0.1 = 10%).
check_budget() {
	local lo hi
	lo=$(calc "$4 * (1 - $5)")
	hi=$(calc "$4 * (1 + $5)")
	check_le "$1/within-budget" "$2 admitted over all hosts, budget $4 + $(calc "$5 * 100")%" "$3" "$hi"
	check_ge "$1/near-budget" "$2 admitted over all hosts, budget $4 - $(calc "$5 * 100")%" "$3" "$lo"
}

# debits_of SNAP SRC HOST: "WANT GOT": what HOST's peers passed of SRC, what HOST debited.
debits_of() {
	echo "$(($(snap_sum "$1" "$2" passed) - $(snap_num "$1" "$3" "$2" passed))) $(snap_num "$1" "$3" "$2" debited)"
}

# check_debits NAME SNAP SRC HOST...: each HOST debited exactly what the others passed
# (every admitted packet reported once, and applied once on every peer).
check_debits() {
	local name=$1 snap=$2 src=$3 i want got bad=
	shift 3
	for i in "$@"; do
		read -r want got < <(debits_of "$snap" "$src" "$i")
		[ "$got" -eq "$want" ] || bad+=" h$i debited $got, its peers passed $want;"
	done
	check "$name/debits-exact" "$src:$bad" test -z "$bad"
}

# check_debits_after_kill NAME SNAP SRC KILLED HOST...: as check_debits, on hosts that heard
# host KILLED's agent die by SIGKILL. A kill that lands between a period's collection (which
# marks the hits reported) and the report's departure loses that one report: every HOST is
# then short by the same count, at most what KILLED admits in a period (burst + rate x
# period). The client is never charged twice; anything else is a loss on the receiving side.
check_debits_after_kill() {
	local name=$1 snap=$2 src=$3 killed=$4 i want got short= bad= most
	most=$(calc "$BURST + $RATE * $PERIOD_S")
	shift 4
	for i in "$@"; do
		read -r want got < <(debits_of "$snap" "$src" "$i")
		[ -n "$short" ] || short=$((want - got))
		[ "$((want - got))" -eq "$short" ] || bad+=" h$i short by $((want - got)), another host by $short;"
		[ "$got" -le "$want" ] || bad+=" h$i debited $got, more than its peers passed ($want);"
	done
	[ "$short" -gt 0 ] && echo "  every host short by $short: one report of h$killed lost to the SIGKILL (at most $most)"
	num_le "$short" "$most" || bad+=" short by $short, more than one period of h$killed ($most);"
	check "$name/debits-exact" "$src:$bad" test -z "$bad"
}

# check_verdicts NAME SNAP SPRAY SRC: on every host, passed + dropped = frames sent.
check_verdicts() {
	local i sent seen bad=
	for ((i = 1; i <= HOSTS; i++)); do
		sent=$(spray_sent "$3" "$i" "$4")
		seen=$(($(snap_num "$2" "$i" "$4" passed) + $(snap_num "$2" "$i" "$4" dropped)))
		[ "$seen" -eq "$sent" ] || bad+=" h$i: $sent sent, $seen passed + dropped;"
	done
	check "$1/verdicts" "$4:$bad" test -z "$bad"
}

# logged NAME PATTERN COUNT: agent NAME logged PATTERN at least COUNT times.
logged() { [ "$(count_lines "$WORK/agent-$1.log" "$2")" -ge "$3" ]; }

T_START=$(now_s)

# --- a. local-only vs the full mesh ----------------------------------------------------------
echo "== a. one source sprayed over $HOSTS hosts at $OFFER/s for ${SECS}s (rate $RATE/s, burst $BURST)"
A=198.18.1.1
start_agents loc local
spray_start a-loc "$OFFER" "$SECS" "$A"
spray_wait a-loc || die "pktgen failed (local-only run)"
mlab_snapshot a-loc || die "agent stats failed"
stop_agents

start_agents mesh mesh
spray_start a-mesh "$OFFER" "$SECS" "$A"
spray_wait a-mesh || die "pktgen failed (cluster run)"
mlab_wait_landed 10 "$A" $(mlab_mesh_specs)
mlab_snapshot a-mesh || die "agent stats failed"
# The sprayed source is shared and throttled: a host that admits its hits also sends them at
# the early ticks while its bucket is below half the burst (cluster_core/shared_early.h).
declare -A EARLY_CTX=() # host -> the counters that explain its shared_early_entries, for a failure
for ((i = 1; i <= HOSTS; i++)); do
	doc=$(json_value "$("$AGENT" stats --pin-dir "${M_PIN[$i]}" --json --top 0)" cluster)
	SHARED_EARLY[$i]=$(json_num "$doc" shared_early_entries)
	EARLY_CTX[$i]="early_ticks $(json_num "$doc" early_ticks), mesh_periods $(json_num "$doc" mesh_periods)"
	EARLY_CTX[$i]+=", join_sources_emptied $(json_num "$doc" join_sources_emptied)"
	EARLY_CTX[$i]+=", status written $(awk -v w="$(json_num "$doc" written_unix_ms)" -v n="$(date +%s%3N)" 'BEGIN { print n - w }') ms before"
done

b_loc=$(budget "$(spray_elapsed a-loc)")
b_mesh=$(budget "$(spray_elapsed a-mesh)")
tot_loc=$(snap_sum a-loc "$A" passed)
tot_mesh=$(snap_sum a-mesh "$A" passed)
printf '  %-6s | %-26s | %-35s\n' "" "LOCAL ONLY (no peers)" "CLUSTER (full mesh)"
printf '  %-6s | %8s %8s %8s | %8s %8s %8s %8s\n' HOST SENT PASSED DROPPED SENT PASSED DROPPED DEBITED
for ((i = 1; i <= HOSTS; i++)); do
	printf '  %-6s | %8s %8s %8s | %8s %8s %8s %8s\n' "h$i" \
		"$(spray_sent a-loc "$i" "$A")" "$(snap_num a-loc "$i" "$A" passed)" "$(snap_num a-loc "$i" "$A" dropped)" \
		"$(spray_sent a-mesh "$i" "$A")" "$(snap_num a-mesh "$i" "$A" passed)" \
		"$(snap_num a-mesh "$i" "$A" dropped)" "$(snap_num a-mesh "$i" "$A" debited)"
done
printf '  %-6s | %8s %8s %8s | %8s %8s %8s %8s\n' total \
	"$(spray_total a-loc "$A")" "$tot_loc" "$(snap_sum a-loc "$A" dropped)" \
	"$(spray_total a-mesh "$A")" "$tot_mesh" "$(snap_sum a-mesh "$A" dropped)" "$(snap_sum a-mesh "$A" debited)"
printf '  %-6s | %8s %8s %8s | %8s %8s\n' budget "" "$b_loc" "" "" "$b_mesh"
printf '  %-6s | %8s %8s %8s | %8s %8s\n' x "" "$(ratio "$tot_loc" "$b_loc")" "" "" "$(ratio "$tot_mesh" "$b_mesh")"
check_ge cluster/a/local/about-3x "local-only admitted over all hosts (more than 2.5 x budget $b_loc)" \
	"$tot_loc" "$(calc "2.5 * $b_loc")"
for ((i = 1; i <= HOSTS; i++)); do
	check_le "cluster/a/local/h$i/own-budget" "h$i alone admitted (its own budget + 2)" \
		"$(snap_num a-loc "$i" "$A" passed)" "$(calc "$(floor "$b_loc") + 2")"
done
check_verdicts cluster/a/local a-loc a-loc "$A"
check_budget cluster/a/mesh "$A" "$tot_mesh" "$b_mesh" 0.1
# Only a host with hits to send has early entries: which hosts admit the source depends on
# when their packets come (under load one host took 1049 of 1063 and another 6, with no
# shared early entry), so the check is on the host that admitted the most.
top=1
for ((i = 1; i <= HOSTS; i++)); do
	echo "  h$i admitted $(snap_num a-mesh "$i" "$A" passed), shared_early_entries ${SHARED_EARLY[$i]} (${EARLY_CTX[$i]})"
	[ "$(snap_num a-mesh "$i" "$A" passed)" -gt "$(snap_num a-mesh "$top" "$A" passed)" ] && top=$i
done
check_ge cluster/a/mesh/shared-early "h$top, which admitted $(snap_num a-mesh "$top" "$A" passed) of $tot_mesh: entries of the shared throttled source sent at early ticks (${EARLY_CTX[$top]})" \
	"${SHARED_EARLY[$top]}" 1
check_debits cluster/a/mesh a-mesh "$A" 1 2 3
check_verdicts cluster/a/mesh a-mesh a-mesh "$A"

# --- b. several sources at once --------------------------------------------------------------
B_SECS=6
B_SOURCES=(198.18.2.1 198.18.2.2 2001:2:0:21::)
echo
echo "== b. ${#B_SOURCES[@]} sources at once, each at $OFFER/s for ${B_SECS}s (full mesh)"
spray_start b $((OFFER * ${#B_SOURCES[@]})) "$B_SECS" "$(IFS=,; echo "${B_SOURCES[*]}")"
spray_wait b || die "pktgen failed (several sources)"
for src in "${B_SOURCES[@]}"; do mlab_wait_landed 10 "$src" $(mlab_mesh_specs); done
mlab_snapshot b || die "agent stats failed"
b_b=$(budget "$(spray_elapsed b)")
printf '  %-12s %7s %7s %7s %7s %7s %8s %6s\n' SOURCE SENT h1 h2 h3 TOTAL BUDGET x
for src in "${B_SOURCES[@]}"; do
	tot=$(snap_sum b "$src" passed)
	printf '  %-12s %7s %7s %7s %7s %7s %8s %6s\n' "$src" "$(spray_total b "$src")" \
		"$(snap_num b 1 "$src" passed)" "$(snap_num b 2 "$src" passed)" "$(snap_num b 3 "$src" passed)" \
		"$tot" "$b_b" "$(ratio "$tot" "$b_b")"
	check_budget "cluster/b/$src" "$src" "$tot" "$b_b" 0.1
	check_debits "cluster/b/$src" b "$src" 1 2 3
done

# --- c. a peer killed mid-run, then restarted ------------------------------------------------
C=198.18.3.1
echo
echo "== c. SIGKILL h3's agent once the ${SECS}s run is under way, restart it 3 s later"
spray_start c "$OFFER" "$SECS" "$C"
mlab_check_under_way cluster/c/under-way "$C" 10 1 2 3
t0=$(now_s)
mlab_snapshot c-kill || die "agent stats failed"
agent_signal "${CUR_AGENT[3]}" KILL || die "h3's agent did not die on SIGKILL"
check cluster/c/still-attached "h3's XDP program was detached when its agent was killed" \
	eval "ip -n '${M_NS[3]}' link show dev '${M_DIF[3]}' | grep -q xdp"
for i in 1 2; do
	check "cluster/c/h$i/logs-h3-down" "h$i did not log 'peer h3 is down' within 3 s" \
		wait_for_lines "$WORK/agent-${CUR_AGENT[$i]}.log" 'peer h3 is down' 1 "${LAB_PIDS[agent-${CUR_AGENT[$i]}]}" 3
done
sleep_to "$t0" 3 # h3's agent stays dead for 3 s
mlab_snapshot c-restart || die "agent stats failed"
mlab_agent_start 3 mesh3b --rate "$RATE" --burst "$BURST" --stats-interval 10m --period "$PERIOD" \
	--peers "$(mlab_peers 3)" || die "h3's agent did not restart"
CUR_AGENT[3]=mesh3b
check cluster/c/h3/took-over "the restarted agent of h3 did not log 'took over'" logged mesh3b 'took over dthrottle' 1
for i in 1 2; do
	check "cluster/c/h$i/logs-h3-up-again" "h$i did not log 'peer h3 is up' again within 5 s of the restart" \
		mlab_wait_peers "${CUR_AGENT[$i]}" 2 5 h3
done
check cluster/c/h3/hears-peers "the restarted h3 did not log h1 and h2 up within 5 s" mlab_wait_peers mesh3b 1 5 h1 h2
t_hear=$(now_s) # h3 was deaf from the kill until now
spray_wait c || die "pktgen failed (peer killed)"
mlab_wait_landed 10 "$C" $(mlab_mesh_specs 1 2)
mlab_snapshot c || die "agent stats failed"
dead=$(calc "${M_SNAP_T[c-restart]} - ${M_SNAP_T[c-kill]}")
b_c=$(budget "$(spray_elapsed c)")
pair=$(($(snap_num c-restart 1 "$C" passed) + $(snap_num c-restart 2 "$C" passed) -
	$(snap_num c-kill 1 "$C" passed) - $(snap_num c-kill 2 "$C" passed)))
lone=$(($(snap_num c-restart 3 "$C" passed) - $(snap_num c-kill 3 "$C" passed)))
deaf=$(calc "$t_hear - ${M_SNAP_T[c-kill]}")
bound_c=$(calc "$b_c + $BURST + $RATE * $deaf")
tot_c=$(snap_sum c "$C" passed)
host_rows c c "$C"
echo "  while h3's agent was dead (${dead}s): h1+h2 admitted $pair, h3 alone $lone"
echo "  total $tot_c: budget $b_c, x $(ratio "$tot_c" "$b_c"); bound $bound_c = budget + what h3 may admit" \
	"alone while deaf (burst + rate x ${deaf}s, from the kill until its new agent heard its peers)"
check_le cluster/c/pair-enforces "h1 + h2 admitted while h3's agent was dead (one shared budget: burst + rate x ${dead}s + 10%)" \
	"$pair" "$(calc "$BURST + 1.1 * $RATE * $dead")"
check_le cluster/c/h3-enforces-alone "h3's XDP admitted while its agent was dead (burst + rate x ${dead}s + 10%)" \
	"$lone" "$(calc "$BURST + 1.1 * $RATE * $dead")"
check_le cluster/c/bounded "$C admitted over all hosts (budget + burst + rate x ${deaf}s)" "$tot_c" "$bound_c"
check_ge cluster/c/admits "$C admitted over all hosts (at least 90% of the budget)" "$tot_c" "$(calc "0.9 * $b_c")"
# h1 and h2 heard everything, including what h3 admitted while its agent was dead (but a
# report the kill caught between collection and send).
check_debits_after_kill cluster/c c "$C" 3 1 2

# --- d. a partition, then the heal -----------------------------------------------------------
D=198.18.4.1
CUT=2
echo
echo "== d. h$CUT cut off the control network once the run is under way, for 3 s, then healed"
# The senders' bound is generous (the run takes about 15 s, over a minute on an emulated
# kernel under make test-kernel): they are stopped once the window after the heal is measured.
# An emulated CPU of another architecture (DT_EMULATED=1) took 100 s and more to reach that
# window (38 s before the cluster debited the source, 21 s of partition, 24 s to log the
# peers up again): its senders may send for 600 s.
D_SECS=90
emulated && D_SECS=600
spray_start d "$OFFER" "$D_SECS" "$D"
mlab_check_under_way cluster/d/under-way "$D" 10 1 2 3
t0=$(now_s)
mlab_snapshot d-cut || die "agent stats failed"
mlab_cut "$CUT" || die "cannot take h$CUT's control link down"
declare -A UPS=() # host -> the peers it loses in the partition
for ((i = 1; i <= HOSTS; i++)); do
	if [ "$i" -eq "$CUT" ]; then UPS[$i]=$(mlab_others "$i"); else UPS[$i]=h$CUT; fi
	for p in ${UPS[$i]}; do
		check "cluster/d/h$i/logs-$p-down" "h$i did not log 'peer $p is down' within 3 s of the cut" \
			wait_for_lines "$WORK/agent-${CUR_AGENT[$i]}.log" "peer $p is down" 1 "${LAB_PIDS[agent-${CUR_AGENT[$i]}]}" 3
	done
done
sleep_to "$t0" 3 # the partition lasts 3 s: longer than --report-max-age (2 s)
mlab_snapshot d-heal || die "agent stats failed"
declare -A UP_BEFORE=() # "host:peer" -> "peer ... is up" lines before the heal
for ((i = 1; i <= HOSTS; i++)); do
	for p in ${UPS[$i]}; do UP_BEFORE[$i:$p]=$(count_lines "$WORK/agent-${CUR_AGENT[$i]}.log" "peer $p is up"); done
done
mlab_heal "$CUT" || die "cannot bring h$CUT's control link back up"
up_ok=1
for ((i = 1; i <= HOSTS; i++)); do
	for p in ${UPS[$i]}; do
		n=${UP_BEFORE[$i:$p]}
		mlab_wait_peers "${CUR_AGENT[$i]}" $((n + 1)) 10 "$p" && continue
		up_ok=0
		fail "cluster/d/h$i/$p-up-again" "h$i did not log 'peer $p is up' again within 10 s of the heal"
	done
done
[ "$up_ok" -eq 1 ] && pass cluster/d/peers-up-again
t_up=$(now_s)
# The queued reports of the partition are applied (every peer's last report is fresh
# again): read the debt they created.
wait_until 10 mlab_reports_fresh "$t_up" 400 || echo "  (the peers' reports were not fresh again within 10 s of the heal)"
mlab_snapshot d-debt || die "agent stats failed"
debt=$(for ((i = 1; i <= HOSTS; i++)); do snap_num d-debt "$i" "$D" tokens; done |
	awk 'BEGIN { d = 0 } -$1 > d { d = -$1 } END { print d }')
sleep "$(calc "$debt / $RATE + 0.5")" # the debt is paid back at RATE: time must pass
mlab_snapshot d-w0 || die "agent stats failed"
sleep 3 # the window the cluster's admitted rate is measured over
mlab_snapshot d-w1 || die "agent stats failed"
check cluster/d/window-in-run "the senders' ${D_SECS} s limit ended before the window after the heal was measured" \
	alive "${LAB_PIDS[spray-d-1]}"
spray_stop d || die "pktgen failed (partition)"
# The partition's hits are never charged, so no exact count can be awaited: wait until the
# debits stop moving (3 report periods).
mlab_wait_steady 10 "$D" 0.6
mlab_snapshot d || die "agent stats failed"
part=$(calc "${M_SNAP_T[d-heal]} - ${M_SNAP_T[d-cut]}")
alone=$(($(snap_num d-heal "$CUT" "$D" passed) - $(snap_num d-cut "$CUT" "$D" passed)))
rest=$(($(snap_sum d-heal "$D" passed) - $(snap_sum d-cut "$D" passed) - alone))
win=$(calc "${M_SNAP_T[d-w1]} - ${M_SNAP_T[d-w0]}")
win_rate=$(calc "($(snap_sum d-w1 "$D" passed) - $(snap_sum d-w0 "$D" passed)) / $win")
host_rows d d "$D"
echo "  partition ${part}s: h$CUT alone admitted $alone, the other two $rest (rate x ${part}s = $(calc "$RATE * $part"))"
echo "  heal: peers up again after $(calc "$t_up - ${M_SNAP_T[d-heal]}")s; largest debt then $debt tokens," \
	"paid back at $RATE/s"
echo "  last ${win}s of the run: $win_rate admitted/s over all hosts (rate $RATE)"
for who in "h$CUT-alone:$alone" "$(mlab_others "$CUT" | tr ' ' '+' | sed 's/+$//'):$rest"; do
	check_le "cluster/d/${who%%:*}/enforces" "${who%%:*} admitted during the partition (burst + rate x ${part}s + 10%)" \
		"${who##*:}" "$(calc "$BURST + 1.1 * $RATE * $part")"
	check_ge "cluster/d/${who%%:*}/grants-its-share" "${who%%:*} admitted during the partition (half of rate x ${part}s)" \
		"${who##*:}" "$(calc "0.5 * $RATE * $part")"
done
bad=
for ((i = 1; i <= HOSTS; i++)); do
	read -r want got < <(debits_of d "$D" "$i")
	echo "  h$i debited $got of its peers' $want (the rest was the partition's, not charged)"
	[ "$got" -le "$want" ] || bad+=" h$i debited $got, its peers passed $want;"
done
check cluster/d/never-charged-twice "$D:$bad" test -z "$bad"
check_le cluster/d/reconverged-max "admitted/s over all hosts in the last ${win}s (rate + 15%)" "$win_rate" "$(calc "1.15 * $RATE")"
check_ge cluster/d/reconverged-min "admitted/s over all hosts in the last ${win}s (rate - 15%)" "$win_rate" "$(calc "0.85 * $RATE")"
stop_agents

# --- e. the same as (a) through a hub --------------------------------------------------------
E=198.18.5.1
echo
echo "== e. as (a), agents peering through 'agent hub' ($HUB_CTL:7701) in its own namespace"
mlab_hub_up
mlab_hub_start hub || die "the hub did not start"
start_agents viahub hub
spray_start e "$OFFER" "$SECS" "$E"
spray_wait e || die "pktgen failed (hub)"
mlab_wait_landed 10 "$E" $(mlab_mesh_specs)
mlab_snapshot e || die "agent stats failed"
b_e=$(budget "$(spray_elapsed e)")
tot_e=$(snap_sum e "$E" passed)
host_rows e e "$E"
echo "  budget $b_e, x $(ratio "$tot_e" "$b_e")"
check_budget cluster/e "$E" "$tot_e" "$b_e" 0.1
check_debits cluster/e e "$E" 1 2 3
stop_agents

echo
echo "cluster test: $(calc "$(now_s) - $T_START") s"
lab_finish
