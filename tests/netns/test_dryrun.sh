#!/usr/bin/env bash
# test_dryrun.sh - dry run on real traffic: nothing dropped, would-drop counted exactly
# where enforcing drops, and a reload from dry run to enforcing that keeps the buckets.
#
# Phase 1 (--dry-run): rate 100/s, burst 50; pktgen offers ~1000 pps from each of two
# IPv4 sources and one IPv6 source for ~3 s. The sink receives every frame sent; XDP
# dropped none; per source passed + would_drop = sent; passed is within its budget.
# stats, top, the log, bpftool and the metrics (dthrottle_packets_total{verdict="would_drop"})
# say so.
# Phase 2: the same pattern through a fresh enforcing agent (same flags without
# --dry-run): its total dropped equals phase 1's total would-drop within 2%.
# Phase 3 (--rules, one rule with dry_run = true, rate 1/s burst 20): 200 pps for 1 s
# drains the rule's bucket in dry run; the file is edited (dry_run removed) and
# `agent reload`ed: the bucket is kept (passed, would_drop, tokens near 0, not 20) and
# the next 200 pps for 1 s are dropped but for what 1/s refilled. About 20 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=dryrun

RATE=100
BURST=50
SOURCES=(198.18.2.1 198.18.2.2 2001:2:0:12::)
PER_SOURCE_PPS=1000
SECONDS_OFFERED=3
PORT=9100

lab_init dtdry
lab_up

# scrape OUT: GET /metrics from 127.0.0.1:$PORT in the host namespace; the body to OUT.
scrape() {
	in_ns "$H_NS" timeout 10 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
		printf "GET /metrics HTTP/1.1\r\nHost: dthrottle\r\nConnection: close\r\n\r\n" >&3
		cat <&3' "$PORT" | sed '1,/^\r$/d' >"$1"
}
# lacks PATTERN TEXT: TEXT has no line matching PATTERN.
lacks() { ! grep -q -- "$1" <<<"$2"; }
# metric FILE SERIES: the value of SERIES (name{labels} as rendered), or nothing.
metric() { awk -v s="$2" '$1 == s { print $2 }' "$1"; }

# offer_all NAME: the phase 1/2 pattern, pktgen's JSON in $WORK/NAME.json.
offer_all() {
	local total=$((PER_SOURCE_PPS * ${#SOURCES[@]})) csv
	csv=$(IFS=,; echo "${SOURCES[*]}")
	send_traffic "$WORK/$1.json" --sources "$csv" --rate "$total" --count $((total * SECONDS_OFFERED)) \
		--duration $((SECONDS_OFFERED + 2))s
}

# --- phase 1: --dry-run -------------------------------------------------------------------
sink_start 30 || die "the UDP sink did not start"
agent_start dry --rate "$RATE" --burst "$BURST" --dry-run --stats-interval 10m --metrics "127.0.0.1:$PORT" ||
	die "the agent did not start with --dry-run"
check dryrun/startup-log "the log does not say the agent is in dry run: $(grep -m1 'dry run' "$(agent_log dry)")" \
	grep -q 'dry run (--dry-run): nothing is dropped; ' "$(agent_log dry)"
check dryrun/summary "the rules summary does not count the default rule in dry run" \
	grep -q 'default 100/s burst 50; 1 in dry run' "$(agent_log dry)"
# agent top during the traffic: one frame of the second second.
"$AGENT" top --pin-dir "$PIN_DIR" --count 2 --interval 1s >"$WORK/top.txt" 2>"$WORK/top.err" &
LAB_PIDS[top]=$!
offer_all dry || die "pktgen send failed"
wait_exit "${LAB_PIDS[top]}" 10 || die "agent top --count 2 did not end"
top_wd=$(sed -n 's/^total: .*would-drop \([0-9.]*\)\/s.*/\1/p' "$WORK/top.txt" | tail -n 1)
echo "agent top, second frame: would-drop ${top_wd:-?}/s over ${#SOURCES[@]} sources offering ${PER_SOURCE_PPS} pps each"
check_ge dryrun/top-rate "agent top's would-drop rate (rate $RATE/s of ${PER_SOURCE_PPS} pps per source)" \
	"$top_wd" "$(((PER_SOURCE_PPS - RATE) * ${#SOURCES[@]} * 8 / 10))"
check dryrun/top-line "agent top does not say it plainly: $(head -n 4 "$WORK/top.txt")" \
	grep -q '^dry run: every rule (nothing is dropped; ' "$WORK/top.txt"
check dryrun/top-column "agent top has no WOULD-DROP/s column" grep -q 'WOULD-DROP/s' "$WORK/top.txt"
sink_stop || die "the sink did not exit cleanly"
sink1=$SINK_JSON
s1=$(stats_json) || die "agent stats --json failed"
text1=$("$AGENT" stats --pin-dir "$PIN_DIR" --top 3)
scrape "$WORK/metrics1" || die "the metrics scrape failed"
sent1=$(cat "$WORK/dry.json")
el1=$(json_num "$sent1" elapsed_s)
max_passed=$(calc "$(floor "$(calc "$BURST + $RATE * $el1")") + 2")
echo "phase 1 (dry run): ${PER_SOURCE_PPS} pps per source for ${el1} s"
printf '%-14s %8s %8s %8s %10s %9s\n' SOURCE SENT PASSED DROPPED WOULD-DROP DELIVERED
wd1=0
for src in "${SOURCES[@]}"; do
	sent=$(source_num "$sent1" "$src" sent)
	passed=$(source_num "$s1" "$src" passed)
	dropped=$(source_num "$s1" "$src" dropped)
	wd=$(source_num "$s1" "$src" would_drop)
	delivered=$(source_num "$sink1" "$src" received)
	printf '%-14s %8s %8s %8s %10s %9s\n' "$src" "${sent:--}" "${passed:--}" "${dropped:--}" "${wd:--}" "${delivered:-0}"
	check_eq "dryrun/$src/delivered" "$src: datagrams the sink received vs frames sent" "${delivered:-0}" "$sent"
	check_eq "dryrun/$src/not-dropped" "$src: dropped in dry run" "$dropped" 0
	check_eq "dryrun/$src/accounted" "$src: passed + would_drop vs frames sent" "$((${passed:-0} + ${wd:-0}))" "$sent"
	check_le "dryrun/$src/charged" "$src: admitted (charged) more than burst + rate x ${el1}s + 2" "$passed" "$max_passed"
	check_ge "dryrun/$src/would-drop" "$src: would-drop (the sender exceeded the rate)" "$wd" 1
	wd1=$((wd1 + ${wd:-0}))
done
check_eq dryrun/total "counters.would_drop vs the sources' sum" "$(json_num "$s1" would_drop)" "$wd1"
check_eq dryrun/total-dropped "counters.dropped in dry run" "$(json_num "$s1" dropped)" 0
check_eq dryrun/rule "rule default's would_drop vs the total" \
	"$(rule_num "$s1" default would_drop)" "$wd1"
check dryrun/stats-json "stats --json does not say every rule is in dry run: \"dry_run\": $(json_get "$s1" .dry_run)" \
	json_test "$s1" '.dry_run == {all: true, rules: ["default"]}'
check dryrun/stats-text "agent stats does not say it plainly: $(head -n 4 <<<"$text1")" \
	grep -q '^dry run: every rule (nothing is dropped; ' <<<"$text1"
check_eq dryrun/stats-text-total "agent stats' would-drop line" \
	"$(awk '$1 == "would-drop" { print $2 }' <<<"$text1")" "$wd1"
check_eq dryrun/metrics "dthrottle_packets_total{verdict=\"would_drop\"} vs stats" \
	"$(metric "$WORK/metrics1" 'dthrottle_packets_total{verdict="would_drop"}')" "$wd1"
check_eq dryrun/metrics-rule "dthrottle_rule_packets_total{rule=\"default\",verdict=\"would_drop\"} vs stats" \
	"$(metric "$WORK/metrics1" 'dthrottle_rule_packets_total{rule="default",verdict="would_drop"}')" "$wd1"
check_eq dryrun/metrics-dropped "dthrottle_packets_total{verdict=\"dropped\"} in dry run" \
	"$(metric "$WORK/metrics1" 'dthrottle_packets_total{verdict="dropped"}')" 0
# bpftool's view of the buckets names the field (BTF) and, with the would-drops the CPUs
# still hold in drop_pending (fewer than 256 per CPU and source), holds the same counts.
# sum_wd MAP: the sum of every would_drop field of the pinned MAP (bpftool -j: its "formatted").
sum_wd() { bpftool -j map dump pinned "$PIN_DIR/$1" | jq '[.. | objects | .would_drop? | numbers] | add // 0'; }
bpf_wd=$(sum_wd buckets)
held_wd=$(sum_wd drop_pending)
check_eq dryrun/bpftool "the sum of would_drop in bpftool map dump pinned $PIN_DIR/buckets ($bpf_wd) and .../drop_pending ($held_wd)" \
	"$((bpf_wd + held_wd))" "$wd1"
check_le dryrun/bpftool-held "would-drops still held per CPU (drop_pending) vs 255 per CPU and source" \
	"$held_wd" "$((255 * $(nproc) * ${#SOURCES[@]}))"
agent_signal dry TERM || die "the dry-run agent did not exit within 10 s of SIGTERM"

# --- phase 2: the same traffic, enforcing -------------------------------------------------
sink_start 30 || die "the UDP sink did not start"
agent_start enforce --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "the enforcing agent did not start"
check dryrun/enforcing-log "an enforcing agent logged a dry run" lacks 'dry run' "$(cat "$(agent_log enforce)")"
offer_all enforce || die "pktgen send failed"
sink_stop || die "the sink did not exit cleanly"
s2=$(stats_json) || die "agent stats --json failed"
el2=$(json_num "$(cat "$WORK/enforce.json")" elapsed_s)
dropped2=$(json_num "$s2" dropped)
sent_total1=0 sent_total2=0
for src in "${SOURCES[@]}"; do
	sent_total1=$((sent_total1 + $(source_num "$sent1" "$src" sent)))
	sent_total2=$((sent_total2 + $(source_num "$(cat "$WORK/enforce.json")" "$src" sent)))
done
diff_pct=$(calc "100 * ($wd1 - $dropped2) / $dropped2")
echo "phase 2 (enforcing, ${el2} s): dropped $dropped2 of $sent_total2 sent;" \
	"phase 1 (dry run, ${el1} s): would-drop $wd1 of $sent_total1 sent; difference ${diff_pct}%"
check_eq dryrun/enforcing-would-drop "would_drop of an enforcing agent" "$(json_num "$s2" would_drop)" 0
check_le dryrun/matches-enforcing "|dry run's would-drop - enforcing's dropped| in % of dropped" \
	"$(calc "sqrt(($diff_pct) ^ 2)")" 2
agent_signal enforce TERM || die "the enforcing agent did not exit within 10 s of SIGTERM"

# --- phase 3: a rule in dry run, then enforcing by a reload ---------------------------------
RULES=$WORK/rules.toml
write_rules() { # write_rules DRY_RUN_LINE
	cat >"$RULES.tmp" <<-EOF
		version = 1
		[[rule]]
		name = "web"
		cidr = "198.18.3.0/24"
		rate = 1
		burst = 20
		$1
	EOF
	mv "$RULES.tmp" "$RULES"
}
# web_num JSON KEY: KEY of 198.18.3.1's bucket.
web_num() { source_num "$1" 198.18.3.1 "$2"; }

write_rules "dry_run = true"
agent_start rules --rules "$RULES" --stats-interval 10m || die "the agent did not start with --rules"
check dryrun/rule-log "the log does not name the rule in dry run" \
	grep -q 'dry run for rule web: nothing they match is dropped' "$(agent_log rules)"
send_traffic "$WORK/p3a.json" --sources 198.18.3.1 --rate 200 --count 200 --duration 3s || die "pktgen send failed"
s3=$(stats_json) || die "agent stats --json failed"
t3=$(now_s)
p3=$(web_num "$s3" passed) w3=$(web_num "$s3" would_drop) tokens3=$(web_num "$s3" tokens)
echo "phase 3a (rule web in dry run): passed $p3, would_drop $w3, dropped $(web_num "$s3" dropped)"
check_eq dryrun/rule/accounted "web: passed + would_drop vs sent" "$((${p3:-0} + ${w3:-0}))" \
	"$(source_num "$(cat "$WORK/p3a.json")" 198.18.3.1 sent)"
check_le dryrun/rule/charged "web: admitted more than its burst 20 + 1/s x 1 s + 2" "$p3" 23
text3=$("$AGENT" stats --pin-dir "$PIN_DIR")
check dryrun/rule/stats-text "agent stats does not say web, its only rule that can drop, is in dry run: $(head -n 3 <<<"$text3")" \
	grep -q '^dry run: every rule (nothing is dropped; ' <<<"$text3"
check dryrun/rule/stats-rule "agent stats' rules table does not mark web: $(grep '^  web' <<<"$text3")" \
	grep -q '^  web (dry run) ' <<<"$text3"

write_rules ""
out=$("$AGENT" reload --pin-dir "$PIN_DIR" 2>&1)
rc=$?
echo "reload to enforcing (exit $rc): $out"
check_eq dryrun/reload/exit "agent reload exit code" "$rc" 0
check dryrun/reload/summary "the reload summary still counts a rule in dry run: $out" lacks 'in dry run' "$out"
s4=$(stats_json) || die "agent stats --json failed"
t4=$(now_s)
check dryrun/reload/enforcing "stats --json still shows a rule in dry run: \"dry_run\": $(json_get "$s4" .dry_run)" \
	json_test "$s4" '.dry_run == {all: false, rules: []}'
check_eq dryrun/reload/passed-kept "web: passed after the reload (kept)" "$(web_num "$s4" passed)" "$p3"
check_eq dryrun/reload/would-drop-kept "web: would_drop after the reload (kept)" "$(web_num "$s4" would_drop)" "$w3"
tokens4=$(web_num "$s4" tokens)
echo "tokens of 198.18.3.1 right after the reload: $tokens4 (a reset bucket would hold 20)"
check_le dryrun/reload/tokens-kept "web: tokens after the reload (a reset bucket holds 20)" "$tokens4" \
	"$(calc "$tokens3 + ($t4 - $t3) + 0.1")"
send_traffic "$WORK/p3b.json" --sources 198.18.3.1 --rate 200 --count 200 --duration 3s || die "pktgen send failed"
s5=$(stats_json) || die "agent stats --json failed"
t5=$(now_s)
p5=$(($(web_num "$s5" passed) - p3))
d5=$(web_num "$s5" dropped)
echo "phase 3b (enforcing): passed $p5 more, dropped $d5, would_drop $(web_num "$s5" would_drop)"
check_ge dryrun/reload/drops "web: dropped after the reload to enforcing" "$d5" 150
check_le dryrun/reload/no-new-burst "web: passed after the reload (tokens then refill at 1/s, no fresh burst of 20)" \
	"$p5" "$(floor "$(calc "$tokens4 + ($t5 - $t4) + 1")")"
check_eq dryrun/reload/accounted "web: passed + dropped after the reload vs sent" "$((p5 + ${d5:-0}))" \
	"$(source_num "$(cat "$WORK/p3b.json")" 198.18.3.1 sent)"
check_eq dryrun/reload/would-drop-stays "web: would_drop while enforcing" "$(web_num "$s5" would_drop)" "$w3"

lab_finish
