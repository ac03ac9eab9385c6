#!/usr/bin/env bash
# test_suggest.sh - agent suggest on real traffic: a lab agent in dry run with one rule
# (rate 1000, burst 2000) and a mix of 500 clients at known rates (260 at 1 pps, 140 at
# 2 pps, 100 at 5 pps) spread over twenty /24s (52 pps each together), 5 abusers at 60 pps
# (12 x the busiest clients) in a /24 of their own, and a /24 whose 250 sources send 6 pps
# each (1,500 pps together: each source ordinary, the prefix a flood, 29 x the median /24).
# `agent suggest --for 4s --rules FILE` reads the buckets each second and must find the
# p99 of the sources' 1 s peaks near 6 and the max near 60, propose a rate near 2 x 6 that
# would throttle exactly 5 of the 755 sources (the abusers), and a v4/24 prefix budget
# (2 x the abusers' /24, 600/s, burst 600) that caps the flooding /24 and no other; its diff
# must apply to the rules file and `agent check` accept the result. `--json` must give the same figures. The
# senders run until the measurements are done, however long the waits take on a busy
# host, and are steady (pktgen --steady): a sender that wakes late on a busy host skips
# the frames it missed rather than sending them at once, so that no source ever sends
# more than its rate in a second (a catch-up burst had made a 6 pps source's second 9).
# The price is that a starved sender falls short (a 6 pps source measured at 4.75 over 4 s, a
# 500 pps /24 at 385, on a loaded host), so the proposals are checked against the peaks the
# same output measured (2 x them, rounded up), and those peaks against the senders' rates
# within what a busy host delivers (DELIVERED: at least two-thirds; half on an emulated CPU,
# where the senders of 4,600 pps measured 65-74% of it). The whole mix is 2,850 pps, light
# enough for make test-kernel's emulated CPU: there the flood must still be over the fence
# (10 x the median /24) and over the proposal by more than its burst over 4 s. About 30 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=suggest

PREFIXES=20        # the clients' /24s: 198.18.10.0/24 .. 198.18.29.0/24
CLIENTS=500
ABUSERS=5
ABUSER_PPS=60
FLOOD_SOURCES=250  # 198.18.40.1 .. 198.18.40.250
FLOOD_PPS=6
FLOOD_RATE=$((FLOOD_SOURCES * FLOOD_PPS))
DELIVERED=0.667 # the least share of its rate a starved sender is held to
emulated && DELIVERED=0.5
FLOOD_PREFIX=198.18.40.0/24
SEND_S=80   # an upper bound: the senders are stopped once the measurements are done

# client_list FIRST N: hosts FIRST .. FIRST+N-1 of each of the clients' /24s, comma-separated.
client_list() {
	local p h out=""
	for ((p = 10; p < 10 + PREFIXES; p++)); do
		for ((h = $1; h < $1 + $2; h++)); do out+="198.18.$p.$h,"; done
	done
	echo "${out%,}"
}
# Groups of sources: the sources (a pktgen option and its value), how many, pps each.
GROUPS_SPEC=("--sources $(client_list 1 13) 260 1" "--sources $(client_list 101 7) 140 2"
	"--sources $(client_list 201 5) 100 5" "--src-range 198.18.9.1+$ABUSERS $ABUSERS $ABUSER_PPS"
	"--src-range 198.18.40.1+$FLOOD_SOURCES $FLOOD_SOURCES $FLOOD_PPS")
SOURCES=$((CLIENTS + ABUSERS + FLOOD_SOURCES))

lab_init dtsug
lab_up

RULES=$WORK/rules.toml
cat >"$RULES" <<-EOF
	version = 1

	[[rule]]
	name = "lab"
	cidr = "198.18.0.0/15"
	rate = 1000     # a guess
	burst = 2000
	dry_run = true
EOF

agent_start sug --rate 1000 --burst 2000 --rules "$RULES" --stats-interval 10m || die "the agent did not start"
for i in "${!GROUPS_SPEC[@]}"; do
	read -r opt list n pps <<<"${GROUPS_SPEC[$i]}"
	send_traffic_bg "g$i" "$WORK/g$i.json" "$opt" "$list" --rate $((n * pps)) --count $((n * pps * SEND_S)) \
		--duration "$((SEND_S + 2))s" --steady
done
wait_until 30 sources_seen 198.18.10.1 198.18.10.101 198.18.10.201 198.18.9.1 198.18.40.1 ||
	die "the senders' sources never reached the buckets"
# Every source has sent once (the 1 pps ones take a second) before the measurement starts.
wait_until 30 sources_seen 198.18.29.13 198.18.29.107 198.18.29.205 198.18.9.5 198.18.40.250 ||
	die "the last sources of the groups never reached the buckets"

"$AGENT" suggest --pin-dir "$PIN_DIR" --for 4s --rules "$RULES" >"$WORK/suggest.txt" 2>"$WORK/suggest.err"
rc=$?
"$AGENT" suggest --pin-dir "$PIN_DIR" --for 4s --rules "$RULES" --json >"$WORK/suggest.json" 2>"$WORK/suggest-json.err"
json_rc=$?
for i in "${!GROUPS_SPEC[@]}"; do
	alive "${LAB_PIDS[send-g$i]}" || fail suggest/sender-$i "sender $i ended before the measurements did: $(cat "$WORK/g$i.json.err")"
	stop_pid "${LAB_PIDS[send-g$i]}"
done
sed 's/^/  | /' "$WORK/suggest.txt"
check_eq suggest/exit "agent suggest's exit status ($(cat "$WORK/suggest.err"))" "$rc" 0
check suggest/measured "the first line does not say 3 s were measured" grep -q '^measured 4 s of the buckets' "$WORK/suggest.txt"

# The proposal: "  proposed: rate R, burst B (...)", then what it would throttle.
rate=$(sed -n 's/^  proposed: rate \([0-9.]*\), burst .*/\1/p' "$WORK/suggest.txt")
# sources_row LABEL COLUMN: a column of the sources' table (p50 4, p99 3, p99.9 2, max 1 from the end).
sources_row() {
	awk -v label="$1" -v back="$2" '/^  sources/ { s = 1; next } s && index($0, label) { print $(NF - back + 1); exit }' \
		"$WORK/suggest.txt"
}
p99=$(sources_row "peak /s over 1 s" 3)
max=$(sources_row "peak /s over 1 s" 1)
sustained=$(sources_row "peak /s over 4 s" 3)     # the rate is headroom 2 x this
max_sustained=$(sources_row "peak /s over 4 s" 1) # the busiest abuser's rate
echo "proposed rate ${rate:-?} for clients at 1, 2 and 5 pps, flood sources at $FLOOD_PPS (measured ${sustained:-?} over 4 s; headroom 2 x p99) and $ABUSERS abusers at $ABUSER_PPS pps"
check_ge suggest/sustained "the sources' p99 of 4 s peaks (the flood's sources at $FLOOD_PPS pps)" "$sustained" \
	"$(calc "$FLOOD_PPS * $DELIVERED")"
check_le suggest/sustained-high "the sources' p99 of 4 s peaks (the flood's sources at $FLOOD_PPS pps)" "$sustained" \
	"$(calc "$FLOOD_PPS + 0.5")"
check_ge suggest/rate-low "the proposed rate (2 x the measured p99 of 4 s peaks, ${sustained:-?})" "$rate" \
	"$(calc "2 * ${sustained:-99}")"
check_le suggest/rate-high "the proposed rate (2 x the measured p99 of 4 s peaks, ${sustained:-?}, rounded up)" "$rate" \
	"$(calc "2 * ${sustained:-0} * 1.1")"
check_ge suggest/p99 "the sources' p99 of 1 s peaks (the flood's sources at $FLOOD_PPS pps)" "$p99" $((FLOOD_PPS - 1))
check_le suggest/p99-high "the sources' p99 of 1 s peaks (the flood's sources at $FLOOD_PPS pps)" "$p99" $((FLOOD_PPS + 2))
check_ge suggest/max "the sources' max 1 s peak (the abuser at $ABUSER_PPS pps)" "$max" $((ABUSER_PPS * 8 / 10))
check suggest/throttles-abusers "the proposal does not throttle exactly the $ABUSERS abusers: $(grep 'proposed:.*throttle' "$WORK/suggest.txt")" \
	grep -q "^  proposed: would throttle $ABUSERS of $SOURCES sources" "$WORK/suggest.txt"
check suggest/now "the current limits (1000/s) throttle someone: $(grep 'now:' "$WORK/suggest.txt")" \
	grep -q "^  now: rate 1000, burst 2000 would throttle 0 of $SOURCES sources" "$WORK/suggest.txt"

# The prefixes: twenty of clients, the abusers' and the flood's; the proposal caps the flood only.
check suggest/prefixes "no table of the v4/24 aggregates" grep -q "^  v4/24 prefixes ($((PREFIXES + 2)))" "$WORK/suggest.txt"
read -r limit limit_rate < <(sed -n 's|^    proposed: \(v4/24=\([0-9.]*\)/s,burst=[0-9]*\) .*|\1 \2|p' "$WORK/suggest.txt")
echo "proposed prefix budget ${limit:-?} for /24s of clients at about 52 pps, the abusers' at $((ABUSERS * ABUSER_PPS)) and the flood's at $FLOOD_RATE"
# The abusers' /24 is the busiest ordinary one: its five sources, each at most the busiest
# source's measured rate and (one sender for all five) within a tenth of each other.
check_ge suggest/prefix-rate-low "the proposed v4/24 rate (2 x the abusers' /24: $ABUSERS x ${max_sustained:-?} pps measured, less a tenth)" \
	"${limit_rate:-0}" "$(calc "2 * $ABUSERS * ${max_sustained:-999} * 0.9")"
check_ge suggest/abusers-sustained "the busiest source's 4 s peak (an abuser at $ABUSER_PPS pps)" "$max_sustained" \
	"$(calc "$ABUSER_PPS * $DELIVERED")"
check_le suggest/prefix-rate-high "the proposed v4/24 rate (under the flooding /24's $FLOOD_RATE pps)" "${limit_rate:-99999}" \
	$((FLOOD_RATE * 7 / 10))
check suggest/prefix-throttles "the prefix budget does not throttle exactly one /24: $(grep '^    proposed: would' "$WORK/suggest.txt")" \
	grep -q "^    proposed: would throttle 1 of $((PREFIXES + 2)) prefixes" "$WORK/suggest.txt"
check suggest/prefix-capped "the prefix budget does not cap $FLOOD_PREFIX alone: $(grep '^    capped:' "$WORK/suggest.txt")" \
	grep -qx "    capped: $FLOOD_PREFIX ($FLOOD_SOURCES sources)" "$WORK/suggest.txt"

# The diff applies to the rules file and sets the proposal.
check suggest/patch "patch --dry-run refuses the output: $(patch --dry-run "$RULES" -i "$WORK/suggest.txt" 2>&1)" \
	patch --dry-run "$RULES" -i "$WORK/suggest.txt"
cp "$RULES" "$WORK/patched.toml"
patch -s "$WORK/patched.toml" -i "$WORK/suggest.txt" >/dev/null 2>&1
check suggest/patched "the patched file lacks rate = $rate: $(grep -E '^(rate|burst)' "$WORK/patched.toml")" \
	grep -q "^rate = $rate     # a guess$" "$WORK/patched.toml"
check suggest/patched-prefix "the patched file lacks prefix_limits = [\"$limit\"]: $(grep prefix_limits "$WORK/patched.toml")" \
	grep -qx "prefix_limits = \[\"$limit\"\]" "$WORK/patched.toml"
check suggest/check "agent check refuses the patched file: $("$AGENT" check --rate 1 --burst 1 --iface lo --rules "$WORK/patched.toml" 2>&1 | tail -2)" \
	"$AGENT" check --rate 1 --burst 1 --iface lo --rules "$WORK/patched.toml"

# --json: the same figures, read with jq (a measurement of its own, of the same traffic).
check_eq suggest/json-exit "agent suggest --json's exit status ($(cat "$WORK/suggest-json.err"))" "$json_rc" 0
doc=$(cat "$WORK/suggest.json")
lab='.rules[] | select(.name == "lab")'
check_eq suggest/json-sources "sources the lab rule saw in --json" "$(json_get "$doc" "$lab | .sources")" "$SOURCES"
json_rate=$(json_get "$doc" "$lab | .proposal.rate")
json_sustained=$(json_get "$doc" "$lab | .peaks.over_long.p99")
check_ge suggest/json-rate-low "the proposed rate in --json (2 x its p99 of long peaks, ${json_sustained:-?})" \
	"${json_rate:-0}" "$(calc "2 * ${json_sustained:-99}")"
check_le suggest/json-rate-high "the proposed rate in --json (2 x its p99 of long peaks, ${json_sustained:-?}, rounded up)" \
	"${json_rate:-99}" "$(calc "2 * ${json_sustained:-0} * 1.1")"
check_ge suggest/json-sustained "the sources' p99 of long peaks in --json (the flood's sources at $FLOOD_PPS pps)" \
	"${json_sustained:-0}" "$(calc "$FLOOD_PPS * $DELIVERED")"
check_eq suggest/json-throttles "sources the proposal throttles in --json" "$(json_get "$doc" "$lab | .proposal.throttles.sources")" "$ABUSERS"
check_ge suggest/json-max "the sources' max 1 s peak in --json" "$(json_get "$doc" "$lab | .peaks.over_1s.max | floor")" $((ABUSER_PPS * 8 / 10))
v24="$lab | .prefixes[] | select(.level == \"v4/24\")"
check_eq suggest/json-prefixes "v4/24 prefixes in --json" "$(json_get "$doc" "$v24 | .peaks.over_1s.n")" $((PREFIXES + 2))
check_eq suggest/json-capped "the prefixes the v4/24 proposal caps in --json" "$(json_get "$doc" "$v24 | .proposal.capped")" "[\"$FLOOD_PREFIX\"]"
check_eq suggest/json-floods "prefixes left out as floods in --json" "$(json_get "$doc" "$v24 | .proposal.floods_left_out")" 1
check suggest/json-diff "--json's diff lacks the prefix_limits line: $(json_get "$doc" .diff)" \
	jq -e '.diff | test("\n[+]prefix_limits = \\[\"v4/24=")' "$WORK/suggest.json"

# Bounded: with --max-sources 10 the output says the cap was reached.
"$AGENT" suggest --pin-dir "$PIN_DIR" --for 2s --max-sources 10 >"$WORK/capped.txt" 2>&1
check suggest/cap "a capped run does not say so: $(head -n 1 "$WORK/capped.txt")" \
	grep -q '^measured 2 s of the buckets .*: 10 sources (cap of 10 sources reached' "$WORK/capped.txt"

agent_signal sug TERM || die "the agent did not exit within 10 s of SIGTERM"
lab_finish
