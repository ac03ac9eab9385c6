#!/usr/bin/env bash
# test_xdp_multi.sh - --attach xdp-multi: dthrottle beside xdp-filter in libxdp's dispatcher.
#
#   1. xdp-filter (xdp-tools, through libxdp) holds the host interface and drops UDP port 7777.
#      On a kernel that refuses extension programs (the dispatcher's), the agent refuses
#      --attach xdp-multi (exit 1) naming the reason, xdp-filter's program stays, and the rest
#      is skipped ("SKIP xdp_multi: ..."). A plain --attach xdp refusal names xdp-multi.
#   2. With --attach xdp-multi both run natively in the dispatcher, xdp-filter first (priority
#      10, dthrottle 50): a source sending to port 9999 at 1000 pps for 3 s is held to burst +
#      rate x T (within 5%, at most 2 over) and the sink receives what passed; another sending
#      to port 7777 is dropped by xdp-filter (its hit counter) and never reaches dthrottle.
#   3. SIGKILL: dt_xdp stays in the dispatcher and a fresh source is still held to its budget.
#   4. A new agent takes over: it logs "took over", exactly one dt_xdp remains, and a source
#      sending meanwhile is held to its budget.
#   5. SIGTERM: dt_xdp leaves the dispatcher, xdp-filter stays and still drops port 7777.
#   6. Jumbo frames: with xdp-filter gone and the MTU at 9000, dthrottle joins a dispatcher
#      alone (its copy declares multi-buffer support, so the dispatcher has it too) and a
#      byte budget counts each 9014-byte frame whole.
# Skipped when xdp-tools is not installed (make deps installs it). About 20 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=xdp_multi

RATE=200
BURST=100
PPS=1000
SECS=3
DENIED_PORT=7777

command -v xdp-filter >/dev/null && command -v xdp-loader >/dev/null ||
	{ echo "SKIP $TEST_NAME: xdp-tools is not installed (make deps, or apt-get install xdp-tools)"; exit 0; }

lab_init dtxm
lab_up
# xdp-filter's pins (/sys/fs/bpf/xdp-filter) and libxdp's dispatcher go with the interface.
# (The test's own status goes on to lab_cleanup, whatever the unload says: gone already.)
filter_cleanup() {
	local rc=$?
	in_ns "$H_NS" xdp-filter unload "$H_IF" >/dev/null 2>&1
	(exit "$rc")
	lab_cleanup
}
trap filter_cleanup EXIT

in_ns "$H_NS" xdp-filter load -m native "$H_IF" >"$WORK/filter.log" 2>&1 || {
	cat "$WORK/filter.log"
	die "xdp-filter load failed on $H_IF"
}
in_ns "$H_NS" xdp-filter port -p udp "$DENIED_PORT" || die "xdp-filter port $DENIED_PORT failed"
# The XDP programs on the host interface: "name prio" lines of xdp-loader status.
progs() { in_ns "$H_NS" xdp-loader status "$H_IF" | awk '$1 == "=>" { print $3, $2 }'; }
filter_there() { in_ns "$H_NS" xdp-loader status "$H_IF" | grep -q xdpfilt_; }
dt_count() { progs | grep -c '^dt_xdp ' || true; }
filter_hits() { in_ns "$H_NS" xdp-filter status | awk -v p="$DENIED_PORT" '$1 == p { print $NF }'; }

# --- 1. plain XDP names xdp-multi; a kernel without the dispatcher is refused --------------------
agent_fg --iface "$H_IF" --pin-dir "$PIN_DIR" --rate "$RATE" --burst "$BURST"
check xdp_multi/plain-names-mode "the refusal of --attach xdp does not name --attach xdp-multi: $FG_OUT" \
	grep -q -- '--attach xdp-multi' <<<"$FG_OUT"
if ! in_ns "$H_NS" xdp-loader status "$H_IF" | grep -q xdp_dispatcher; then
	# libxdp fell back to loading xdp-filter alone: this kernel cannot run the dispatcher.
	agent_fg --iface "$H_IF" --pin-dir "$PIN_DIR" --rate "$RATE" --burst "$BURST" --attach xdp-multi
	echo "--attach xdp-multi without a dispatcher: exit $FG_RC: $(tail -n 1 <<<"$FG_OUT")"
	check_eq xdp_multi/refused/exit-code "exit code of --attach xdp-multi where the dispatcher cannot run" "$FG_RC" 1
	check xdp_multi/refused/says-why "the refusal does not say why (extension programs): $FG_OUT" \
		grep -q 'refuses extension (freplace, BPF_PROG_TYPE_EXT) programs' <<<"$FG_OUT"
	check xdp_multi/refused/filter-kept "xdp-filter's program is gone after the refusal" filter_there
	echo "SKIP $TEST_NAME: libxdp cannot run its dispatcher on this kernel ($(uname -r)): the agent refused" \
		"--attach xdp-multi as it should; the shared hook is tested where it works (make test-kernel: 6.1)"
	lab_finish
fi

# --- 2. both decide their packets -----------------------------------------------------------------
sink_start 60 || die "the UDP sink did not start"
agent_start a --attach xdp-multi --rate "$RATE" --burst "$BURST" --stats-interval 10m ||
	die "agent A (--attach xdp-multi) did not attach"
echo "programs on $H_IF: $(progs | tr '\n' ',')"
check xdp_multi/attach/both "xdp-filter and dt_xdp (priority 50) are not both in the dispatcher: $(progs | tr '\n' ' ')" \
	eval 'filter_there && progs | grep -qx "dt_xdp 50"'
check xdp_multi/attach/logged "agent A did not log its hook (native mode, libxdp dispatcher)" \
	grep -q 'native mode, libxdp dispatcher (run priority 50)' "$(agent_log a)"
check xdp_multi/attach/stats "agent stats does not say 'attached: native mode, libxdp dispatcher ...'" \
	grep -q '^attached: native mode, libxdp dispatcher' <<<"$("$AGENT" stats --pin-dir "$PIN_DIR")"
hits0=$(filter_hits)
send_traffic "$WORK/sent.json" --sources 198.18.9.1 --rate "$PPS" --count $((PPS * SECS)) --duration $((SECS + 2))s ||
	die "pktgen send failed"
in_ns "$C_NS" timeout 60 "$PKTGEN" send --iface "$C_IF" --dst-ip "$LAB_V4_HOST" --dst-mac "$H_MAC" \
	--dport "$DENIED_PORT" --json --sources 198.18.9.2 --rate "$PPS" --count "$PPS" --duration 3s \
	>"$WORK/denied.json" 2>"$WORK/denied.err" || { cat "$WORK/denied.err"; die "pktgen send (port $DENIED_PORT) failed"; }
sink_stop || die "the sink did not exit cleanly"
budget_check xdp_multi/throttle 198.18.9.1 "$(cat "$WORK/sent.json")"
check_eq xdp_multi/throttle/delivered "datagrams the sink received vs what dthrottle passed" \
	"$(source_num "$SINK_JSON" 198.18.9.1 received)" "$(source_num "$(stats_json)" 198.18.9.1 passed)"
denied_sent=$(source_num "$(cat "$WORK/denied.json")" 198.18.9.2 sent)
check_ge xdp_multi/filter/drops "xdp-filter's hits on port $DENIED_PORT" "$(($(filter_hits) - hits0))" "${denied_sent:-1}"
seen=$(source_num "$(stats_json)" 198.18.9.2 passed)
check_eq xdp_multi/filter/first "packets to port $DENIED_PORT that reached dthrottle (xdp-filter runs first)" "${seen:-0}" 0

# --- 3. SIGKILL: still in the dispatcher, still enforcing ----------------------------------------
agent_signal a KILL || die "agent A did not die on SIGKILL"
check_eq xdp_multi/sigkill/stays "dt_xdp programs in the dispatcher after SIGKILL" "$(dt_count)" 1
send_traffic "$WORK/killed.json" --sources 198.18.9.3 --rate "$PPS" --count "$PPS" --duration 3s || die "pktgen send failed"
budget_check xdp_multi/sigkill 198.18.9.3 "$(cat "$WORK/killed.json")"

# --- 4. take-over --------------------------------------------------------------------------------
send_traffic_bg takeover "$WORK/takeover.json" --sources 198.18.9.4 --rate "$PPS" --count $((PPS * 4)) --duration 6s
wait_until 5 sources_seen 198.18.9.4 || echo "  (no packet of 198.18.9.4 counted within 5 s)"
agent_start b --attach xdp-multi --rate "$RATE" --burst "$BURST" --stats-interval 10m || die "agent B did not start"
check xdp_multi/takeover/logged "agent B did not log 'took over'" grep -q 'took over' "$(agent_log b)"
check_eq xdp_multi/takeover/one "dt_xdp programs in the dispatcher after the take-over" "$(dt_count)" 1
# In the dispatcher a later agent's program joins beside ours: the owner of the frames stays.
check xdp_multi/takeover/owner "config.owner is 0 in libxdp's dispatcher: a joining program would count too" \
	test "$(config_owner)" != 0
wait_traffic takeover "$WORK/takeover.json" || die "pktgen send (take-over) failed"
budget_check xdp_multi/takeover 198.18.9.4 "$(cat "$WORK/takeover.json")"

# --- 5. SIGTERM leaves only xdp-filter -----------------------------------------------------------
agent_signal b TERM || die "agent B did not exit within 10 s of SIGTERM"
check_eq xdp_multi/sigterm/exit-code "agent B exit code after SIGTERM" "$EXIT_RC" 0
check_eq xdp_multi/sigterm/gone "dt_xdp programs in the dispatcher after SIGTERM" "$(dt_count)" 0
check xdp_multi/sigterm/filter-kept "xdp-filter left the hook with dthrottle: $(progs | tr '\n' ' ')" filter_there
check xdp_multi/sigterm/unpinned "pins remain after SIGTERM: $(ls "$PIN_DIR" 2>/dev/null | tr '\n' ' ')" test ! -e "$PIN_DIR"

# --- 6. jumbo frames: dthrottle alone in a dispatcher at MTU 9000 ---------------------------------
in_ns "$H_NS" xdp-filter unload "$H_IF" >/dev/null 2>&1 || die "xdp-filter unload failed"
ip -n "$C_NS" link set dev "$C_IF" mtu 9000 && ip -n "$H_NS" link set dev "$H_IF" mtu 9000 ||
	die "cannot set MTU 9000 on the veth pair"
sink_start 60 || die "the UDP sink did not start"
agent_start c --attach xdp-multi --rate 1MB/s --burst 1MB --stats-interval 10m ||
	die "agent C (--attach xdp-multi) did not attach at MTU 9000: $(tail -n 3 "$(agent_log c)")"
check_eq xdp_multi/jumbo/attached "dt_xdp programs in the dispatcher at MTU 9000" "$(dt_count)" 1
send_traffic "$WORK/jumbo.json" --sources 198.18.9.5 --size 9014 --rate 100 --count 50 --duration 5s ||
	die "pktgen send (9014-byte frames) failed"
sink_stop || die "the sink did not exit cleanly"
jumbo_sent=$(source_num "$(cat "$WORK/jumbo.json")" 198.18.9.5 sent)
jumbo_passed=$(source_num "$(stats_json)" 198.18.9.5 passed)
echo "jumbo: 198.18.9.5 sent ${jumbo_sent:-?} frames of 9014 bytes, ${jumbo_passed:-?} bytes passed," \
	"the sink received $(source_num "$SINK_JSON" 198.18.9.5 received)"
check_eq xdp_multi/jumbo/whole "bytes passed vs 9014 x the datagrams the sink received (each frame counted whole)" \
	"${jumbo_passed:-0}" "$(($(source_num "$SINK_JSON" 198.18.9.5 received) * 9014))"
check_eq xdp_multi/jumbo/all-delivered "datagrams received of the frames sent (all within the burst)" \
	"$(source_num "$SINK_JSON" 198.18.9.5 received)" "${jumbo_sent:-x}"
agent_signal c TERM || die "agent C did not exit within 10 s of SIGTERM"
lab_finish
