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
#            it, with ZMTP, CurveZMQ and TCP/IP: "on the wire"), each less what the same
#            host received at the same rate in an idle window just before (BENCH_IDLE_S);
#            h1's bytes by message kind, and (with tcpdump) its link's by kind of frame
#            (tests/netns/wire_breakdown.py: ACKs, ZMTP pings, messages)
#
# Every window's counters are read of all hosts in one pass (bench_snap), and each window is
# timed from the middle of its first pass to the middle of its last.
#
# Modes: mesh (full mesh), hub (relaying hubs), agg (summing hubs: agent hub --aggregate).
# Environment: BENCH_HOSTS (40), BENCH_MODES ("mesh hub agg"), BENCH_HUBS (1), BENCH_MAX_SOURCES
# (16384), BENCH_HUB_ARGS (more `agent hub` options), BENCH_AGENT_ARGS (more agent options),
# BENCH_KILL_HUB=1 (with 2+ hubs: kill hub 1 in the middle of the spray), BENCH_IDLE_S (20: the
# idle windows, the light scenario's whose rates are subtracted from its own; with keys a
# peer's signed heartbeat comes every 20 s, and the 40 agents started together send theirs
# together: a shorter window holds none or all of them), BENCH_SCENARIOS
# ("spray first sticky light": which scenarios, in that order), BENCH_INSECURE=1 (no keys:
# --insecure-cluster, for a comparison; the default is keys as `agent keygen` makes them),
# BENCH_CAPTURE=0 (no capture of h1's link in the light scenario).
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

# security_opts NAME: the cluster options of node or hub NAME: its key and the peers' (the
# default), or --insecure-cluster with BENCH_INSECURE=1.
security_opts() {
	if [ "${BENCH_INSECURE:-0}" = 1 ]; then
		echo --insecure-cluster
	else
		echo --curve-key "$MLAB_KEYS/$1.key" --curve-peers "$MLAB_KEYS"
	fi
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
				$(security_opts "hub$j") $([ "$mode" = agg ] && echo --aggregate) \
				${BENCH_HUB_ARGS:-} >"$log" 2>&1 &
			LAB_PIDS[hub$j]=$!
			wait_for_line "$log" 'hub (relaying|aggregating)' "${LAB_PIDS[hub$j]}" 10 || { cat "$log"; die "hub $j did not start"; }
		done
	fi
	for ((i = 1; i <= HOSTS; i++)); do
		# shellcheck disable=SC2207
		opts=(--rate "$RATE" --burst "$BURST" --max-sources "$MAX_SOURCES" --period "${PERIOD_MS}ms"
			--stats-interval 10m $(security_opts "h$i"))
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
		n=$(json_get "$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)" '[.cluster.peers[]? | select(.up)] | length')
		[ "${n:-0}" -ge $((HOSTS - 1)) ] || { HEARD="h$i hears ${n:-0} of $((HOSTS - 1))"; return 1; }
	done
}

# all_aggregating: every agent has applied 5 aggregates of a summing hub.
all_aggregating() {
	local i n
	for ((i = 1; i <= HOSTS; i++)); do
		n=$(json_get "$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)" '.cluster.aggregates.applied | numbers')
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

# status_files: every host's cluster status file (JSON, rewritten each second), in host order.
status_files() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do echo "/run/dthrottle/${M_PIN[i]//\//_}.cluster.json"; done
}

# bench_snap MODE FILE: every host's counters, read in one pass, as close together as a loaded
# machine allows. (Read host after host with `agent stats`, 40 hosts took 10 to 40 s under
# load, and a window timed before the first read counted that much idle traffic as the
# scenario's.) FILE: a line per host "I CPU REPORT_BYTES WRITTEN_S WIRE_BYTES T": its agent's
# utime+stime (clock ticks), its status file's bytes_received and when that file was written
# (each second: its bytes are as of then), what its control link received (the bytes the
# bridge's port sent it: every frame of every peer connection, whichever side opened it, with
# ZMTP, CurveZMQ, TCP/IP and Ethernet, and the ACKs of what it sent) and the middle of the
# pass (unix s). FILE.kinds: h1's received_by_kind; FILE.hubs: "J CPU" of each hub.
bench_snap() {
	local mode=$1 out=$2 i j stats=() status=() t0 t1
	for ((i = 1; i <= HOSTS; i++)); do stats+=("/proc/${LAB_PIDS[agent-$mode$i]}/stat"); done
	mapfile -t status < <(status_files)
	t0=$(now_s)
	ip -n "$SW_NS" -s -j link show >"$out.links"
	awk '{ print $14 + $15 }' "${stats[@]}" >"$out.cpu"
	jq -r '"\(.counters.bytes_received) \(.written_unix_ms / 1000)"' "${status[@]}" >"$out.rx"
	t1=$(now_s)
	jq -c '.received_by_kind // {}' "${status[0]}" >"$out.kinds"
	for ((j = 1; j <= NHUBS; j++)); do
		awk -v j="$j" '{ print j, $14 + $15 }' "/proc/${LAB_PIDS[hub$j]:-0}/stat" 2>/dev/null
	done >"$out.hubs"
	printf '%s\n' "${M_SWIF[@]}" | jq -r -R --slurpfile l "$out.links" \
		'. as $n | first(($l[0][] | select(.ifname == $n) | .stats64.tx.bytes), "?")' >"$out.wire"
	paste -d' ' "$out.cpu" "$out.rx" "$out.wire" | awk -v a="$t0" -v b="$t1" '{ printf "%d %s %.3f\n", NR, $0, (a + b) / 2 }' >"$out"
	[ "$(wc -l <"$out")" -eq "$HOSTS" ] && ! grep -q '?' "$out" || die "bench_snap: not every host's counters read ($out)"
}

# window_rows [IDLE] A B: a line per host from snapshots A and B (bench_snap): "I CPU_MS RX
# RX_LESS WIRE WIRE_LESS": its agent's CPU per period (ms), the report bytes and the control
# link's bytes it received from A to B, and those less its own idle rate (from IDLE to A,
# each counter over its own times) over the same time; without IDLE, the bytes again.
window_rows() {
	awk -v hz="$(getconf CLK_TCK)" -v period_ms="$PERIOD_MS" -v nf=$# '
		FNR == 1 { f++ }
		{ cpu[f, $1] = $2; rx[f, $1] = $3; wr[f, $1] = $4; wire[f, $1] = $5; t[f] = $6; n = $1 }
		function rate(d, dt) { return dt > 0 ? d / dt : 0 }
		END {
			a = nf - 1; z = nf
			for (i = 1; i <= n; i++) {
				r = rx[z, i] - rx[a, i]; w = wire[z, i] - wire[a, i]; rl = r; wl = w
				if (nf == 3) {
					rl = r - rate(rx[a, i] - rx[1, i], wr[a, i] - wr[1, i]) * (wr[z, i] - wr[a, i])
					wl = w - rate(wire[a, i] - wire[1, i], t[a] - t[1]) * (t[z] - t[a])
				}
				printf "%d %.3f %d %d %d %d\n", i, (cpu[z, i] - cpu[a, i]) * 1000 / hz / ((t[z] - t[a]) * 1000 / period_ms), r, rl, w, wl
			}
		}' "$@"
}

# snap_time FILE: the time of a snapshot (unix s).
snap_time() { awk 'NR == 1 { print $6 }' "$1"; }

cpu_mark() { bench_snap "$1" "$WORK/snap0"; }

# kinds_report: what host 1's report bytes since cpu_mark were, by message kind.
kinds_report() {
	jq -rn --slurpfile a "$WORK/snap0.kinds" --slurpfile b "$WORK/snap1.kinds" '
		($a[0]) as $x | ($b[0]) as $y |
		"  h1 received by kind (bytes / messages): " +
		([$y | keys[] | . as $k | "\($k) \(($y[$k].bytes) - ($x[$k].bytes // 0)) / \(($y[$k].messages) - ($x[$k].messages // 0))"] | join(", "))'
}

# cpu_report MODE LABEL SERVED [IDLE]: per agent CPU ms per period and report bytes received
# since cpu_mark; SERVED (clients each host served itself) > 0 adds the bytes / (5 x SERVED)
# ratios, on the wire too, and with IDLE (a snapshot taken an idle window before cpu_mark)
# the same less each host's idle rate over the window.
cpu_report() {
	local mode=$1 label=$2 served=$3 t
	bench_snap "$mode" "$WORK/snap1"
	window_rows ${4:+"$4"} "$WORK/snap0" "$WORK/snap1" >"$WORK/rows"
	t=$(calc "$(snap_time "$WORK/snap1") - $(snap_time "$WORK/snap0")")
	awk -v mode="$mode" -v label="$label" -v served="$served" -v t="$t" '
		{ cpu[NR] = $2; rx[NR] = $3; cs += $2; if ($2 > cm) cm = $2
		  rs += $3; if ($3 > rm) rm = $3; ls += $4; if (NR == 1 || $4 > lm) lm = $4
		  ws += $5; if ($5 > wm) wm = $5; vs += $6; if (NR == 1 || $6 > vm) vm = $6 }
		NR == 1 { r1 = $3; l1 = $4; w1 = $5; v1 = $6 }
		END {
			printf "  %s %s over %.1f s: agent CPU per 200 ms period mean %.2f ms, max %.2f ms; report bytes received per agent mean %d, max %d (h1 %d)", mode, label, t, cs / NR, cm, rs / NR, rm, r1
			if (served > 0) {
				s = 5 * served
				printf " = %.2fx / %.2fx (h1 %.2fx) the %d bytes of the %d clients each served itself", rs / NR / s, rm / s, r1 / s, s, served
				printf ";\n    less each host'"'"'s idle rate over the window: mean %.2fx, max %.2fx (h1 %.2fx)", ls / NR / s, lm / s, l1 / s
				printf ";\n    on the wire (control link rx: ZMTP, CurveZMQ, TCP/IP, ACKs): mean %d, max %d (h1 %d) = %.2fx / %.2fx (h1 %.2fx)", ws / NR, wm, w1, ws / NR / s, wm / s, w1 / s
				printf ";\n    on the wire less each host'"'"'s idle rate (ZMTP pings, heartbeats): mean %.2fx, max %.2fx (h1 %.2fx)", vs / NR / s, vm / s, v1 / s
			} else {
				printf "; on the wire (control link rx) mean %d, max %d", ws / NR, wm
			}
			printf "\n  per agent (host: CPU ms/period, bytes received):"
			for (i = 1; i <= NR; i++) printf "%s h%d %.2f %d", (i % 8 == 1 ? "\n   " : ""), i, cpu[i], rx[i]
			printf "\n"
		}' "$WORK/rows"
	kinds_report
	[ "$mode" = mesh ] && return
	awk -v hz="$(getconf CLK_TCK)" -v t="$t" -v p="$PERIOD_MS" 'FNR == NR { c0[$1] = $2; next }
		($1 in c0) { printf "  hub %d: CPU per period %.2f ms\n", $1, ($2 - c0[$1]) * 1000 / hz / (t * 1000 / p) }' \
		"$WORK/snap0.hubs" "$WORK/snap1.hubs"
}

# spray NAME PPS SECONDS SRC_ARGS_OF_HOST: one pktgen per host, PPS/HOSTS frames per second each
# for SECONDS (bounded by count and time); SRC_ARGS_OF_HOST I prints host I's source options.
# Every sender starts at the same time (--start-at, a moment after the last is launched):
# launched one after the other they began up to 1.2 s apart on a loaded machine, so a "new
# client sprayed over 40 hosts for 1 s" was one host's client for a while and lasted 2.2 s.
# The moment leaves 0.1 s per sender, or twice what launching them took the last time
# (SPRAY_LAUNCH_S): with other builds on the 2 cores, launching 40 took up to 20 s (load
# 38), and a fixed 2.5 s had the senders start over 20 s.
SPRAY_LAUNCH_S=0
spray() {
	local name=$1 pps=$2 secs=$3 fn=$4 i rate count start_at t0
	rate=$(calc "$pps / $HOSTS")
	count=$(floor "$(calc "$rate * $secs + 0.5")")
	t0=$(now_s)
	start_at=$(awk -v now="$t0" -v n="$HOSTS" -v l="$SPRAY_LAUNCH_S" 'BEGIN { m = 0.5 + n * 0.1; if (2 * l > m) m = 2 * l; printf "%.3f", now + m }')
	for ((i = 1; i <= HOSTS; i++)); do
		date +%s.%N >"$WORK/spray-$name-$i.t0" # when its sender was started
		# shellcheck disable=SC2046
		nsenter --net="/run/netns/$C_NS" -- timeout $((${secs%.*} + 25)) "$PKTGEN" send --iface "${M_CIF[i]}" \
			--dst-ip "${M_IP[i]}" --dst-mac "${M_MAC[i]}" --json $($fn "$i") --rate "$rate" --count "$count" --start-at "$start_at" \
			--duration "$((${secs%.*} + 5))s" >"$WORK/spray-$name-$i.json" 2>"$WORK/spray-$name-$i.err" &
		LAB_PIDS[spray-$name-$i]=$!
	done
	SPRAY_LAUNCH_S=$(calc "$(now_s) - $t0")
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
	echo "== $mode: $HOSTS agents ($how), --max-sources $MAX_SOURCES, $([ "${BENCH_INSECURE:-0}" = 1 ] && echo "--insecure-cluster" || echo "keys (agent keygen)"); load: $(cut -d' ' -f1-3 /proc/loadavg)"
	start_cluster "$mode"
	sleep 2 # the start's own traffic (every peer's first message, resends) is not idle
	cpu_mark "$mode"
	sleep "${BENCH_IDLE_S:-20}" # idle: what the cluster costs with nothing to report (a rate over a fixed window)
	cpu_report "$mode" idle 0
	awk -v t="$(calc "$(snap_time "$WORK/snap1") - $(snap_time "$WORK/snap0")")" '{ r += $3; w += $5 }
		END { printf "  idle rates per agent: report bytes %d/s, control link %d/s\n", r / NR / t, w / NR / t }' "$WORK/rows"
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
	local mode=$1 admitted budget el spread
	[ $((FIRST_RUNS++)) -eq 0 ] || { FIRST_SRC=198.19.203.$FIRST_RUNS && sleep 1; }
	cpu_mark "$mode"
	spray first 2000 1 one_first_src
	bench_snap "$mode" "$WORK/snap1"
	window_rows "$WORK/snap0" "$WORK/snap1" >"$WORK/rows"
	read -r el spread <<<"$(spray_span first)"
	admitted=$(passed_sum "$FIRST_SRC") budget=$(calc "$BURST + $RATE * $el")
	echo "  first: a new client at 2000 pps over $HOSTS hosts for ${el}s (first frames ${spread}s apart): admitted $admitted, budget $budget: $(calc "$admitted / $budget")x;" \
		"load $(cut -d' ' -f1-3 /proc/loadavg)$(awk -v s="$spread" 'BEGIN { if (s > 0.1) printf " (NOT a first second: the senders did not start together)" }');" \
		"$(awk '{ s += $2; if ($2 > m) m = $2 } END { printf "agent CPU per period over the spray mean %.2f ms, max %.2f ms", s / NR, m }' "$WORK/rows")"
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
	status_files | xargs jq -r '.counters.batch_waiting // 0' | awk '$1 > 0 { n++ } END { exit n > 0 }'
}

# The light scenario's idle window: each host's own rates of report and link bytes with nothing
# to report, taken just before it (BENCH_IDLE_S) and subtracted from what it received.
scenario_light() {
	local mode=$1
	sleep 3 # the last scenario's reports and batches are not idle
	capture_start "$mode"
	bench_snap "$mode" "$WORK/idle0"
	sleep "${BENCH_IDLE_S:-20}"
	cpu_mark "$mode"
	spray light $((HOSTS * LIGHT_PER_HOST / 3)) 3 light_src
	# Every one-hit source that waits for its owner in a batch (report_cadence.h) is sent
	# within the window: the bytes it costs are counted.
	wait_until 15 batches_empty || echo "  (entries still wait in batches after 15 s)"
	sleep 2 # the reports of the last period land, and the status files are rewritten (each second)
	echo "  light: $((HOSTS * LIGHT_PER_HOST)) light clients (one frame each, $LIGHT_PER_HOST per host, over 3 s)," \
		"load $(cut -d' ' -f1-3 /proc/loadavg)"
	cpu_report "$mode" light "$LIGHT_PER_HOST" "$WORK/idle0"
	capture_report "$mode"
}

# capture_start MODE: with tcpdump (and not BENCH_CAPTURE=0), h1's control link is captured
# (what it receives, the headers of each frame) until capture_report.
capture_start() {
	[ "${BENCH_CAPTURE:-1}" != 0 ] && command -v tcpdump >/dev/null || return 0
	rm -f "$WORK/h1.pcap"
	ip netns exec "${M_NS[1]}" timeout 300 tcpdump -i "${M_KIF[1]}" -Q in -n -s 128 -U -w "$WORK/h1.pcap" \
		2>"$WORK/tcpdump.err" &
	LAB_PIDS[tcpdump]=$!
	wait_for_line "$WORK/tcpdump.err" 'listening on' "${LAB_PIDS[tcpdump]}" 10 || echo "  (tcpdump did not start: $(cat "$WORK/tcpdump.err"))"
}

# capture_report MODE: h1's link by kind of frame (tests/netns/wire_breakdown.py) over the idle
# window and the scenario's, against the link's counter of the same window.
capture_report() {
	local pid=${LAB_PIDS[tcpdump]:-} port=7700
	[ -n "$pid" ] || return 0
	kill -INT "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	unset "LAB_PIDS[tcpdump]"
	[ "$1" = mesh ] || port=7701
	echo "  h1's link counter over the window: $(awk 'NR == 1 { print $5 }' "$WORK/rows") bytes;" \
		"tcpdump: $(grep -h 'dropped by kernel' "$WORK/tcpdump.err")"
	"$DT_ROOT/tests/netns/wire_breakdown.py" "$WORK/h1.pcap" "$port" "$(snap_time "$WORK/idle0")" \
		"$(snap_time "$WORK/snap0")" "$(snap_time "$WORK/snap1")" $((5 * LIGHT_PER_HOST))
}

bench_up
bench_keys
overflow0=$(dmesg 2>/dev/null | grep -c 'neighbor table overflow')
for mode in $MODES; do run_mode "$mode"; done
overflow1=$(dmesg 2>/dev/null | grep -c 'neighbor table overflow')
[ "$overflow1" = "$overflow0" ] || echo "WARNING: the kernel logged $((overflow1 - overflow0)) 'neighbor table overflow' lines during the run"
lab_finish
