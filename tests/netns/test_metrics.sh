#!/usr/bin/env bash
# test_metrics.sh - `agent --metrics ADDR:PORT`: Prometheus text scraped from running
# agents with real traffic (lib.sh's multi-host lab: two hosts peering in a full mesh).
#
# h1 serves on 127.0.0.1:9100 and h2 on [::1]:9100, each inside its own namespace;
# scrapes are plain HTTP/1.1 over bash's /dev/tcp (no curl needed). Two sources are
# sprayed over both hosts at 8x their rate, then on h1:
#   - the response is 200 with the 0.0.4 text content type, and every body line is
#     a HELP/TYPE comment or a sample `name{labels} value`;
#   - packets passed/dropped (global and per rule) agree with `agent stats --json`
#     read just before and just after the scrape (equal when nothing moved between);
#   - the table: active sources and new sources agree with the sources stats lists,
#     no eviction estimated, capacity as configured;
#   - the cluster: peer h2 up, heard recently, messages accepted, and the hits debited
#     equal the `debited` column summed over h1's sources;
#   - a later scrape (after more traffic) has no counter lower than before.
# A chunked POST of 64 MiB to any path is answered 405 and leaves the agent's memory as it
# was. Errors: a bad --metrics value exits 2 and a port in use exits 1, both before the
# dataplane is touched (no XDP attached); SIGTERM stops the server with the agent.
# Last, an agent with a 32-entry table sees 100 sources: the eviction estimate is
# created - present, and the fill ratio present / 32.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_common_checks.sh"
TEST_NAME=metrics

RATE=50
BURST=20
SOURCES=198.18.5.1,198.18.5.2
OFFER=$((8 * RATE * 2)) # frames per second over both sources and both hosts
PORT=9100

lab_init dtmet
mlab_up 2

# --- helpers ---------------------------------------------------------------------------

# scrape NS HOST OUT: GET /metrics from HOST:$PORT inside NS (bounded by 10 s); the
# raw response goes to OUT, the status line to OUT.status, the body to OUT.body.
scrape() {
	local ns=$1 host=$2 out=$3
	in_ns "$ns" timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 1
		printf "GET /metrics HTTP/1.1\r\nHost: dthrottle\r\nConnection: close\r\n\r\n" >&3
		cat <&3' "$host" "$PORT" >"$out" 2>"$out.err" || return 1
	head -n 1 "$out" | tr -d '\r' >"$out.status"
	sed '1,/^\r$/d' "$out" >"$out.body"
}

# metric FILE SERIES: the value of SERIES (name{labels}, exactly as rendered), or nothing.
metric() { awk -v s="$2" '$1 == s { print $2 }' "$1.body"; }

# bad_lines FILE: body lines that are not exposition format 0.0.4.
bad_lines() {
	local name='[a-zA-Z_:][a-zA-Z0-9_:]*' label='[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\["\\n])*"'
	local value='(-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?|NaN|[+-]Inf)'
	grep -Ev "^(# (HELP|TYPE) $name .+|$name(\{$label(,$label)*\})? $value)\$" "$1.body"
}

# counters FILE: "series<TAB>value" for every sample of a counter family.
counters() {
	awk '/^# TYPE / { c = ($4 == "counter"); next } /^#/ { next }
		c { v = $NF; s = $0; sub(/ [^ ]*$/, "", s); print s "\t" v }' "$1.body"
}

# decreased OLD NEW: counter series of OLD that are lower (or missing) in NEW.
decreased() {
	awk -F'\t' 'FNR == NR { now[$1] = $2; next }
		!($1 in now) { print $1 " missing"; next }
		now[$1] + 0 < $2 + 0 { print $1 " " $2 " -> " now[$1] }' <(counters "$2") <(counters "$1")
}

# in_range X LO HI: LO <= X <= HI.
in_range() { num_le "$2" "$1" && num_le "$1" "$3"; }

count_sources() { json_get "$1" '[.. | objects | select(has("source"))] | length'; }
sum_debited() { json_get "$1" '[.. | objects | .debited? | numbers] | add // 0'; }

# The polls that stand for "the last reports have landed and the metrics show them"
# (the metrics are published once a report period; the source count is cached 1 s).
# landed_and_published: every host debited all its peer's hits of both sources, and a
# fresh scrape of h1 ($WORK/s1) shows the hits debited its maps hold.
landed_and_published() {
	local src
	for src in ${SOURCES//,/ }; do mlab_debits_match "$src" $(mlab_mesh_specs) || return 1; done
	scrape "${M_NS[1]}" 127.0.0.1 "$WORK/s1" || return 1
	[ "$(metric "$WORK/s1" dthrottle_peer_hits_debited_total)" = \
		"$(sum_debited "$("$AGENT" stats --pin-dir "${M_PIN[1]}" --json --top 0)")" ]
}
# landed_state: what the last landed_and_published saw, for its failure message.
landed_state() {
	local src i out=
	for src in ${SOURCES//,/ }; do
		for ((i = 1; i <= M_HOSTS; i++)); do
			out+=" $src on h$i: passed $(snap_num landed "$i" "$src" passed), debited $(snap_num landed "$i" "$src" debited);"
		done
	done
	echo "$out scraped hits debited $(metric "$WORK/s1" dthrottle_peer_hits_debited_total)"
}

# secs EXPR: arithmetic on times since the epoch (calc's 6 digits would round them).
secs() { awk "BEGIN { printf \"%.6f\", $1 }"; }

# heard_at JSON: when (unix seconds) h1 last heard h2 by its cluster status in JSON (`agent
# stats --json`, rewritten once a second): the time it was written less h2's last_heard_ago_ms.
heard_at() {
	local doc
	doc=$(json_value "$1" cluster)
	awk -v w="$(json_num "$doc" written_unix_ms)" -v a="$(json_num "$doc" last_heard_ago_ms)" \
		'BEGIN { if (w == "" || a == "") exit 1; printf "%.3f", (w - a) / 1000 }'
}
# status_written_after T: h1's cluster status, written after T (now_s), read into HEARD_DOC.
status_written_after() {
	HEARD_DOC=$("$AGENT" stats --pin-dir "${M_PIN[1]}" --json --top 0) &&
		num_ge "$(json_num "$(json_value "$HEARD_DOC" cluster)" written_unix_ms)" "$(secs "$1 * 1000")"
}

# scraped_above OUT SERIES MIN: a fresh scrape of h1 into OUT shows SERIES at MIN or more.
scraped_above() {
	scrape "${M_NS[1]}" 127.0.0.1 "$1" && num_ge "$(metric "$1" "$2")" "$3"
}

# --- errors before anything is attached ---------------------------------------------------

out=$(in_ns "${M_NS[1]}" timeout 20 "$AGENT" --iface "${M_DIF[1]}" --pin-dir "${M_PIN[1]}" --rate "$RATE" \
	--burst "$BURST" --metrics 127.0.0.1:99999 2>&1)
rc=$?
check_eq metrics/bad-value-exit "exit code with --metrics 127.0.0.1:99999 ($out)" "$rc" 2
check metrics/bad-value-message "no clear error for --metrics 127.0.0.1:99999: $out" \
	grep -q -- "--metrics: '127.0.0.1:99999': the port must be from 1 to 65535" <<<"$out"
# (A bare port, --metrics 9100, binds 127.0.0.1: tests/netns/test_query_local.sh.)

# --- two agents with metrics ------------------------------------------------------------------

metrics_pair_start "127.0.0.1" "[::1]"
check metrics/logged "h1 did not log where it serves metrics" \
	grep -q "metrics: Prometheus text on http://127.0.0.1:$PORT/metrics" "$(agent_log h1)"

# A port in use: a third agent (on a spare veth pair in h1's namespace) must fail
# before it attaches anything.
ip -n "${M_NS[1]}" link add "dt$$x" type veth peer name "dt$$y" &&
	ip -n "${M_NS[1]}" link set "dt$$x" up && ip -n "${M_NS[1]}" link set "dt$$y" up ||
	die "cannot create the spare veth pair in ${M_NS[1]}"
LAB_PIN_DIRS+=("/sys/fs/bpf/$LAB-x")
out=$(in_ns "${M_NS[1]}" timeout 20 "$AGENT" --iface "dt$$x" --pin-dir "/sys/fs/bpf/$LAB-x" --rate "$RATE" \
	--burst "$BURST" --metrics "127.0.0.1:$PORT" 2>&1)
rc=$?
check_eq metrics/port-in-use-exit "exit code of a second agent on port $PORT ($out)" "$rc" 1
check metrics/port-in-use-message "no clear error for a port in use: $out" \
	grep -q "cannot listen on 127.0.0.1:$PORT: the port is already in use" <<<"$out"
check metrics/port-in-use-not-attached "the refused agent attached XDP to dt$$x anyway" \
	eval "! ip -n '${M_NS[1]}' link show dev 'dt$$x' | grep -q xdp"

# --- traffic, then scrapes ---------------------------------------------------------------------

scrape "${M_NS[1]}" 127.0.0.1 "$WORK/s0" || die "cannot scrape h1 before traffic: $(cat "$WORK/s0.err")"
t_spray=$(now_s)
spray_start a "$OFFER" 2 "$SOURCES"
spray_wait a || die "the traffic could not be sent"
# Every hit of the spray reported once and applied once (each host debited exactly what the
# other passed): what the peer and debit metrics below are compared with.
if wait_until 10 landed_and_published; then
	pass metrics/landed
else
	fail metrics/landed "within 10 s of the spray, the hosts had not each debited exactly what the other passed, or h1's scrape did not show its debits:$(landed_state)"
fi

stats_before=$("$AGENT" stats --pin-dir "${M_PIN[1]}" --json --top 0) || die "agent stats --json failed on h1"
t_scrape0=$(now_s)
scrape "${M_NS[1]}" 127.0.0.1 "$WORK/s1" || die "cannot scrape h1: $(cat "$WORK/s1.err")"
t_scrape1=$(now_s)
stats_after=$("$AGENT" stats --pin-dir "${M_PIN[1]}" --json --top 0) || die "agent stats --json failed on h1"
# h1's status as of after the scrape (for when h1 last heard h2).
wait_until 3 status_written_after "$t_scrape1" || die "h1's cluster status was not rewritten within 3 s of the scrape"

echo "--- sample scrape of h1 (dataplane and peer lines):"
grep -E '^dthrottle_(info|packets_total|active_sources|new_sources_total|lru_evictions_total|peer_up|peer_accepted|peer_hits_debited_total|reports_sent_total|report_collect_duration_seconds)' \
	"$WORK/s1.body"

check_eq metrics/status "status line of GET /metrics: $(cat "$WORK/s1.status")" \
	"$(grep -c '^HTTP/1.1 200 OK$' "$WORK/s1.status")" 1
check metrics/content-type "no 0.0.4 text content type in the response headers" \
	grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8' "$WORK/s1"
bad=$(bad_lines "$WORK/s1")
check metrics/exposition-format "lines that are not exposition format: ${bad:0:300}" test -z "$bad"
# 17 dataplane samples, 16 cluster ones (no rejection yet), 6 for the one peer.
check_ge metrics/sample-count "samples in the scrape" "$(grep -vc '^#' "$WORK/s1.body")" 39

for v in passed dropped; do
	lo=$(json_num "$stats_before" "$v")
	hi=$(json_num "$stats_after" "$v")
	got=$(metric "$WORK/s1" "dthrottle_packets_total{verdict=\"$v\"}")
	check "metrics/$v-agrees" "dthrottle_packets_total{verdict=\"$v\"} is ${got:-missing}, agent stats --json said $lo then $hi" \
		in_range "$got" "$lo" "$hi"
	check_eq "metrics/$v-per-rule" "the default rule's $v vs the global one" \
		"$(metric "$WORK/s1" "dthrottle_rule_packets_total{rule=\"default\",verdict=\"$v\"}")" "$got"
done
check_ge metrics/dropped-some "packets dropped (8x the rate was offered)" \
	"$(metric "$WORK/s1" 'dthrottle_packets_total{verdict="dropped"}')" 100

sources=$(metric "$WORK/s1" dthrottle_active_sources)
check metrics/active-sources "dthrottle_active_sources is ${sources:-missing}, agent stats listed $(count_sources "$stats_before") then $(count_sources "$stats_after") sources" \
	in_range "$sources" "$(count_sources "$stats_before")" "$(count_sources "$stats_after")"
check metrics/new-sources "dthrottle_new_sources_total vs agent stats new_sources" \
	in_range "$(metric "$WORK/s1" dthrottle_new_sources_total)" "$(json_num "$stats_before" new_sources)" \
	"$(json_num "$stats_after" new_sources)"
check_eq metrics/no-evictions "estimated LRU evictions in a table far from full" \
	"$(metric "$WORK/s1" dthrottle_lru_evictions_total)" 0
check_eq metrics/capacity "dthrottle_source_capacity (default --max-sources)" \
	"$(metric "$WORK/s1" dthrottle_source_capacity)" 1048576
check metrics/info "no dthrottle_info line naming h1, its interface, rate and burst" \
	grep -q "^dthrottle_info{version=\"[^\"]*\",node_id=\"h1\",interface=\"${M_DIF[1]}\",rate=\"$RATE\",burst=\"$BURST\",xdp_mode=\"[a-z]*\"} 1\$" \
	"$WORK/s1.body"

check_eq metrics/peer-up "dthrottle_peer_up of h2" "$(metric "$WORK/s1" 'dthrottle_peer_up{peer="h2"}')" 1
# When h1 last heard h2. Not "within N seconds": with link liveness (the default) a peer with
# nothing to report sends nothing for 20 s (docs/cluster-scale.md), so the age at the scrape
# is how long the polls above took. What is known: h1 applied h2's reports of the spray's
# hits, sent after the spray began; and agent stats says when h1 last heard h2, before and
# after the scrape (the scrape's instant: between t_scrape0 and t_scrape1).
age=$(metric "$WORK/s1" 'dthrottle_peer_last_heard_age_seconds{peer="h2"}')
check_le metrics/peer-heard "seconds since h1 last heard h2 (h1 applied h2's reports of the spray, begun that long before the scrape ended)" \
	"$age" "$(secs "$t_scrape1 - $t_spray")"
heard_b=$(heard_at "$stats_before") heard_a=$(heard_at "$HEARD_DOC")
check metrics/peer-heard-agrees "dthrottle_peer_last_heard_age_seconds of h2 is ${age:-missing} at a scrape $t_scrape0 to $t_scrape1, agent stats --json said h1 last heard h2 at ${heard_b:-?} then ${heard_a:-?}" \
	eval "num_ge '$(secs "$t_scrape1 - ${age:-0} + 0.005")' '$heard_b' && num_le '$(secs "$t_scrape0 - ${age:-0} - 0.005")' '$heard_a' && [ -n '$age' ]"
check_ge metrics/peer-accepted "messages h1 accepted from h2" \
	"$(metric "$WORK/s1" 'dthrottle_peer_accepted_messages_total{peer="h2"}')" 5
check_eq metrics/peer-lost "messages from h2 lost in sequence gaps" \
	"$(metric "$WORK/s1" 'dthrottle_peer_lost_messages_total{peer="h2"}')" 0
debited=$(metric "$WORK/s1" dthrottle_peer_hits_debited_total)
check_ge metrics/hits-debited "hits h1 debited for h2 (h2 served half the spray)" "$debited" 1
check_eq metrics/hits-debited-agree "dthrottle_peer_hits_debited_total vs the debited column of agent stats on h1" \
	"$debited" "$(sum_debited "$stats_after")"
check_ge metrics/reports-sent "reports h1 published" "$(metric "$WORK/s1" dthrottle_reports_sent_total)" 5
check metrics/collect-duration "no dthrottle_report_collect_duration_seconds sample" \
	grep -qE '^dthrottle_report_collect_duration_seconds [0-9]' "$WORK/s1.body"

# h2 over IPv6 loopback: it answers, and agrees with its own maps.
scrape "${M_NS[2]}" ::1 "$WORK/h2" || die "cannot scrape h2 on [::1]:$PORT: $(cat "$WORK/h2.err")"
h2_stats=$("$AGENT" stats --pin-dir "${M_PIN[2]}" --json --top 0) || die "agent stats --json failed on h2"
check_eq metrics/h2-ipv6-passed "h2's passed over [::1] vs its agent stats" \
	"$(metric "$WORK/h2" 'dthrottle_packets_total{verdict="passed"}')" "$(json_num "$h2_stats" passed)"
check_eq metrics/h2-peer-up "dthrottle_peer_up of h1 on h2" "$(metric "$WORK/h2" 'dthrottle_peer_up{peer="h1"}')" 1

# More traffic, then no counter may have gone down.
spray_start b "$OFFER" 1 "$SOURCES,198.18.5.3"
spray_wait b || die "the second traffic run could not be sent"
# The second run's packets are published (the scrape shows more passed than the first).
wait_until 5 scraped_above "$WORK/s2" 'dthrottle_packets_total{verdict="passed"}' \
	"$(($(metric "$WORK/s1" 'dthrottle_packets_total{verdict="passed"}') + 1))"
scrape "${M_NS[1]}" 127.0.0.1 "$WORK/s2" || die "cannot scrape h1 again: $(cat "$WORK/s2.err")"
check_ge metrics/counter-series "counter series in the first scrape" "$(counters "$WORK/s1" | wc -l)" 25
down=$(decreased "$WORK/s1" "$WORK/s2")
check metrics/counters-monotonic "counters that went down or vanished between scrapes: ${down:0:300}" test -z "$down"
down=$(decreased "$WORK/s0" "$WORK/s1")
check metrics/counters-monotonic-from-start "counters that went down since before the traffic: ${down:0:300}" test -z "$down"
check_ge metrics/passed-grew "passed after the second run vs the first scrape" \
	"$(metric "$WORK/s2" 'dthrottle_packets_total{verdict="passed"}')" \
	"$(($(metric "$WORK/s1" 'dthrottle_packets_total{verdict="passed"}') + 1))"

# A hostile local user: a chunked POST (no Content-Length, which is all cpp-httplib 0.11.4
# bounds a body by) of 64 MiB to /metrics and to another path. The server must answer 405
# before reading the body, and the agent's peak resident memory must not follow the body
# (before: about 450 MiB more for 256 MiB sent). 8 MiB allows for the allocator and threads.
hwm() { awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/${LAB_PIDS[agent-h1]}/status"; }
hwm0=$(hwm)
for path in /metrics /nowhere; do
	status=$(in_ns "${M_NS[1]}" timeout 30 python3 "$(dirname "$0")/chunked_post.py" 127.0.0.1 "$PORT" "$path" 64)
	check metrics/chunked-post-405$path "a chunked POST to $path was answered '$status', not 405" \
		grep -q '^HTTP/1.1 405' <<<"$status"
done
hwm1=$(hwm)
echo "peak resident memory of h1: $hwm0 MiB before two 64 MiB chunked POSTs, $hwm1 MiB after"
check_le metrics/chunked-post-memory "MiB the agent's peak resident memory grew by over two 64 MiB chunked POSTs" \
	"$((hwm1 - hwm0))" 8
scrape "${M_NS[1]}" 127.0.0.1 "$WORK/s5" || true
check metrics/after-chunked-post "h1 did not serve /metrics after the chunked POSTs: $(cat "$WORK/s5.status" 2>/dev/null)" \
	grep -q '^HTTP/1.1 200 OK$' "$WORK/s5.status"

# SIGTERM stops the server with the agent.
agent_signal h1 TERM || die "h1 did not exit within 10 s of SIGTERM"
check_eq metrics/sigterm-exit "exit code of h1 after SIGTERM" "$EXIT_RC" 0
check metrics/sigterm-closed "port $PORT still answers after h1 exited" \
	eval "! scrape '${M_NS[1]}' 127.0.0.1 '$WORK/s3'"

# A table too small for its sources: 100 sources through a 32-entry table must show
# as LRU evictions (created - present), with the table reported full or nearly.
mlab_agent_start 1 h1small --rate "$RATE" --burst "$BURST" --stats-interval 10m --max-sources 32 \
	--metrics "127.0.0.1:$PORT" || die "the small-table agent of h1 did not start"
many=$(for i in $(seq 1 100); do printf '198.18.6.%s,' "$i"; done)
spray_start c 600 1 "${many%,}"
spray_wait c || die "the 100-source traffic could not be sent"
# The 100 sources are published (new sources each period; the source count is cached 1 s).
wait_until 5 scraped_above "$WORK/s4" dthrottle_new_sources_total 100
scrape "${M_NS[1]}" 127.0.0.1 "$WORK/s4" || die "cannot scrape the small-table agent: $(cat "$WORK/s4.err")"
created=$(metric "$WORK/s4" dthrottle_new_sources_total)
present=$(metric "$WORK/s4" dthrottle_active_sources)
echo "small table: $created sources created, $present present," \
	"$(metric "$WORK/s4" dthrottle_lru_evictions_total) evictions estimated"
check_ge metrics/small-created "sources created in a 32-entry table by 100 sources" "$created" 100
check_le metrics/small-present "sources present in a 32-entry table" "$present" 32
check_eq metrics/small-evictions "dthrottle_lru_evictions_total vs created - present ($created - $present)" \
	"$(metric "$WORK/s4" dthrottle_lru_evictions_total)" "$((created - present))"
check_eq metrics/small-fill "dthrottle_source_table_fill_ratio vs $present / 32" \
	"$(metric "$WORK/s4" dthrottle_source_table_fill_ratio)" "$(calc "$present / 32")"

lab_finish
