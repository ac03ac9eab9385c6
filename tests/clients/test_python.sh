#!/usr/bin/env bash
# test_python.sh - the Python client (clients/python) against the real query server.
#
# Starts build/query_serve on a unix socket in a temporary directory (and on a loopback
# TCP port the kernel picks; --busy api stands in for an adaptive rule), runs tests/clients/test_python_client.py with unittest,
# and prints one "PASS name" / "FAIL name: reason" line per test case, then checks that
# the server answered, survived and exits cleanly on SIGTERM. Everything it started or
# created (the server by PID, the directory) is removed on exit, whatever happened.
# Also checks that the package installs with pip (when pip and setuptools are present).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SERVE=${DT_QUERY_SERVE:-$ROOT/build/query_serve}
PYTHON=${PYTHON:-python3}
export PYTHONDONTWRITEBYTECODE=1  # leave no __pycache__ in the source tree
WORK=$(mktemp -d /tmp/dthrottle-pyclient.XXXXXX)
SERVER_PID=
FAILURES=0

cleanup() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null
		wait "$SERVER_PID" 2>/dev/null
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

pass() { echo "PASS $1"; }
fail() {
	echo "FAIL $1: $2"
	FAILURES=$((FAILURES + 1))
}
die() {
	fail setup "$1"
	exit 1
}

[ -x "$SERVE" ] || die "$SERVE is not built (make build/query_serve)"
command -v "$PYTHON" >/dev/null || die "$PYTHON not found (make deps installs python3)"

SOCK=$WORK/query.sock
"$SERVE" --socket "$SOCK" --listen 127.0.0.1:0 --max-wait 150ms --busy api \
	--tag-rule 'c:=0.000001/2' --tag-rule 'd:=0.000001/1' --tag-rule 'r:=10/1' \
	2>"$WORK/serve.log" &
SERVER_PID=$!
for _ in $(seq 100); do # at most 5 s
	[ -S "$SOCK" ] && grep -q 'tcp port' "$WORK/serve.log" && break
	sleep 0.05
done
[ -S "$SOCK" ] || die "query_serve did not create $SOCK; its log: $(cat "$WORK/serve.log")"
PORT=$(sed -n 's/.*tcp port \([0-9]*\).*/\1/p' "$WORK/serve.log" | head -1)
[ -n "$PORT" ] || die "query_serve did not log its TCP port"

# --- the unit tests, one PASS/FAIL line each ----------------------------------------
(
	cd "$ROOT/tests/clients" &&
		DTHROTTLE_TEST_SOCKET=$SOCK DTHROTTLE_TEST_TCP=127.0.0.1:$PORT DTHROTTLE_QUERY_SERVE=$SERVE \
			PYTHONPATH=$ROOT/clients/python timeout 120 "$PYTHON" -m unittest -v test_python_client
) >"$WORK/unittest.log" 2>&1
rc=$?
# unittest -v: "test_name (module.Class.test_name) ... ok|FAIL|ERROR" (Python >= 3.11;
# before, "(module.Class)"); a docstring may put the " ... " on the next line.
results=$(awk '
	/^test_[A-Za-z0-9_]+ \(/ { name = $1; cls = $2; gsub(/[()]/, "", cls); n = split(cls, p, "."); c = (p[n] == name) ? p[n - 1] : p[n] }
	name != "" && / \.\.\. (ok|FAIL|ERROR|skipped)/ {
		st = $0; sub(/.* \.\.\. /, "", st); print c "/" name " " st; name = ""
	}' "$WORK/unittest.log")
total=0
while read -r test status; do
	[ -z "$test" ] && continue
	total=$((total + 1))
	case "$status" in
	ok) pass "python/$test" ;;
	skipped*) echo "SKIP python/$test: ${status#skipped }" ;;
	*) fail "python/$test" "$status (see the unittest output below)" ;;
	esac
done <<<"$results"
if [ "$total" -eq 0 ] || [ "$rc" -ne 0 ]; then
	[ "$total" -eq 0 ] && fail python/unittest "no test ran (exit status $rc)"
	[ "$rc" -ne 0 ] && [ "$FAILURES" -eq 0 ] && fail python/unittest "unittest exited with status $rc"
	echo "--- unittest output ---"
	cat "$WORK/unittest.log"
fi

# --- the server answered, is still up, and exits cleanly ------------------------------
if kill -0 "$SERVER_PID" 2>/dev/null; then pass server/alive; else fail server/alive "query_serve died during the tests"; fi
kill -TERM "$SERVER_PID" 2>/dev/null
for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
if wait "$SERVER_PID"; then pass server/exit; else fail server/exit "query_serve exited with an error on SIGTERM"; fi
SERVER_PID=
[ ! -e "$SOCK" ] && pass server/socket-removed || fail server/socket-removed "$SOCK is left behind"
answers=$(sed -n 's/.*answers OK \([0-9]*\) NO \([0-9]*\) WAIT \([0-9]*\).*/\1 \2 \3/p' "$WORK/serve.log")
read -r ok no waits <<<"${answers:-0 0 0}"
if [ "${ok:-0}" -gt 0 ] && [ "${no:-0}" -gt 0 ] && [ "${waits:-0}" -gt 0 ]; then
	pass server/answered
else
	fail server/answered "expected OK, NO and WAIT answers, got: '$answers'; log: $(tail -3 "$WORK/serve.log")"
fi
busy=$(sed -n 's/.*busy OK \([0-9]*\) NO \([0-9]*\).*/\1 \2/p' "$WORK/serve.log")
read -r taken unknown <<<"${busy:-0 0}"
if [ "${taken:-0}" -gt 0 ] && [ "${unknown:-0}" -gt 0 ]; then
	pass server/busy-signals
else
	fail server/busy-signals "expected BUSY lines answered OK and NO, got: '$busy'; log: $(tail -3 "$WORK/serve.log")"
fi

# --- pip can install the package ------------------------------------------------------
# (from a copy: pip builds in the source directory and would leave build/ behind)
if "$PYTHON" -c 'import setuptools, pip, wheel' 2>/dev/null; then
	cp -r "$ROOT/clients/python" "$WORK/src"
	if "$PYTHON" -m pip install --quiet --no-build-isolation --no-deps --no-index --target "$WORK/site" \
		"$WORK/src" >"$WORK/pip.log" 2>&1 &&
		(cd "$WORK" && PYTHONPATH=$WORK/site "$PYTHON" -c 'import dthrottle, sys; sys.exit(not dthrottle.__file__.startswith(sys.argv[1]))' "$WORK/site"); then
		pass python/pip-install
	else
		fail python/pip-install "pip install ./clients/python failed: $(tail -5 "$WORK/pip.log")"
	fi
else
	echo "SKIP python/pip-install: $PYTHON lacks pip, setuptools or wheel (offline build)"
fi

[ "$FAILURES" -eq 0 ]
