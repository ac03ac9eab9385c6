#!/usr/bin/env bash
# test_privileges.sh - the capabilities a running agent keeps after setup (docs/security.md,
# "Privileges"), read from /proc/PID/task/*/status (CapEff, CapPrm, CapBnd decoded with
# capsh, NoNewPrivs), in every thread the agent has: the query server's (started before the
# drop), ZeroMQ's, the metrics server's.
#
#   1. --attach xdp with a query socket, a metrics port and a one-node cluster (--listen):
#      no capability in any set of any thread, no_new_privs; then, without them: a rules
#      reload (map writes) is in force, dt_collect runs each period (BPF_PROG_RUN: report
#      entries sent for the traffic), and SIGTERM detaches, unpins and exits 0. Its runtime
#      files under /run/dthrottle are 0640 or tighter.
#   2. --attach tc with a tcx link (Linux 6.6+): the same, nothing kept; SIGTERM removes the link.
#   3. --attach tc with a clsact filter (DTHROTTLE_TC_CLSACT=1, as before 6.6): CAP_NET_ADMIN
#      alone is kept, and SIGTERM removes the filter and the qdisc it created with it.
#   4. The same with --keep: nothing kept (nothing to remove at exit); the filter stays, and an
#      agent started with the unit's bounding set (packaging/dthrottle@.service.in) takes it
#      over, keeps CAP_NET_ADMIN alone and removes it at SIGTERM.
# Takes about 15 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=privileges

lab_init dtpriv
lab_up
command -v capsh >/dev/null || die "capsh is missing (Debian libcap2-bin): it decodes the capability sets"
RULES=$WORK/rules.toml
QSOCK=$WORK/query.sock
write_rules() { # RATE: one rule "slow" for 198.18.40.0/24
	printf 'version = 1\n\n[[rule]]\nname = "slow"\ncidr = "198.18.40.0/24"\nrate = %s\nburst = 10\n' "$1" >"$RULES"
}
# rule_rate: the rate of rule "slow" as `agent stats --json` reads it from the maps.
rule_rate() { rule_num "$(stats_json)" slow rate; }

# thread_sets PID: one line per thread "TID NAME eff=... prm=... bnd=... nnp=N", sets decoded.
decode() { capsh --decode="$1" | sed 's/^0x[0-9a-f]*=//'; }
thread_sets() {
	local t name eff prm bnd nnp
	for t in /proc/"$1"/task/*; do
		name=$(awk '/^Name:/ { print $2 }' "$t/status" 2>/dev/null) || continue
		eff=$(awk '/^CapEff:/ { print $2 }' "$t/status") prm=$(awk '/^CapPrm:/ { print $2 }' "$t/status")
		bnd=$(awk '/^CapBnd:/ { print $2 }' "$t/status") nnp=$(awk '/^NoNewPrivs:/ { print $2 }' "$t/status")
		echo "${t##*/} $name eff=$(decode "$eff") prm=$(decode "$prm") bnd=$(decode "$bnd") nnp=$nnp"
	done
}
# check_sets NAME PID EXPECTED: every thread's three sets are EXPECTED ("cap_bpf" or "cap_net_admin,cap_bpf"), nnp 1.
check_sets() {
	local sets bad
	sets=$(thread_sets "$2")
	echo "$1: threads of the agent:"
	sed 's/^/    /' <<<"$sets"
	bad=$(grep -v " eff=$3 prm=$3 bnd=$3 nnp=1\$" <<<"$sets")
	check privileges/$1/sets "threads with other sets than '$3' in each (and nnp=1): $bad" [ -z "$bad" ]
	check privileges/$1/threads "expected at least 2 threads (the query server's started before the drop): $sets" \
		[ "$(wc -l <<<"$sets")" -ge 2 ]
}
# start_priv NAME EXPECTED-LOG-WORD [AGENT OPTIONS...]: an agent with a rules file and a query
# socket, up once it has said what it kept.
start_priv() {
	local name=$1
	shift
	write_rules 50
	agent_start "$name" --rate 100 --burst 50 --rules "$RULES" --query-socket "$QSOCK" "$@" || die "agent $name did not start"
	wait_for_line "$(agent_log "$name")" 'capabilities kept:' "$AGENT_PID" 10 ||
		die "agent $name never said which capabilities it kept: $(cat "$(agent_log "$name")")"
	echo "$name: $(grep -o 'capabilities kept:.*' "$(agent_log "$name")")"
}
# reload_works NAME: a new rate reloaded without capabilities is in the maps.
reload_works() {
	write_rules 70
	local out rc
	out=$("$AGENT" reload --pin-dir "$PIN_DIR" 2>&1)
	rc=$?
	check privileges/$1/reload "agent reload after the drop: exit $rc: $out" [ "$rc" -eq 0 ]
	check_eq privileges/$1/reload-in-force "the rule's rate (50 before) in the maps after the reload" \
		"$(printf %.0f "$(rule_rate)")" 70
}
no_eperm() {
	check privileges/$1/no-eperm "the agent met a refusal: $(grep -iE 'not permitted|EPERM' "$(agent_log "$1")")" \
		bash -c "! grep -qiE 'not permitted|EPERM' '$(agent_log "$1")'"
}
stop_ok() {
	agent_signal "$1" TERM || die "agent $1 did not exit on SIGTERM"
	check_eq privileges/$1/exit "exit status after SIGTERM" "$EXIT_RC" 0
	no_eperm "$1"
}
tc_state() { echo "$(tc -n "$H_NS" qdisc show dev "$H_IF" | grep -c clsact) qdisc, $(tc -n "$H_NS" filter show dev "$H_IF" ingress | grep -c 'handle 0xd7') filter"; }

# --- 1. XDP, with a query socket, metrics and a cluster of one ---------------------------------
start_priv xdp --attach xdp --listen "$LAB_V4_HOST:17700" --insecure-cluster \
	--metrics "127.0.0.1:19$((RANDOM % 90 + 10))0" --period 100ms
check_sets xdp "$AGENT_PID" cap_bpf
reload_works xdp
# Its runtime files (lock, attachment record, reload outcome, cluster status): 0640 or tighter.
runtime_modes() { stat -c '%a %n' /run/dthrottle/"${PIN_DIR//\//_}".* 2>/dev/null; }
wait_until 3 test -e "/run/dthrottle/${PIN_DIR//\//_}.cluster.json"
echo "runtime files: $(runtime_modes | tr '\n' ' ')"
check privileges/runtime-files/present "fewer than 4 runtime files: $(runtime_modes | tr '\n' ' ')" [ "$(runtime_modes | wc -l)" -ge 4 ]
bad_modes=$(runtime_modes | grep -vE '^(640|600|440|400) ')
check privileges/runtime-files/modes "runtime files readable by others or writable by the group: $bad_modes" [ -z "$bad_modes" ]

send_traffic "$WORK/xdp.json" --sources 198.18.40.1,198.18.50.1 --rate 200 --count 200 --duration 3s ||
	die "pktgen send failed"
entries_sent() { ENTRIES=$(json_num "$("$AGENT" stats --pin-dir "$PIN_DIR" --json)" entries_sent); [ "${ENTRIES:-0}" -gt 0 ]; }
wait_until 3 entries_sent
check_ge privileges/xdp/collect-runs "report entries the agent collected (dt_collect, BPF_PROG_RUN) and sent" "${ENTRIES:-0}" 1
stop_ok xdp
check privileges/xdp/detached "XDP still attached after SIGTERM" bash -c "! ip -n '$H_NS' link show dev '$H_IF' | grep -q xdp"
check privileges/xdp/unpinned "pins left in $PIN_DIR: $(ls "$PIN_DIR" 2>/dev/null | tr '\n' ' ')" [ ! -e "$PIN_DIR" ]

# --- 2. tc: a tcx link (Linux 6.6+) ----------------------------------------------------------------
start_priv tcx --attach tc
# The attach line names the mode; a kernel without tcx logs "no tcx link on ..." instead.
if grep -q 'attached dthrottle on .* (tc ingress, tcx link)' "$(agent_log tcx)"; then
	check_sets tcx "$AGENT_PID" cap_bpf
	reload_works tcx
	stop_ok tcx
	check privileges/tcx/unpinned "pins left in $PIN_DIR after SIGTERM: $(ls "$PIN_DIR" 2>/dev/null | tr '\n' ' ')" [ ! -e "$PIN_DIR" ]
else
	stop_pid "$AGENT_PID"
	echo "SKIP privileges/tcx: this kernel ($(uname -r)) has no tcx links; the clsact case below covers it"
fi

# --- 3. tc: a clsact filter (kernels before 6.6) ---------------------------------------------------
export DTHROTTLE_TC_CLSACT=1
start_priv clsact --attach tc
check_sets clsact "$AGENT_PID" cap_net_admin,cap_bpf
reload_works clsact
check privileges/clsact/attached "no clsact qdisc and filter 0xd7 while it runs: $(tc_state)" [ "$(tc_state)" = "1 qdisc, 1 filter" ]
stop_ok clsact
check privileges/clsact/removed "after SIGTERM (CAP_NET_ADMIN kept for this): $(tc_state)" [ "$(tc_state)" = "0 qdisc, 0 filter" ]

# --- 4. the same with --keep: nothing to remove at exit, nothing kept --------------------------------
start_priv keep --attach tc --keep
check_sets keep "$AGENT_PID" cap_bpf
stop_ok keep
check privileges/keep/kept "--keep: the filter should stay after SIGTERM: $(tc_state)" [ "$(tc_state)" = "1 qdisc, 1 filter" ]
# The next agent takes it over and, without --keep, removes it: started with the bounding set
# of packaging/dthrottle@.service.in, as systemd would (no CAP_SYS_ADMIN: the filter is known
# as dthrottle's by its name, not through BPF_PROG_GET_FD_BY_ID).
UNIT_CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$DT_ROOT/packaging/dthrottle@.service.in")
[ -n "$UNIT_CAPS" ] || die "no CapabilityBoundingSet= in packaging/dthrottle@.service.in"
bounding=-all
for c in $UNIT_CAPS; do bounding+=",+$(tr 'A-Z' 'a-z' <<<"${c#CAP_}")"; done
printf '#!/bin/sh\nexec setpriv --bounding-set %s --inh-caps -all %s "$@"\n' "$bounding" "$AGENT" >"$WORK/unit-agent"
chmod +x "$WORK/unit-agent"
REAL_AGENT=$AGENT
AGENT=$WORK/unit-agent start_priv after-keep --attach tc
check privileges/after-keep/took-over "under the unit's bounding set ($UNIT_CAPS): $(grep -E 'took over|ERROR' "$(agent_log after-keep)")" \
	grep -q 'took over dthrottle' "$(agent_log after-keep)"
check_sets after-keep "$AGENT_PID" cap_net_admin,cap_bpf
AGENT=$REAL_AGENT
stop_ok after-keep
check privileges/after-keep/removed "the taken-over filter after SIGTERM: $(tc_state)" [ "$(tc_state)" = "0 qdisc, 0 filter" ]
unset DTHROTTLE_TC_CLSACT

lab_finish
