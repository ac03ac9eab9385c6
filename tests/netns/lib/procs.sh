# procs.sh - the processes a suite starts: alive or gone, waits on an exit, on a
# log line or on a state, and stops.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# emulated: true on an emulated CPU (make test-kernel's TCG guest sets DT_EMULATED=1), where
# a suite gives its processes more time.
emulated() { [ "${DT_EMULATED:-0}" = 1 ]; }

# alive PID: the process runs (a zombie, or a /proc entry whose stat cannot be read any
# more because it is being torn down, counts as gone).
alive() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# wait_exit PID SECONDS: waits for PID (our child) to exit; sets EXIT_RC. False on timeout.
wait_exit() {
	local pid=$1 i
	for ((i = 0; i < $2 * 20; i++)); do
		alive "$pid" || break
		sleep 0.05
	done
	alive "$pid" && return 1
	wait "$pid" 2>/dev/null
	EXIT_RC=$?
	return 0
}

# wait_for_line FILE PATTERN PID SECONDS: waits until FILE has a line matching
# PATTERN (grep -E). False on timeout or if PID exits first.
wait_for_line() {
	local file=$1 pattern=$2 pid=$3 i
	for ((i = 0; i < $4 * 20; i++)); do
		grep -qE "$pattern" "$file" 2>/dev/null && return 0
		alive "$pid" || { grep -qE "$pattern" "$file" 2>/dev/null; return; }
		sleep 0.05
	done
	return 1
}

# wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds (true), or until
# SECONDS (decimals allowed) have passed (false: CMD failed on its last try too). CMD runs
# in this shell: it may set variables. For a state the agent exposes (a counter in
# `agent stats --json`, a status file), not for letting time pass.
wait_until() {
	local end
	end=$(awk -v now="$(now_s)" -v d="$1" 'BEGIN { printf "%.3f", now + d }')
	shift
	until "$@"; do
		num_ge "$(now_s)" "$end" && return 1
		sleep 0.1
	done
}

# stop_pid PID: SIGTERM, then SIGKILL after 5 s. (stderr off: no "Killed" job notices.)
stop_pid() {
	local pid=$1
	{
		alive "$pid" || { wait "$pid"; return 0; }
		kill -TERM "$pid"
		wait_exit "$pid" 5 && return 0
		kill -KILL "$pid"
		wait_exit "$pid" 5
	} 2>/dev/null
}

# count_lines FILE PATTERN: lines of FILE matching PATTERN (grep -E), 0 if none.
count_lines() { grep -cE "$2" "$1" 2>/dev/null || true; }

# wait_for_lines FILE PATTERN N PID SECONDS: waits (SECONDS: a whole number) until FILE
# has N lines matching PATTERN. False on timeout or if PID exits first.
wait_for_lines() {
	local i
	for ((i = 0; i < $5 * 20; i++)); do
		[ "$(count_lines "$1" "$2")" -ge "$3" ] && return 0
		alive "$4" || break
		sleep 0.05
	done
	[ "$(count_lines "$1" "$2")" -ge "$3" ]
}
