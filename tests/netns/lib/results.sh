# results.sh - the results of a suite: PASS and FAIL lines, checks, numeric
# comparisons, arithmetic and time.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

pass() { echo "PASS $1"; }
fail() {
	echo "FAIL $1: $2"
	FAILURES=$((FAILURES + 1))
}

# A setup step failed: nothing after it can be meaningful.
die() {
	fail "${TEST_NAME:-setup}" "$1"
	exit 1
}

# check NAME REASON CMD...: PASS if CMD succeeds, else FAIL with REASON.
check() {
	local name=$1 reason=$2
	shift 2
	if "$@"; then pass "$name"; else fail "$name" "$reason"; fi
}

# Numeric comparisons (integers or decimals), for use with check.
# An empty operand (a value that could not be read) never compares true.
num_cmp() { [ -n "$1" ] && [ -n "$3" ] && awk -v a="$1" -v b="$3" "BEGIN { exit !(a + 0 $2 b + 0) }"; }
num_eq() { num_cmp "$1" == "$2"; }
num_le() { num_cmp "$1" '<=' "$2"; }
num_ge() { num_cmp "$1" '>=' "$2"; }

# check_OP NAME WHAT ACTUAL LIMIT: e.g. check_le "x/budget" "passed" 251 252.
check_eq() { check "$1" "$2: got ${3:-nothing}, expected $4" num_eq "$3" "$4"; }
check_le() { check "$1" "$2: got ${3:-nothing}, expected at most $4" num_le "$3" "$4"; }
check_ge() { check "$1" "$2: got ${3:-nothing}, expected at least $4" num_ge "$3" "$4"; }

# calc EXPR: floating-point arithmetic, e.g. calc "50 + 100 * 2.01".
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }
floor() { awk -v x="$1" 'BEGIN { printf "%d", (x < 0 && x != int(x)) ? int(x) - 1 : int(x) }'; }

# Seconds since the epoch, with nanoseconds.
now_s() { date +%s.%N; }

# sleep_to T0 D: sleeps until D seconds after T0 (now_s; not at all if that has passed):
# for a fault or a phase that lasts a given time, never for "long enough" (poll instead).
sleep_to() { sleep "$(awk -v t0="$1" -v d="$2" -v now="$(now_s)" 'BEGIN { t = t0 + d - now; printf "%.3f", (t > 0 ? t : 0) }')"; }
