#!/usr/bin/env bash
# test_json.sh - lib/json.sh, the one reader of the JSON every suite checks, on fixed documents
# shaped like `agent stats --json` and `pktgen --json`: the values a regex would misread (a key
# inside a string, a nested field before a top-level one, an exponent, spaces, a document cut
# short) and the answers when a value is absent. No namespaces, no BPF; about a second.
set -u
source "$(dirname "$0")/lib.sh"
scratch_init json

# expect NAME GOT WANT: PASS if GOT is WANT (both printed on a failure).
expect() { check "json/$1" "got '${2}', expected '${3}'" [ "$2" = "$3" ]; }

DOC='{"pin_dir":"/x","note":"\"passed\":99","passed":7,
  "cluster":{"written_unix_ms":1733230000000,"peers":[{"node_id":"h2","up":true,"last_age_ms":12},
    {"node_id":"h3","up":false,"last_age_ms":1.5e3}],"rejected":{"unsigned":2}},
  "sources":[{"source":"198.18.0.10","passed":3,"dropped":0,"rule":{"id":0,"passed":1}},
    {"source":"198.18.0.1","passed":4, "rate": 1e-05},{"source":"2001:2::1","passed":5}]}'

expect num/top-level "$(json_num "$DOC" passed)" 7
expect num/not-in-string "$(json_num '{"note":"\"dropped\":9","dropped":1}' dropped)" 1
expect num/nested-first-in-text "$(json_num '{"a":{"x":1},"x":2}' x)" 1
expect num/exponent "$(json_num '{"rate":1.5e3}' rate)" 1500
expect num/absent "$(json_num "$DOC" nothing)" ""
expect num/not-json "$(json_num 'error: no such file' passed)" ""
expect num/cut-short "$(json_num "$(head -c 40 <<<'{"sent":3000,"elapsed_s":2.5,"sources":[{"source":"198.18.0.1"')" elapsed_s)" 2.5
expect num/string-is-not-a-number "$(json_num '{"passed":"7"}' passed)" ""

expect source/exact-address "$(source_num "$DOC" 198.18.0.1 passed)" 4
expect source/dots-are-not-wildcards "$(source_num "$DOC" 198x18x0x1 passed)" ""
expect source/ipv6 "$(source_num "$DOC" 2001:2::1 passed)" 5
expect source/space-after-colon "$(source_num "$DOC" 198.18.0.1 rate)" 1e-05
expect source/absent "$(source_num "$DOC" 198.18.9.9 passed)" ""
# shellcheck disable=SC2016 # expanded by eval
check json/source/absent-is-false "json_source found an absent source" eval '! json_source "$DOC" 198.18.9.9 >/dev/null'

expect value/object "$(json_value "$DOC" rejected)" '{"unsigned":2}'
expect value/string "$(json_value "$DOC" pin_dir)" /x
expect get/peers-down "$(json_get "$DOC" '[.cluster.peers[] | select(.up == false) | .node_id] | join(",")')" h3
# shellcheck disable=SC2016 # jq's own $r
expect get/arg "$(json_get "$DOC" '.cluster.rejected[$r]' --arg r unsigned)" 2
check json/get/not-json-is-false "json_get read a document that is not JSON" eval '! json_get "{\"a\":" .a >/dev/null'

# The "rules" and "sources" lists of `agent stats --json`: a rule by its name (a nested field
# before its own, a name inside a string), a bucket by its address and rule.
RDOC='{"rules":[{"id":1,"name":"web","note":"{\"id\":2,\"name\":\"slow\"","prefix_limits":[{"dropped":9}],
    "passed":4,"dropped":2},{"id":2,"name":"slow","action":"allow","passed":6}],
  "sources":[{"source":"198.18.40.0","prefix_len":24,"rule":"web","passed":1},
    {"source":"198.18.40.0","prefix_len":24,"rule":"slow","passed":3}]}'
expect rule/num "$(rule_num "$RDOC" slow passed)" 6
expect rule/own-field "$(rule_num "$RDOC" web dropped)" 2
expect rule/absent "$(rule_num "$RDOC" default passed)" ""
expect rule/object "$(json_get "$(json_rule "$RDOC" slow)" .action)" allow
# shellcheck disable=SC2016 # expanded by eval
check json/rule/absent-is-false "json_rule found an absent rule" eval '! json_rule "$RDOC" default >/dev/null'
expect bucket/by-rule "$(bucket_num "$RDOC" 198.18.40.0 slow passed)" 3
expect bucket/object "$(json_get "$(json_bucket "$RDOC" 198.18.40.0 web)" .passed)" 1
expect bucket/absent "$(bucket_num "$RDOC" 198.18.40.0 default passed)" ""
# shellcheck disable=SC2016 # expanded by eval
check json/bucket/absent-is-false "json_bucket found an absent bucket" eval '! json_bucket "$RDOC" 198.18.40.1 web >/dev/null'
check json/test/true "json_test: a true filter was false" json_test "$RDOC" '.rules[1] | .action == "allow" and .passed == 6'
# shellcheck disable=SC2016 # jq's own $n
check json/test/arg "json_test: --arg was not passed" json_test "$RDOC" 'any(.rules[]; .name == $n)' --arg n web
# shellcheck disable=SC2016 # expanded by eval
check json/test/false-is-false "json_test: a false filter was true" eval '! json_test "$RDOC" ".rules[0].passed == 5"'
# shellcheck disable=SC2016 # expanded by eval
check json/test/null-is-false "json_test: a null answer was true" eval '! json_test "$RDOC" .nothing'
# shellcheck disable=SC2016 # expanded by eval
check json/test/none-is-false "json_test: no answer was true" eval '! json_test "$RDOC" "first(empty)"'
check json/test/not-json-is-false "json_test read a document that is not JSON" eval '! json_test "error: x" "true"'

# lib/events.sh's event_lines: an --on-event file, one event a line among other lines.
printf '%s\n' '{"v":1,"type":"ban","prefix":"198.18.0.0/24","offence":2}' 'not an event' \
	'{"v": 1, "type": "escalation", "note": "\"type\": \"ban\""}' '{"v":1,"type":"ban","prefix":"198.18.1.0/24","offence":3}' >"$WORK/events"
expect events/lines-of-type "$(event_lines "$WORK/events" ban | wc -l)" 2
expect events/lines-filter "$(event_lines "$WORK/events" ban '.offence == 3')" '{"v":1,"type":"ban","prefix":"198.18.1.0/24","offence":3}'
expect events/lines-none "$(event_lines "$WORK/events" attack_started)" ""

lab_finish
