#!/usr/bin/env bash
# test_tc.sh - --attach tc beside a foreign XDP program that owns the interface's XDP hook.
#
#   1. A foreign XDP program (tests/netns/foreign.bpf.c, built here with clang, attached with
#      `ip link set dev X xdp obj`) holds the host interface. Without --attach tc the agent
#      refuses (exit 1) with a message naming --attach tc, and leaves the program alone.
#   2. With --attach tc (a tcx link from Linux 6.6 on, else the clsact filter): three sources at 1000 pps for 3 s, rate
#      200/s, burst 100: each passes its budget burst + rate x T within 5% (and at most 2 over),
#      dropped = sent - passed, the sink receives exactly what passed; `agent stats` names the hook.
#   3. SIGKILL: the tcx link stays pinned (or the filter stays) and a fresh source is still held
#      to its budget.
#   4. A new agent takes over while a source sends: that source's budget still holds (a gap
#      in enforcement would let it through), and the agent logs "took over".
#   5. SIGTERM: the link and pins are gone, the foreign XDP program is still attached.
#   6. The clsact path of kernels without tcx (DTHROTTLE_TC_CLSACT=1): a filter that enforces,
#      survives SIGKILL and is taken over; SIGTERM removes the filter and the clsact qdisc it
#      created. With a clsact qdisc and a foreign tc filter there before, SIGTERM leaves both,
#      and the foreign filter saw what dthrottle passed (it passes packets on, TC_ACT_UNSPEC);
#      a foreign filter at dthrottle's own pref (which runs first) draws a warning.
#   7. Switching hooks (the foreign XDP program gone): an agent at XDP is SIGKILLed, one with
#      --attach tc removes its XDP link, and after another SIGKILL one at XDP removes the tcx
#      link; the bucket state carries over each time.
# Takes about 26 s. TC_TEST_CLSACT=1 runs it all as on a pre-6.6 kernel (the clsact filter).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=tc

RATE=200
BURST=100
SOURCES=(198.18.3.1 198.18.3.2 2001:2:0:33::)
PPS=1000
SECS=3

lab_init dtnet
lab_up

# --- the foreign XDP program ---------------------------------------------------------------
FOREIGN_OBJ=$WORK/foreign.bpf.o
clang -O2 -g -target bpf -I"/usr/include/$(uname -m)-linux-gnu" -c "$DT_ROOT/tests/netns/foreign.bpf.c" \
	-o "$FOREIGN_OBJ" || die "cannot build tests/netns/foreign.bpf.c"
ip -n "$H_NS" link set dev "$H_IF" xdp obj "$FOREIGN_OBJ" sec xdp ||
	die "cannot attach the foreign XDP program to $H_IF"
foreign_id() { ip -n "$H_NS" link show dev "$H_IF" | sed -n 's|.*prog/xdp id \([0-9]*\).*|\1|p'; }
FOREIGN_ID=$(foreign_id)
[ -n "$FOREIGN_ID" ] || die "the foreign XDP program is not attached to $H_IF"
foreign_kept() { [ "$(foreign_id)" = "$FOREIGN_ID" ]; }
# What --attach tc is expected to attach on this kernel: a tcx link from 6.6 on.
kernel_has_tcx() {
	local rel major minor
	rel=$(uname -r)
	major=${rel%%.*}
	minor=${rel#*.}
	minor=${minor%%[!0-9]*}
	[ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 6 ]; }
}
# TC_TEST_CLSACT=1: the whole test as on a kernel without tcx (the agent forced to the filter).
if [ "${TC_TEST_CLSACT:-0}" = 1 ]; then export DTHROTTLE_TC_CLSACT=1; fi
if kernel_has_tcx && [ "${TC_TEST_CLSACT:-0}" != 1 ]; then HOW="tcx link"; else HOW="clsact filter pref 1 handle 0xd7"; fi
echo "kernel $(uname -r): --attach tc should attach a $HOW"
# The filters and qdiscs of the host interface, for checks and messages.
tc_filters() { tc -n "$H_NS" filter show dev "$H_IF" ingress; }
has_clsact() { tc -n "$H_NS" qdisc show dev "$H_IF" | grep -q clsact; }
# dthrottle's tc attachment is there: its pinned tcx link, or its filter.
ours_attached() { [ -e "$PIN_DIR/tc_link" ] || grep -q 'handle 0xd7 dt_tc' <<<"$(tc_filters)"; }

# --- 1. the refusal names --attach tc -----------------------------------------------------------
agent_fg --iface "$H_IF" --pin-dir "$PIN_DIR" --rate "$RATE" --burst "$BURST"
echo "without --attach tc: exit $FG_RC: $(tail -n 1 <<<"$FG_OUT")"
check_eq tc/refusal/exit-code "exit code of an XDP attach beside a foreign XDP program" "$FG_RC" 1
check tc/refusal/names-attach-tc "the refusal does not name --attach tc: $FG_OUT" grep -q -- '--attach tc' <<<"$FG_OUT"
check tc/refusal/foreign-kept "the foreign XDP program (id $FOREIGN_ID) is gone after the refusal: $(foreign_id)" foreign_kept

# --- 2. the budget holds at tc ingress ------------------------------------------------------------
sink_start 60 || die "the UDP sink did not start"
agent_start a --attach tc --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent A (--attach tc) did not attach"
check tc/attach/how "agent A did not attach a $HOW: $(grep -o 'dthrottle on [^:]*' "$(agent_log a)")" \
	grep -qF "(tc ingress, $HOW)" "$(agent_log a)"
check tc/attach/foreign-kept "attaching at tc replaced the foreign XDP program" foreign_kept
check tc/attach/stats-names-hook "agent stats does not say 'attached: tc ingress, $HOW'" \
	grep -qx "attached: tc ingress, $HOW" <<<"$("$AGENT" stats --pin-dir "$PIN_DIR")"
attached=$(json_get "$(stats_json)" .attached)
check tc/attach/stats-json-names-hook "agent stats --json says \"attached\":\"$attached\", not \"tc ingress, $HOW\"" \
	test "$attached" = "tc ingress, $HOW"
csv=$(IFS=,; echo "${SOURCES[*]}")
total=$((PPS * ${#SOURCES[@]}))
send_traffic "$WORK/sent.json" --sources "$csv" --rate "$total" --count $((total * SECS)) --duration $((SECS + 2))s ||
	die "pktgen send failed"
sink_stop || die "the sink did not exit cleanly"
for src in "${SOURCES[@]}"; do
	budget_check tc/budget "$src" "$(cat "$WORK/sent.json")"
	check_eq "tc/budget/$src/delivered" "datagrams of $src the sink received vs passed" \
		"$(source_num "$SINK_JSON" "$src" received)" "$(source_num "$(stats_json)" "$src" passed)"
done

# --- 3. SIGKILL: still enforcing -------------------------------------------------------------------
agent_signal a KILL || die "agent A did not die on SIGKILL"
check tc/sigkill/still-attached "dthrottle's $HOW is gone after SIGKILL" ours_attached
send_traffic "$WORK/killed.json" --sources 198.18.3.10 --rate "$PPS" --count "$PPS" --duration 3s ||
	die "pktgen send failed"
budget_check tc/sigkill 198.18.3.10 "$(cat "$WORK/killed.json")"

# --- 4. take-over without a gap ----------------------------------------------------------------------
send_traffic_bg takeover "$WORK/takeover.json" --sources 198.18.3.11 --rate "$PPS" --count $((PPS * 4)) --duration 6s
wait_until 5 sources_seen 198.18.3.11 || echo "  (no packet of 198.18.3.11 counted within 5 s)"
agent_start b --attach tc --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent B did not start"
check tc/takeover/logged "agent B did not log 'took over ... (tc ingress, $HOW)'" \
	grep -qE "took over dthrottle on .*\(tc ingress, $HOW\)" "$(agent_log b)"
wait_traffic takeover "$WORK/takeover.json" || die "pktgen send (take-over) failed"
budget_check tc/takeover 198.18.3.11 "$(cat "$WORK/takeover.json")"

# --- 5. SIGTERM removes only what dthrottle added -----------------------------------------------------
agent_signal b TERM || die "agent B did not exit within 10 s of SIGTERM"
check_eq tc/sigterm/exit-code "agent B exit code after SIGTERM" "$EXIT_RC" 0
check tc/sigterm/foreign-kept "the foreign XDP program (id $FOREIGN_ID) is not attached after SIGTERM: '$(foreign_id)'" foreign_kept
check tc/sigterm/unpinned "pins remain after SIGTERM: $(ls "$PIN_DIR" 2>/dev/null | tr '\n' ' ')" test ! -e "$PIN_DIR"
check tc/sigterm/no-qdisc "SIGTERM left a clsact qdisc behind (there was none before)" eval '! has_clsact'
check tc/sigterm/detached "dthrottle's $HOW is still there after SIGTERM" eval '! ours_attached'

# --- 6. the clsact filter of kernels without tcx -----------------------------------------------------
export DTHROTTLE_TC_CLSACT=1
agent_start c --attach tc --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent C (clsact) did not attach"
check tc/clsact/attached "agent C did not attach a clsact filter" \
	grep -q 'attached dthrottle on .*(tc ingress, clsact filter pref 1 handle 0xd7)' "$(agent_log c)"
agent_signal c KILL || die "agent C did not die on SIGKILL"
check tc/clsact/sigkill-kept "dthrottle's filter is gone after SIGKILL: $(tc_filters)" grep -q 'handle 0xd7 dt_tc' <<<"$(tc_filters)"
send_traffic "$WORK/clsact.json" --sources 198.18.3.20 --rate "$PPS" --count "$PPS" --duration 3s ||
	die "pktgen send failed"
budget_check tc/clsact/sigkill 198.18.3.20 "$(cat "$WORK/clsact.json")"
agent_start d --attach tc --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent D (clsact) did not start"
check tc/clsact/took-over "agent D did not take over the filter" \
	grep -q 'took over dthrottle on .*(tc ingress, clsact filter' "$(agent_log d)"
agent_signal d TERM || die "agent D did not exit within 10 s of SIGTERM"
check tc/clsact/filter-removed "dthrottle's filter is still there after SIGTERM: $(tc_filters)" \
	eval '! grep -q dt_tc <<<"$(tc_filters)"'
check tc/clsact/qdisc-removed "the clsact qdisc dthrottle created is still there after SIGTERM" eval '! has_clsact'
check tc/clsact/foreign-kept "the foreign XDP program is not attached after the clsact runs" foreign_kept

# Someone else's clsact qdisc and tc filter (after ours: pref 10), counting what it sees: both stay.
tc -n "$H_NS" qdisc add dev "$H_IF" clsact &&
	tc -n "$H_NS" filter add dev "$H_IF" ingress pref 10 protocol all bpf da obj "$FOREIGN_OBJ" sec tc ||
	die "cannot add the foreign clsact qdisc and filter"
# foreign_seen: the IPv4 packets the foreign filter counted (its map, found through its program).
foreign_seen() {
	local prog map
	prog=$(tc_filters | sed -n 's/.* id \([0-9]*\) name foreign_tc .*/\1/p' | head -n 1)
	map=$(bpftool prog show id "$prog" 2>/dev/null | sed -n 's/.*map_ids \([0-9]*\).*/\1/p')
	bpftool -j map lookup id "$map" key 0 0 0 0 2>/dev/null | jq '.formatted.value | numbers'
}
agent_start e --attach tc --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent E (clsact) did not attach"
seen0=$(foreign_seen)
send_traffic "$WORK/shared.json" --sources 198.18.3.21 --rate "$PPS" --count 300 --duration 3s || die "pktgen send failed"
passed=$(source_num "$(stats_json)" 198.18.3.21 passed)
seen=$(foreign_seen)
echo "shared: 198.18.3.21 sent 300, dthrottle passed ${passed:-?}, the foreign filter after it saw $((${seen:-0} - ${seen0:-0}))"
agent_signal e TERM || die "agent E did not exit within 10 s of SIGTERM"
check tc/shared/qdisc-kept "SIGTERM removed a clsact qdisc dthrottle did not create" has_clsact
check tc/shared/filter-kept "SIGTERM removed the foreign tc filter: $(tc_filters)" grep -q 'foreign_tc' <<<"$(tc_filters)"
check tc/shared/ours-removed "dthrottle's filter is still there: $(tc_filters)" eval '! grep -q dt_tc <<<"$(tc_filters)"'
check tc/shared/no-warning "agent E warned of a shared pref with the foreign filter at pref 10" \
	eval "! grep -q 'share dthrottle' '$(agent_log e)'"
check_ge tc/shared/dropped-some "198.18.3.21 passed (300 sent, burst $BURST)" "$((300 - ${passed:-300}))" 1
check_eq tc/shared/passed-on "packets the foreign filter after dthrottle's saw (dthrottle passed $passed)" \
	"$((${seen:-0} - ${seen0:-0}))" "$passed"
check tc/shared/foreign-xdp-kept "the foreign XDP program is not attached at the end" foreign_kept

# A foreign filter at dthrottle's pref, added first, runs first: the agent says so.
tc -n "$H_NS" filter add dev "$H_IF" ingress pref 1 handle 0x1 protocol all bpf da obj "$FOREIGN_OBJ" sec tc ||
	die "cannot add the foreign filter at pref 1"
agent_start e2 --attach tc --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent E2 (clsact) did not attach"
check tc/shared/warns-same-pref "agent E2 did not warn of the foreign filter at pref 1" \
	grep -q '1 other tc filter(s) share dthrottle' "$(agent_log e2)"
agent_signal e2 TERM || die "agent E2 did not exit within 10 s of SIGTERM"
check tc/shared/same-pref-kept "SIGTERM removed the foreign filter at pref 1: $(tc_filters)" \
	grep -q 'pref 1 bpf chain 0 handle 0x1 ' <<<"$(tc_filters)"

# --- 7. switching between XDP and tc ----------------------------------------------------------------
unset DTHROTTLE_TC_CLSACT
ip -n "$H_NS" link set dev "$H_IF" xdp off || die "cannot detach the foreign XDP program"
tc -n "$H_NS" qdisc del dev "$H_IF" clsact || die "cannot remove the foreign clsact qdisc"
agent_start f --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent F (XDP) did not attach"
agent_signal f KILL || die "agent F did not die on SIGKILL"
send_traffic "$WORK/switch.json" --sources 198.18.3.30 --rate "$PPS" --count 200 --duration 3s || die "pktgen send failed"
p_xdp=$(source_num "$(stats_json)" 198.18.3.30 passed)
agent_start g --attach tc --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent G (tc) did not attach"
check tc/switch/to-tc-logged "agent G did not log the switch from XDP" grep -q 'switched .* from XDP to tc ingress' "$(agent_log g)"
check tc/switch/hint-xdp-free "agent G did not say the XDP hook is free" grep -q 'XDP hook of .* is free' "$(agent_log g)"
check tc/attach/no-hint-when-taken "agent A said the XDP hook is free beside the foreign program" \
	eval "! grep -q 'XDP hook of .* is free' '$(agent_log a)'"
check tc/switch/xdp-gone "dthrottle's XDP program is still attached after the switch to tc" eval '[ -z "$(foreign_id)" ]'
check_eq tc/switch/to-tc-owner "config.owner once F's XDP program was removed (0: only G's sees the frames)" \
	"$(config_owner)" 0
check_eq tc/switch/state-kept "198.18.3.30 passed after the switch to tc (before: $p_xdp)" \
	"$(source_num "$(stats_json)" 198.18.3.30 passed)" "$p_xdp"
agent_signal g KILL || die "agent G did not die on SIGKILL"
agent_start h --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent H (XDP) did not attach"
check tc/switch/to-xdp-logged "agent H did not log the switch from tc" \
	grep -q 'switched .* from tc ingress to XDP: removed its' "$(agent_log h)"
check tc/switch/tc-gone "dthrottle's $HOW is still there after the switch to XDP" eval '! ours_attached'
check tc/switch/xdp-attached "no XDP program after the switch back" xdp_attached
check_eq tc/switch/to-xdp-owner "config.owner once G's tc program was removed (0: only H's sees the frames)" \
	"$(config_owner)" 0
agent_signal h TERM || die "agent H did not exit within 10 s of SIGTERM"
check tc/switch/clean "something is left after SIGTERM: xdp '$(foreign_id)', pins $(ls "$PIN_DIR" 2>/dev/null | tr '\n' ' ')" \
	eval '[ -z "$(foreign_id)" ] && [ ! -e "$PIN_DIR" ]'

# Attaching, taking over and removing at tc is no reason for libbpf to log errors.
noise=$(grep -h 'libbpf:' "$WORK"/agent-*.log | head -n 3)
check tc/quiet-logs "the agents' logs have libbpf complaints: $noise" test -z "$noise"

lab_finish
