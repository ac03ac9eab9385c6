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

# Shell suites run DT_TEST_JOBS at a time (default 2): most of a netns suite's time is
# traffic at a fixed rate, not CPU. A suite whose header has the line
# "# test: runs alone" (timing-heavy ones) starts only when nothing else runs, and
# nothing starts beside it. Results are printed in suite order, each with its time.
JOBS=${DT_TEST_JOBS:-2}
declare -A SUITE_PID=() SUITE_START=()

start_script() {  # script
  local script=$1 name
  name=$(basename "$script" .sh)
  SUITE_START[$script]=$(date +%s)
  ( timeout 300 "$script" >"$log_dir/$name.log" 2>&1; echo $? >"$log_dir/$name.rc" ) &
  SUITE_PID[$script]=$!
}

report_script() {  # script: after it ended
  local script=$1 name rc p f
  name=$(basename "$script" .sh)
  local log="$log_dir/$name.log"
  wait "${SUITE_PID[$script]}" 2>/dev/null
  rc=$(cat "$log_dir/$name.rc" 2>/dev/null || echo 1)
  echo "== $name ($(( $(date -r "$log_dir/$name.rc" +%s 2>/dev/null || date +%s) - SUITE_START[$script] )) s)"
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

runs_alone() { grep -q '^# test: runs alone' "$1"; }
running() { local n=0 s; for s in "${!SUITE_PID[@]}"; do [ -e "$log_dir/$(basename "$s" .sh).rc" ] || n=$((n + 1)); done; echo "$n"; }
wait_below() {  # N: until fewer than N suites run
  while [ "$(running)" -ge "$1" ]; do sleep 0.2; done
}

run_scripts() {  # scripts...: in parallel as above, reported in order
  local scripts=("$@") next=0 i
  for i in "${!scripts[@]}"; do
    if runs_alone "${scripts[i]}"; then wait_below 1; else wait_below "$JOBS"; fi
    start_script "${scripts[i]}"
    runs_alone "${scripts[i]}" && wait_below 1
    while [ "$next" -le "$i" ] && [ -e "$log_dir/$(basename "${scripts[next]}" .sh).rc" ]; do
      report_script "${scripts[next]}"; next=$((next + 1))
    done
  done
  for ((; next < ${#scripts[@]}; next++)); do
    wait_below 1
    report_script "${scripts[next]}"
  done
}

if [ "$(id -u)" -ne 0 ]; then
  echo "make test needs root: the BPF and network-namespace suites load XDP programs" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

run_gtest unit build/unit_tests
run_gtest bpf build/bpf_tests
suites=()
for s in tests/layout/test_*.sh tests/fuzz/test_*.sh tests/clients/test_*.sh tests/netns/test_*.sh; do
  [ -e "$s" ] && suites+=("$s")
done
run_scripts "${suites[@]}"

echo
if [ ${#failures[@]} -gt 0 ]; then
  echo "failed suites:"
  printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
