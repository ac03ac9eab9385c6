#!/usr/bin/env bash
# run_all.sh - every test suite of `make test`, then one closing line "N passed, N failed".
# GoogleTest suites count their test cases; shell suites count their "PASS name" and
# "FAIL name: reason" lines (a script that fails without a FAIL line counts as one failure).
set -u
cd "$(dirname "$0")/.."

passed=0
failed=0
failures=()
log_dir=$(mktemp -d /tmp/dthrottle-test.XXXXXX)

run_gtest() {  # name binary [args...]
  local name=$1; shift
  local log="$log_dir/$name.log"
  echo "== $name"
  "$@" --gtest_color=no >"$log" 2>&1
  local rc=$?
  local p f
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  p=${p:-0}; f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sort -u | sed 's/^/   /'
  if [ "$f" -ne 0 ]; then
    failures+=("$name (log: $log)")
    grep -B2 -A12 -E 'Failure$|^.*: Failure' "$log" | head -60 | sed 's/^/   | /'
  fi
  echo "   $p passed, $f failed"
  passed=$((passed + p)); failed=$((failed + f))
}

run_script() {  # script
  local script=$1 name
  name=$(basename "$script" .sh)
  local log="$log_dir/$name.log"
  echo "== $name"
  timeout 300 "$script" >"$log" 2>&1
  local rc=$?
  local p f
  p=$(grep -c '^PASS ' "$log")
  f=$(grep -c '^FAIL ' "$log")
  grep -E '^(PASS|FAIL) ' "$log" | sed 's/^/   /'
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    echo "   FAIL $name: exited with status $rc without a FAIL line; last lines of its log:"
    tail -15 "$log" | sed 's/^/   | /'
  fi
  [ "$f" -ne 0 ] && failures+=("$name (log: $log)")
  passed=$((passed + p)); failed=$((failed + f))
}

if [ "$(id -u)" -ne 0 ]; then
  echo "make test needs root: the BPF and network-namespace suites load XDP programs" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

run_gtest unit build/unit_tests
run_gtest bpf build/bpf_tests
for s in tests/layout/test_*.sh tests/fuzz/test_*.sh tests/clients/test_*.sh tests/netns/test_*.sh; do
  [ -e "$s" ] && run_script "$s"
done

echo
if [ ${#failures[@]} -gt 0 ]; then
  echo "failed suites:"
  printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
