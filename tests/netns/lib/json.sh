# json.sh - reading the fixed one-line JSON of `agent stats --json` and `pktgen --json`.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# json_source JSON ADDR: the {"source":"ADDR",...} object of one source, or nothing.
json_source() {
	local re=${2//./\\.}
	grep -o "{\"source\":\"$re\"[^}]*}" <<<"$1"
}

# json_num JSON KEY: the first numeric value of KEY (top-level fields come first).
json_num() { grep -o "\"$2\":-\{0,1\}[0-9][0-9.]*" <<<"$1" | head -n 1 | cut -d: -f2; }

# source_num JSON ADDR KEY: KEY of source ADDR, or nothing if the source is absent.
source_num() {
	local obj
	obj=$(json_source "$1" "$2") || return 0
	json_num "$obj" "$3"
}
