#!/usr/bin/env bash
# test_tags.sh - the query socket of real agents, and tag hits shared between peers.
#
# Two agents on the two ends of one veth pair (namespaces $H_NS and $C_NS), peering
# over it, each with a query socket in $WORK and the tag rule user:=1/5 (1 per second,
# burst 5). A tag spent on agent A is then refused by agent B once A's report has
# arrived: one budget for a tag, whichever agent applications ask. Also the Python
# client (clients/python) against a real agent, and the protocol's answers.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=tags

lab_init dttag
lab_up
ip -n "$H_NS" link set lo up
ip -n "$C_NS" link set lo up
B_PIN=$PIN_DIR-b
LAB_PIN_DIRS+=("$B_PIN")

# The cluster runs with keys (docs/security.md): one pair per agent, each .pub naming the
# endpoint its peer connects to, both in one --curve-peers directory.
mkdir -p "$WORK/keys"
"$AGENT" keygen a --dir "$WORK/keys" --endpoint "$LAB_V4_HOST:7700" >/dev/null &&
	"$AGENT" keygen b --dir "$WORK/keys" --endpoint "$LAB_V4_CLIENT:7700" >/dev/null || die "agent keygen failed"
agent_start a --rate 1000 --burst 1000 --query-socket "$WORK/a.sock" --tag-rule 'user:=1/5' --metrics 127.0.0.1:9109 \
	--peers "$LAB_V4_CLIENT:7700" --node-id a --period 200ms --stats-interval 10m \
	--curve-key "$WORK/keys/a.key" --curve-peers "$WORK/keys" ||
	die "agent a did not start"
nsenter --net="/run/netns/$C_NS" -- "$AGENT" --iface "$C_IF" --pin-dir "$B_PIN" --rate 1000 --burst 1000 \
	--query-socket "$WORK/b.sock" --tag-rule 'user:=1/5' --peers "$LAB_V4_HOST:7700" --node-id b \
	--period 200ms --stats-interval 10m --curve-key "$WORK/keys/b.key" --curve-peers "$WORK/keys" \
	>"$WORK/agent-b.log" 2>&1 &
LAB_PIDS[agent-b]=$!
wait_for_line "$WORK/agent-b.log" 'attached dthrottle' "${LAB_PIDS[agent-b]}" 10 || die "agent b did not start"
wait_for_line "$WORK/agent-b.log" 'peer a is up' "${LAB_PIDS[agent-b]}" 10 || die "b never heard a"
wait_for_line "$(agent_log a)" 'peer b is up' "$AGENT_PID" 10 || die "a never heard b"

# The base protocol: exactly OK/NO, burst 5 then refused; other tags unaffected.
got=$(query_ask "$WORK/a.sock" user:1 user:1 user:1 user:1 user:1 user:1 other-tag)
check protocol/burst-then-no "agent a answered '$got'" [ "$got" = "OK,OK,OK,OK,OK,NO,OK" ]

# The cluster: user:2 spent on a; after a's report b refuses it too.
# tag_hits NAME: the tag hits agent NAME (a or b) has applied from its peer's reports.
tag_hits() {
	local ns=$H_NS pin=$PIN_DIR
	[ "$1" = b ] && ns=$C_NS pin=$B_PIN
	json_num "$(nsenter --net="/run/netns/$ns" "$AGENT" stats --pin-dir "$pin" --json)" tag_hits_received
}
# spent_then_refused WHO OTHER TAG: TAG's burst spent on WHO; once OTHER has applied WHO's
# report (its status counts the 5 hits received; at most 5 s), OTHER grants at most the
# tokens refilled since: 1 + 1/s x the seconds since the spending.
spent_then_refused() {
	local who=$1 other=$2 tag=$3 before got oks t0 waited allowed
	before=$(tag_hits "$other")
	got=$(query_ask "$WORK/$who.sock" "$tag" "$tag" "$tag" "$tag" "$tag")
	check "cluster/spent-on-$who" "agent $who answered '$got'" [ "$got" = "OK,OK,OK,OK,OK" ]
	t0=$(now_s)
	wait_until 5 tag_hits_reach "$other" $((${before:-0} + 5)) ||
		echo "  ($other's status did not count $who's 5 hits of $tag within 5 s)"
	got=$(query_ask "$WORK/$other.sock" "$tag" "$tag" "$tag")
	waited=$(calc "$(now_s) - $t0")
	allowed=$(floor "$(calc "1 + $waited")")
	oks=$(tr ',' '\n' <<<"$got" | grep -c OK)
	check "cluster/refused-on-$other" "$other answered '$got' ${waited}s after $who spent $tag: at most $allowed OK (refill 1/s) expected" \
		num_cmp "$oks" '<=' "$allowed"
}
tag_hits_reach() { num_ge "$(tag_hits "$1")" "$2"; }
spent_then_refused a b user:2
# And the other way round, with the peers' debits counted in b's status.
spent_then_refused b a user:3
snap=$(nsenter --net="/run/netns/$C_NS" "$AGENT" stats --pin-dir "$B_PIN" --json)
tag_hits=$(json_num "$snap" tag_hits_received)
check cluster/tag-hits-counted "b's status shows tag_hits_received=${tag_hits:-none}" num_cmp "${tag_hits:-0}" '>=' 5

# Bad input: an overlong tag and a NUL byte are refused; the agent keeps serving.
long=$(head -c 1100 /dev/zero | tr '\0' x)
got=$(query_ask "$WORK/a.sock" "$long")
check protocol/overlong-tag "answered '$got'" [ "$got" = "ERR tag too long" ]
got=$(query_ask "$WORK/a.sock" user:9)
check protocol/still-serving "answered '$got'" [ "$got" = "OK" ]

# The Python client against the real agent: allow() and the decorator skip.
out=$(PYTHONPATH="$DT_ROOT/clients/python" PYTHONDONTWRITEBYTECODE=1 "$PYTHON" - "$WORK/a.sock" <<'PY'
import sys, dthrottle
c = dthrottle.Client(sys.argv[1])
first = [c.allow("user:py") for _ in range(6)]
calls = []
@dthrottle.throttle("user:py", client=c)
def work():
    calls.append(1)
    return "done"
print(first.count(True), first.count(False), work(), len(calls))
PY
)
check python/allow-then-deny "python saw '$out'" [ "${out% *}" = "5 1 None" ]
check python/decorator-skips "python saw '$out'" [ "${out##* }" = "0" ]

# The query socket's answers in the metrics (scraped inside a's namespace, bash /dev/tcp),
# published once a second: polled until they count a NO (the last answers given).
scrape_a() {
	scrape=$(nsenter --net="/run/netns/$H_NS" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9109 &&
		printf "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n" >&3 && timeout 5 cat <&3')
}
published() {
	scrape_a
	num_ge "$(grep -o '^dthrottle_query_answers_total{answer="no"} [0-9]*' <<<"$scrape" | awk '{print $2}')" 1 &&
		num_ge "$(grep -o '^dthrottle_query_answers_total{answer="ok"} [0-9]*' <<<"$scrape" | awk '{print $2}')" 10
}
wait_until 5 published
ok_answers=$(grep -o '^dthrottle_query_answers_total{answer="ok"} [0-9]*' <<<"$scrape" | awk '{print $2}')
no_answers=$(grep -o '^dthrottle_query_answers_total{answer="no"} [0-9]*' <<<"$scrape" | awk '{print $2}')
check metrics/query-answers "ok=${ok_answers:-none} no=${no_answers:-none} (at least 10 OK and 1 NO were given)" \
	num_cmp "${ok_answers:-0}" '>=' 10
check metrics/query-refusals "no=${no_answers:-none}" num_cmp "${no_answers:-0}" '>=' 1

lab_finish
