# lab.sh - the single-host lab (two namespaces and a veth pair, see ../lib.sh),
# the scratch directory of the suites without one, and the cleanup of either lab.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# scratch_init NAME: for the suites without a lab (no namespaces, no BPF): checks that
# the agent is built and makes WORK, /tmp/dthrottle-NAME.XXXXXX, removed at exit.
scratch_init() {
	[ -x "$AGENT" ] || { echo "FAIL setup: $AGENT is missing; run make first"; exit 1; }
	WORK=$(mktemp -d "/tmp/dthrottle-$1.XXXXXX")
	trap 'rm -rf -- "$WORK"' EXIT
}

# lab_init PREFIX: names everything after PREFIX-PID and arranges the cleanup.
lab_init() {
	[ "$(id -u)" -eq 0 ] || { echo "FAIL setup: must run as root (namespaces, XDP)"; exit 1; }
	for bin in "$AGENT" "$PKTGEN"; do
		[ -x "$bin" ] || { echo "FAIL setup: $bin is missing; run make first"; exit 1; }
	done
	LAB=$1-$$
	C_NS=$LAB-c
	H_NS=$LAB-h
	C_IF=dt$$c # interface names are at most 15 characters
	H_IF=dt$$h
	PIN_DIR=/sys/fs/bpf/$LAB
	LAB_PIN_DIRS+=("$PIN_DIR")
	WORK=$(mktemp -d "/tmp/$LAB.XXXXXX")
	trap lab_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# lab_up: creates both namespaces and the veth pair, addresses them, reads the MACs.
# LAB_VETH_QUEUES (default 1): the pair's queues each way (a 256-frame ring each).
lab_up() {
	local ns q=${LAB_VETH_QUEUES:-1}
	for ns in "$C_NS" "$H_NS"; do
		[ -e "/run/netns/$ns" ] && die "namespace $ns already exists"
		ip netns add "$ns" || die "cannot create namespace $ns"
		LAB_NAMESPACES+=("$ns")
		ip -n "$ns" link set lo up || die "cannot bring lo up in $ns"
	done
	ip -n "$C_NS" link add "$C_IF" numtxqueues "$q" numrxqueues "$q" type veth \
		peer name "$H_IF" netns "$H_NS" numtxqueues "$q" numrxqueues "$q" ||
		die "cannot create the veth pair $C_IF/$H_IF"
	ip -n "$C_NS" addr add "$LAB_V4_CLIENT/15" dev "$C_IF" &&
		ip -n "$C_NS" addr add "$LAB_V6_CLIENT/48" dev "$C_IF" nodad &&
		ip -n "$H_NS" addr add "$LAB_V4_HOST/15" dev "$H_IF" &&
		ip -n "$H_NS" addr add "$LAB_V6_HOST/48" dev "$H_IF" nodad &&
		ip -n "$C_NS" link set "$C_IF" up &&
		ip -n "$H_NS" link set "$H_IF" up || die "cannot address or bring up $C_IF/$H_IF"
	H_MAC=$(link_mac "$H_NS" "$H_IF")
	C_MAC=$(link_mac "$C_NS" "$C_IF")
	[ -n "$H_MAC" ] && [ -n "$C_MAC" ] || die "cannot read the MAC addresses of $C_IF/$H_IF"
	# Static neighbours both ways: nothing in the lab ever waits on ARP/ND.
	ip -n "$C_NS" neigh replace "$LAB_V4_HOST" lladdr "$H_MAC" dev "$C_IF" nud permanent &&
		ip -n "$C_NS" neigh replace "$LAB_V6_HOST" lladdr "$H_MAC" dev "$C_IF" nud permanent &&
		ip -n "$H_NS" neigh replace "$LAB_V4_CLIENT" lladdr "$C_MAC" dev "$H_IF" nud permanent &&
		ip -n "$H_NS" neigh replace "$LAB_V6_CLIENT" lladdr "$C_MAC" dev "$H_IF" nud permanent ||
		die "cannot add static neighbour entries"
}

link_mac() { ip -n "$1" -o link show dev "$2" | sed -n 's|.*link/ether \([0-9a-f:]*\).*|\1|p'; }

# in_ns NS CMD...: runs CMD in the network namespace NS (and only that namespace).
in_ns() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" -- "$@"
}

# xdp_attached: true if the host interface has an XDP program attached.
xdp_attached() { ip -n "$H_NS" link show dev "$H_IF" | grep -q 'xdp'; }

# pins_present [DIR]: true if the maps and the link are pinned in DIR.
pins_present() {
	local dir=${1:-$PIN_DIR} f
	for f in buckets stats policy config link; do
		[ -e "$dir/$f" ] || return 1
	done
}

# --- cleanup ---------------------------------------------------------------------------------

# lab_cleanup: removes exactly what the lab created (installed as the EXIT trap).
lab_cleanup() {
	local rc=$? name dir ns f
	[ "$LAB_CLEANED" -eq 1 ] && return
	LAB_CLEANED=1
	trap - EXIT INT TERM
	for name in "${!LAB_PIDS[@]}"; do
		stop_pid "${LAB_PIDS[$name]}"
	done
	if [ "$FAILURES" -gt 0 ] || [ "$rc" -ne 0 ]; then
		for f in "$WORK"/agent-*.log; do
			[ -s "$f" ] || continue
			echo "--- $(basename "$f") (last 15 lines):"
			tail -n 15 "$f"
		done
	fi
	for dir in "${LAB_PIN_DIRS[@]}"; do
		[ -e "$dir" ] && rm -rf -- "$dir"
		# The agent's lock, and its cluster status files if it was killed.
		rm -f -- "/run/dthrottle/${dir//\//_}".{lock,attach,bans,cluster.json,cluster.txt,explain.req,explain.json,escalation}
	done
	for ns in "${LAB_NAMESPACES[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "${WORK:-}" ] && rm -rf -- "$WORK"
	exit "$rc"
}

# lab_finish: the test's exit status.
lab_finish() {
	if [ "$FAILURES" -gt 0 ]; then
		echo "$FAILURES check(s) failed"
		exit 1
	fi
	exit 0
}
