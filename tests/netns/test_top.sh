#!/usr/bin/env bash
# test_top.sh - `agent top` against a running agent (rate 100/s, burst 50).
#
# Two sources send at once for ~4 s: HEAVY at 1000 pps (over its rate: dropped) and
# LIGHT at 20 pps (under it: never dropped). Meanwhile `agent top --count 2`, with
# stdout a pipe, prints exactly two plain frames separated by a blank line, no terminal
# codes; in the last one HEAVY is listed first with drops, LIGHT with passes and no
# drops, and the totals show drops. On a terminal (script(1)) the screen is cleared
# with ANSI codes instead. Bad command lines: exit 2; no maps: exit 1.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=top

HEAVY=198.18.3.1
LIGHT=198.18.3.2

lab_init dtnet
lab_up
agent_start main --rate 100 --burst 50 --stats-interval 10m || die "the agent did not attach"

# 6 s of traffic, 60 s on an emulated CPU (make test-kernel's TCG guest, where top's two
# frames came after the senders had stopped): top samples while both send.
SEND_S=6 WAIT_S=5
emulated && SEND_S=60 WAIT_S=30
send_traffic_bg heavy "$WORK/heavy.json" --sources "$HEAVY" --rate 1000 --count $((1000 * SEND_S)) --duration "${SEND_S}s"
send_traffic_bg light "$WORK/light.json" --sources "$LIGHT" --rate 20 --count $((20 * SEND_S)) --duration "${SEND_S}s"
wait_until "$WAIT_S" sources_seen "$HEAVY" "$LIGHT" || echo "  (the senders' packets were not counted within $WAIT_S s)"

"$AGENT" top --pin-dir "$PIN_DIR" --count 2 --interval 1s >"$WORK/top.txt" 2>"$WORK/top.err"
rc=$?
wait_traffic heavy "$WORK/heavy.json" || die "the heavy sender failed"
wait_traffic light "$WORK/light.json" || die "the light sender failed"
echo "--- agent top output:"
cat "$WORK/top.txt" "$WORK/top.err"

check top/exit "agent top --count 2 exited with status $rc" [ "$rc" -eq 0 ]
frames=$(grep -c '^dthrottle top: ' "$WORK/top.txt")
check_eq top/frames "frames printed with --count 2" "$frames" 2
separators=$(grep -B1 '^dthrottle top: ' "$WORK/top.txt" | grep -c '^$')
check_eq top/blank-line "blank lines before a frame header (the second frame only)" "$separators" 1
check top/no-ansi "terminal codes in the output to a pipe" bash -c "! grep -q $'\e' '$WORK/top.txt'"

# The last frame: from its header to the end.
last=$(awk '/^dthrottle top: / { f = "" } { f = f $0 "\n" } END { printf "%s", f }' "$WORK/top.txt")
# col SOURCE N: column N of SOURCE's row (SOURCE PASSED/s DROPPED/s WOULD-DROP/s TOKENS PASSED DROPPED).
col() { awk -v s="$1" -v n="$2" '$1 == s { print $n }' <<<"$last"; }
first=$(awk '/^  SOURCE/ { getline; print $1 }' <<<"$last")
check top/heaviest-first "first source row is '$first', expected $HEAVY (most drops/s)" [ "$first" = "$HEAVY" ]
check_ge top/heavy-drops "$HEAVY dropped/s" "$(col "$HEAVY" 3)" 1
check_ge top/light-passes "$LIGHT passed/s" "$(col "$LIGHT" 2)" 1
check_eq top/light-no-drops "$LIGHT dropped/s (it sends under its rate)" "$(col "$LIGHT" 3)" 0
total_drops=$(sed -n 's/^total: .* dropped \([0-9.]*\)\/s.*/\1/p' <<<"$last")
check_ge top/total-drops "total dropped/s" "$total_drops" 1

# On a terminal: the screen is cleared before the frame.
if command -v script >/dev/null; then
	script -qec "$AGENT top --pin-dir $PIN_DIR --count 1 --interval 200ms" /dev/null >"$WORK/tty.txt" 2>&1
	check top/tty-clears "no clear-screen code (ESC[H ESC[2J) on a terminal: $(head -c 200 "$WORK/tty.txt" | od -c | head -3)" \
		grep -q $'\e\[H\e\[2J' "$WORK/tty.txt"
else
	echo "script(1) not installed: the terminal mode was not tested"
fi

# Errors.
"$AGENT" top >/dev/null 2>"$WORK/err.txt"
rc=$?
check top/needs-target "agent top without --iface/--pin-dir: status $rc, expected 2: $(cat "$WORK/err.txt")" \
	[ "$rc" -eq 2 ]
"$AGENT" top --pin-dir "$PIN_DIR" --interval 10ms >/dev/null 2>"$WORK/err.txt"
rc=$?
check top/interval-status "agent top --interval 10ms: status $rc, expected 2" [ "$rc" -eq 2 ]
check top/interval-message "agent top --interval 10ms does not give the bounds: $(cat "$WORK/err.txt")" \
	grep -q "from 100ms to 1h" "$WORK/err.txt"
"$AGENT" top --pin-dir "$PIN_DIR-none" --count 1 >/dev/null 2>"$WORK/err.txt"
rc=$?
check top/no-maps "agent top on a directory without maps: status $rc, expected 1: $(cat "$WORK/err.txt")" \
	[ "$rc" -eq 1 ]

agent_signal main TERM || die "the agent did not stop on SIGTERM"
lab_finish
