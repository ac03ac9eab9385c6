# landed.sh - what the multi-host lab's agents hold: snapshots of every host's
# stats, and the waits until the reports have landed or the cluster is under way.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# mlab_snapshot NAME: every host's `agent stats --json` (read from the pins, with or
# without a running agent) and the time, kept as snapshot NAME. False if one failed.
mlab_snapshot() {
	local i
	M_SNAP_T[$1]=$(now_s)
	for ((i = 1; i <= M_HOSTS; i++)); do
		M_SNAP[$1:$i]=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0) || return 1
	done
}

# snap_num NAME I SRC KEY: KEY of source SRC on host I in snapshot NAME (0 if absent).
snap_num() {
	local v
	v=$(source_num "${M_SNAP[$1:$2]}" "$3" "$4")
	echo "${v:-0}"
}

# snap_sum NAME SRC KEY: KEY of source SRC summed over every host in snapshot NAME.
snap_sum() {
	local i sum=0
	for ((i = 1; i <= M_HOSTS; i++)); do sum=$(calc "$sum + $(snap_num "$1" "$i" "$2" "$3")"); done
	echo "$sum"
}

# --- the reports have landed ------------------------------------------------------------------
#
# Instead of sleeping "long enough" after a run: poll the hosts' counters until what they
# debited matches what their peers admitted (every hit reported and applied), or, where
# some hits are never charged (a partition), until no host's debits move any more.

# mlab_debits_match SRC SPEC...: on a fresh snapshot (named "landed"), every SPEC
# "HOST:FROM,FROM..." holds: HOST debited exactly what the hosts FROM passed of SRC
# ("3:": nothing at all).
mlab_debits_match() {
	local src=$1 spec host from want i
	shift
	mlab_snapshot landed || return 1
	for spec in "$@"; do
		host=${spec%%:*} from=${spec#*:} want=0
		for i in ${from//,/ }; do want=$((want + $(snap_num landed "$i" "$src" passed))); done
		[ "$(snap_num landed "$host" "$src" debited)" -eq "$want" ] || return 1
	done
}

# mlab_mesh_specs [HOST...]: the SPECs of a full mesh (each HOST, default every host,
# hears every other host), for mlab_debits_match / mlab_wait_landed.
mlab_mesh_specs() {
	local hosts=("$@") i j from
	[ ${#hosts[@]} -gt 0 ] || for ((i = 1; i <= M_HOSTS; i++)); do hosts+=("$i"); done
	for i in "${hosts[@]}"; do
		from=
		for ((j = 1; j <= M_HOSTS; j++)); do [ "$j" -eq "$i" ] || from+=${from:+,}$j; done
		printf '%s:%s ' "$i" "$from"
	done
}

# mlab_wait_landed SECONDS SRC SPEC...: waits (at most SECONDS) until mlab_debits_match
# SRC SPEC... holds. On a timeout it says so and returns false: the checks that follow
# report what is missing.
mlab_wait_landed() {
	local secs=$1
	shift
	wait_until "$secs" mlab_debits_match "$@" && return 0
	echo "  (the debits of $1 did not match ${*:2} within ${secs}s)"
	return 1
}

# mlab_debits_steady SRC SECONDS: true once no host's debited count of SRC has changed for
# SECONDS (call it through wait_until; its state lives in MLAB_STEADY_*). For runs where
# some hits are never charged, so that no exact count can be awaited.
MLAB_STEADY_SIG= MLAB_STEADY_T=0
mlab_debits_steady() {
	local sig= i
	mlab_snapshot steady || return 1
	for ((i = 1; i <= M_HOSTS; i++)); do sig+="$(snap_num steady "$i" "$1" debited) "; done
	if [ "$sig" != "$MLAB_STEADY_SIG" ]; then
		MLAB_STEADY_SIG=$sig MLAB_STEADY_T=${M_SNAP_T[steady]}
		return 1
	fi
	num_ge "$(calc "${M_SNAP_T[steady]} - $MLAB_STEADY_T")" "$2"
}

# mlab_wait_steady SECONDS SRC QUIET: waits (at most SECONDS) until mlab_debits_steady SRC
# QUIET holds; says so on a timeout.
mlab_wait_steady() {
	MLAB_STEADY_SIG= MLAB_STEADY_T=0
	wait_until "$1" mlab_debits_steady "$2" "$3" && return 0
	echo "  (the debits of $2 still moved after ${1}s)"
	return 1
}

# mlab_reports_fresh SINCE MAX_AGE_MS: every host's cluster status (rewritten every second)
# was written after SINCE (now_s seconds) and shows every peer up, its last report younger
# than MAX_AGE_MS: what was queued while the peers could not hear each other is drained.
mlab_reports_fresh() {
	local since_ms i doc ages a
	since_ms=$(awk -v t="$1" 'BEGIN { printf "%d", t * 1000 }')
	for ((i = 1; i <= M_HOSTS; i++)); do
		doc=$(json_get "$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0)" '.cluster // empty') &&
			[ -n "$doc" ] || return 1
		num_ge "$(json_get "$doc" '.written_unix_ms')" "$since_ms" || return 1
		[ "$(json_get "$doc" '[.peers[]? | select(.up == false)] | length')" = 0 ] || return 1
		ages=$(json_get "$doc" '.peers[]?.last_age_ms')
		[ -n "$ages" ] || return 1
		for a in $ages; do [ "$a" -le "$2" ] || return 1; done
	done
}

# mlab_reporting SRC HOST...: the HOSTs together admitted some of SRC and each debited some
# of its peers' hits: the reports flow (a cluster under way, before a fault is injected).
# Not every host need admit: whichever bucket refills first admits, and a host whose peers'
# debits keep it at zero may admit none of a sprayed source for long.
mlab_reporting() {
	local src=$1 i passed=0
	shift
	mlab_snapshot reporting || return 1
	for i in "$@"; do
		[ "$(snap_num reporting "$i" "$src" debited)" -gt 0 ] || return 1
		passed=$((passed + $(snap_num reporting "$i" "$src" passed)))
	done
	[ "$passed" -gt 0 ]
}

# mlab_check_under_way CHECK SRC SECONDS HOST...: a check that mlab_reporting holds within
# SECONDS of now (a run's setup before a fault is injected, not a timing claim: reports land
# within a period or two, but each poll is an `agent stats` call per host, which takes
# seconds on a loaded machine). Says how long it took, or what each host had.
mlab_check_under_way() {
	local check=$1 src=$2 secs=$3 t0 i seen=
	shift 3
	t0=$(now_s)
	if wait_until "$secs" mlab_reporting "$src" "$@"; then
		pass "$check"
		echo "  the hosts admitted and every host debited $src $(calc "$(now_s) - $t0") s after the check began"
		return 0
	fi
	for i in "$@"; do
		seen+="h$i passed $(snap_num reporting "$i" "$src" passed) debited $(snap_num reporting "$i" "$src" debited); "
	done
	fail "$check" "the hosts did not admit $src, or not every host debited it, within $secs s: $seen"
}
