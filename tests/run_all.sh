#!/usr/bin/env bash
# run_all.sh - every test suite of `make test`, then one closing line "N passed, N failed"
# (", N skipped" added when tests were skipped).
# GoogleTest suites count their test cases (GTEST_SKIP()s are listed as "SKIP Suite.Test:
# reason" and counted as skipped); shell suites count their "PASS name", "FAIL name: reason"
# and "SKIP name: reason" lines (a script that fails without a FAIL line counts as one
# failure). A skip without a reason counts as a failure: every skip must say why.
#
#   tests/run_all.sh                          every suite (make test)
#   tests/run_all.sh --suites bpf,netns       a subset: suite groups (unit bpf layout fuzz
#                                             clients packaging netns) or scripts by name (test_rules)
#   --skip test_adaptive --skip-reason TEXT   do not run these scripts: each is listed as
#                                             "SKIP name: TEXT" and counted in ", N skipped"
# DT_SCRIPT_TIMEOUT: seconds one shell suite may take (300; make test-kernel gives more).
# DT_SUITE_TIMES=1: also print how long each GoogleTest suite took (shell suites always say).
# DT_TEST_JOBS: shell suites run at once (2; see run_scripts below).
set -u
cd "$(dirname "$0")/.."
# Debian's python3 first: the suites use the Python packages `make deps` installs for it
# (python3-zmq), and a version manager's shim ahead of it on root's PATH (pyenv's took
# 1.4 s a call on a loaded machine) would turn every timed poll into a measure of itself.
[ -x /usr/bin/python3 ] && case ":$PATH:" in :/usr/bin:*) ;; *) PATH=/usr/bin:$PATH ;; esac

GROUPS_ALL="unit bpf layout fuzz clients packaging netns"
usage() {
  echo "usage: tests/run_all.sh [--suites LIST] [--skip LIST --skip-reason TEXT]" >&2
  echo "  LIST: comma-separated suite groups ($GROUPS_ALL) or scripts by name (test_rules)" >&2
}
suites=""
skips=""
skip_reason=""
while [ $# -gt 0 ]; do
  case $1 in
    --suites) [ $# -ge 2 ] || { usage; exit 2; }; suites=$2; shift 2 ;;
    --suites=*) suites=${1#--suites=}; shift ;;
    --skip) [ $# -ge 2 ] || { usage; exit 2; }; skips=$2; shift 2 ;;
    --skip-reason) [ $# -ge 2 ] || { usage; exit 2; }; skip_reason=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_all.sh: unknown argument '$1'" >&2; usage; exit 2 ;;
  esac
done
suites=${suites//,/ }
skips=${skips//,/ }
[ -z "$skips" ] || [ -n "$skip_reason" ] || {
  echo "run_all.sh: --skip needs --skip-reason: a skipped suite must say why" >&2; exit 2; }
script_timeout=${DT_SCRIPT_TIMEOUT:-300}

# wanted GROUP [SCRIPT]: is this suite (or this script of the group) asked for?
wanted() {
  [ -z "$suites" ] && return 0
  local s
  for s in $suites; do
    [ "$s" = "$1" ] && return 0
    [ -n "${2:-}" ] && [ "$s" = "$(basename "$2" .sh)" ] && return 0
  done
  return 1
}
# Every name asked for must be a group or a script: a typo must not run nothing and pass.
for s in $suites $skips; do
  case " $GROUPS_ALL " in *" $s "*) continue ;; esac
  ls tests/*/"$s".sh >/dev/null 2>&1 && continue
  echo "run_all.sh: no suite or test script named '$s'" >&2; usage; exit 2
done

passed=0
failed=0
skipped=0
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
  local s unexplained
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
  s=${s:-0}
  gtest_skips "$log" | sed 's/^/   /'
  # A skip must say why (GTEST_SKIP() << "reason"): one without is a failure.
  unexplained=$(gtest_skips "$log" | grep -c ': $')
  [ "$unexplained" -gt 0 ] && echo "   FAIL $name: $unexplained test(s) skipped without a reason (GTEST_SKIP() << \"why\")"
  f=$((f + unexplained))
  if [ "$f" -ne 0 ]; then
    failures+=("$name (log: $log)")
    grep -B2 -A12 -E 'Failure$|^.*: Failure' "$log" | head -60 | sed 's/^/   | /'
  fi
  echo "   $p passed, $f failed$([ "$s" -gt 0 ] && echo ", $s skipped")"
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
}

# gtest_skips LOG: "SKIP Suite.Test: reason" for each skipped test of a GoogleTest log
# (the reason: the lines gtest prints between "file:line: Skipped" and "[  SKIPPED ]").
gtest_skips() {
  awk '
    / Skipped$/ { inskip = 1; why = ""; next }
    /^\[  SKIPPED \] [A-Za-z_][A-Za-z0-9_\/]*\.[A-Za-z0-9_\/]* \(/ {
      print "SKIP " $4 ": " why; inskip = 0; next }
    inskip && NF { why = why (why == "" ? "" : " ") $0 }' "$1"
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
  ( timeout "$script_timeout" "$script" >"$log_dir/$name.log" 2>&1; echo $? >"$log_dir/$name.rc" ) &
  SUITE_PID[$script]=$!
}

report_script() {  # script: after it ended
  local script=$1 name rc p f s
  name=$(basename "$script" .sh)
  local log="$log_dir/$name.log"
  wait "${SUITE_PID[$script]}" 2>/dev/null
  rc=$(cat "$log_dir/$name.rc" 2>/dev/null || echo 1)
  echo "== $name ($(( $(date -r "$log_dir/$name.rc" +%s 2>/dev/null || date +%s) - SUITE_START[$script] )) s)"
  p=$(grep -c '^PASS ' "$log")
  f=$(grep -c '^FAIL ' "$log")
  s=$(grep -c '^SKIP ' "$log")
  grep -E '^(PASS|FAIL|SKIP) ' "$log" | sed 's/^/   /'
  # A skip must say why ("SKIP name: reason"): one without is a failure.
  local unexplained
  unexplained=$(grep '^SKIP ' "$log" | grep -cvE '^SKIP [^ :]+: .*[^ ]')
  if [ "$unexplained" -gt 0 ]; then
    echo "   FAIL $name: $unexplained SKIP line(s) without a reason (\"SKIP name: why\")"
    f=$((f + unexplained))
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1
    echo "   FAIL $name: exited with status $rc without a FAIL line; last lines of its log:"
    tail -15 "$log" | sed 's/^/   | /'
  fi
  [ "$f" -ne 0 ] && failures+=("$name (log: $log)")
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
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

# timed FUNCTION ARGS...: run one suite, then its duration when DT_SUITE_TIMES is set.
timed() {
  local t0=$SECONDS
  "$@"
  [ -n "${DT_SUITE_TIMES:-}" ] && echo "   ($((SECONDS - t0)) s)"
  return 0
}

wanted unit && timed run_gtest unit build/unit_tests
wanted bpf && timed run_gtest bpf build/bpf_tests
scripts=()
for group in layout fuzz clients packaging netns; do
  for s in tests/$group/test_*.sh; do
    [ -e "$s" ] && wanted "$group" "$s" || continue
    case " $skips " in
      *" $(basename "$s" .sh) "*)
        echo "== $(basename "$s" .sh)"
        echo "   SKIP $(basename "$s" .sh): $skip_reason"
        skipped=$((skipped + 1))
        continue ;;
    esac
    scripts+=("$s")
  done
done
[ ${#scripts[@]} -gt 0 ] && run_scripts "${scripts[@]}"

echo
if [ ${#failures[@]} -gt 0 ]; then
  echo "failed suites:"
  printf '  %s\n' "${failures[@]}"
fi
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
