# agent.sh - one agent in the single-host lab: start, signal, run in the
# foreground, its stats and its query socket.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# agent_start NAME [AGENT OPTIONS...]: starts build/agent on the host interface with
# our pin directory, logging to $WORK/agent-NAME.log, and waits until it has attached
# or taken over. Sets AGENT_PID. False (with the log printed) if it did not come up.
agent_start() {
	local name=$1 log=$WORK/agent-$1.log
	shift
	# nsenter (not a shell function) in the background, so that $! is the agent itself.
	nsenter --net="/run/netns/$H_NS" -- "$AGENT" --iface "$H_IF" --pin-dir "$PIN_DIR" "$@" \
		>"$log" 2>&1 &
	AGENT_PID=$!
	LAB_PIDS[agent-$name]=$AGENT_PID
	mlab_agent_wait "$name"
}

agent_log() { echo "$WORK/agent-$1.log"; }

# agent_signal NAME SIGNAL: sends SIGNAL and waits (10 s) for the exit; sets EXIT_RC.
# (stderr off meanwhile: bash would report a SIGKILLed job as "Killed" noise.)
agent_signal() {
	local pid=${LAB_PIDS[agent-$1]}
	{ kill "-$2" "$pid" && wait_exit "$pid" 10; } 2>/dev/null && return 0
	# Still there: say where it is stuck, for the report.
	echo "agent $1 (pid $pid) still alive 10 s after SIG$2: $(cat "/proc/$pid/stat" 2>/dev/null)"
	echo "  wchan: $(cat "/proc/$pid/wchan" 2>/dev/null); kernel stack:"
	sed 's/^/    /' "/proc/$pid/stack" 2>/dev/null | head -20
	echo "  threads (tid state wchan):"
	for t in /proc/"$pid"/task/*; do
		[ -e "$t/stat" ] && echo "    ${t##*/} $(awk '{ print $3 }' "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
	done
	return 1
}

# agent_fg [AGENT ARGS...]: runs the agent in the host namespace in the foreground
# (bounded by 20 s); sets FG_RC and FG_OUT (stdout and stderr).
agent_fg() {
	FG_OUT=$(in_ns "$H_NS" timeout 20 "$AGENT" "$@" 2>&1)
	FG_RC=$?
}

# stats_json [DIR]: `agent stats --json` over every source, read from the pins.
stats_json() { "$AGENT" stats --pin-dir "${1:-$PIN_DIR}" --json --top 0; }

# config_owner [DIR]: the program instance config.owner names (struct dt_config, read
# through BTF): 0 where any program of ours counts the frames, non-zero while one owns them.
config_owner() {
	bpftool -j map lookup pinned "${1:-$PIN_DIR}/config" key 0 0 0 0 | jq -r '.formatted.value.owner // empty'
}

# clients_group: sets CLIENTS_GROUP to the name of group 65534 (nogroup), the group of
# query_ask --as's clients, for --query-socket-group; dies if the host has none.
clients_group() {
	CLIENTS_GROUP=$(getent group 65534 | cut -d: -f1)
	[ -n "$CLIENTS_GROUP" ] || die "no group 65534 on this host"
}

# query_ask [--as UID] SOCKET LINE...: one connection to the query socket SOCKET, the LINEs
# pipelined; the answers joined by ',' ("error: ..." if it cannot connect). A client as UID
# runs with group nogroup and no other groups.
query_ask() {
	local as=()
	if [ "$1" = --as ]; then # the system's python: a pyenv shim under /root is root's only
		as=(setpriv --reuid "$2" --regid 65534 --clear-groups /usr/bin/python3)
		shift 2
	fi
	[ ${#as[@]} -gt 0 ] || as=("$PYTHON")
	"${as[@]}" - "$@" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
try:
    s.connect(sys.argv[1])
    s.sendall(b"".join(t.encode() + b"\n" for t in sys.argv[2:]))
    want, got = len(sys.argv) - 2, b""
    while got.count(b"\n") < want:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    print(",".join(got.decode().split("\n")[:want]))
except OSError as e:
    print("error: %s" % e)
PY
}

# sources_seen ADDR...: every ADDR has packets passed or dropped in our pins (a sender is
# under way); for wait_until.
sources_seen() {
	local json src passed dropped
	json=$(stats_json) || return 1
	for src in "$@"; do
		passed=$(source_num "$json" "$src" passed) dropped=$(source_num "$json" "$src" dropped)
		[ $((${passed:-0} + ${dropped:-0})) -ge 1 ] || return 1
	done
}

# ban_value DIR PREFIX FIELD: FIELD of PREFIX's ban in force in the pins of DIR (`agent bans
# --json`), or nothing if it has none.
ban_value() {
	"$AGENT" bans --pin-dir "$1" --json |
		jq -r --arg p "$2" --arg f "$3" 'first(.bans[] | select(.prefix == $p and (.expired | not)) | .[$f]) // empty' \
			2>/dev/null
}
