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

lab_finish
