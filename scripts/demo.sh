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
set -uo pipefail
source "$(dirname "$0")/../tests/netns/lib.sh"
TEST_NAME=demo

RATE=100
BURST=50
SECS=10
HOSTS=3
# source:packets per second the client sends in total (over all hosts)
OFFERS=(198.18.1.1:50 198.18.1.2:300 198.18.1.3:2000 2001:2:0:11:::1000)
FLOOD=198.18.1.3 # shown host by host

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
	for offer in "${OFFERS[@]}"; do
		spray_start "$name-${offer%:*}" "${offer##*:}" "$SECS" "${offer%:*}"
	done
	for offer in "${OFFERS[@]}"; do
		spray_wait "$name-${offer%:*}" || die "pktgen failed"
	done
	sleep 0.8 # the last reports reach every peer
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
echo
if [ "$bad" -gt 0 ]; then
	echo "demo: the cluster misbehaved for $bad source(s)"
	FAILURES=$bad
	exit 1
fi
echo "demo: ok - alone, the hosts let the flooding sources through about $HOSTS times their budget;"
echo "      as a cluster, they held each of them to one budget, and the polite source lost nothing."
exit 0
