#!/usr/bin/env bash
# test_escalation.sh - repeat offenders banned by themselves (docs/rules.md "Escalation"):
# one host, one rule (udp, rate 100/s, burst 50) with
#   escalate = { after = "2s", ban = "3s", factor = 2, max = "1m", forget = "1m" }
# and three senders for the whole test: a flood (2,000 pps, 20x the rate), a client under
# its rate (50 pps) and a flood from an allow-listed address (2,000 pps); and a second rule
# with a bucket per /24 (key_prefix = 24) on 198.18.8.0/24, which holds an allow-listed
# address, flooded from another address of that /24 (2,000 pps).
#   1. The flood is banned (origin auto, who "rule flood", the evidence in the reason) for
#      3 s once over budget for 2 s; the client and the allow-listed flood never are, nor
#      is 198.18.8.0/24 (it covers an allowed address: counted as exempt, logged).
#   2. When that ban ends, the flood's next offence gets 6 s (offence 2).
#   Each ban lands within a period (200 ms) and a margin of the flood crossing T (its
#   drops' start, set by --start-at, + `after`): printed, and bounded by DELAY_MAX.
#   3. The agent restarted with --keep remembers it: the offence after that gets 12 s.
#   4. The same rule in dry run: the bans it would make are counted and logged, none made.
# Each ban tells an --on-event command (a script appending its stdin to a file) an
# "escalation" event (rule, offence, duration, evidence) and a "ban" event with its rule
# and offence; dry run's would-ban an "escalation" event with "dry_run": true and no ban.
# Waits on `agent bans --json` and `agent stats --json`. About 40 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=escalation

escalation_scenario  # FLOOD, CLIENT, ALLOWED, AFTER, BURST_S, DELAY_MAX (lib/escalation.sh)
SUBNET_FLOOD=198.18.8.1
SUBNET_ALLOWED=198.18.8.9
# The first offence's T is taken from the flood's first frame as its sender reports it (a
# sender started late on a loaded machine moves T, which the agent cannot help).

lab_init dtesc
lab_up

write_rules() {  # write_rules DRY_RUN
	printf '%s\n' "$ALLOWED" "$SUBNET_ALLOWED" >"$WORK/allow.netset"
	cat >"$WORK/rules.toml" <<-TOML
		version = 1
		allow_file = "allow.netset"
		[[rule]]
		name = "subnet"
		cidr = "198.18.8.0/24"
		proto = "udp"
		rate = 100
		burst = 50
		key_prefix = 24
		dry_run = $1
		escalate = { after = "2s", ban = "3s" }
		$(flood_rule)
		dry_run = $1
	TOML
}
PORT=9107
EVENTS=$WORK/events.jsonl
HOOK=$(event_hook "$EVENTS")
start_agent() {  # start_agent NAME
	agent_start "$1" --rules "$WORK/rules.toml" --keep --stats-interval 10m --metrics "127.0.0.1:$PORT" \
		--on-event "$HOOK"
}
# metric SERIES: its value on /metrics (the host namespace's 127.0.0.1:$PORT), or nothing.
metric() {
	in_ns "$H_NS" timeout 10 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
		printf "GET /metrics HTTP/1.1\r\nHost: dthrottle\r\nConnection: close\r\n\r\n" >&3
		cat <&3' "$PORT" | awk -v s="$1" '$1 == s { print $2 }'
}
# ban_field PREFIX FIELD: FIELD of PREFIX's ban ("" if it has none).
ban_field() { ban_value "$PIN_DIR" "$1" "$2"; }
# offence N: the flood's ban of offence N is in force.
offence() { [[ "$(ban_field "$FLOOD" reason)" == *"offence $1" ]]; }
esc_num() { json_num "$(stats_json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("escalation", {})))')" "$1"; }
# never_banned: neither the client nor the allow-listed flood has a ban.
never_banned() {
	check "escalation/$1-client" "the client under its rate was banned: $(ban_field "$CLIENT" reason)" \
		test -z "$(ban_field "$CLIENT" prefix)"
	check "escalation/$1-allowed" "the allow-listed flood was banned: $(ban_field "$ALLOWED" reason)" \
		test -z "$(ban_field "$ALLOWED" prefix)"
	check "escalation/$1-subnet" "198.18.8.0/24 (an allowed address in it) was banned" \
		test -z "$(ban_field 198.18.8.0/24 prefix)"
}
# seen N SECONDS: waits for the flood's ban of offence N and reads it once: BAN_LO and
# BAN_HI bound its whole length in seconds (time left, as `agent bans` read it, plus time
# since it was set, taken before and after the command: a loaded machine may take a while
# to run it), BAN_ORIGIN, BAN_WHO, BAN_REASON.
seen() {
	wait_until "$2" offence "$1" || return 1
	local line
	line=$(t0=$(now_s); "$AGENT" bans --pin-dir "$PIN_DIR" --json | python3 -c '
import json, sys, time
for b in json.load(sys.stdin)["bans"]:
    if b["prefix"] == sys.argv[1]:
        t0, t1, left = float(sys.argv[2]) * 1000, time.time() * 1000, b["remaining_s"]
        print("%.2f|%.2f|%s|%s|%s" % (left + (t0 - b["set_unix_ms"]) / 1000, left + (t1 - b["set_unix_ms"]) / 1000,
                                     b["origin"], b["who"], b["reason"]))
        break' "$FLOOD" "$t0")
	IFS='|' read -r BAN_LO BAN_HI BAN_ORIGIN BAN_WHO BAN_REASON <<<"$line"
	[[ "$BAN_REASON" == *"offence $1" ]]
}
# told N SECONDS: the flood's offence N (a ban of SECONDS) reached the --on-event command as
# an "escalation" event with its evidence, and as one "ban" event naming its rule and offence.
told() {
	local esc=(escalation prefix "$FLOOD" offence "$1")
	wait_until 5 has_event "$EVENTS" "${esc[@]}"
	check "escalation/event$1" "no escalation event for offence $1 (rule flood, $2 s, not dry run) at the command: $(event_lines "$EVENTS" escalation | tail -2)" \
		has_event "$EVENTS" "${esc[@]}" rule flood duration_s "$2" dry_run False
	check_eq "escalation/event$1-once" "escalation events for offence $1" "$(event_count "$EVENTS" "${esc[@]}")" 1
	check_ge "escalation/event$1-over" "seconds over budget in the event (after = 2s)" \
		"$(event_field "$EVENTS" escalation over_s prefix "$FLOOD" offence "$1")" 2
	check_ge "escalation/event$1-dropped" "packets dropped in the event" \
		"$(event_field "$EVENTS" escalation dropped prefix "$FLOOD" offence "$1")" 100
	check "escalation/event$1-evidence" "the event's evidence does not end in 'offence $1'" \
		grep -q "offence $1\"\$" <<<"$(event_field "$EVENTS" escalation evidence prefix "$FLOOD" offence "$1")"
	wait_until 5 has_event "$EVENTS" ban prefix "$FLOOD" offence "$1"
	check_eq "escalation/event$1-ban" "ban events (origin auto, rule flood) for offence $1" \
		"$(event_count "$EVENTS" ban prefix "$FLOOD" origin auto rule flood offence "$1")" 1
	echo "offence $1's escalation event: $(event_lines "$EVENTS" escalation ".offence == $1" | head -1)"
}
# delay_is N CROSSED: the escalation event of offence N came at most DELAY_MAX seconds
# after CROSSED (Unix seconds: when the flood had been over budget for `after`).
delay_is() {
	local told delay
	told=$(event_field "$EVENTS" escalation unix_ms prefix "$FLOOD" offence "$1")
	delay=$(awk -v a="$told" -v b="$2" 'BEGIN { printf "%.3f", a / 1000 - b }')
	echo "offence $1: banned ${delay} s after crossing T"
	check_le "escalation/delay$1" "seconds from crossing T to the ban of offence $1" "$delay" "$DELAY_MAX"
	check_ge "escalation/delay$1-not-early" "seconds from crossing T to the ban of offence $1 (a margin of 50 ms)" \
		"$delay" -0.05
}
# length_is NAME SECONDS: the ban just seen lasts SECONDS (within its bounds, 0.25 s of slack).
length_is() {
	check "escalation/$1" "the ban of $BAN_REASON lasts $BAN_LO to $BAN_HI s, expected $2 s" \
		num_cmp "$(calc "($2 >= $BAN_LO - 0.25) && ($2 <= $BAN_HI + 0.25)")" == 1
}

write_rules false
start_agent one || die "the agent did not start with an escalating rule"
check escalation/startup "the startup line does not name the escalating rule" \
	grep -q 'escalating: subnet, flood' "$(agent_log one)"
t0=$(awk -v t="$(now_s)" 'BEGIN { printf "%.3f", t + 0.5 }')  # every sender launched by then
send_traffic_bg flood "$WORK/flood.json" --sources "$FLOOD" --rate 2000 --count 120000 --duration 60s --start-at "$t0"
send_traffic_bg client "$WORK/client.json" --sources "$CLIENT" --rate 50 --count 3000 --duration 60s
send_traffic_bg allowed "$WORK/allowed.json" --sources "$ALLOWED" --rate 2000 --count 120000 --duration 60s
send_traffic_bg subnet "$WORK/subnet.json" --sources "$SUBNET_FLOOD" --rate 2000 --count 120000 --duration 60s

# 1. The first offence: banned after 2 s over budget, for 3 s.
seen 1 15 || die "the flood was not banned within 15 s (bans: $("$AGENT" bans --pin-dir "$PIN_DIR"))"
took=$(calc "$(now_s) - $t0")
echo "first ban after ${took} s of flood: $BAN_LO-$BAN_HI s, $BAN_ORIGIN, $BAN_WHO: $BAN_REASON"
check_ge escalation/after "seconds of flood before the first ban" "$took" 2
length_is ban1 3
told 1 3
check escalation/origin "the ban's origin is not auto: $BAN_ORIGIN" test "$BAN_ORIGIN" = auto
check escalation/who "the ban does not name its rule: $BAN_WHO" test "$BAN_WHO" = "rule flood"
check escalation/log "no log line for the ban" grep -q "escalation: banned $FLOOD for 3s (rule flood: " \
	"$(agent_log one)"

# 2. The next offence, once the ban ended: twice as long.
seen 2 15 || die "no second ban within 15 s (bans: $("$AGENT" bans --pin-dir "$PIN_DIR"))"
echo "second ban: $BAN_LO-$BAN_HI s: $BAN_REASON"
length_is ban2 6
told 2 6
# Its T: `after` past the first ban's end (the flood never stopped; its burst passes first).
end1=$(event_field "$EVENTS" escalation expires_unix_ms prefix "$FLOOD" offence 1)
delay_is 2 "$(awk -v e="$end1" -v b="$BURST_S" -v a="$AFTER" 'BEGIN { printf "%.3f", e / 1000 + b + a }')"
check_eq escalation/counted "escalation's bans in agent stats --json" "$(esc_num bans)" 2
check_eq escalation/metric "dthrottle_escalation_total{what=\"ban\"}" \
	"$(metric 'dthrottle_escalation_total{what="ban"}')" 2
check escalation/settings-log "no log line with the rule's settings" \
	grep -q "escalation: rule flood: after 2s, ban 3s x2 up to 1m 0s, forgotten after 1m 0s" "$(agent_log one)"
check_ge escalation/exempt "offences of 198.18.8.0/24 counted as exempt" "$(esc_num exempt)" 1
check escalation/exempt-log "no log line for the exempt /24" \
	grep -q "escalation: 198.18.8.0/24 over rule subnet's budget for .* is not banned: allow list" "$(agent_log one)"
never_banned first

# 3. A restart with --keep: the history is kept, the third offence gets 12 s.
agent_signal one TERM || die "the agent did not stop"
check escalation/state-file "no state file kept by --keep" test -s "/run/dthrottle/${PIN_DIR//\//_}.escalation"
start_agent two || die "the agent did not start again"
check escalation/state-read "the restarted agent did not read the history" \
	grep -q "escalation: 1 offenders' ban history kept from before" "$(agent_log two)"
seen 3 25 || die "no third ban within 25 s (bans: $("$AGENT" bans --pin-dir "$PIN_DIR"))"
echo "third ban (after a restart): $BAN_LO-$BAN_HI s: $BAN_REASON"
length_is ban3 12
told 3 12
for who in "$CLIENT" "$ALLOWED" 198.18.8.0/24; do
	check_eq "escalation/no-event-$who" "escalation events for $who (never banned)" \
		"$(event_count "$EVENTS" escalation prefix "$who")" 0
done
never_banned restart
agent_signal two TERM || die "the agent did not stop"
"$AGENT" unban "$FLOOD" --pin-dir "$PIN_DIR" >/dev/null 2>&1

# 4. Dry run: counted and logged, no ban.
rm -f "/run/dthrottle/${PIN_DIR//\//_}.escalation"
write_rules true
HOOK=$(event_hook "$WORK/dry-events.jsonl")
EVENTS=$WORK/dry-events.jsonl
start_agent dry || die "the agent did not start in dry run"
would_ban() { num_ge "$(esc_num would_ban)" 1; }
if wait_until 15 would_ban; then pass escalation/dry-count; else fail escalation/dry-count "no would-ban counted in 15 s"; fi
check escalation/dry-log "no dry-run log line" grep -q "escalation (dry run): would ban $FLOOD for 3s" \
	"$(agent_log dry)"
check escalation/dry-none "dry run banned the flood" test -z "$(ban_field "$FLOOD" prefix)"
check_eq escalation/dry-bans "bans made in dry run" "$(esc_num bans)" 0
wait_until 5 has_event "$EVENTS" escalation prefix "$FLOOD" dry_run True
check escalation/dry-event "no escalation event (dry_run true, offence 1, 3 s) for the would-ban at the command: $(tail -2 "$EVENTS")" \
	has_event "$EVENTS" escalation prefix "$FLOOD" dry_run True rule flood offence 1 duration_s 3
check_eq escalation/dry-no-ban-event "ban events in dry run" "$(event_count "$EVENTS" ban)" 0
echo "dry run's escalation event: $(event_lines "$EVENTS" escalation | head -1)"
for s in flood client allowed subnet; do stop_pid "${LAB_PIDS[send-$s]}"; done
# The first offence's delay, from the flood's first frame (its sender's report, written as
# it stops).
first=$(json_num "$(cat "$WORK/flood.json" 2>/dev/null)" first_unix_s)
if [ -n "$first" ] && num_ge "$first" 1; then
	echo "the flood's first frame: $(calc "$first - $t0") s after the planned start"
	EVENTS=$WORK/events.jsonl delay_is 1 "$(awk -v t="$first" -v b="$BURST_S" -v a="$AFTER" 'BEGIN { printf "%.3f", t + b + a }')"
else
	fail escalation/delay1 "the flood's sender did not report its first frame ($WORK/flood.json: $(head -c 200 "$WORK/flood.json" 2>/dev/null))"
fi
lab_finish
