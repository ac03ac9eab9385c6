#!/usr/bin/env bash
# test_member_bans.sh - what a cluster member may do with bans (docs/bans.md "What a member
# may ban"): three hosts in a mesh with keys (every one a member holding a valid key),
# reports every 200 ms; h2 and h3 hold at most 20 bans (and 20 tombstones) of any one peer.
#   1. A member's /1 bans (0.0.0.0/1 and 128.0.0.0/1 on h1: every IPv4 address) are refused
#      by h2 and h3 (--peer-ban-min-prefix, default 16,48), counted as refused_prefix; a
#      source in them still passes h2; a /24 from the same member is learned.
#   2. A member's lift of another host's ban is refused: h1 and h2 both ban P on their own;
#      h2's unban lifts its own ban only, h1 refuses the lift (refused_origin) and keeps its
#      ban, and so does h3 (which holds h1's). An unban on h2 of h1's ban lifts it on h2 only
#      (a tombstone kept there, no lift sent: h1 and h3 keep it).
#   3. A flood of lifts leaves the tombstones bounded: h1 bans 40 prefixes then lifts them;
#      h2 keeps 20 of them (--peer-ban-max 20), refuses the others (refused_peer_cap), keeps
#      at most 20 tombstones of h1's lifts and counts the rest (refused_tombstone).
# About 50 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=member_bans

lab_init dtmb
mlab_up 3

for i in 1 2 3; do
	mlab_agent_start "$i" "m$i" --rate 1000 --burst 1000 --period 200ms --stats-interval 10m \
		--peer-ban-max 20 --peers "$(mlab_peers "$i")" || die "the agent of h$i did not start"
done
mlab_wait_peers m1 1 10 h2 h3 || die "h1 did not hear h2 and h3 within 10 s"
mlab_wait_peers m2 1 10 h1 h3 || die "h2 did not hear h1 and h3 within 10 s"
mlab_wait_peers m3 1 10 h1 h2 || die "h3 did not hear h1 and h2 within 10 s"

ban_on() { "$AGENT" ban "$2" --for "${3:-10m}" --reason "member test" --pin-dir "${M_PIN[$1]}" >/dev/null; }
unban_on() { "$AGENT" unban "$2" --pin-dir "${M_PIN[$1]}" >/dev/null; }
# ban_origin I PREFIX: the origin of PREFIX's ban on host I ("" if it has none).
ban_origin() {
	"$AGENT" bans --pin-dir "${M_PIN[$1]}" --json | python3 -c '
import json, sys
for b in json.load(sys.stdin)["bans"]:
    if b["prefix"] == sys.argv[1]:
        print(b["origin"]); break' "$2"
}
banned_on() { [ -n "$(ban_origin "$1" "$2")" ]; }
not_banned_on() { [ -z "$(ban_origin "$1" "$2")" ]; }
# counter I NAME: the cluster's bans counter NAME on host I (agent stats --json).
# Nothing if the agent has no such counter (a check on it then fails).
counter() { json_num "$(stats_json "${M_PIN[$1]}")" "$2"; }
counter_ge() { num_ge "$(counter "$1" "$2")" "$3"; }

# --- 1. a member's /1 bans are refused, counted; a /24 is learned ---------------------------------
ban_on 1 0.0.0.0/1 2m || die "agent ban 0.0.0.0/1 on h1 failed"
ban_on 1 128.0.0.0/1 2m || die "agent ban 128.0.0.0/1 on h1 failed"
ban_on 1 198.18.40.0/24 || die "agent ban 198.18.40.0/24 on h1 failed"
check member/narrow-learned "h2 and h3 did not learn h1's 198.18.40.0/24 within 10 s (the lab is broken?)" \
	wait_until 10 banned_on 2 198.18.40.0/24
for i in 2 3; do
	check "member/wide-counted-h$i" "h$i did not count h1's two /1 bans as refused_prefix within 10 s (got $(counter "$i" refused_prefix))" \
		wait_until 10 counter_ge "$i" refused_prefix 2
	for p in 0.0.0.0/1 128.0.0.0/1; do
		check "member/wide-refused-h$i-${p%%.*}" "h$i installed h1's ban of $p (origin $(ban_origin "$i" "$p"))" \
			not_banned_on "$i" "$p"
	done
done
check member/wide-logged "h2 did not log why it refused 0.0.0.0/1" \
	grep -q 'refused the ban of 0.0.0.0/1 from h1: wider than --peer-ban-min-prefix 16,48' "$(agent_log m2)"
ban_dropped() { json_num "$(stats_json "${M_PIN[2]}")" ban_dropped; }
dropped0=$(ban_dropped)
[ -n "$dropped0" ] || die "agent stats --json on h2 has no ban_dropped counter"
in_ns "$C_NS" timeout 20 "$PKTGEN" send --iface "${M_CIF[2]}" --dst-ip "${M_IP[2]}" --dst-mac "${M_MAC[2]}" \
	--dport 9999 --sources 198.18.77.7 --rate 200 --count 10 --duration 2s --json >/dev/null 2>"$WORK/send.err" ||
	die "pktgen to h2 failed: $(cat "$WORK/send.err")"
check_eq member/wide-passes "packets h2 dropped by a ban after h1's /1 bans" "$(calc "$(ban_dropped) - $dropped0")" 0
unban_on 1 0.0.0.0/1 && unban_on 1 128.0.0.0/1 || die "agent unban of the /1 bans on h1 failed"

# --- 2. only a ban's origin lifts it -----------------------------------------------------------------
P=198.18.41.0/24 P2=198.18.42.0/24
ban_on 1 "$P" || die "agent ban $P on h1 failed"
ban_on 1 "$P2" || die "agent ban $P2 on h1 failed"
check member/origin-setup "h2 and h3 did not learn h1's $P within 10 s" wait_until 10 banned_on 3 "$P"
wait_until 10 banned_on 2 "$P" || die "h2 did not learn h1's $P"
announced0=$(counter 2 announced)
[ -n "$announced0" ] || die "agent stats --json on h2 has no announced counter"
ban_on 2 "$P" || die "agent ban $P on h2 failed"   # h2's own ban of the same prefix now
check member/origin-own "h2 does not hold its own ban of $P (origin $(ban_origin 2 "$P"))" \
	test "$(ban_origin 2 "$P")" = local
# h2's daemon takes the ban for its own once a period's scan has seen it (it announces it):
# an unban before that scan would be an unban of h1's ban, lifted on h2 only, and no lift
# would be sent (on an emulated CPU the scan can come after the unban).
check member/origin-announced "h2 did not announce its own ban of $P within 20 s (announced $(counter 2 announced), was $announced0)" \
	wait_until 20 counter_ge 2 announced $((announced0 + 1))
refused0=$(counter 1 refused_origin)
[ -n "$refused0" ] || die "agent stats --json on h1 has no refused_origin counter"
unban_on 2 "$P" || die "agent unban $P on h2 failed"
check member/origin-refused "h1 did not refuse h2's lift of h1's ban within 10 s (refused_origin $(counter 1 refused_origin), was $refused0)" \
	wait_until 10 counter_ge 1 refused_origin $((refused0 + 1))
check member/origin-kept-h1 "h2's lift removed h1's own ban of $P" banned_on 1 "$P"
check member/origin-kept-h3 "h2's lift removed h3's ban of $P (set by h1)" test "$(ban_origin 3 "$P")" = h1
check member/origin-logged "h1 did not log the refused lift" \
	grep -q "refused the lift of 198.18.41.0/24 from h2: the ban is this host's" "$(agent_log m1)"
# An unban on h2 of h1's ban P2 lifts it on h2 only: h2 keeps a tombstone of it, sends no
# lift, and h1 and h3 keep the ban (a lift would reach them within a period or two).
wait_until 10 banned_on 2 "$P2" || die "h2 did not learn h1's $P2"
tomb0=$(counter 2 tombstones)
unban_on 2 "$P2" || die "agent unban $P2 on h2 failed"
check member/local-unban-tombstone "h2 kept no tombstone of h1's ban it unbanned within 10 s" \
	wait_until 10 counter_ge 2 tombstones $((${tomb0:-0} + 1))
check member/local-unban-h2 "h2 still holds $P2 after its unban" not_banned_on 2 "$P2"
stays_banned() { ! wait_until 2 not_banned_on "$1" "$2"; }
check member/local-unban-h1 "h2's unban of h1's $P2 lifted it on h1" stays_banned 1 "$P2"
check member/local-unban-h3 "h2's unban of h1's $P2 lifted it on h3" stays_banned 3 "$P2"

# --- 3. a flood of lifts leaves the tombstones bounded ----------------------------------------------
for n in $(seq 1 40); do ban_on 1 "198.18.$((100 + n)).0/24" || die "agent ban $n on h1 failed"; done
check member/cap-counted "h2 did not refuse h1's bans over --peer-ban-max 20 within 10 s (refused_peer_cap $(counter 2 refused_peer_cap))" \
	wait_until 10 counter_ge 2 refused_peer_cap 20
held=$(json_get "$("$AGENT" bans --pin-dir "${M_PIN[2]}" --json)" '[.. | objects | select(.origin? == "h1")] | length')
check_le member/cap-held "bans of h1 held on h2 (--peer-ban-max 20)" "$held" 20
for n in $(seq 1 40); do unban_on 1 "198.18.$((100 + n)).0/24" || die "agent unban $n on h1 failed"; done
check member/tombstones-refused "h2 did not count h1's lifts past 20 tombstones within 10 s (refused_tombstone $(counter 2 refused_tombstone))" \
	wait_until 10 counter_ge 2 refused_tombstone 20
# h2 holds one more of its own while it lasts (its lift of P in section 2, announced for 60 s).
check_le member/tombstones-bounded-h2 "tombstones on h2 after h1's 40 lifts (20 of h1's, 1 its own)" \
	"$(counter 2 tombstones)" 21
check_le member/tombstones-bounded-h3 "tombstones on h3 after h1's 40 lifts" "$(counter 3 tombstones)" 20
# h1's status file is written about once a second: wait for the one written after its lifts.
wait_until 5 counter_ge 1 tombstones 40
check_ge member/tombstones-own "tombstones of h1's own lifts on h1 (read once its status was newer)" \
	"$(counter 1 tombstones)" 40
lab_finish
