# mlab_agents.sh - the multi-host lab's agents and hub: the cluster's keys, starts,
# and the waits until each has come up and heard its peers.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# --- cluster keys: a cluster runs with keys unless the test asks for none ---------------------
#
# A cluster without keys refuses to start (docs/security.md), so the lab makes them, once:
# `agent keygen hI` for every host (node id hI; its .pub names the endpoint ${M_CTL[i]}:7700)
# and `agent keygen hub --role hub` (endpoint $HUB_CTL:7701), all in $WORK/mlab-keys, which is
# also every agent's and the hub's --curve-peers directory (only *.pub files are read there).
# mlab_agent_start and mlab_hub_start add them to every cluster they start (--peers,
# --peers-file, --listen, --hub; `agent hub` always) unless the caller chose: --curve-key
# given (its own keys) or --insecure-cluster given. MLAB_INSECURE=1: every cluster of the
# call is started with --insecure-cluster instead (tests that mean to run without keys).

# mlab_keys: makes the lab's keys if they are not there yet; prints nothing. MLAB_KEYS: their
# directory. (Made once per lab whatever the caller: the files, not a variable, say so.)
MLAB_KEYS=
mlab_keys() {
	local i
	MLAB_KEYS=$WORK/mlab-keys
	[ -e "$MLAB_KEYS/hub.pub" ] && return 0
	mkdir -p "$MLAB_KEYS" || die "cannot create $MLAB_KEYS"
	for ((i = 1; i <= M_HOSTS; i++)); do
		"$AGENT" keygen "h$i" --dir "$MLAB_KEYS" --endpoint "${M_CTL[i]}:7700" >/dev/null ||
			die "agent keygen h$i failed"
	done
	"$AGENT" keygen hub --role hub --dir "$MLAB_KEYS" --endpoint "$HUB_CTL:7701" >/dev/null ||
		die "agent keygen hub failed"
}

# mlab_security NAME ARGS...: sets MLAB_SEC to the options that secure a start of key NAME
# (hI or hub) with ARGS: the lab's keys, --insecure-cluster (MLAB_INSECURE=1), or nothing
# (not a cluster, or the caller chose). For an agent, only ARGS with a cluster count.
mlab_security() {
	local key=$1 a cluster=0
	shift
	[ "$key" = hub ] && cluster=1
	MLAB_SEC=()
	for a in "$@"; do
		case $a in
		--curve-key | --curve-key=* | --insecure-cluster) return 0 ;;
		-p | --peers | --peers=* | --peers-file | --peers-file=* | --listen | --listen=* | --hub | --hub=*) cluster=1 ;;
		esac
	done
	[ "$cluster" = 1 ] || return 0
	if [ "${MLAB_INSECURE:-0}" = 1 ]; then
		MLAB_SEC=(--insecure-cluster)
	else
		mlab_keys
		MLAB_SEC=(--curve-key "$MLAB_KEYS/$key.key" --curve-peers "$MLAB_KEYS")
	fi
}

# mlab_agent_start I NAME [AGENT OPTIONS...]: starts host I's agent (node id hI, on its
# data link, its own pin directory), logging to $WORK/agent-NAME.log, and waits until it
# has attached or taken over. Sets AGENT_PID. False (log printed) if it did not come up.
# A cluster gets the lab's key hI (see mlab_security). MLAB_DEFAULT_ID=1: no --node-id (the
# agent's default one: the key's node id, or without keys the host name and a MAC hash).
# MLAB_NO_WAIT=1: returns once started; mlab_agent_wait NAME waits (agents of several hosts
# then load their programs at the same time: the verifier's second or so each, overlapped).
mlab_agent_start() {
	local i=$1 name=$2 log=$WORK/agent-$2.log id=(--node-id "h$1")
	shift 2
	[ "${MLAB_DEFAULT_ID:-0}" = 1 ] && id=()
	mlab_security "h$i" "$@"
	nsenter --net="/run/netns/${M_NS[i]}" -- "$AGENT" --iface "${M_DIF[i]}" --pin-dir "${M_PIN[i]}" \
		"${id[@]}" "${MLAB_SEC[@]}" "$@" >"$log" 2>&1 &
	AGENT_PID=$!
	LAB_PIDS[agent-$name]=$AGENT_PID
	[ "${MLAB_NO_WAIT:-0}" = 1 ] || mlab_agent_wait "$name"
}

# mlab_agent_wait NAME: waits until agent NAME (agent_start, mlab_agent_start) has attached or taken over.
# False (log printed) if it did not come up within 10 s.
mlab_agent_wait() {
	local log=$WORK/agent-$1.log
	wait_for_line "$log" '(attached|took over) dthrottle' "${LAB_PIDS[agent-$1]}" 10 && return 0
	echo "--- agent $1 did not come up; its log:"
	cat "$log"
	return 1
}

# mlab_agents_start NAME local|mesh|hub [AGENT OPTIONS...]: one agent per host 1..HOSTS,
# NAME1, NAME2, ... (CUR_AGENT[I], an array the caller declares), with the OPTIONS and, in a
# cluster, --period $PERIOD and the mesh's --peers or the hub at $HUB_CTL:7701. Starts them
# all, then waits until each has attached and, in a cluster, has heard every other one
# (within 10 s); dies naming the first that did not. Host I also gets the words of
# MLAB_HOST_OPTS[I], if the caller set that (an associative array), e.g. "--peer-bans h1".
# shellcheck disable=SC2153 # HOSTS and PERIOD are the caller's
mlab_agents_start() {
	local name=$1 mode=$2 i opts extra
	shift 2
	for ((i = 1; i <= HOSTS; i++)); do
		opts=("$@")
		read -ra extra <<<"${MLAB_HOST_OPTS[$i]:-}"
		opts+=("${extra[@]}")
		case $mode in
		mesh) opts+=(--period "$PERIOD" --peers "$(mlab_peers "$i")") ;;
		hub) opts+=(--period "$PERIOD" --hub "$HUB_CTL:7701") ;;
		esac
		MLAB_NO_WAIT=1 mlab_agent_start "$i" "$name$i" "${opts[@]}" || die "the $mode agent of h$i did not start"
		# shellcheck disable=SC2004,SC2034 # the caller's array (associative: the $ is needed)
		CUR_AGENT[$i]=$name$i
	done
	for ((i = 1; i <= HOSTS; i++)); do
		mlab_agent_wait "$name$i" || die "the $mode agent of h$i did not start"
	done
	[ "$mode" = local ] && return
	for ((i = 1; i <= HOSTS; i++)); do
		# shellcheck disable=SC2046
		mlab_wait_peers "$name$i" 1 10 $(mlab_others "$i") ||
			die "the $mode agent of h$i did not hear every peer within 10 s"
	done
}

# mlab_hub_start NAME [HUB OPTIONS...]: starts `agent hub` in $HUB_NS on port 7701 (agents:
# --hub $HUB_CTL:7701), logging to $WORK/agent-NAME.log; waits until it relays. With the
# lab's key "hub" unless the caller chose (see mlab_security).
mlab_hub_start() {
	local name=$1 log=$WORK/agent-$1.log
	shift
	mlab_security hub "$@"
	nsenter --net="/run/netns/$HUB_NS" -- "$AGENT" hub --listen "$HUB_CTL:7701" "${MLAB_SEC[@]}" "$@" \
		>"$log" 2>&1 &
	LAB_PIDS[agent-$name]=$!
	wait_for_line "$log" 'hub relaying' "${LAB_PIDS[agent-$name]}" 10 || {
		echo "--- hub $name did not come up; its log:"
		cat "$log"
		return 1
	}
}

# mlab_wait_peers NAME N SECONDS PEER...: waits until agent NAME has logged
# "peer PEER is up" N times for every PEER (N > 1: it came back up after a loss).
mlab_wait_peers() {
	local name=$1 n=$2 secs=$3 peer
	shift 3
	for peer in "$@"; do
		wait_for_lines "$WORK/agent-$name.log" "peer $peer is up" "$n" "${LAB_PIDS[agent-$name]}" "$secs" ||
			return 1
	done
}
