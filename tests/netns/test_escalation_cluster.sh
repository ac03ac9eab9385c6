#!/usr/bin/env bash
# test_escalation_cluster.sh - an escalation's ban is a cluster's ban (docs/rules.md
# "Escalation"): three hosts in a mesh with keys, reports every 200 ms, the same rule
# (udp, rate 100/s, burst 50, escalate after 2 s for 20 s) on each. A 2,000 pps flood
# reaches h1 only: h1 bans it (origin auto) and h2 and h3 hold the ban (origin h1/auto)
# within a period or two of h1's ban (measured from h1's log line to theirs). A client
# under its rate is banned nowhere. About 20 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=escalation_cluster

FLOOD=198.18.7.1
CLIENT=198.18.7.2

lab_init dtescc
mlab_up 3
cat >"$WORK/rules.toml" <<TOML
version = 1
[[rule]]
name = "flood"
cidr = "198.18.0.0/15"
proto = "udp"
rate = 100
burst = 50
escalate = { after = "2s", ban = "20s" }
TOML
for i in 1 2 3; do
	MLAB_NO_WAIT=1 mlab_agent_start "$i" "m$i" --rules "$WORK/rules.toml" --period 200ms --stats-interval 10m \
		--peers "$(mlab_peers "$i")"
done
for i in 1 2 3; do mlab_agent_wait "m$i" || die "the agent of h$i did not start"; done
mlab_wait_peers m1 1 10 h2 h3 || die "h1 did not hear h2 and h3 within 10 s"
mlab_wait_peers m2 1 10 h1 h3 || die "h2 did not hear h1 and h3 within 10 s"
mlab_wait_peers m3 1 10 h1 h2 || die "h3 did not hear h1 and h2 within 10 s"

# ban_origin I PREFIX: the origin of PREFIX's ban on host I ("" if none).
ban_origin() {
	"$AGENT" bans --pin-dir "${M_PIN[$1]}" --json | python3 -c '
import json, sys
for b in json.load(sys.stdin)["bans"]:
    if b["prefix"] == sys.argv[1]:
        print(b["origin"]); break' "$2"
}
banned_by() { [ "$(ban_origin "$1" "$FLOOD")" = "$2" ]; }
# log_time NAME PATTERN: when agent NAME logged its first line matching PATTERN (seconds).
log_time() {
	local t
	t=$(grep -m1 -E "$2" "$(agent_log "$1")" | cut -d' ' -f1)
	[ -n "$t" ] && date -d "$t" +%s.%N
}

mlab_send_bg flood 1 "${M_IP[1]}" --sources "$FLOOD" --rate 2000 --count 40000 --duration 20s
mlab_send_bg client 1 "${M_IP[1]}" --sources "$CLIENT" --rate 50 --count 1000 --duration 20s
wait_until 15 banned_by 1 auto || die "h1 did not ban the flood within 15 s ($(ban_origin 1 "$FLOOD"))"
pass escalation_cluster/h1-banned
for i in 2 3; do
	if wait_until 5 banned_by "$i" h1/auto; then pass "escalation_cluster/h$i-holds"
	else fail "escalation_cluster/h$i-holds" "h$i does not hold h1's ban: origin '$(ban_origin "$i" "$FLOOD")'"; fi
done
t1=$(log_time m1 "escalation: banned $FLOOD ")
for i in 2 3; do
	ti=$(log_time "m$i" "ban of $FLOOD from h1 ")
	if [ -n "$t1" ] && [ -n "$ti" ]; then
		d=$(calc "$ti - $t1")
		echo "h$i learned h1's automatic ban ${d} s after h1 made it"
		check_le "escalation_cluster/h$i-delay" "seconds from h1's ban to h$i's" "$d" 1
	fi
done
for i in 1 2 3; do
	check "escalation_cluster/h$i-client" "the client under its rate is banned on h$i" \
		test -z "$(ban_origin "$i" "$CLIENT")"
done
for s in flood client; do stop_pid "${LAB_PIDS[$s]}"; done
lab_finish
