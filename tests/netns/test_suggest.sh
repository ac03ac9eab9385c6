#!/usr/bin/env bash
# test_suggest.sh - agent suggest on real traffic: a lab agent in dry run with one rule
# (rate 1000, burst 2000) and the issue's mix: 1,000 clients at known rates (500 at 1 pps,
# 300 at 2 pps, 200 at 5 pps) and 5 abusers at 100 pps (20 x the busiest clients).
# `agent suggest --for 4s --rules FILE` reads the buckets each second and must find the
# p99 of the sources' 1 s peaks near 5 and the max near 100, propose a rate near 2 x 5
# (8 to 16) that would throttle exactly 5 of the 1,005 sources (the abusers: at 100 pps
# they cannot pass it, so no client is throttled), and print a diff that
# `patch --dry-run` applies to the rules file. The senders run until the measurement is
# done, however long the waits take on a busy host. About 25 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=suggest

# Groups of sources: first address, how many, pps each.
GROUPS_SPEC=("198.18.4.1 500 1" "198.18.6.1 300 2" "198.18.8.1 200 5" "198.18.9.1 5 100")
CLIENTS=1000
ABUSERS=5
ABUSER_PPS=100
SEND_S=60   # an upper bound: the senders are stopped once the measurement is done

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
	read -r first n pps <<<"${GROUPS_SPEC[$i]}"
	send_traffic_bg "g$i" "$WORK/g$i.json" --src-range "$first+$n" --rate $((n * pps)) --count $((n * pps * SEND_S)) \
		--duration "$((SEND_S + 2))s"
done
wait_until 30 sources_seen 198.18.4.1 198.18.6.1 198.18.8.1 198.18.9.1 198.18.9.5 ||
	die "the senders' sources never reached the buckets"
# Every client has sent once (the 1 pps ones take a second) before the measurement starts.
wait_until 30 sources_seen 198.18.5.244 198.18.7.44 198.18.8.200 || die "the last sources of the ranges never reached the buckets"

"$AGENT" suggest --pin-dir "$PIN_DIR" --for 4s --rules "$RULES" >"$WORK/suggest.txt" 2>"$WORK/suggest.err"
rc=$?
for i in "${!GROUPS_SPEC[@]}"; do
	alive "${LAB_PIDS[send-g$i]}" || fail suggest/sender-$i "sender $i (${GROUPS_SPEC[$i]}) ended before the measurement did: $(cat "$WORK/g$i.json.err")"
	stop_pid "${LAB_PIDS[send-g$i]}"
done
sed 's/^/  | /' "$WORK/suggest.txt"
check_eq suggest/exit "agent suggest's exit status ($(cat "$WORK/suggest.err"))" "$rc" 0
check suggest/measured "the first line does not say 3 s were measured" grep -q '^measured 4 s of the buckets' "$WORK/suggest.txt"

# The proposal: "  proposed: rate R, burst B (...)", then what it would throttle.
rate=$(sed -n 's/^  proposed: rate \([0-9.]*\), burst .*/\1/p' "$WORK/suggest.txt")
echo "proposed rate ${rate:-?} for clients at 1, 2 and 5 pps (headroom 2 x p99) and $ABUSERS abusers at $ABUSER_PPS pps"
check_ge suggest/rate-low "the proposed rate (2 x the busiest clients' 5 pps)" "$rate" 8
check_le suggest/rate-high "the proposed rate (2 x the busiest clients' 5 pps)" "$rate" 16
p99=$(awk '/^  sources/ { s = 1; next } s && /peak \/s over 1 s/ { print $(NF-2); exit }' "$WORK/suggest.txt")
max=$(awk '/^  sources/ { s = 1; next } s && /peak \/s over 1 s/ { print $NF; exit }' "$WORK/suggest.txt")
check_ge suggest/p99 "the sources' p99 of 1 s peaks (the busiest clients at 5 pps)" "$p99" 4
check_le suggest/p99-high "the sources' p99 of 1 s peaks (the busiest clients at 5 pps)" "$p99" 8
check_ge suggest/max "the sources' max 1 s peak (the abuser at $ABUSER_PPS pps)" "$max" $((ABUSER_PPS * 8 / 10))
check suggest/throttles-abusers "the proposal does not throttle exactly the $ABUSERS abusers: $(grep 'proposed:.*throttle' "$WORK/suggest.txt")" \
	grep -q "^  proposed: would throttle $ABUSERS of $((CLIENTS + ABUSERS)) sources" "$WORK/suggest.txt"
check suggest/now "the current limits (1000/s) throttle someone: $(grep 'now:' "$WORK/suggest.txt")" \
	grep -q "^  now: rate 1000, burst 2000 would throttle 0 of $((CLIENTS + ABUSERS)) sources" "$WORK/suggest.txt"
check suggest/prefixes "no line for the v4/24 aggregates" grep -q '^  v4/24 prefixes (6)' "$WORK/suggest.txt"

# The diff applies to the rules file and sets the proposal.
check suggest/patch "patch --dry-run refuses the output: $(patch --dry-run "$RULES" -i "$WORK/suggest.txt" 2>&1)" \
	patch --dry-run "$RULES" -i "$WORK/suggest.txt"
cp "$RULES" "$WORK/patched.toml"
patch -s "$WORK/patched.toml" -i "$WORK/suggest.txt" >/dev/null 2>&1
check suggest/patched "the patched file lacks rate = $rate: $(grep -E '^(rate|burst)' "$WORK/patched.toml")" \
	grep -q "^rate = $rate     # a guess$" "$WORK/patched.toml"
check suggest/check "agent check refuses the patched file: $("$AGENT" check --rate 1 --burst 1 --iface lo --rules "$WORK/patched.toml" 2>&1 | tail -2)" \
	"$AGENT" check --rate 1 --burst 1 --iface lo --rules "$WORK/patched.toml"

# Bounded: with --max-sources 10 the output says the cap was reached.
"$AGENT" suggest --pin-dir "$PIN_DIR" --for 2s --max-sources 10 >"$WORK/capped.txt" 2>&1
check suggest/cap "a capped run does not say so: $(head -n 1 "$WORK/capped.txt")" \
	grep -q '^measured 2 s of the buckets .*: 10 sources (cap of 10 sources reached' "$WORK/capped.txt"

agent_signal sug TERM || die "the agent did not exit within 10 s of SIGTERM"
lab_finish
