# json.sh - reading the JSON the suites see (`agent stats --json`, `pktgen --json`, the status
# files) with jq, a real parser: a key inside a string, an exponent or a space never confuses
# it. Each helper takes the text itself (not a file), prints nothing when the text holds no
# such value or is not JSON, and is false only where it says so.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# json_num JSON KEY: the first number that is the value of a KEY field, at any depth, in the
# order of the text (top-level fields come first in the agent's documents). Read by jq's
# streaming parser, so a document cut short (head -c) is read up to the cut.
json_num() {
	jq -n --stream --arg k "$2" \
		'first(inputs | select(length == 2 and .[0][-1] == $k and (.[1] | type) == "number") | .[1])' \
		<<<"$1" 2>/dev/null || true
}

# json_value JSON KEY: the first value of a KEY field (a document's own field first, then
# depth first): a string as it is, anything else as compact JSON (an object, to read further).
json_value() {
	jq -r -c -n --arg k "$2" 'first(inputs | .. | objects | select(has($k)) | .[$k])' <<<"$1" 2>/dev/null || true
}

# json_get JSON FILTER [JQ OPTIONS...]: what the jq FILTER makes of JSON, strings as they are,
# the rest compact (e.g. json_get "$doc" '.cluster.peers[].last_age_ms'). False if JSON is
# not JSON or FILTER fails.
json_get() {
	local json=$1 filter=$2
	shift 2
	jq -r -c "$@" "$filter" <<<"$json" 2>/dev/null
}

# json_source JSON ADDR: the {"source":"ADDR",...} object of one source (compact), or nothing
# (then false).
json_source() {
	jq -c -n -e --arg a "$2" 'first(inputs | .. | objects | select(.source? == $a))' <<<"$1" 2>/dev/null
}

# source_num JSON ADDR KEY: KEY of source ADDR, or nothing if the source is absent.
source_num() {
	local obj
	obj=$(json_source "$1" "$2") || return 0
	json_num "$obj" "$3"
}

# json_test JSON FILTER [JQ OPTIONS...]: true if the jq FILTER's last answer on JSON is true
# (anything but false and null), e.g. json_test "$doc" '.dry_run == {all: true, rules: []}';
# false if it is false or null, there is none, or JSON is not JSON. Prints nothing.
json_test() {
	local json=$1 filter=$2
	shift 2
	jq -e "$@" "$filter" <<<"$json" >/dev/null 2>&1
}

# json_rule JSON NAME: the object of rule NAME in the "rules" list of `agent stats --json`
# (compact), or nothing (then false).
json_rule() {
	jq -c -e --arg n "$2" 'first(.rules[]? | select(.name == $n))' <<<"$1" 2>/dev/null
}

# rule_num JSON NAME KEY: the number KEY of rule NAME, or nothing if the rule is absent.
rule_num() {
	jq --arg n "$2" --arg k "$3" 'first(.rules[]? | select(.name == $n)) | .[$k] | numbers' <<<"$1" 2>/dev/null || true
}

# json_bucket JSON ADDR RULE: the bucket of ADDR (as keyed: a source, a prefix or a
# destination) under rule RULE in the "sources" list of `agent stats --json` (compact), or
# nothing (then false).
json_bucket() {
	jq -c -e --arg a "$2" --arg r "$3" 'first(.sources[]? | select(.source == $a and .rule == $r))' <<<"$1" 2>/dev/null
}

# bucket_num JSON ADDR RULE KEY: the number KEY of the bucket of ADDR under RULE, or nothing.
bucket_num() {
	jq --arg a "$2" --arg r "$3" --arg k "$4" \
		'first(.sources[]? | select(.source == $a and .rule == $r)) | .[$k] | numbers' <<<"$1" 2>/dev/null || true
}
