#!/usr/bin/env bash
# test_rules.sh - packet rules (--rules FILE) on real traffic, and reloading them.
#
# The agent runs with --rate 100 --burst 50 (the default rule) and a rules file:
#   1 trusted   198.18.10.0/24    allow
#   2 blocked   198.18.20.0/24    deny
#   3 blocked6  2001:2:0:20::/64  deny
#   4 dns       198.18.30.0/24    udp dport 5353, 20/s burst 10
#   5 slow      198.18.40.0/24    50/s burst 20, one bucket for the whole /24
# pktgen offers ~500 pps from each source (UDP to 9999, and from 198.18.30.1 also
# to 5353), two UDP sinks count what arrives. Then:
#   - an `agent reload` of a broken file: exit 1 with file:line, old rules in force;
#   - an `agent reload` of a changed file (slow: 200/s burst 100): exit 0, the
#     buckets are kept as they were, the new limit applies;
#   - kill -HUP with a file that turns blocked into allow and drops rule 5;
#   - an `agent reload` of a file whose tag rules are refused: "reloaded in part", exit 1.
# At the end every sink count matches what XDP passed. About 15 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=rules

RATE=100
BURST=50
PPS=500 # per source

lab_init dtrules
lab_up
RULES=$WORK/rules.toml

# write_rules SLOW_RATE SLOW_BURST [BLOCKED_ACTION [WITH_SLOW]]: the rules file.
write_rules() {
	local slow_rate=$1 slow_burst=$2 blocked=${3:-deny} with_slow=${4:-yes}
	cat >"$RULES.tmp" <<-EOF
		# test_rules.sh
		version = 1

		[[rule]]
		name = "trusted"
		cidr = "198.18.10.0/24"
		action = "allow"

		[[rule]]
		name = "blocked"
		cidr = "198.18.20.0/24"
		action = "$blocked"

		[[rule]]
		name = "blocked6"
		cidr = "2001:2:0:20::/64"
		action = "deny"

		[[rule]]
		name = "dns"
		cidr = "198.18.30.0/24"
		proto = "udp"
		dport = 5353
		rate = 20
		burst = 10
	EOF
	[ "$with_slow" = yes ] && cat >>"$RULES.tmp" <<-EOF

		[[rule]]
		name = "slow"
		cidr = "198.18.40.0/24"
		rate = $slow_rate
		burst = $slow_burst
		key_prefix = 24
	EOF
	mv "$RULES.tmp" "$RULES"
}

# has_rule JSON NAME: true if rule NAME is listed (rule_num, bucket_num: lib/json.sh).
has_rule() { json_rule "$1" "$2" >/dev/null; }

# test_buckets JSON: our sources' buckets, one "source rule passed dropped" a line, sorted.
test_buckets() {
	json_get "$1" '.sources[] | select(.source | test("^(198\\.18\\.|2001:2:)")) | "\(.source) \(.rule) \(.passed) \(.dropped)"' |
		sort
}

# sent FILE ADDR: frames of ADDR a pktgen run sent (0 if none).
sent() {
	local v
	v=$(source_num "$(cat "$1")" "$2" sent)
	echo "${v:-0}"
}

# The sinks read until the checks stop them (60 s at most; 300 s on an emulated CPU, make
# test-kernel's TCG guest, where the suite took 97 s and the sinks were gone by phase 4).
SINK_S=60
emulated && SINK_S=300
# sink53_start: a second sink, on UDP 5353 (the dns rule's port).
sink53_start() {
	nsenter --net="/run/netns/$H_NS" -- "$PKTGEN" sink --port 5353 --duration "$SINK_S" --json \
		>"$WORK/sink53.json" 2>"$WORK/sink53.err" &
	LAB_PIDS[sink53]=$!
	wait_for_line "$WORK/sink53.err" listening "${LAB_PIDS[sink53]}" 10
}

# offer NAME SECONDS SOURCES: PPS per source to UDP 9999 for SECONDS (bounded).
offer() {
	local n
	n=$(($(tr ',' '\n' <<<"$3" | wc -l) * PPS))
	send_traffic "$WORK/$1.json" --sources "$3" --rate "$n" --count $((n * $2)) --duration $(($2 + 2))s
}

# check_budget NAME WHAT PASSED RATE BURST ELAPSED: PASSED within burst + rate x elapsed
# (+2 for the edges) and at least 80% of it (the sources really exceeded the rate).
check_budget() {
	local budget
	budget=$(calc "$5 + $4 * $6")
	check_le "$1/within-budget" "$2 passed more than $5 + $4/s x $6 s + 2" "$3" "$(calc "$(floor "$budget") + 2")"
	check_ge "$1/near-budget" "$2 passed far less than its budget $budget" "$3" "$(calc "0.8 * $budget")"
}

write_rules 50 20
sink_start "$SINK_S" || die "the UDP sink on 9999 did not start"
sink53_start || die "the UDP sink on 5353 did not start"
agent_start main --rate "$RATE" --burst "$BURST" --rules "$RULES" --stats-interval 10m ||
	die "the agent did not start with --rules"
check rules/start-logged "the agent did not describe its rules: $(grep -m1 'packet rules' "$(agent_log main)")" \
	grep -q '5 packet rules (2 throttle, 1 allow, 2 deny)' "$(agent_log main)"

# --- phase 1: every rule under load ---------------------------------------------------
T=2
send_traffic_bg dns "$WORK/p1-dns.json" --dport 5353 --sources 198.18.30.1 --rate $PPS \
	--count $((PPS * T)) --duration $((T + 2))s
offer p1 $T 198.18.10.1,198.18.20.1,2001:2:0:20::1,198.18.30.1,198.18.40.1,198.18.40.2,198.18.50.1 ||
	die "pktgen send failed"
wait_traffic dns "$WORK/p1-dns.json" || die "pktgen send to 5353 failed"
s1=$(stats_json) || die "agent stats --json failed"
el=$(json_num "$(cat "$WORK/p1.json")" elapsed_s)
el_dns=$(json_num "$(cat "$WORK/p1-dns.json")" elapsed_s)
echo "phase 1: ${PPS} pps per source for ${el} s"
json_get "$s1" '.rules[] | "  rule \({id, name, action, rate, burst, passed, dropped, cidr, when})"'

check_eq rules/allow/passed "trusted: rule passed vs frames sent" "$(rule_num "$s1" trusted passed)" "$(sent "$WORK/p1.json" 198.18.10.1)"
check_eq rules/allow/dropped "trusted: rule dropped" "$(rule_num "$s1" trusted dropped)" 0
check rules/allow/no-bucket "an allowed source got a bucket: $(json_source "$s1" 198.18.10.1)" \
	test -z "$(json_source "$s1" 198.18.10.1)"
check_eq rules/deny/dropped "blocked: rule dropped vs frames sent" "$(rule_num "$s1" blocked dropped)" "$(sent "$WORK/p1.json" 198.18.20.1)"
check_eq rules/deny/passed "blocked: rule passed" "$(rule_num "$s1" blocked passed)" 0
check_eq rules/deny6/dropped "blocked6: rule dropped vs frames sent" "$(rule_num "$s1" blocked6 dropped)" "$(sent "$WORK/p1.json" 2001:2:0:20::1)"
check rules/deny/no-bucket "a denied source got a bucket" test -z "$(json_source "$s1" 198.18.20.1)$(json_source "$s1" 2001:2:0:20::1)"

# The port rule: 198.18.30.1 to 5353 under dns, to 9999 under the default: two buckets.
dns_passed=$(bucket_num "$s1" 198.18.30.1 dns passed)
dns_dropped=$(bucket_num "$s1" 198.18.30.1 dns dropped)
check_budget rules/port-rule "198.18.30.1 to 5353 (dns)" "$dns_passed" 20 10 "$el_dns"
check_eq rules/port-rule/accounted "dns: passed + dropped vs frames sent to 5353" \
	"$((${dns_passed:-0} + ${dns_dropped:-0}))" "$(sent "$WORK/p1-dns.json" 198.18.30.1)"
check_eq rules/port-rule/rule-counters "dns: the rule's passed vs its bucket's" "$(rule_num "$s1" dns passed)" "$dns_passed"
check_budget rules/port-rule/default "198.18.30.1 to 9999 (default rule)" \
	"$(bucket_num "$s1" 198.18.30.1 default passed)" $RATE $BURST "$el"
check_budget rules/default "198.18.50.1 (default rule)" "$(bucket_num "$s1" 198.18.50.1 default passed)" $RATE $BURST "$el"

# key_prefix 24: both sources of 198.18.40.0/24 share one bucket.
slow_passed=$(bucket_num "$s1" 198.18.40.0 slow passed)
slow_dropped=$(bucket_num "$s1" 198.18.40.0 slow dropped)
check_eq rules/key-prefix/prefix-len "prefix_len of the slow bucket" \
	"$(json_num "$(json_source "$s1" 198.18.40.0)" prefix_len)" 24
check rules/key-prefix/one-bucket "198.18.40.1 or .2 has a bucket of its own" \
	test -z "$(json_source "$s1" 198.18.40.1)$(json_source "$s1" 198.18.40.2)"
check_budget rules/key-prefix "198.18.40.0/24 (slow, two sources)" "$slow_passed" 50 20 "$el"
check_eq rules/key-prefix/accounted "slow: passed + dropped vs frames sent from .1 and .2" \
	"$((${slow_passed:-0} + ${slow_dropped:-0}))" \
	"$(($(sent "$WORK/p1.json" 198.18.40.1) + $(sent "$WORK/p1.json" 198.18.40.2)))"

# --- phase 2: a broken file changes nothing --------------------------------------------
cp "$RULES" "$WORK/rules-good.toml"
bad_line=$(($(wc -l <"$RULES") + 4)) # the cidr line of the rule appended below
printf '\n[[rule]]\nname = "bad"\ncidr = "198.18.60.1/24"\naction = "deny"\n' >>"$RULES"
out=$("$AGENT" reload --pin-dir "$PIN_DIR" 2>&1)
rc=$?
echo "reload (broken file, exit $rc): $out"
check_eq rules/reload-broken/exit "agent reload exit code for a broken file" "$rc" 1
check rules/reload-broken/file-line "the message does not name $RULES:$bad_line: $out" grep -qF "$RULES:$bad_line: " <<<"$out"
check rules/reload-broken/agent-alive "the agent exited after a broken reload" alive "$AGENT_PID"
s2a=$(stats_json)
check rules/reload-broken/rules-kept "rule 'slow' is no longer listed: $(json_get "$s2a" '[.rules[].name]')" has_rule "$s2a" slow
T2=1
offer p2 $T2 198.18.10.1,198.18.20.1,198.18.40.1 || die "pktgen send failed"
s2=$(stats_json) || die "agent stats --json failed"
el2=$(json_num "$(cat "$WORK/p2.json")" elapsed_s)
check_eq rules/reload-broken/still-denied "blocked: more drops vs frames sent" \
	"$(($(rule_num "$s2" blocked dropped) - $(rule_num "$s1" blocked dropped)))" "$(sent "$WORK/p2.json" 198.18.20.1)"
check_eq rules/reload-broken/still-allowed "trusted: more passes vs frames sent" \
	"$(($(rule_num "$s2" trusted passed) - $(rule_num "$s1" trusted passed)))" "$(sent "$WORK/p2.json" 198.18.10.1)"
slow2=$(($(bucket_num "$s2" 198.18.40.0 slow passed) - slow_passed))
check_le rules/reload-broken/old-limit "slow passed more than its old burst 20 + 50/s x $el2 s + 2" \
	"$slow2" "$(calc "$(floor "$(calc "20 + 50 * $el2")") + 2")"

# --- phase 3: a valid changed file ------------------------------------------------------
write_rules 200 100
before=$(test_buckets "$(stats_json)")
out=$("$AGENT" reload --pin-dir "$PIN_DIR" 2>&1)
rc=$?
echo "reload (slow: 200/s burst 100, exit $rc): $out"
after=$(test_buckets "$(stats_json)")
check_eq rules/reload/exit "agent reload exit code for a valid file" "$rc" 0
check rules/reload/message "unexpected answer: $out" grep -q '^reloaded: 5 packet rules' <<<"$out"
check rules/reload/buckets-kept "buckets changed across the reload: before [$before] after [$after]" \
	test -n "$before" -a "$before" = "$after"
s3a=$(stats_json)
check_eq rules/reload/new-rate "slow's rate in agent stats" "$(rule_num "$s3a" slow rate)" 200
check_eq rules/reload/new-burst "slow's burst in agent stats" "$(rule_num "$s3a" slow burst)" 100
T3=1
offer p3 $T3 198.18.40.1,198.18.40.2 || die "pktgen send failed"
s3=$(stats_json) || die "agent stats --json failed"
el3=$(json_num "$(cat "$WORK/p3.json")" elapsed_s)
slow3=$(($(bucket_num "$s3" 198.18.40.0 slow passed) - $(bucket_num "$s2" 198.18.40.0 slow passed)))
echo "slow after the reload: $slow3 passed in $el3 s (old limit: 20 + 50/s, new: 100 + 200/s)"
check_le rules/reload/new-limit "slow passed more than its new burst 100 + 200/s x $el3 s + 2" \
	"$slow3" "$(calc "$(floor "$(calc "100 + 200 * $el3")") + 2")"
check_ge rules/reload/above-old-limit "slow passed no more than the old limit allowed" \
	"$slow3" "$(calc "$(floor "$(calc "20 + 50 * $el3")") + 3")"
check rules/reload/same-bucket "the reload made a new bucket for 198.18.40.x" \
	test -z "$(json_source "$s3" 198.18.40.1)$(json_source "$s3" 198.18.40.2)"

# --- phase 4: SIGHUP --------------------------------------------------------------------
write_rules 200 100 allow no
kill -HUP "$AGENT_PID"
wait_for_lines "$(agent_log main)" 'reloaded .*4 packet rules' 1 "$AGENT_PID" 5 ||
	fail rules/hup/logged "no 'reloaded' line in the agent's log after SIGHUP"
s4a=$(stats_json)
action=$(json_get "$(json_rule "$s4a" blocked)" .action)
check rules/hup/action "blocked's action after SIGHUP: got '$action', expected allow" test "$action" = allow
check rules/hup/removed-rule-gone "rule 'slow' is still listed after it was removed: $(json_rule "$s4a" slow)" \
	eval '! has_rule "$s4a" slow'
T4=1
offer p4 $T4 198.18.20.1,198.18.40.1 || die "pktgen send failed"
s4=$(stats_json) || die "agent stats --json failed"
check_eq rules/hup/now-allowed "blocked (now allow): more passes vs frames sent" \
	"$(($(rule_num "$s4" blocked passed) - $(rule_num "$s3" blocked passed)))" "$(sent "$WORK/p4.json" 198.18.20.1)"
check rules/hup/default-rule "198.18.40.1 is not under the default rule after 'slow' was removed" \
	test -n "$(bucket_num "$s4" 198.18.40.1 default passed)"

# --- phase 5: a file whose packet rules take but whose tag rules are refused -------------
# (a strict tag rule needs --redis, which this agent does not have)
printf '\n[[tag]]\nprefix = "pay:"\nrate = 1\nburst = 1\nstrict = true\n' >>"$RULES"
out=$("$AGENT" reload --pin-dir "$PIN_DIR" 2>&1)
rc=$?
echo "reload (strict tag rule without --redis, exit $rc): $out"
check_eq rules/reload-partial/exit "agent reload exit code when the tag rules are refused" "$rc" 1
check rules/reload-partial/message "the answer does not say the reload took in part: $out" \
	grep -q "^reloaded in part: the packet rules are in force, but the tag rules were refused.*needs --redis" <<<"$out"
check rules/reload-partial/agent-alive "the agent exited after a partial reload" alive "$AGENT_PID"

# --- what reached the sockets: exactly what XDP passed ----------------------------------
sink_stop || die "the sink on 9999 did not exit cleanly"
sink9999=$SINK_JSON
kill -INT "${LAB_PIDS[sink53]}" 2>/dev/null
wait_exit "${LAB_PIDS[sink53]}" 5 || die "the sink on 5353 did not exit"
sink53=$(cat "$WORK/sink53.json")
rcv() { local v; v=$(source_num "$1" "$2" received); echo "${v:-0}"; }
total() { local n=0 p; for p in p1 p2 p3 p4; do n=$((n + $(sent "$WORK/$p.json" "$1"))); done; echo $n; }
check_eq rules/sink/allowed "198.18.10.1: received vs sent (allowed throughout)" "$(rcv "$sink9999" 198.18.10.1)" "$(total 198.18.10.1)"
check_eq rules/sink/blocked "198.18.20.1: received vs sent after it was allowed" "$(rcv "$sink9999" 198.18.20.1)" "$(sent "$WORK/p4.json" 198.18.20.1)"
check_eq rules/sink/blocked6 "2001:2:0:20::1: received" "$(rcv "$sink9999" 2001:2:0:20::1)" 0
check_eq rules/sink/dns "198.18.30.1 on 5353: received vs the dns bucket's passed" "$(rcv "$sink53" 198.18.30.1)" "$dns_passed"
check_eq rules/sink/port-default "198.18.30.1 on 9999: received vs the default bucket's passed" \
	"$(rcv "$sink9999" 198.18.30.1)" "$(bucket_num "$s4" 198.18.30.1 default passed)"
# (The slow bucket as of phase 3: after phase 4 its rule is gone, and so is its name.)
check_eq rules/sink/slow "198.18.40.1 + .2: received vs passed by the slow and default buckets" \
	"$(($(rcv "$sink9999" 198.18.40.1) + $(rcv "$sink9999" 198.18.40.2)))" \
	"$(($(bucket_num "$s3" 198.18.40.0 slow passed) + $(bucket_num "$s4" 198.18.40.1 default passed)))"
check_eq rules/sink/socket-drops "datagrams lost in the sinks' socket buffers" \
	"$(($(json_num "$sink9999" socket_drops) + $(json_num "$sink53" socket_drops)))" 0

agent_signal main TERM || die "the agent did not exit within 10 s of SIGTERM"
check_eq rules/sigterm-exit-code "agent exit code after SIGTERM" "$EXIT_RC" 0

lab_finish
