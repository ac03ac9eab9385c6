#!/usr/bin/env bash
# test_capture.sh - agent capture on real packets (docs/capture.md).
#
# A flood from two IPv4 sources (3000 pps, stopped at the end; a new one for part 7) against rate 100/s, burst 50:
#   1. `agent capture --dropped --count 20 -w F` while it is throttled: exits 0 by itself;
#      `tcpdump -r F` reads exactly 20 packets, all from the flooding sources, and every
#      packet's pcapng comment says verdict=dropped rule=default.
#   2. --per-cpu-rate 5 --duration 2s (count far above): at most 5 per CPU per second window
#      (5 x CPUs x 3 windows), at least 1.
#   3. --source 198.18.9.2: only that source's packets.
#   4. A second capture while one runs is refused (exit 1, "another capture is running").
#   5. A capture killed with SIGKILL leaves sampling off: the lease in capture_ctl (bpftool)
#      drops to 0 within 6 s while the flood goes on, and the captured count stops growing.
#   6. agent stats --json counts the captured and sampled-out packets.
#   7. At tc (an agent with --attach tc on the same flood): the packets say hook=tc.
# About 25 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=capture

FLOODERS=198.18.9.1,198.18.9.2

lab_init dtcap
lab_up
command -v tcpdump >/dev/null || die "tcpdump is not installed (make deps installs it)"

agent_start main --rate 100 --burst 50 --stats-interval 10m || die "the agent did not start"
# 30 s of flood (110 s, within send_traffic_bg's 120 s bound, on an emulated CPU, make
# test-kernel's TCG guest, where the parts below took 3 minutes and ran out of packets).
FLOOD_S=30
emulated && FLOOD_S=110
send_traffic_bg flood "$WORK/flood.json" --sources "$FLOODERS" --rate 3000 --count $((3000 * FLOOD_S)) \
	--duration "${FLOOD_S}s"
wait_until 5 sources_seen 198.18.9.1 198.18.9.2 || die "the flood did not reach the agent"

# capture NAME [OPTIONS...]: agent capture on our pins, bounded by 20 s; the file is
# $WORK/NAME.pcapng; sets CAP_RC, its stderr in $WORK/NAME.err.
capture() {
	local name=$1
	shift
	timeout 20 "$AGENT" capture --pin-dir "$PIN_DIR" -w "$WORK/$name.pcapng" "$@" 2>"$WORK/$name.err"
	CAP_RC=$?
}
# packets NAME: tcpdump -r's lines for the file (stderr in $WORK/NAME.tcpdump.err).
packets() { tcpdump -r "$WORK/$1.pcapng" -n 2>"$WORK/$1.tcpdump.err"; }
# lease: the lease in capture_ctl (0: no capture running).
lease() {
	bpftool -j map lookup pinned "$PIN_DIR/capture_ctl" key 0 0 0 0 |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["formatted"]["value"]["lease"])'
}
captured() { json_num "$(stats_json)" captured; }

# --- 1. twenty drops ------------------------------------------------------------------------
capture drops --dropped --count 20
check_eq capture/exit "agent capture --count 20 exit code ($(cat "$WORK/drops.err"))" "$CAP_RC" 0
lines=$(packets drops)
check_eq capture/tcpdump-reads "tcpdump -r: packets read ($(cat "$WORK/drops.tcpdump.err"))" \
	"$(grep -c . <<<"$lines")" 20
check_eq capture/flood-sources "packets not from the flooding sources" \
	"$(grep -cvE ' 198\.18\.9\.[12]\.[0-9]+ > ' <<<"$lines")" 0
comments=$(python3 "$DT_ROOT/tests/netns/pcapng_comments.py" "$WORK/drops.pcapng")
check_eq capture/comments "packets whose comment is not 'verdict=dropped rule=default' ($(sort <<<"$comments" | uniq -c | head -3))" \
	"$(grep -cv '^verdict=dropped rule=default hook=xdp cpu=[0-9]*$' <<<"$comments")" 0

# --- 2. the rate bound ------------------------------------------------------------------------
CPUS=$(nproc --all)
capture rate --dropped --per-cpu-rate 5 --duration 2s --count 100000
check_eq capture/rate-exit "agent capture --duration 2s exit code ($(cat "$WORK/rate.err"))" "$CAP_RC" 0
n=$(packets rate | grep -c .)
check_le capture/rate-bound "packets at --per-cpu-rate 5 for 2 s on $CPUS CPUs" "$n" $((5 * CPUS * 3))
check_ge capture/rate-some "packets at --per-cpu-rate 5 for 2 s" "$n" 1

# --- 3. the source filter -------------------------------------------------------------------
capture source --source 198.18.9.2 --count 10
check_eq capture/source-exit "agent capture --source exit code ($(cat "$WORK/source.err"))" "$CAP_RC" 0
lines=$(packets source)
check_eq capture/source-count "packets of --source 198.18.9.2" "$(grep -c . <<<"$lines")" 10
check_eq capture/source-only "packets from elsewhere than 198.18.9.2" \
	"$(grep -cv ' 198\.18\.9\.2\.[0-9]* > ' <<<"$lines")" 0

# --- 4 and 5. one at a time; a killed capture ----------------------------------------------
"$AGENT" capture --pin-dir "$PIN_DIR" --count 1000000 --duration 1h -w "$WORK/long.pcapng" 2>"$WORK/long.err" &
LAB_PIDS[long]=$!
lease_running() { l=$(lease) && [ "$l" != 0 ]; }
wait_until 5 lease_running || fail capture/lease-set "the running capture's lease is not in capture_ctl ($(cat "$WORK/long.err"))"
capture second --count 1
check_eq capture/second-refused "a second capture's exit code" "$CAP_RC" 1
check capture/second-says-why "the second capture did not say another one runs: $(cat "$WORK/second.err")" \
	grep -q 'another capture is running' "$WORK/second.err"
{ kill -KILL "${LAB_PIDS[long]}" && wait_exit "${LAB_PIDS[long]}" 5; } 2>/dev/null # no "Killed" job notice
lease_off() { [ "$(lease)" = 0 ]; }
if wait_until 6 lease_off; then pass capture/killed-lease-off; else
	fail capture/killed-lease-off "capture_ctl still holds lease $(lease) 6 s after the capture was killed"
fi
before=$(captured)
sleep 1.5 # nothing to poll: the check is that nothing happens while the flood goes on
check_eq capture/killed-nothing-sampled "packets sampled in 1.5 s after the lease lapsed" "$(($(captured) - before))" 0

# --- 6. the counts --------------------------------------------------------------------------
stats=$(stats_json)
check_ge capture/stats-captured "captured in agent stats --json" "$(json_num "$stats" captured)" 31
check_ge capture/stats-sampled-out "sampled_out in agent stats --json" "$(json_num "$stats" sampled_out)" 1

# --- 7. at tc ------------------------------------------------------------------------------
agent_signal main TERM || fail capture/agent-stop "the XDP agent did not stop on SIGTERM"
agent_start tc --attach tc --rate 100 --burst 50 --stats-interval 10m || die "the agent did not start with --attach tc"
# A flood of its own: the first one may be over by now.
stop_pid "${LAB_PIDS[send-flood]}"
send_traffic_bg flood-tc "$WORK/flood-tc.json" --sources "$FLOODERS" --rate 3000 --count $((3000 * FLOOD_S)) \
	--duration "${FLOOD_S}s"
wait_until 5 sources_seen 198.18.9.1 198.18.9.2 || die "the flood did not reach the agent at tc"
capture tc --count 5
check_eq capture/tc-exit "agent capture at tc exit code ($(cat "$WORK/tc.err"))" "$CAP_RC" 0
comments=$(python3 "$DT_ROOT/tests/netns/pcapng_comments.py" "$WORK/tc.pcapng")
check_eq capture/tc-count "packets captured at tc" "$(grep -c . <<<"$comments")" 5
check_eq capture/tc-hook "packets not marked 'verdict=dropped rule=default hook=tc' ($(head -2 <<<"$comments"))" \
	"$(grep -cv '^verdict=dropped rule=default hook=tc cpu=[0-9]*$' <<<"$comments")" 0

stop_pid "${LAB_PIDS[send-flood-tc]}"
lab_finish
