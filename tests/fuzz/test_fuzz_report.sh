#!/usr/bin/env bash
# test: runs alone (timing-heavy: tests/run_all.sh starts nothing beside it)
# test_fuzz_report.sh - a short libFuzzer run of the peer report decoder (ASan+UBSan).
# Bounded: 20 s or 2,000,000 inputs, whichever comes first.
set -u
cd "$(dirname "$0")/../.."
corpus=$(mktemp -d /tmp/dthrottle-fuzz.XXXXXX)
trap 'rm -rf "$corpus"' EXIT
build/fuzz_make_seeds "$corpus" || { echo "FAIL fuzz_report: cannot write the seed corpus"; exit 1; }
if build/fuzz_report -runs=2000000 -max_total_time=20 -max_len=8192 -timeout=5 \
     -print_final_stats=1 "$corpus" >"$corpus.log" 2>&1; then
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$corpus.log")
  echo "PASS fuzz_report: ${execs:-?} inputs, no crash, leak or inconsistency"
else
  echo "FAIL fuzz_report: the decoder crashed or misbehaved; libFuzzer said:"
  grep -E 'ERROR|SUMMARY|Test unit written' "$corpus.log" | head -10
  rm -f "$corpus.log"
  exit 1
fi
rm -f "$corpus.log"
