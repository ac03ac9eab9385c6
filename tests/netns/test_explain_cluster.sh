#!/usr/bin/env bash
# test_explain_cluster.sh - `agent explain ADDR` in a cluster: two hosts in a mesh, one
# source sprayed over both; explain on h1, watching the peers' reports for 1 s, names h2
# as a peer that reported the source, with its hits. About 15 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=explain-cluster

lab_init dtexc

# has TEXT PATTERN: TEXT has a line matching PATTERN (extended regex).
has() { grep -Eq -- "$2" <<<"$1"; }
mlab_up 2
for i in 1 2; do
	mlab_agent_start "$i" "m$i" --rate 100 --burst 50 --period 200ms --stats-interval 10m \
		--peers "$(mlab_peers "$i")" || die "the agent of h$i did not start"
done
mlab_wait_peers m1 1 10 h2 || die "h1 did not hear h2 within 10 s"
# 60/s in all, under the rate: both hosts admit all they see, so h2 reports hits every
# period however the budget is split (a flood over it left h2 in debt, admitting nothing to
# report, once h1's admissions were debited). The spray lasts until explain has watched
# (bounded by 30 s; the wait for the first report by 5 s, both longer on an emulated CPU,
# make test-kernel's TCG guest, where the spray of 5 s was over before explain watched).
SPRAY_S=30 WAIT_S=5
emulated && SPRAY_S=120 WAIT_S=60
spray_start s 60 "$SPRAY_S" 198.18.5.1
# h2's reports of the source reach h1 (h1 debits them) before explain watches them.
wait_until "$WAIT_S" mlab_reporting 198.18.5.1 1 ||
	echo "  (h1 had not debited h2's hits of 198.18.5.1 within $WAIT_S s)"
out=$("$AGENT" explain 198.18.5.1 --pin-dir "${M_PIN[1]}" --watch 1s)
spray_stop s || die "pktgen failed"
echo "--- agent explain 198.18.5.1 on h1 during the spray:"; echo "$out"
check explain/cluster-peers "h1 should name h2 as a peer that reported 198.18.5.1: $out" \
	has "$out" 'peers: in 1\.0 s of watching their reports, h2 reported [1-9][0-9]* hits \(rule default'
lab_finish
