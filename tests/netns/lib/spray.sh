# spray.sh - traffic in the multi-host lab: the load balancer's senders (spray)
# and single senders over one host's link.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# spray_start NAME RATE SECONDS SOURCES [LIMIT]: the load balancer: one pktgen per host
# link, each sending SOURCES (comma-separated, round-robin) at RATE/N frames per second
# for SECONDS (bounded by count), and LIMIT seconds at most (default SECONDS + 3; stop
# earlier with spray_stop). Host I's result goes to $WORK/spray-NAME-I.json.
# SPRAY_OPTS: more pktgen send options for every sender (e.g. "--size 1000").
spray_start() {
	local name=$1 secs=$3 sources=$4 limit=${5:-$(($3 + 3))} i rate count
	rate=$(calc "$2 / $M_HOSTS")
	count=$(floor "$(calc "$rate * $secs")")
	for ((i = 1; i <= M_HOSTS; i++)); do
		nsenter --net="/run/netns/$C_NS" -- timeout $((limit + 10)) "$PKTGEN" send --iface "${M_CIF[i]}" \
			--dst-ip "${M_IP[i]},${M_IP6[i]}" --dst-mac "${M_MAC[i]}" --dport 9999 --json \
			--sources "$sources" --rate "$rate" --count "$count" --duration "${limit}s" ${SPRAY_OPTS:-} \
			>"$WORK/spray-$name-$i.json" 2>"$WORK/spray-$name-$i.err" &
		LAB_PIDS[spray-$name-$i]=$!
	done
}

# spray_wait NAME: waits for every sender of NAME; false (errors printed) if one failed.
spray_wait() {
	local i ok=0
	for ((i = 1; i <= M_HOSTS; i++)); do
		wait_exit "${LAB_PIDS[spray-$1-$i]}" 200 && [ "$EXIT_RC" -eq 0 ] && continue
		echo "--- pktgen send $1 to host $i failed:"
		cat "$WORK/spray-$1-$i.err"
		ok=1
	done
	return $ok
}

# spray_stop NAME: ends every sender of NAME now (each still prints its counts).
spray_stop() {
	local i
	for ((i = 1; i <= M_HOSTS; i++)); do kill -TERM "${LAB_PIDS[spray-$1-$i]}" 2>/dev/null; done
	spray_wait "$1"
}

# spray_sent NAME I SRC: frames of SRC sent to host I. spray_total NAME SRC: to all.
# mlab_send_bg NAME I DST [PKTGEN SEND OPTIONS...]: pktgen send from the client over host
# I's link to DST, port 9999, in the background (bounded by 30 s); JSON in $WORK/NAME.json.
# The caller gives the sources, --rate, --count and --duration. See senders_wait.
mlab_send_bg() {
	local name=$1 i=$2 dst=$3
	shift 3
	nsenter --net="/run/netns/$C_NS" -- timeout 30 "$PKTGEN" send --iface "${M_CIF[i]}" --dst-ip "$dst" \
		--dst-mac "${M_MAC[i]}" --dport 9999 --json "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" &
	LAB_PIDS[$name]=$!
}

# senders_wait NAME...: waits for the background senders NAME (mlab_send_bg); a sender that
# failed ends the test (die), its error printed.
senders_wait() {
	local p
	for p in "$@"; do
		wait_exit "${LAB_PIDS[$p]}" 40 && [ "$EXIT_RC" -eq 0 ] && continue
		cat "$WORK/$p.err"
		die "pktgen $p failed"
	done
}

spray_sent() { source_num "$(cat "$WORK/spray-$1-$2.json")" "$3" sent; }
spray_total() {
	local i n sum=0
	for ((i = 1; i <= M_HOSTS; i++)); do
		n=$(spray_sent "$1" "$i" "$2")
		sum=$((sum + ${n:-0}))
	done
	echo "$sum"
}

# spray_stalled NAME I FILL: sender_stalled of host I's sender of NAME.
spray_stalled() { sender_stalled "$WORK/spray-$1-$2.json" "$3"; }

# spray_elapsed NAME: the longest first-to-last frame time of NAME's senders (seconds).
spray_elapsed() {
	local i
	for ((i = 1; i <= M_HOSTS; i++)); do json_num "$(cat "$WORK/spray-$1-$i.json")" elapsed_s; done |
		awk 'BEGIN { m = 0 } $1 + 0 > m { m = $1 + 0 } END { print m }'
}
