#!/usr/bin/env bash
# test_crowdsec.sh - `agent crowdsec` against the real CrowdSec LAPI of Debian 12 (crowdsec
# 1.4.6, run from build/ by scripts/crowdsec_lab.sh: never installed), with real packets.
#
# The lab: client and host namespaces (lib.sh lab_up); in the host namespace an agent, the
# LAPI on its own 127.0.0.1:8080 and the bouncer (--poll 1s, with CAP_BPF alone when setpriv
# is there: the unit's one capability). Each step sends 100 frames from each of BANNED
# (198.18.7.7), OTHER (198.18.7.8) and V6 (2001:2:0:7::9) and counts what the sink got.
#   1. before any decision: everything arrives;
#   2. cscli decisions add --ip BANNED --duration 1m and --range 2001:2:0:7::/64: both bans are
#      in the maps within two polls (the time is printed), BANNED's and V6's frames are all
#      dropped, OTHER's all arrive; agent bans shows the origin and the reason;
#   3. a second bouncer with its own key: still one ban per prefix;
#   4. the LAPI stopped: the bouncer logs its failed pulls, the bans stay in the maps and
#      BANNED's frames are still dropped; the LAPI restarted: the bouncer pulls again (a
#      startup pull) and keeps the bans;
#   5. cscli decisions delete --ip BANNED: lifted within two polls (plus the backoff), and
#      BANNED's frames arrive again.
# Skipped ("SKIP crowdsec: ...") only when the package cannot be downloaded. About 20 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=crowdsec

POLL=1
BANNED=198.18.7.7
OTHER=198.18.7.8
V6=2001:2:0:7::9
V6_RANGE=2001:2:0:7::/64
source "$(dirname "$0")/crowdsec_lapi.sh"
cs_fetch_or_skip

lab_init dtcs
lab_up
cs_lapi_up "$H_NS"
cs_bouncer_key dthrottle-test "$WORK/key"
cs_bouncer_key dthrottle-test2 "$WORK/key2"

agent_start main --rate 100000 --burst 100000 --stats-interval 10m || die "the agent did not start"

# bouncer_start NAME KEYFILE: the bouncer in the host namespace (CAP_BPF alone if setpriv can);
# its log is $WORK/agent-crowdsec-NAME.log (printed by lab_cleanup when a check failed).
bouncer_start() {
	local caps=()
	if command -v setpriv >/dev/null; then
		caps=(setpriv --bounding-set=-all,+bpf --inh-caps=-all --)
		[ "$1" = one ] && echo "the bouncers run with CAP_BPF alone (setpriv --bounding-set=-all,+bpf)"
	fi
	nsenter --net="/run/netns/$H_NS" -- "${caps[@]}" "$AGENT" crowdsec --pin-dir "$PIN_DIR" \
		--lapi "http://$LAPI" --key-file "$2" --poll "${POLL}s" >"$WORK/agent-crowdsec-$1.log" 2>&1 &
	LAB_PIDS[bouncer-$1]=$!
	wait_for_line "$WORK/agent-crowdsec-$1.log" 'startup pull' "${LAB_PIDS[bouncer-$1]}" 10 || {
		cat "$WORK/agent-crowdsec-$1.log"
		die "bouncer $1 made no startup pull within 10 s"
	}
}

# banned ADDR: agent bans lists ADDR (as an address or a prefix) / unbanned ADDR: it does not.
banned() { "$AGENT" bans --pin-dir "$PIN_DIR" 2>/dev/null | grep -qw -- "$1"; }
unbanned() { ! banned "$1"; }
# ban_lines ADDR: how many lines of agent bans list ADDR.
ban_lines() { "$AGENT" bans --pin-dir "$PIN_DIR" 2>/dev/null | grep -cw -- "$1"; }

# offer NAME: 100 frames from each source (300 pps for 1 s), then what the sink got from each
# in GOT[source].
declare -A GOT=()
offer() {
	local src
	sink_start 20 || die "the sink did not start"
	send_traffic "$WORK/send-$1.json" --sources "$BANNED,$OTHER,$V6" --rate 300 --count 300 --duration 3s ||
		die "pktgen send failed"
	sink_stop || die "the sink did not exit cleanly"
	for src in "$BANNED" "$OTHER" "$V6"; do
		GOT[$src]=$(json_num "$(json_source "$SINK_JSON" "$src")" received)
	done
	echo "$1: received $BANNED ${GOT[$BANNED]:-0}, $OTHER ${GOT[$OTHER]:-0}, $V6 ${GOT[$V6]:-0} (100 sent from each)"
}

# elapsed T0: seconds since T0, 0.1 s resolution.
elapsed() { calc "$(now_s) - $1"; }

bouncer_start one "$WORK/key"

# --- 1. no decision ---------------------------------------------------------------------------
offer before
# Frames that must arrive: at least 95 of 100 (the sink's socket may miss one; the frames that
# must not arrive are counted exactly: 0).
check_ge crowdsec/before-banned "frames from $BANNED before any decision" "${GOT[$BANNED]:-0}" 95
check_ge crowdsec/before-v6 "frames from $V6 before any decision" "${GOT[$V6]:-0}" 95

# --- 2. decisions added -------------------------------------------------------------------------
cscli decisions add --ip "$BANNED" --duration 1m --reason "test ban" &&
	cscli decisions add --range "$V6_RANGE" --duration 1m ||
	die "cscli decisions add failed: $(tail -n 3 "$WORK/cscli.log")"
t0=$(now_s) # both decisions are in the LAPI now; cscli's own run time (0.5 s each) is not the bouncer's
if wait_until $((2 * POLL + 1)) banned "$BANNED" && wait_until 1 banned "${V6_RANGE%/*}"; then
	took=$(elapsed "$t0")
	echo "both bans in the maps $took s after cscli decisions add (poll ${POLL}s)"
	check_le crowdsec/within-two-polls "seconds from cscli decisions add to the bans in the maps" "$took" $((2 * POLL))
else
	fail crowdsec/within-two-polls "no ban in the maps $((2 * POLL + 1)) s after cscli decisions add; bouncer log: $(tail -n 5 "$WORK/agent-crowdsec-one.log")"
fi
offer banned
check_eq crowdsec/ban-drops "frames from $BANNED delivered while it is banned" "${GOT[$BANNED]:-0}" 0
check_eq crowdsec/range-drops "frames from $V6 (in the banned $V6_RANGE) delivered" "${GOT[$V6]:-0}" 0
check_ge crowdsec/others-pass "frames from $OTHER (not banned) delivered" "${GOT[$OTHER]:-0}" 95
line=$("$AGENT" bans --pin-dir "$PIN_DIR" 2>&1 | grep -w -- "$BANNED")
check crowdsec/ban-listed "agent bans does not show the origin crowdsec and the reason 'test ban': '$line'" \
	grep -q 'crowdsec.*test ban\|test ban.*crowdsec' <<<"$line"

# --- 3. a second bouncer -------------------------------------------------------------------------
bouncer_start two "$WORK/key2"
check_eq crowdsec/one-ban-per-prefix "lines of agent bans for $BANNED with two bouncers" "$(ban_lines "$BANNED")" 1
stop_pid "${LAB_PIDS[bouncer-two]}"

# --- 4. the LAPI down ----------------------------------------------------------------------------
cs_lapi_stop
wait_for_line "$WORK/agent-crowdsec-one.log" 'LAPI pull failed' "${LAB_PIDS[bouncer-one]}" $((2 * POLL + 2)) ||
	fail crowdsec/outage-noticed "the bouncer logged no failed pull with the LAPI down"
offer outage
check_eq crowdsec/outage-keeps-ban "frames from $BANNED delivered while the LAPI is down" "${GOT[$BANNED]:-0}" 0
check crowdsec/outage-listed "the ban of $BANNED left the maps while the LAPI was down" banned "$BANNED"
answers_before=$(grep -c 'answers' "$WORK/agent-crowdsec-one.log")
cs_lapi_start
wait_until 10 bash -c "[ \$(grep -c answers '$WORK/agent-crowdsec-one.log') -gt $answers_before ]" ||
	fail crowdsec/outage-recovers "the bouncer did not pull again within 10 s of the LAPI's restart"
check crowdsec/after-outage "the ban of $BANNED is gone after the LAPI came back" banned "$BANNED"

# --- 5. the decision deleted ---------------------------------------------------------------------
t0=$(now_s)
cscli decisions delete --ip "$BANNED" || die "cscli decisions delete failed: $(tail -n 3 "$WORK/cscli.log")"
if wait_until $((2 * POLL + 1)) unbanned "$BANNED"; then
	echo "the ban lifted $(elapsed "$t0") s after cscli decisions delete"
	pass crowdsec/delete-lifts
else
	fail crowdsec/delete-lifts "$BANNED still banned $((2 * POLL + 1)) s after cscli decisions delete; bouncer log: $(tail -n 5 "$WORK/agent-crowdsec-one.log")"
fi
offer deleted
check_ge crowdsec/delete-passes "frames from $BANNED delivered after the delete" "${GOT[$BANNED]:-0}" 95
check_eq crowdsec/range-stays "frames from $V6 delivered (its range is still banned)" "${GOT[$V6]:-0}" 0

# --- the bouncer's own exit --------------------------------------------------------------------
kill -TERM "${LAB_PIDS[bouncer-one]}" && wait_exit "${LAB_PIDS[bouncer-one]}" 5
check crowdsec/sigterm "the bouncer did not exit 0 within 5 s of SIGTERM (status ${EXIT_RC:-none})" \
	[ "${EXIT_RC:-1}" -eq 0 ]
check crowdsec/range-outlives-bouncer "the range ban left the maps with the bouncer" banned "${V6_RANGE%/*}"

lab_finish
