# mlab.sh - the multi-host lab: a client, N hosts, a control bridge and a hub
# namespace, and partitions of it.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# A load balancer spreading its clients over N hosts, each with its own agent:
#
#   client $C_NS ─ ${M_CIF[i]} ══veth══ ${M_DIF[i]} ─ host i, ns ${M_NS[i]}: data 198.18.0.1i/16 and
#                  (one link per host)                 2001:2::1i/64 (the agent's XDP is here)
#   host i ${M_KIF[i]} ══veth══ ${M_SWIF[i]} ─ bridge $M_BR in ns $SW_NS: control 198.19.0.1i/24
#   hub (mlab_hub_up) $HUB_NS ══veth══ bridge: control 198.19.0.100/24
#
# Data and control are separate links: the agents' reports never cross the XDP program
# under test, and a partition is just `ip link set down` of one host's control link
# (mlab_cut) while its clients still reach it. Hosts are numbered 1..N (N <= 9); host i
# is node "hI" in the cluster and pins its maps in ${M_PIN[i]}. No IPv6 link-local
# addresses are generated (addrgenmode none), so no stray ND/MLD frame reaches XDP.
#
# Call lab_init first; lab_cleanup removes all of it. Traffic: spray_start sprays
# sources over every host (one pktgen per host link, each at an equal share of the rate).

M_BR=
SW_NS=
HUB_NS=
HUB_CTL=198.19.0.100
M_HOSTS=0
M_NS=() M_CIF=() M_DIF=() M_KIF=() M_SWIF=() M_IP=() M_IP6=() M_MAC=() M_CTL=() M_PIN=()
declare -A M_SNAP=()   # "NAME:I" -> host I's `agent stats --json` of snapshot NAME
declare -A M_SNAP_T=() # NAME -> when snapshot NAME was taken (seconds)

# mlab_ns_add NS: creates namespace NS (recorded for the cleanup) with lo up.
mlab_ns_add() {
	[ -e "/run/netns/$1" ] && die "namespace $1 already exists"
	ip netns add "$1" || die "cannot create namespace $1"
	LAB_NAMESPACES+=("$1")
	ip -n "$1" link set lo up || die "cannot bring lo up in $1"
}

# mlab_ctl_port NS IF SWIF ADDR: a control link from NS (IF, ADDR/24) to the bridge (SWIF).
mlab_ctl_port() {
	local ns=$1 ifname=$2 swif=$3 addr=$4
	ip -n "$ns" link add "$ifname" type veth peer name "$swif" netns "$SW_NS" &&
		ip -n "$ns" link set "$ifname" addrgenmode none &&
		ip -n "$SW_NS" link set "$swif" addrgenmode none master "$M_BR" up &&
		ip -n "$ns" addr add "$addr/24" dev "$ifname" &&
		ip -n "$ns" link set "$ifname" up || die "cannot create the control link $ifname of $ns"
}

# mlab_up N: the client, the switch and N host namespaces with their links (see above).
mlab_up() {
	local n=$1 i
	[ "$n" -ge 1 ] && [ "$n" -le 9 ] || die "mlab_up: 1 to 9 hosts, not $n"
	M_HOSTS=$n
	SW_NS=$LAB-sw
	M_BR=dt$$br
	mlab_ns_add "$C_NS"
	mlab_ns_add "$SW_NS"
	ip -n "$SW_NS" link add "$M_BR" type bridge &&
		ip -n "$SW_NS" link set "$M_BR" addrgenmode none up || die "cannot create the bridge $M_BR"
	for ((i = 1; i <= n; i++)); do
		M_NS[i]=$LAB-h$i
		M_CIF[i]=dt$$c$i
		M_DIF[i]=dt$$d$i
		M_KIF[i]=dt$$k$i
		M_SWIF[i]=dt$$s$i
		M_IP[i]=198.18.0.1$i
		M_IP6[i]=2001:2::1$i
		M_CTL[i]=198.19.0.1$i
		M_PIN[i]=/sys/fs/bpf/$LAB-h$i
		LAB_PIN_DIRS+=("${M_PIN[i]}")
		mlab_ns_add "${M_NS[i]}"
		# The /16 and /64 are on-link: spoofed sources from them pass reverse-path checks.
		ip -n "$C_NS" link add "${M_CIF[i]}" type veth peer name "${M_DIF[i]}" netns "${M_NS[i]}" &&
			ip -n "$C_NS" link set "${M_CIF[i]}" addrgenmode none &&
			ip -n "${M_NS[i]}" link set "${M_DIF[i]}" addrgenmode none &&
			ip -n "${M_NS[i]}" addr add "${M_IP[i]}/16" dev "${M_DIF[i]}" &&
			ip -n "${M_NS[i]}" addr add "${M_IP6[i]}/64" dev "${M_DIF[i]}" nodad &&
			ip -n "$C_NS" link set "${M_CIF[i]}" up &&
			ip -n "${M_NS[i]}" link set "${M_DIF[i]}" up || die "cannot create the data link of host $i"
		M_MAC[i]=$(link_mac "${M_NS[i]}" "${M_DIF[i]}")
		[ -n "${M_MAC[i]}" ] || die "cannot read the MAC address of ${M_DIF[i]}"
		mlab_ctl_port "${M_NS[i]}" "${M_KIF[i]}" "${M_SWIF[i]}" "${M_CTL[i]}"
	done
}

# mlab_hub_up: a namespace for `agent hub`, on the control bridge at $HUB_CTL.
mlab_hub_up() {
	HUB_NS=$LAB-hub
	mlab_ns_add "$HUB_NS"
	mlab_ctl_port "$HUB_NS" "dt$$k0" "dt$$s0" "$HUB_CTL"
}

# mlab_cut I / mlab_heal I: takes host I's control link down (a partition: it neither
# hears nor is heard by the cluster; its data link stays up) / back up.
mlab_cut() { ip -n "${M_NS[$1]}" link set "${M_KIF[$1]}" down; }
mlab_heal() { ip -n "${M_NS[$1]}" link set "${M_KIF[$1]}" up; }

# mlab_peers I [PORT]: the report endpoints of every host but I, comma-separated.
mlab_peers() {
	local i out=
	for ((i = 1; i <= M_HOSTS; i++)); do
		[ "$i" -eq "$1" ] || out+=${out:+,}${M_CTL[i]}:${2:-7700}
	done
	echo "$out"
}

# mlab_others I: the node ids of every host but I (hJ, space-separated).
mlab_others() {
	local i
	for ((i = 1; i <= M_HOSTS; i++)); do [ "$i" -eq "$1" ] || printf 'h%s ' "$i"; done
}
