#!/usr/bin/env bash
# demo.sh - dthrottle on real packets, in a throwaway lab (`make demo`, as root).
#
# Builds nothing (make does that first). A client namespace, three host namespaces
# (one veth link each from the client: the "load balancer") and a control bridge for
# the agents (tests/netns/lib.sh, mlab_up). Four spoofed sources, from polite to 20x
# over the limit, are sprayed evenly over the three hosts for 10 s, twice: first with
# three agents that do not talk to each other, then with the same agents in a full
# mesh. Prints per source what was offered, the budget, what got through in each run
# and the ratio to the budget. Removes everything it created. Exit status 1 if the
# cluster run let any source through more than 10% off its budget (or dropped
# packets of a polite source).
#
# It also charts, for the flooding source, what the client offered and what the hosts
# let through per second, host by host and in total, alone vs as a cluster: a sampler
# reads every host's counters each TICK during both runs; the rates go to build/demo.dat
# (gnuplot datablocks) and scripts/plot.gnuplot draws build/demo.png (`make plot` redraws
# it). No chart (gnuplot missing or failing) is reported but does not fail the demo.
set -uo pipefail
source "$(dirname "$0")/../tests/netns/lib.sh"
TEST_NAME=demo

RATE=100
BURST=50
SECS=10
HOSTS=3
# source:packets per second the client sends in total (over all hosts)
OFFERS=(198.18.1.1:50 198.18.1.2:300 198.18.1.3:2000 2001:2:0:11:::1000)
FLOOD=198.18.1.3 # shown host by host, and charted
TICK=0.25        # the chart's sampling period (s)
CHART_DATA=$DT_ROOT/build/demo.dat
CHART=$DT_ROOT/build/demo.png
declare -A SPRAY_T0=() # run -> when its spray started (s)

lab_init dtdemo
cat <<EOF
dthrottle demo: a load balancer sprays each client over $HOSTS hosts, and every host runs
dthrottle: a source address gets a bucket of $BURST packets that refills at $RATE per second;
its packets beyond that are dropped by XDP before the kernel spends any work on them.
So in $SECS s a source should get at most $BURST + $RATE x $SECS = $((BURST + RATE * SECS)) packets through: its budget.

But each host sees only a third of a client's packets. On its own, each host grants the
client a full budget, and the client gets $HOSTS budgets. In a cluster, every host tells
the others every 200 ms how many packets it let through from each source, and the
others take that many tokens from their own bucket for that source (it may go below
zero): the client gets one budget in total, whichever host it lands on.

Two runs of $SECS s with the same traffic: agents alone, then agents in a full mesh.
Lab: namespaces $LAB-*, 198.18.0.0/15 and 2001:2::/48 only. Everything is removed at the end.
EOF
mlab_up "$HOSTS"

# sample NAME: every TICK s, until $WORK/stop-NAME exists (and for SECS + 10 s at most),
# appends to $WORK/samples-NAME a line: the time, then FLOOD's passed and dropped
# counters on each host (agent stats, read from the pins).
sample() {
	local name=$1 start max k i json line delay
	trap - EXIT INT TERM # the lab's cleanup belongs to the demo, not to this subshell
	start=$(now_s)
	max=$(floor "$(calc "($SECS + 10) / $TICK")")
	for ((k = 1; k <= max; k++)); do
		[ -e "$WORK/stop-$name" ] && return 0
		line=$(now_s)
		for ((i = 1; i <= HOSTS; i++)); do
			# A read that fails loses this sample only: the next rate spans the gap.
			json=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0 2>/dev/null) || { line=; break; }
			line+=" $(flood_num "$json" passed) $(flood_num "$json" dropped)"
		done
		[ -n "$line" ] && echo "$line" >>"$WORK/samples-$name"
		delay=$(calc "$start + $k * $TICK - $(now_s)") # keep to the schedule, not TICK + work
		num_ge "$delay" 0 && sleep "$delay"
	done
}

# flood_num JSON KEY: KEY of FLOOD in agent stats JSON; 0 for a source not seen yet.
flood_num() {
	local v
	v=$(source_num "$1" "$FLOOD" "$2")
	echo "${v:-0}"
}

# sampler_stop NAME: ends sampler NAME and waits for it (5 s at most).
sampler_stop() {
	touch "$WORK/stop-$1"
	wait_exit "${LAB_PIDS[sampler-$1]}" 5
}

# run NAME [CLUSTER OPTIONS]: starts the three agents, sprays every source for SECS
# seconds, reads every host's counters (snapshot NAME) and stops the agents.
run() {
	local name=$1 mesh=${2:-} i j offer peers
	for ((i = 1; i <= HOSTS; i++)); do
		peers=()
		[ -n "$mesh" ] && peers=(--peers "$(mlab_peers "$i")")
		mlab_agent_start "$i" "$name$i" --rate "$RATE" --burst "$BURST" --stats-interval 10m "${peers[@]}" ||
			die "the agent of h$i did not start"
	done
	for ((i = 1; i <= HOSTS; i++)); do
		[ -n "$mesh" ] || break
		for ((j = 1; j <= HOSTS; j++)); do
			[ "$j" -eq "$i" ] || mlab_wait_peers "$name$i" 1 10 "h$j" ||
				die "the agent of h$i did not hear h$j within 10 s"
		done
	done
	sample "$name" &
	LAB_PIDS[sampler-$name]=$!
	# Its first sample (all zeros) before the first packet: the chart's origin.
	wait_for_line "$WORK/samples-$name" . "${LAB_PIDS[sampler-$name]}" 5 ||
		die "the chart's sampler could not read the agents' counters"
	SPRAY_T0[$name]=$(now_s)
	for offer in "${OFFERS[@]}"; do
		spray_start "$name-${offer%:*}" "${offer##*:}" "$SECS" "${offer%:*}"
	done
	for offer in "${OFFERS[@]}"; do
		spray_wait "$name-${offer%:*}" || die "pktgen failed"
	done
	sleep 0.8 # the last reports reach every peer
	sampler_stop "$name" || die "the chart's sampler did not stop"
	mlab_snapshot "$name" || die "agent stats failed"
	for ((i = 1; i <= HOSTS; i++)); do
		agent_signal "$name$i" TERM || die "agent $name$i did not exit"
	done
}

echo
echo "Run 1: $HOSTS agents, each on its own..."
run alone
echo "Run 2: $HOSTS agents in a cluster (full mesh over ZeroMQ, reports every 200 ms)..."
run cluster mesh

echo
printf '%-12s %-23s | %-15s | %s\n' "" "   ---- OFFERED ----" " ---- ALONE ----" " --- CLUSTER ---"
printf '%-12s %7s %6s %8s | %9s %5s | %9s %5s |  %s\n' SOURCE RATE SENT BUDGET ADMITTED x ADMITTED x VERDICT
ratio_of() { calc "$1 / $2"; }
bad=0
for offer in "${OFFERS[@]}"; do
	src=${offer%:*} pps=${offer##*:}
	sent=$(spray_total "cluster-$src" "$src")
	budget=$(calc "$BURST + $RATE * $(spray_elapsed "cluster-$src")")
	budget_alone=$(calc "$BURST + $RATE * $(spray_elapsed "alone-$src")")
	alone=$(snap_sum alone "$src" passed)
	cluster=$(snap_sum cluster "$src" passed)
	if [ "$sent" -le "$(floor "$budget")" ]; then
		if [ "$cluster" -eq "$sent" ]; then verdict="ok: under the limit, nothing dropped"
		else verdict="WRONG: dropped packets of a source under its limit"; fi
	elif num_le "$cluster" "$(calc "1.1 * $budget")" && num_ge "$cluster" "$(calc "0.9 * $budget")"; then
		verdict="ok: one budget over $HOSTS hosts"
	else
		verdict="WRONG: more than 10% off its budget"
	fi
	[[ $verdict == ok* ]] || bad=$((bad + 1))
	[ "$src" = "$FLOOD" ] && FLOOD_PPS=$pps FLOOD_BUDGET=$budget
	printf '%-12s %5s/s %6s %8.0f | %9s %5.2f | %9s %5.2f |  %s\n' "$src" "$pps" "$sent" "$budget" \
		"$alone" "$(ratio_of "$alone" "$budget_alone")" "$cluster" "$(ratio_of "$cluster" "$budget")" "$verdict"
done

per_host() { # SNAPSHOT: what FLOOD got through on each host
	local i
	for ((i = 1; i <= HOSTS; i++)); do printf ' h%s %s' "$i" "$(snap_num "$1" "$i" "$FLOOD" passed)"; done
}
cat <<EOF

RATE/SENT: what the client sent from that (spoofed) address, over all $HOSTS hosts. BUDGET: $BURST +
$RATE/s x the seconds it sent. ADMITTED: what the XDP programs let through, summed over the
hosts (agent stats); x: admitted / budget. 198.18.1.2 sends 3 times the rate, but each host
sees only $RATE/s of it, exactly the rate: alone, no host drops any of it. $FLOOD got
through, host by host:
  alone:  $(per_host alone)   (each host granted its own budget)
  cluster:$(per_host cluster)   (one budget, shared)
EOF

# rates NAME: the samples of run NAME as rates, one line per sample: the time since the
# spray started, then FLOOD's admitted packets/s on each host, in total, and offered
# (admitted + dropped, all hosts), each over the WINDOW s before it. A whole second,
# not one TICK: a host's share in the cluster is a few packets per TICK, and the peers'
# reports arrive every 200 ms, so per-TICK rates beat against them.
WINDOW=1
rates() {
	awk -v t0="${SPRAY_T0[$1]}" -v n="$HOSTS" -v window="$WINDOW" '
	{
		t[NR] = $1
		for (i = 1; i <= n; i++) { p[NR, i] = $(2 * i); d[NR, i] = $(2 * i + 1) }
		for (j = NR - 1; j > 1 && t[NR] - t[j - 1] <= window + 0.01; j--) {}
		if (NR == 1 || t[NR] <= t[j]) next
		dt = t[NR] - t[j]; total = 0; offered = 0
		line = sprintf("%.3f", t[NR] - t0)
		for (i = 1; i <= n; i++) {
			a = (p[NR, i] - p[j, i]) / dt
			total += a; offered += a + (d[NR, i] - d[j, i]) / dt
			line = line sprintf(" %.1f", a)
		}
		printf "%s %.1f %.1f\n", line, total, offered
	}' "$WORK/samples-$1"
}

# chart: writes CHART_DATA (the parameters and one datablock per run) and draws CHART.
chart() {
	local name
	command -v gnuplot >/dev/null || { echo "chart: none (gnuplot is missing: make deps)"; return; }
	{
		echo "# dthrottle demo ($(date -u +%Y-%m-%dT%H:%MZ)), written by scripts/demo.sh; draw with: make plot"
		printf 'source = "%s"; offer = %s; rate = %s; burst = %s; hosts = %s; secs = %s\n' \
			"$FLOOD" "$FLOOD_PPS" "$RATE" "$BURST" "$HOSTS" "$SECS"
		printf 'budget = %.0f; admitted_alone = %s; admitted_cluster = %s\n' \
			"$FLOOD_BUDGET" "$(snap_sum alone "$FLOOD" passed)" "$(snap_sum cluster "$FLOOD" passed)"
		for name in alone cluster; do
			echo "\$$name << EOD"
			echo "# t_s ${HOSTS} hosts' admitted/s, total admitted/s, offered/s"
			rates "$name"
			echo EOD
		done
	} >"$CHART_DATA"
	if gnuplot -e "data='$CHART_DATA'; out='$CHART'" "$DT_ROOT/scripts/plot.gnuplot"; then
		echo "chart: $CHART (what $FLOOD offered and got through per second, alone vs cluster)"
	else
		echo "chart: none (gnuplot failed on $CHART_DATA)"
	fi
}
echo
chart

echo
if [ "$bad" -gt 0 ]; then
	echo "demo: the cluster misbehaved for $bad source(s)"
	FAILURES=$bad
	exit 1
fi
echo "demo: ok - alone, the hosts let the flooding sources through about $HOSTS times their budget;"
echo "      as a cluster, they held each of them to one budget, and the polite source lost nothing."
exit 0
