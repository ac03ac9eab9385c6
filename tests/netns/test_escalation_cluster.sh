#!/usr/bin/env bash
# test_escalation_cluster.sh - an escalation's ban is a cluster's ban (docs/rules.md
# "Escalation"): three hosts in a mesh with keys, reports every 200 ms, the same rule on
# each (udp, rate 100/s, burst 50, allow list 198.18.7.3,
#   escalate = { after = "2s", ban = "3s", factor = 2, max = "1m", forget = "1m" })
# and an --on-event command on each appending its stdin to a file of its own. Reaching h1
# only, for 25 s: a flood at 2,000 pps (20x the rate), the same from the allow-listed
# address, and a client under its rate (50 pps).
#   1. h1 bans the flood (origin auto, offence 1, 3 s); h2 and h3 hold it (origin h1/auto).
#      Printed: from crossing T (the flood's drops' start, set by --start-at, + `after`) to
#      the ban's event on each host: within DELAY_MAX on every host, the others within
#      FOLLOW_MAX of h1.
#   2. The flood goes on: once that ban ends, its second offence is banned for 6 s, on every
#      host (measured from each host's ban event: expiry - set time), told within the same
#      bounds of crossing T again (the end of the first ban + `after`).
#   3. Neither the allow-listed flood (passed before any rule: never over budget) nor the
#      client is banned anywhere, nor told.
#   4. The events: h1's command gets "escalation" and "ban" (rule, offence) for both
#      offences; h2's and h3's get both bans (origin h1/auto, the evidence as reason).
#   5. The flood moves to h2: h2 took h1's two bans into its history (logged, counted
#      "learned"), so its own ban, once h1's second ends, is offence 3 (12 s), held by h1
#      and h3 (origin h2/auto).
# Waits on `agent bans --json` and the event files. About 35 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=escalation_cluster

escalation_scenario  # FLOOD, CLIENT, ALLOWED, AFTER, BURST_S, DELAY_MAX (lib/escalation.sh)
# The banning host bans at T (within DELAY_MAX); a peer holds the ban from the banning
# host's next report (a period later at most) and tells it as it installs it: every host
# within DELAY_MAX of T, and FOLLOW_MAX of the banning host.
FOLLOW_MAX=0.35

lab_init dtescc
mlab_up 3
echo "$ALLOWED" >"$WORK/allow.netset"
cat >"$WORK/rules.toml" <<TOML
version = 1
allow_file = "allow.netset"
$(flood_rule)
TOML
for i in 1 2 3; do
	HOOK=$(event_hook "$WORK/events-h$i.jsonl")
	MLAB_NO_WAIT=1 mlab_agent_start "$i" "m$i" --rules "$WORK/rules.toml" --period 200ms --stats-interval 10m \
		--peers "$(mlab_peers "$i")" --on-event "$HOOK"
done
for i in 1 2 3; do mlab_agent_wait "m$i" || die "the agent of h$i did not start"; done
mlab_wait_peers m1 1 10 h2 h3 || die "h1 did not hear h2 and h3 within 10 s"
mlab_wait_peers m2 1 10 h1 h3 || die "h2 did not hear h1 and h3 within 10 s"
mlab_wait_peers m3 1 10 h1 h2 || die "h3 did not hear h1 and h2 within 10 s"

events() { echo "$WORK/events-h$1.jsonl"; }
# ban_origin I PREFIX: the origin of PREFIX's ban in force on host I ("" if none).
ban_origin() { ban_value "${M_PIN[$1]}" "$2" origin; }
# ban_told I N: host I's "ban" event of the flood's offence N, as "UNIX_S SECONDS ORIGIN"
# (when it was told; the ban's length: its expiry less its set time); false if none yet.
ban_told() {
	python3 - "$(events "$1")" "$FLOOD" "offence $2" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line) if line.startswith("{") else {}
    if e.get("type") == "ban" and e.get("prefix") == sys.argv[2] and e.get("reason", "").endswith(sys.argv[3]):
        print("%.3f %.2f %s" % (e["unix_ms"] / 1000, (e["expires_unix_ms"] - e["set_unix_ms"]) / 1000, e["origin"]))
        sys.exit(0)
sys.exit(1)
PY
}
# offence_everywhere N: every host told the flood's ban of offence N.
offence_everywhere() { ban_told 1 "$1" >/dev/null && ban_told 2 "$1" >/dev/null && ban_told 3 "$1" >/dev/null; }
# figures N CROSSED SECONDS [BY]: per host, the ban of offence N told, its delay from CROSSED
# (when it had been over budget for `after`) and its length (SECONDS expected, 0.5 s slack);
# host BY (default 1) made it, the others learned it.
figures() {
	local i line told len origin delay want by=${4:-1} told1=
	for i in 1 2 3; do
		line=$(ban_told "$i" "$1") || { fail "escalation_cluster/h$i-offence$1" "h$i told no ban of offence $1"; continue; }
		read -r told len origin <<<"$line"
		delay=$(awk -v a="$told" -v b="$2" 'BEGIN { printf "%.3f", a - b }')
		echo "offence $1 on h$i: ban told ${delay} s after crossing T, lasting ${len} s, origin $origin"
		check "escalation_cluster/h$i-offence$1-length" "h$i's ban of offence $1 lasts $len s, expected $3 s" \
			num_cmp "$(calc "($len >= $3 - 0.5) && ($len <= $3 + 0.5)")" == 1
		check_le "escalation_cluster/h$i-offence$1-delay" "seconds from crossing T to h$i's ban event" "$delay" "$DELAY_MAX"
		[ "$i" = "$by" ] && told1=$told
		[ "$i" = "$by" ] && want=auto || want=h$by/auto
		check "escalation_cluster/h$i-offence$1-origin" "h$i's ban of offence $1 has origin $origin, expected $want" \
			test "$origin" = "$want"
	done
	for i in 1 2 3; do
		[ "$i" = "$by" ] || [ -z "$told1" ] && continue
		line=$(ban_told "$i" "$1") || continue
		read -r told len origin <<<"$line"
		delay=$(awk -v a="$told" -v b="$told1" 'BEGIN { printf "%.3f", a - b }')
		echo "  h$i told it ${delay} s after h$by"
		check_le "escalation_cluster/h$i-offence$1-after-h$by" "seconds from h$by's ban event to h$i's" "$delay" "$FOLLOW_MAX"
	done
}

T_FLOOD=$(awk -v t="$(now_s)" 'BEGIN { printf "%.3f", t + 0.5 }')  # the senders launched by then
mlab_send_bg flood 1 "${M_IP[1]}" --sources "$FLOOD" --rate 2000 --count 50000 --duration 25s --start-at "$T_FLOOD"
mlab_send_bg allowed 1 "${M_IP[1]}" --sources "$ALLOWED" --rate 2000 --count 50000 --duration 25s
mlab_send_bg client 1 "${M_IP[1]}" --sources "$CLIENT" --rate 50 --count 1250 --duration 25s

# 1. The first offence, on every host.
wait_until 15 offence_everywhere 1 || die "the flood's first ban was not told on every host within 15 s: h1 $(ban_origin 1 "$FLOOD"), h2 $(ban_origin 2 "$FLOOD"), h3 $(ban_origin 3 "$FLOOD")"
pass escalation_cluster/offence1-everywhere
figures 1 "$(awk -v t="$T_FLOOD" -v b="$BURST_S" -v a="$AFTER" 'BEGIN { printf "%.3f", t + b + a }')" 3

# 2. The second offence: twice the ban, on every host. Its T is crossed `after` past the
# end of the first ban (the flood never stopped).
wait_until 15 offence_everywhere 2 || die "the flood's second ban was not told on every host within 15 s"
pass escalation_cluster/offence2-everywhere
stop_pid "${LAB_PIDS[flood]}"  # h1's part is done: it moves to h2 in 5
end1=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "escalation" and e["offence"] == 1: print("%.3f" % (e["expires_unix_ms"] / 1000 + float(sys.argv[2]))); break' \
	"$(events 1)" "$(calc "$AFTER + $BURST_S")")
figures 2 "$end1" 6

# 3. Never banned, never told.
for i in 1 2 3; do
	for who in "$ALLOWED" "$CLIENT"; do
		check "escalation_cluster/h$i-never-$who" "$who was banned on h$i (origin $(ban_origin "$i" "$who"))" \
			test -z "$(ban_origin "$i" "$who")"
		check_eq "escalation_cluster/h$i-untold-$who" "ban events for $who on h$i" \
			"$(event_count "$(events "$i")" ban prefix "$who")" 0
	done
done
# The allow list passes its sources before any rule: the allowed flood is never over budget.
dropped=$(json_num "$(json_source "$(stats_json "${M_PIN[1]}")" "$ALLOWED")" dropped)
check_eq escalation_cluster/h1-allowed-passed "packets of the allow-listed flood dropped on h1" "${dropped:-0}" 0

# 4. The events of each offence reached every host's command.
for n in 1 2; do
	check "escalation_cluster/h1-escalation$n" "h1's command got no escalation event for offence $n" \
		has_event "$(events 1)" escalation prefix "$FLOOD" rule flood offence "$n" dry_run False
	check "escalation_cluster/h1-ban$n" "h1's ban event of offence $n does not name rule and offence" \
		has_event "$(events 1)" ban prefix "$FLOOD" origin auto rule flood offence "$n"
	for i in 2 3; do
		check_eq "escalation_cluster/h$i-escalation$n" "escalation events on h$i (h1 decided)" \
			"$(event_count "$(events "$i")" escalation)" 0
		check "escalation_cluster/h$i-ban$n-who" "h$i's ban event of offence $n does not name the rule" \
			has_event "$(events "$i")" ban prefix "$FLOOD" origin h1/auto who "rule flood"
	done
done
for i in 1 2 3; do
	failures=$(json_num "$(json_get "$(stats_json "${M_PIN[$i]}")" '.events')" command_failures)
	check_eq "escalation_cluster/h$i-command-failures" "h$i's --on-event failures" "$failures" 0
done

# 5. The flood moves to h2, which knows h1's two bans: its first ban there is offence 3.
check escalation_cluster/h2-learned-log "h2 did not log h1's second ban into its history" \
	grep -q "escalation: $FLOOD's ban from h1/auto (rule flood, offence 2) is in its history here" "$(agent_log m2)"
learned=$(json_num "$(json_get "$(stats_json "${M_PIN[2]}")" '.escalation')" learned)
check_ge escalation_cluster/h2-learned "peers' automatic bans learned into h2's history" "$learned" 2
end2=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "escalation" and e["offence"] == 2: print("%.3f" % (e["expires_unix_ms"] / 1000 + float(sys.argv[2]))); break' \
	"$(events 1)" "$(calc "$AFTER + $BURST_S")")
T_FLOOD2=$(awk -v t="$(now_s)" 'BEGIN { printf "%.3f", t + 0.5 }')
mlab_send_bg flood2 2 "${M_IP[2]}" --sources "$FLOOD" --rate 2000 --count 50000 --duration 25s --start-at "$T_FLOOD2"
if wait_until 20 offence_everywhere 3; then
	pass escalation_cluster/offence3-everywhere
	# T is crossed `after` past the later of h1's second ban's end and the flood's start on h2.
	figures 3 "$(awk -v e="$end2" -v t="$T_FLOOD2" -v b="$BURST_S" -v a="$AFTER" 'BEGIN { printf "%.3f", (t + b + a > e ? t + b + a : e) }')" 12 2
	check "escalation_cluster/h2-escalation3" "h2's command got no escalation event for offence 3" \
		has_event "$(events 2)" escalation prefix "$FLOOD" rule flood offence 3 duration_s 12
else
	fail escalation_cluster/offence3-everywhere "the flood moved to h2 was not banned as offence 3 on every host within 20 s: h2's bans of it: $(event_lines "$(events 2)" ban ".prefix == \"$FLOOD\"" | tail -2)"
fi
for s in flood2 allowed client; do stop_pid "${LAB_PIDS[$s]}"; done
lab_finish
