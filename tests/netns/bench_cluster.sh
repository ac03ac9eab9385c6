#!/usr/bin/env bash
# bench_cluster.sh - the many-agent lab (`make bench-cluster`): 40 real agents in
# network namespaces on one control bridge, as a full mesh and through a hub, under three
# loads; prints the accuracy against the global budget, each agent's CPU per period and the
# report bytes each agent received against 5 bytes per source it served itself.
#
#   client $C_NS ─ dtPc<i> ══veth══ dtPd<i> ─ host i (ns $LAB-h<i>): the agent's XDP, no address
#   host i dtPk<i> ══veth══ bridge in $LAB-sw: control 198.19.0.<i>/24
#   hubs (BENCH_HUBS of them, at most 14) 198.19.0.<240 + j>/24 on the same bridge
#
# The data links carry no address: the frames pktgen sprays at a host are counted by its
# XDP program and then dropped by its kernel (no forwarding, no ICMP, so no ARP for the
# 60,000 spoofed sources). The control links get permanent neighbour entries for every
# other host and hub: the kernel's neighbour table is shared by all namespaces
# (gc_thresh3 = 1024) and 40 hosts resolving each other overflow it ("neighbor table
# overflow" in dmesg), after which hosts past the 16th or so never connect.
#
# Scenarios (the budget: --rate 100 --burst 50, a period of 200 ms):
#   spray    one client sprayed over every host, 2000 pps for 10 s (budget 50 + 100 x 10 s)
#   first    a new client sprayed the same way for 1 s: its first second (budget 150); may be
#            given more than once (a new client each time)
#   sticky   400 new clients, each always on one host (10 per host), 20 frames each in 1 s:
#            the fraction admitted (every one is under its budget)
#   light    60,000 light clients (one frame each), 1,500 per host: the report bytes each
#            agent received during it, against 5 bytes per client it served itself, and
#            what its control link received (every peer connection, whichever side opened
#            it, with ZMTP, CurveZMQ and TCP/IP: "on the wire"); h1's bytes by message kind
#
# Modes: mesh (full mesh), hub (relaying hubs), agg (summing hubs: agent hub --aggregate).
# Environment: BENCH_HOSTS (40), BENCH_MODES ("mesh hub agg"), BENCH_HUBS (1), BENCH_MAX_SOURCES
# (16384), BENCH_HUB_ARGS (more `agent hub` options), BENCH_AGENT_ARGS (more agent options),
# BENCH_KILL_HUB=1 (with 2+ hubs: kill hub 1 in the middle of the spray), BENCH_IDLE_S (5: the
# idle window whose rates are subtracted from the light scenario's), BENCH_SCENARIOS
# ("spray first sticky light": which scenarios, in that order).
# Root; run it under the netns lock: flock /tmp/dthrottle-netns.lock tests/netns/bench_cluster.sh
set -u
. "$(dirname "$0")/lib.sh"

HOSTS=${BENCH_HOSTS:-40}
MODES=${BENCH_MODES:-mesh hub agg}
NHUBS=${BENCH_HUBS:-1}
MAX_SOURCES=${BENCH_MAX_SOURCES:-16384}
RATE=100
BURST=50
PERIOD_MS=200
LIGHT_PER_HOST=1500
STICKY_PER_HOST=10

lab_init dtbench
[ "$HOSTS" -ge 2 ] && [ "$HOSTS" -le 200 ] || die "BENCH_HOSTS: 2 to 200, not $HOSTS"

HUB_IP=() HUB_NSS=()
ctl_ip() { echo "198.19.0.$1"; } # one /24 with the hubs (mlab_ctl_port)

# bench_up: the client, the switch, HOSTS hosts and NHUBS hub namespaces, with their links.
bench_up() {
	local i j mac
	SW_NS=$LAB-sw
	M_BR=dt$$br
	M_HOSTS=$HOSTS
	mlab_ns_add "$C_NS"
	mlab_ns_add "$SW_NS"
	ip -n "$SW_NS" link add "$M_BR" type bridge &&
		ip -n "$SW_NS" link set "$M_BR" addrgenmode none up || die "cannot create the bridge $M_BR"
	for ((i = 1; i <= HOSTS; i++)); do
		M_NS[i]=$LAB-h$i M_CIF[i]=dt$$c$i M_DIF[i]=dt$$d$i M_KIF[i]=dt$$k$i M_SWIF[i]=dt$$s$i
		M_IP[i]=198.18.255.$i M_CTL[i]=$(ctl_ip "$i") M_PIN[i]=/sys/fs/bpf/$LAB-h$i
		LAB_PIN_DIRS+=("${M_PIN[i]}")
		mlab_ns_add "${M_NS[i]}"
		ip -n "$C_NS" link add "${M_CIF[i]}" type veth peer name "${M_DIF[i]}" netns "${M_NS[i]}" &&
			ip -n "$C_NS" link set "${M_CIF[i]}" addrgenmode none up &&
			ip -n "${M_NS[i]}" link set "${M_DIF[i]}" addrgenmode none up || die "cannot create the data link of host $i"
		M_MAC[i]=$(link_mac "${M_NS[i]}" "${M_DIF[i]}")
		mlab_ctl_port "${M_NS[i]}" "${M_KIF[i]}" "${M_SWIF[i]}" "${M_CTL[i]}"
	done
	for ((j = 1; j <= NHUBS; j++)); do
		HUB_NSS[j]=$LAB-hub$j HUB_IP[j]=198.19.0.$((240 + j))
		mlab_ns_add "${HUB_NSS[j]}"
		mlab_ctl_port "${HUB_NSS[j]}" "dt$$q$j" "dt$$r$j" "${HUB_IP[j]}"
	done
	HUB_NS=${HUB_NSS[1]:-} HUB_CTL=${HUB_IP[1]:-198.19.250.1}
	bench_neighbours
}

# bench_neighbours: every control address known to every namespace on the bridge, for good.
bench_neighbours() {
	local all=() macs=() ns n k batch=$WORK/neigh.batch
	for ((i = 1; i <= HOSTS; i++)); do all+=("${M_NS[i]}|${M_KIF[i]}|${M_CTL[i]}"); done
	for ((j = 1; j <= NHUBS; j++)); do all+=("${HUB_NSS[j]}|dt$$q$j|${HUB_IP[j]}"); done
	for n in "${all[@]}"; do IFS='|' read -r ns k _ <<<"$n"; macs+=("$(link_mac "$ns" "$k")"); done
	for n in "${all[@]}"; do
		IFS='|' read -r ns k _ <<<"$n"
		: >"$batch"
		for ((x = 0; x < ${#all[@]}; x++)); do
			IFS='|' read -r _ _ ip <<<"${all[x]}"
			echo "neigh replace $ip lladdr ${macs[x]} dev $k nud permanent" >>"$batch"
		done
		ip -n "$ns" -batch "$batch" || die "cannot add the permanent neighbours of $ns"
	done
}

# keys: node hI (endpoint its control address) and hubJ (role hub), one directory for all.
bench_keys() {
	MLAB_KEYS=$WORK/mlab-keys
	mkdir -p "$MLAB_KEYS"
	for ((i = 1; i <= HOSTS; i++)); do
		"$AGENT" keygen "h$i" --dir "$MLAB_KEYS" --endpoint "${M_CTL[i]}:7700" >/dev/null || die "keygen h$i failed"
	done
	for ((j = 1; j <= NHUBS; j++)); do
		"$AGENT" keygen "hub$j" --role hub --dir "$MLAB_KEYS" --endpoint "${HUB_IP[j]}:7701" >/dev/null ||
			die "keygen hub$j failed"
	done
}

peers_of() {
	local out= x
	for ((x = 1; x <= HOSTS; x++)); do [ "$x" -eq "$1" ] || out+=${out:+,}${M_CTL[x]}:7700; done
	echo "$out"
}
hubs_list() {
	local out= j
	for ((j = 1; j <= NHUBS; j++)); do out+=${out:+,}${HUB_IP[j]}:7701; done
	echo "$out"
}

# start_cluster MODE: every hub (hub mode) and every agent; waits until each hears all others.
start_cluster() {
	local mode=$1 i j opts log
	if [ "$mode" != mesh ]; then
		for ((j = 1; j <= NHUBS; j++)); do
			log=$WORK/agent-hubsrv$j.log
			nsenter --net="/run/netns/${HUB_NSS[j]}" -- "$AGENT" hub --listen "${HUB_IP[j]}:7701" \
				--curve-key "$MLAB_KEYS/hub$j.key" --curve-peers "$MLAB_KEYS" $([ "$mode" = agg ] && echo --aggregate) \
				${BENCH_HUB_ARGS:-} >"$log" 2>&1 &
			LAB_PIDS[hub$j]=$!
			wait_for_line "$log" 'hub (relaying|aggregating)' "${LAB_PIDS[hub$j]}" 10 || { cat "$log"; die "hub $j did not start"; }
		done
	fi
	for ((i = 1; i <= HOSTS; i++)); do
		opts=(--rate "$RATE" --burst "$BURST" --max-sources "$MAX_SOURCES" --period "${PERIOD_MS}ms"
			--stats-interval 10m --curve-key "$MLAB_KEYS/h$i.key" --curve-peers "$MLAB_KEYS")
		if [ "$mode" = mesh ]; then opts+=(--peers "$(peers_of "$i")"); else opts+=(--hub "$(hubs_list)"); fi
		# shellcheck disable=SC2206
		opts+=(${BENCH_AGENT_ARGS:-})
		log=$WORK/agent-$mode$i.log
		nsenter --net="/run/netns/${M_NS[i]}" -- "$AGENT" --iface "${M_DIF[i]}" --pin-dir "${M_PIN[i]}" \
			--node-id "h$i" "${opts[@]}" >"$log" 2>&1 &
		LAB_PIDS[agent-$mode$i]=$!
	done
	for ((i = 1; i <= HOSTS; i++)); do
		log=$WORK/agent-$mode$i.log
		wait_for_line "$log" '(attached|took over) dthrottle' "${LAB_PIDS[agent-$mode$i]}" 30 ||
			{ cat "$log"; die "agent h$i ($mode) did not come up"; }
	done
	if [ "$mode" = agg ]; then
		wait_until 90 all_aggregating || die "not every agent applied aggregates within 90 s (${HEARD:-})"
		sleep 2 # every agent's first reports summed (the hub's included lists are not in the agents' status)
		return
	fi
	wait_until 90 all_hear || die "not every agent heard all $((HOSTS - 1)) others within 90 s ($mode: ${HEARD:-}; see dmesg for a neighbour table overflow)"
}

# all_hear: every agent's cluster status (rewritten each second) shows every other host up.
# (Not its log: "peer ... is up" lines are rate-limited.)
all_hear() {
	local i n
	for ((i = 1; i <= HOSTS; i++)); do
		n=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0 | grep -o '"up":true' | wc -l)
		[ "$n" -ge $((HOSTS - 1)) ] || { HEARD="h$i hears $n of $((HOSTS - 1))"; return 1; }
	done
}

# all_aggregating: every agent has applied 5 aggregates of a summing hub.
all_aggregating() {
	local i n
	for ((i = 1; i <= HOSTS; i++)); do
		n=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0 | grep -o '"aggregates":{[^}]*}' | grep -o '"applied":[0-9]*' | cut -d: -f2)
		[ "${n:-0}" -ge 5 ] || { HEARD="h$i applied ${n:-0}"; return 1; }
	done
}

stop_cluster() {
	local name
	for name in "${!LAB_PIDS[@]}"; do
		case $name in agent-* | hub*) stop_pid "${LAB_PIDS[$name]}"; unset "LAB_PIDS[$name]" ;; esac
	done
	for ((i = 1; i <= HOSTS; i++)); do rm -rf -- "${M_PIN[i]}"; done
}

# cpu_ticks: "PID utime+stime" of every agent, in clock ticks (/proc/PID/stat fields 14, 15).
declare -A CPU0=() RX0=() WIRE0=() HUB_CPU0=()
cpu_mark() {
	local i pid j
	for ((j = 1; j <= NHUBS; j++)); do
		pid=${LAB_PIDS[hub$j]:-}
		[ -n "$pid" ] && HUB_CPU0[$j]=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null)
	done
	for ((i = 1; i <= HOSTS; i++)); do
		pid=${LAB_PIDS[agent-$1$i]}
		CPU0[$i]=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
		RX0[$i]=$(cluster_num "$i" bytes_received)
		WIRE0[$i]=$(wire_rx "$i")
	done
	cluster_doc 1 | jq -c '.received_by_kind // {}' >"$WORK/kinds0"
	CPU_T0=$(now_s)
}

# cluster_num I KEY: KEY of host I's cluster counters (its status file, rewritten each second).
cluster_num() {
	local doc
	doc=$(json_value "$("$AGENT" stats --pin-dir "${M_PIN[$1]}" --json --top 0)" cluster)
	json_num "$doc" "$2"
}

# cluster_doc I: host I's cluster status document (JSON).
cluster_doc() { "$AGENT" stats --pin-dir "${M_PIN[$1]}" --json --top 0 | jq -c '.cluster'; }

# wire_rx I: bytes into host I's control link (every frame: all its peer connections,
# whichever side opened them, with their ZMTP, CurveZMQ, TCP, IP and Ethernet headers and
# the ACKs of what it sent).
wire_rx() { ip netns exec "${M_NS[$1]}" cat "/sys/class/net/${M_KIF[$1]}/statistics/rx_bytes"; }

# kinds_report: what host 1's report bytes since cpu_mark were, by message kind.
kinds_report() {
	cluster_doc 1 | jq -c '.received_by_kind // {}' >"$WORK/kinds1"
	jq -rn --slurpfile a "$WORK/kinds0" --slurpfile b "$WORK/kinds1" '
		($a[0]) as $x | ($b[0]) as $y |
		"  h1 received by kind (bytes / messages): " +
		([$y | keys[] | . as $k | "\($k) \(($y[$k].bytes) - ($x[$k].bytes // 0)) / \(($y[$k].messages) - ($x[$k].messages // 0))"] | join(", "))'
}

# cpu_report MODE LABEL SERVED: per agent CPU ms per period and report bytes received since
# cpu_mark; SERVED (clients each host served itself) > 0 adds the bytes / (5 x SERVED) ratio.
cpu_report() {
	local mode=$1 label=$2 served=$3 i j pid t hz periods cpu rx
	hz=$(getconf CLK_TCK)
	t=$(calc "$(now_s) - $CPU_T0")
	periods=$(calc "$t * 1000 / $PERIOD_MS")
	for ((i = 1; i <= HOSTS; i++)); do
		pid=${LAB_PIDS[agent-$mode$i]}
		cpu=$(awk -v c0="${CPU0[$i]}" -v hz="$hz" -v p="$periods" '{ printf "%.3f", ($14 + $15 - c0) * 1000 / hz / p }' "/proc/$pid/stat")
		rx=$(($(cluster_num "$i" bytes_received) - ${RX0[$i]}))
		echo "$i $cpu $rx $(($(wire_rx "$i") - ${WIRE0[$i]}))"
	done >"$WORK/rows"
	awk -v mode="$mode" -v label="$label" -v served="$served" -v t="$t" -v idle_rate="${IDLE_RX_PER_S:-0}" \
		-v idle_wire_rate="${IDLE_WIRE_PER_S:-0}" '
		{ cpu[NR] = $2; rx[NR] = $3; cs += $2; rs += $3; if ($2 > cm) cm = $2; if ($3 > rm) rm = $3; ws += $4; if ($4 > wm) wm = $4; if (NR == 1) w1 = $4 }
		END {
			printf "  %s %s over %.1f s: agent CPU per 200 ms period mean %.2f ms, max %.2f ms; report bytes received per agent mean %d, max %d (h1 %d)", mode, label, t, cs / NR, cm, rs / NR, rm, rx[1]
			if (served > 0) {
				printf " = %.2fx / %.2fx (h1 %.2fx) the %d bytes of the %d clients each served itself", rs / NR / (5 * served), rm / (5 * served), rx[1] / (5 * served), 5 * served, served
				idle = idle_rate * t
				printf ";\n    less the idle traffic of the same time (%d bytes): mean %.1fx, max %.1fx", idle, (rs / NR - idle) / (5 * served), (rm - idle) / (5 * served)
				printf ";\n    on the wire (control link rx: ZMTP, CurveZMQ, TCP/IP, ACKs): mean %d, max %d (h1 %d) = %.2fx / %.2fx (h1 %.2fx)", ws / NR, wm, w1, ws / NR / (5 * served), wm / (5 * served), w1 / (5 * served)
				iw = idle_wire_rate * t
				printf ";\n    on the wire less the idle link traffic of the same time (%d bytes: ZMTP pings, heartbeats): mean %.2fx, max %.2fx (h1 %.2fx)", iw, (ws / NR - iw) / (5 * served), (wm - iw) / (5 * served), (w1 - iw) / (5 * served)
			} else {
				printf "; on the wire (control link rx) mean %d, max %d", ws / NR, wm
			}
			printf "\n  per agent (host: CPU ms/period, bytes received):"
			for (i = 1; i <= NR; i++) printf "%s h%d %.2f %d", (i % 8 == 1 ? "\n   " : ""), i, cpu[i], rx[i]
			printf "\n"
		}' "$WORK/rows"
	kinds_report
	[ "$mode" = mesh ] && return
	for ((j = 1; j <= NHUBS; j++)); do
		pid=${LAB_PIDS[hub$j]:-}
		[ -n "$pid" ] && [ -n "${HUB_CPU0[$j]:-}" ] && alive "$pid" || continue
		awk -v c0="${HUB_CPU0[$j]}" -v hz="$hz" -v p="$periods" -v j="$j" \
			'{ printf "  hub %d: CPU per period %.2f ms\n", j, ($14 + $15 - c0) * 1000 / hz / p }' "/proc/$pid/stat"
	done
}

# spray NAME PPS SECONDS SRC_ARGS_OF_HOST: one pktgen per host, PPS/HOSTS frames per second each
# for SECONDS (bounded by count and time); SRC_ARGS_OF_HOST I prints host I's source options.
# Every sender starts at the same time (--start-at, a moment after the last is launched):
# launched one after the other they began up to 1.2 s apart on a loaded machine, so a "new
# client sprayed over 40 hosts for 1 s" was one host's client for a while and lasted 2.2 s.
spray() {
	local name=$1 pps=$2 secs=$3 fn=$4 i rate count start_at
	rate=$(calc "$pps / $HOSTS")
	count=$(floor "$(calc "$rate * $secs + 0.5")")
	start_at=$(awk -v now="$(date +%s.%N)" -v n="$HOSTS" 'BEGIN { printf "%.3f", now + 0.5 + n * 0.05 }')
	for ((i = 1; i <= HOSTS; i++)); do
		date +%s.%N >"$WORK/spray-$name-$i.t0" # when its sender was started
		# shellcheck disable=SC2046
		nsenter --net="/run/netns/$C_NS" -- timeout $((${secs%.*} + 25)) "$PKTGEN" send --iface "${M_CIF[i]}" \
			--dst-ip "${M_IP[i]}" --dst-mac "${M_MAC[i]}" --json $($fn "$i") --rate "$rate" --count "$count" --start-at "$start_at" \
			--duration "$((${secs%.*} + 5))s" >"$WORK/spray-$name-$i.json" 2>"$WORK/spray-$name-$i.err" &
		LAB_PIDS[spray-$name-$i]=$!
	done
	spray_wait "$name" || die "pktgen failed in $name"
}

# passed_sum SRC: frames of SRC the hosts admitted (their XDP counters), over every host.
passed_sum() {
	local i sum=0 n
	for ((i = 1; i <= HOSTS; i++)); do
		n=$(source_num "$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)" "$1" passed)
		sum=$((sum + ${n:-0}))
	done
	echo "$sum"
}

# the per-host totals of a scenario: sum of `passed` over many sources (stats --top 0 has
# only the global counters; the XDP program's passed counter moves by every admitted frame).
global_passed() {
	local i sum=0 doc n
	for ((i = 1; i <= HOSTS; i++)); do
		doc=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)
		n=$(json_num "$doc" passed)
		sum=$((sum + ${n:-0}))
	done
	echo "$sum"
}

SPRAY_SRC=198.19.200.1 FIRST_SRC=198.19.200.2
one_spray_src() { echo "--sources $SPRAY_SRC"; }
FIRST_RUNS=0 # "first" may be given more than once: each run's client is new (198.19.203.N after the first)
one_first_src() { echo "--sources $FIRST_SRC"; }
sticky_src() { echo "--src-range $(int_ip $((0xC613C900 + ($1 - 1) * STICKY_PER_HOST)))+$STICKY_PER_HOST"; }
light_src() { echo "--src-range $(int_ip $((0xC6120000 + ($1 - 1) * LIGHT_PER_HOST)))+$LIGHT_PER_HOST"; }
int_ip() { echo "$(($1 >> 24 & 255)).$(($1 >> 16 & 255)).$(($1 >> 8 & 255)).$(($1 & 255))"; }

# owner_counters: h1's and h$HOSTS's reporting-scheme counters (cluster_core/report_router.h): a
# full mesh runs the owner scheme only while every peer is up (else mesh_periods counts).
owner_counters() {
	local i doc
	for i in 1 "$HOSTS"; do
		doc=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)
		echo "  h$i:$(for k in mesh_periods directed_sent directed_applied relays_sent relayed_hits_debited stale_hits link_drops subscribers_joined; do
			printf ' %s %s' "$k" "$(json_num "$doc" "$k")"
		done)"
	done
	stale_total
}

# stale_total: peers' hits not charged as stale on any host (a sender's clock offset learned
# wrong shows here first: every later report of that peer looks old).
stale_total() {
	local i doc h m hits=0 msgs=0
	for ((i = 1; i <= HOSTS; i++)); do
		doc=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)
		h=$(json_num "$doc" stale_hits) m=$(json_num "$doc" stale_messages)
		hits=$((hits + ${h:-0})) msgs=$((msgs + ${m:-0}))
	done
	echo "  every host: $msgs stale messages, $hits hits in them not charged"
}

# kill_hub_later SECONDS: kills hub 1 (SIGKILL) after SECONDS, in the background.
kill_hub_later() {
	(sleep "$1" && kill -KILL "${LAB_PIDS[hub1]}" 2>/dev/null && echo "  (hub 1 killed ${1} s into the spray)") &
	LAB_PIDS[killer]=$!
}

run_mode() {
	local mode=$1 scenario
	local how="full mesh"
	[ "$mode" = hub ] && how="$NHUBS relaying hub(s)"
	[ "$mode" = agg ] && how="$NHUBS summing hub(s)"
	echo "== $mode: $HOSTS agents ($how), --max-sources $MAX_SOURCES"
	start_cluster "$mode"
	sleep 2 # the start's own traffic (every peer's first message, resends) is not idle
	cpu_mark "$mode"
	sleep "${BENCH_IDLE_S:-5}" # idle: what the cluster costs with nothing to report (a rate over a fixed window)
	cpu_report "$mode" idle 0
	IDLE_RX_PER_S=$(awk -v t="$(calc "$(now_s) - $CPU_T0")" '{ s += $3 } END { printf "%d", s / NR / t }' "$WORK/rows")
	IDLE_WIRE_PER_S=$(awk -v t="$(calc "$(now_s) - $CPU_T0")" '{ s += $4 } END { printf "%d", s / NR / t }' "$WORK/rows")
	echo "  idle rates per agent: report bytes $IDLE_RX_PER_S/s, control link $IDLE_WIRE_PER_S/s"
	for scenario in ${BENCH_SCENARIOS:-spray first sticky light}; do "scenario_$scenario" "$mode"; done
	stop_cluster
}

scenario_spray() {
	local mode=$1 admitted budget el
	cpu_mark "$mode"
	[ "${BENCH_KILL_HUB:-0}" = 1 ] && [ "$mode" != mesh ] && [ "$NHUBS" -ge 2 ] && kill_hub_later 5
	spray spray 2000 10 one_spray_src
	el=$(spray_elapsed spray)
	sleep 1 # the last periods' reports land (their debits do not change what was admitted)
	admitted=$(passed_sum "$SPRAY_SRC") budget=$(calc "$BURST + $RATE * $el")
	echo "  spray: one client at 2000 pps over $HOSTS hosts for ${el}s: admitted $admitted of $(spray_total spray "$SPRAY_SRC") sent, budget $budget: $(calc "$admitted / $budget")x"
	cpu_report "$mode" spray 0
	[ "$mode" = mesh ] && owner_counters
	spray_trace
}

# spray_trace: with BENCH_TRACE_DIR, the agents' logs of the spray go to BENCH_TRACE_DIR/spray
# (with BENCH_AGENT_ARGS="--log-level debug": every report's hits and delivery lag).
spray_trace() {
	local dir=${BENCH_TRACE_DIR:-} i
	[ -n "$dir" ] || return 0
	mkdir -p "$dir/spray"
	for ((i = 1; i <= HOSTS; i++)); do cp "$WORK/agent-mesh$i.log" "$dir/spray/h$i.log" 2>/dev/null; done
	return 0
}

# spray_span NAME: "SPAN SPREAD": from the first frame of any of NAME's senders to the last
# of any (seconds; the client's whole life), and how far apart their first frames were.
spray_span() {
	local i f
	for ((i = 1; i <= HOSTS; i++)); do
		f=$WORK/spray-$1-$i.json
		echo "$(json_num "$(cat "$f")" first_unix_s) $(json_num "$(cat "$f")" last_unix_s)"
	done | awk 'NR == 1 { a = $1; b = $2; fa = $1 } { if ($1 < a) a = $1; if ($1 > fa) fa = $1; if ($2 > b) b = $2 } END { printf "%.3f %.3f", b - a, fa - a }'
}

scenario_first() {
	local admitted budget el spread
	[ $((FIRST_RUNS++)) -eq 0 ] || { FIRST_SRC=198.19.203.$FIRST_RUNS && sleep 1; }
	spray first 2000 1 one_first_src
	read -r el spread <<<"$(spray_span first)"
	admitted=$(passed_sum "$FIRST_SRC") budget=$(calc "$BURST + $RATE * $el")
	echo "  first: a new client at 2000 pps over $HOSTS hosts for ${el}s (first frames ${spread}s apart): admitted $admitted, budget $budget: $(calc "$admitted / $budget")x"
	first_trace
}

# first_trace: with BENCH_TRACE_DIR, the senders' first frames' times, each host's admissions of the
# new client and the agents' logs (run them with BENCH_AGENT_ARGS="--log-level debug" for
# the early reports' and the relays' times) go to BENCH_TRACE_DIR/N (N: the scenario's run);
# tests/netns/first_contact_trace.py reads them.
first_trace() {
	local dir=${BENCH_TRACE_DIR:-} i
	[ -n "$dir" ] || return 0
	dir=$dir/$FIRST_RUNS
	mkdir -p "$dir"
	for ((i = 1; i <= HOSTS; i++)); do
		echo "h$i $(json_num "$(cat "$WORK/spray-first-$i.json")" first_unix_s) $(json_num "$(cat "$WORK/spray-first-$i.json")" elapsed_s) $(source_num "$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)" "$FIRST_SRC" passed)"
		cp "$WORK/agent-mesh$i.log" "$dir/h$i.log" 2>/dev/null
	done >"$dir/first.txt"
}

scenario_sticky() {
	local p0 p1
	p0=$(global_passed)
	spray sticky $((HOSTS * STICKY_PER_HOST * 20)) 1 sticky_src
	p1=$(global_passed)
	echo "  sticky: $((HOSTS * STICKY_PER_HOST)) new clients, each on one host, 20 frames in 1 s: admitted $((p1 - p0)) of $((HOSTS * STICKY_PER_HOST * 20)) ($(calc "($p1 - $p0) / ($HOSTS * $STICKY_PER_HOST * 20)"))"
}

# batches_empty: no agent has entries waiting in a directed batch, as of its status file
# (an agent without the counter has none). Called after the spray: the batches filled
# during it, and nothing refills them.
batches_empty() {
	local i n
	for ((i = 1; i <= HOSTS; i++)); do
		n=$(cluster_num "$i" batch_waiting)
		[ "${n:-0}" = 0 ] || return 1
	done
}

scenario_light() {
	local mode=$1
	sleep 1
	cpu_mark "$mode"
	spray light $((HOSTS * LIGHT_PER_HOST / 3)) 3 light_src
	# Every one-hit source that waits for its owner in a batch (report_cadence.h) is sent
	# within the window: the bytes it costs are counted.
	wait_until 15 batches_empty || echo "  (entries still wait in batches after 15 s)"
	sleep 2 # the reports of the last period land, and the status files are rewritten (each second)
	echo "  light: $((HOSTS * LIGHT_PER_HOST)) light clients (one frame each, $LIGHT_PER_HOST per host, over 3 s)"
	cpu_report "$mode" light "$LIGHT_PER_HOST"
}

bench_up
bench_keys
overflow0=$(dmesg 2>/dev/null | grep -c 'neighbor table overflow')
for mode in $MODES; do run_mode "$mode"; done
overflow1=$(dmesg 2>/dev/null | grep -c 'neighbor table overflow')
[ "$overflow1" = "$overflow0" ] || echo "WARNING: the kernel logged $((overflow1 - overflow0)) 'neighbor table overflow' lines during the run"
lab_finish
