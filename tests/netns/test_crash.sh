#!/usr/bin/env bash
# test_crash.sh - the throttle outlives its agent, and a new agent takes over.
#
#   1. Agent A (rate 2/s, burst 20) attaches; a burst drains source S.
#   2. SIGKILL A: the XDP program stays attached, the pins stay, and a new burst
#      from S is still throttled (only the tokens refilled since are admitted).
#   3. Agent B (--keep) on the same --pin-dir logs "took over"; S's counters carry
#      on and its tokens are not reset to full; S stays throttled. Plain XDP swaps programs
#      in one step: A and B each leave the config map's owner of the frames at 0 (any
#      program of ours counts), once attached.
#   4. A second agent on that pin dir while B runs is refused (non-zero exit, clear
#      error) and B, its link and its pins are untouched.
#   5. SIGTERM B (--keep): link and pins stay. An agent over pins marked with a newer
#      layout is refused (what to do said, nothing touched); over pins without a marker
#      (an agent before the layout version) agent C takes over again and marks them;
#      then SIGTERM C: detached, pins removed.
#   6. Bad command lines: clear message, exit code 2 (usage) or 1 (runtime).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=crash

RATE=2
BURST=20
S=198.18.2.1
BURST_PKTS=100

lab_init dtnet
lab_up

# burst N: N frames from S at 1000 pps; sets SENT and T_SENT (time it ended).
burst() {
	send_traffic "$WORK/burst.json" --sources "$S" --rate 1000 --count "$1" --duration 2s ||
		die "pktgen send failed"
	T_SENT=$(now_s)
	SENT=$(source_num "$(cat "$WORK/burst.json")" "$S" sent)
}

# read_s: S's counters and tokens from the pins (no agent needed): P, D, TOK.
read_s() {
	local stats
	stats=$(stats_json) || die "agent stats --json failed"
	P=$(source_num "$stats" "$S" passed)
	D=$(source_num "$stats" "$S" dropped)
	TOK=$(source_num "$stats" "$S" tokens)
}

# throttled NAME: after a burst, S may pass only what refilled since the bucket was
# last empty (at T_EMPTY): RATE x elapsed + 1 (the fraction left) + 1 (edges).
# Everything else of the burst is dropped. Takes P0/D0 (before) and P/D (after).
throttled() {
	local allowed
	allowed=$(floor "$(calc "$RATE * ($T_SENT - $T_EMPTY) + 2")")
	check_le "$1/passed" "$S passed during a burst of $SENT" "$((P - P0))" "$allowed"
	check_eq "$1/dropped" "$S dropped during a burst of $SENT (sent - passed)" "$((D - D0))" "$((SENT - (P - P0)))"
	check_ge "$1/dropping" "$S dropped during a burst of $SENT" "$((D - D0))" 1
	T_EMPTY=$T_SENT
}

# --- 1. drain S -----------------------------------------------------------------------------
agent_start a --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent A did not attach"
A_PID=$AGENT_PID
OWNER_A=$(config_owner)
check_eq crash/owner/a "config.owner after agent A attached alone with plain XDP (0: no owner test)" "$OWNER_A" 0
burst 200
read_s
T_EMPTY=$T_SENT
check_le crash/drain/passed "$S passed while draining (burst $BURST + refill)" "$P" $((BURST + 2))
check_eq crash/drain/dropped "$S dropped while draining (sent - passed)" "$D" "$((SENT - P))"

# --- 2. SIGKILL: the pinned link keeps enforcing ------------------------------------------
agent_signal a KILL || die "agent A did not die on SIGKILL"
check crash/sigkill/still-attached "no XDP on $H_IF after the agent was killed" xdp_attached
check crash/sigkill/pins-kept "pins missing after SIGKILL: $(ls "$PIN_DIR" 2>/dev/null | tr '\n' ' ')" pins_present
P0=$P D0=$D
burst "$BURST_PKTS"
read_s
throttled crash/sigkill/throttled

# --- 3. agent B takes over, state kept --------------------------------------------------------
P0=$P D0=$D
agent_start b --rate "$RATE" --burst "$BURST" --stats-interval 10m --keep || die "agent B did not start"
B_PID=$AGENT_PID
check crash/takeover/logged "agent B did not log 'took over'" grep -q 'took over dthrottle' "$(agent_log b)"
check_eq crash/owner/b "config.owner after agent B took A's link over (0: no owner test)" "$(config_owner)" 0
read_s
check_eq crash/takeover/passed-kept "$S passed counter after the takeover" "$P" "$P0"
check_eq crash/takeover/dropped-kept "$S dropped counter after the takeover" "$D" "$D0"
max_tokens=$(calc "$RATE * ($(now_s) - $T_EMPTY) + 1")
check_le crash/takeover/tokens-kept "$S tokens after the takeover (a reset bucket has $BURST)" "$TOK" "$max_tokens"
burst "$BURST_PKTS"
read_s
throttled crash/takeover/throttled

# --- 4. a second agent on the same pin dir is refused -------------------------------------
agent_fg --iface "$H_IF" --pin-dir "$PIN_DIR" --rate 50 --burst 500
echo "second agent: exit $FG_RC: $(tail -n 1 <<<"$FG_OUT")"
check crash/second-agent/refused "a second agent on $PIN_DIR exited $FG_RC, expected non-zero" test "$FG_RC" -ne 0
check crash/second-agent/message "the refusal does not say who holds $PIN_DIR: $FG_OUT" \
	grep -q "already running.*$PIN_DIR" <<<"$FG_OUT"
check crash/second-agent/names-pid "the refusal does not name agent B (pid $B_PID): $FG_OUT" \
	grep -q "pid $B_PID" <<<"$FG_OUT"
check crash/second-agent/first-alive "agent B died when a second agent was refused" alive "$B_PID"
check crash/second-agent/still-attached "no XDP on $H_IF after the refusal" xdp_attached
check crash/second-agent/pins-kept "pins missing after the refusal" pins_present
P0=$P D0=$D
burst "$BURST_PKTS"
read_s
throttled crash/second-agent/policy-untouched

# --- 5. --keep, then a clean takeover and exit ---------------------------------------------
agent_signal b TERM || die "agent B did not exit within 10 s of SIGTERM"
check_eq crash/keep/exit-code "agent B (--keep) exit code after SIGTERM" "$EXIT_RC" 0
check crash/keep/logged "agent B did not log that --keep leaves the program attached" \
	grep -q 'leaving the program attached' "$(agent_log b)"
check crash/keep/still-attached "no XDP on $H_IF after SIGTERM with --keep" xdp_attached
check crash/keep/pins-kept "pins missing after SIGTERM with --keep" pins_present

# Pins of a newer layout (a downgrade): refused, saying what to do; nothing touched.
# layout_of_pins: the version in $PIN_DIR/layout (its first byte: versions stay below 256 here).
layout_of_pins() { printf '%d' "$(bpftool -j map lookup pinned "$PIN_DIR/layout" key 0 0 0 0 | jq -r '.value[0]')"; }
LAYOUT=$(layout_of_pins)
check_ge crash/layout/written "layout version agent B wrote into $PIN_DIR/layout" "$LAYOUT" 1
bpftool map update pinned "$PIN_DIR/layout" key 0 0 0 0 value 99 0 0 0 || die "cannot mark the pins layout 99"
agent_fg --iface "$H_IF" --pin-dir "$PIN_DIR" --rate "$RATE" --burst "$BURST"
echo "agent over layout-99 pins: exit $FG_RC: $(tail -n 1 <<<"$FG_OUT")"
check crash/layout/newer-refused "an agent over pins of layout 99 exited $FG_RC, expected non-zero" test "$FG_RC" -ne 0
check crash/layout/newer-message "the refusal does not say the layouts and what to do: $FG_OUT" \
	grep -q "are layout 99, this agent is layout $LAYOUT (older).*remove $PIN_DIR" <<<"$FG_OUT"
check crash/layout/still-attached "no XDP on $H_IF after the layout refusal" xdp_attached
check crash/layout/pins-kept "pins missing after the layout refusal" pins_present
# Pins without a marker (an agent before the layout version): layout 1, taken over as they are.
rm "$PIN_DIR/layout" || die "cannot remove $PIN_DIR/layout"

P0=$P D0=$D
agent_start c --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent C did not start"
check crash/keep/took-over "agent C did not take over the kept link" grep -q 'took over dthrottle' "$(agent_log c)"
check_eq crash/layout/rewritten "layout version of pins without a marker after agent C started" "$(layout_of_pins)" "$LAYOUT"
read_s
check_eq crash/keep/passed-kept "$S passed counter after a --keep restart" "$P" "$P0"
agent_signal c TERM || die "agent C did not exit within 10 s of SIGTERM"
check_eq crash/clean-exit/exit-code "agent C exit code after SIGTERM" "$EXIT_RC" 0
check crash/clean-exit/detached "ip link still shows XDP on $H_IF after SIGTERM" eval '! xdp_attached'
check crash/clean-exit/unpinned "pins remain after SIGTERM: $(ls "$PIN_DIR" 2>/dev/null | tr '\n' ' ')" \
	test ! -e "$PIN_DIR"

# --- 6. bad command lines ----------------------------------------------------------------------
ERR_PIN=$PIN_DIR-err
LAB_PIN_DIRS+=("$ERR_PIN")
# bad_run NAME EXPECTED_RC PATTERN AGENT ARGS...: exit code and message of a failing run.
bad_run() {
	local name=$1 rc=$2 pattern=$3
	shift 3
	agent_fg "$@"
	echo "$name: exit $FG_RC: $(head -n 1 <<<"$FG_OUT")"
	check_eq "crash/errors/$name/exit-code" "exit code of 'agent $*'" "$FG_RC" "$rc"
	check "crash/errors/$name/message" "'agent $*' said '$FG_OUT', expected a message matching '$pattern'" \
		grep -qE -- "$pattern" <<<"$FG_OUT"
}
bad_run unknown-iface 1 "unknown interface 'dtnope$$'" --iface "dtnope$$" --rate 10 --burst 5 --pin-dir "$ERR_PIN"
bad_run burst-zero 2 '--burst: .*0' --iface "$H_IF" --rate 10 --burst 0 --pin-dir "$ERR_PIN"
bad_run negative-rate 2 '--rate: .*-5' --iface "$H_IF" --rate -5 --burst 5 --pin-dir "$ERR_PIN"
bad_run bad-duration 2 "--stats-interval: .*10parsecs" --iface "$H_IF" --rate 10 --burst 5 \
	--stats-interval 10parsecs --pin-dir "$ERR_PIN"
bad_run missing-rate 2 '--rate is required' --iface "$H_IF" --burst 5 --pin-dir "$ERR_PIN"
check crash/errors/nothing-left "a failed start left $ERR_PIN behind" test ! -e "$ERR_PIN"
check crash/errors/nothing-attached "a failed start left XDP on $H_IF" eval '! xdp_attached'

lab_finish
