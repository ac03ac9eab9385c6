#!/usr/bin/env bash
# test_layers.sh - the agent's folders include each other in one direction, and the
# layout section of docs/internals.md is the tree as it is (tests/layout/layers.py).
set -u
cd "$(dirname "$0")/../.."
layers=tests/layout/layers.py
tmp=$(mktemp -d /tmp/dthrottle-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The check itself must catch a cycle: a two-folder tree whose folders include each other.
mkdir -p "$tmp/agent/low" "$tmp/agent/high"
printf '// a.h - x\n#include "high/b.h"\n' >"$tmp/agent/low/a.h"
printf '// b.h - x\n#include "low/a.h"\n' >"$tmp/agent/high/b.h"
printf '// main.cpp - x\n' >"$tmp/agent/main.cpp"
if out=$(python3 "$layers" check "$tmp") || ! grep -q 'cycle between folders: high -> low -> high' <<<"$out"; then
  echo "FAIL layers/detects-cycle: a planted cycle high <-> low was not reported (got: $out)"
else
  echo "PASS layers/detects-cycle"
fi

if out=$(python3 "$layers" check); then
  echo "PASS layers/no-cycle: $(python3 "$layers" order | tr '\n' ' ')"
else
  echo "FAIL layers/no-cycle: agent/ breaks its layering:"
  sed 's/^/  /' <<<"$out"
fi

# The length check itself must catch a long function: a 120-line one planted in a temp tree,
# next to a short one and a namespace-scope table (neither of which may be reported), in
# agent/ and again in tools/ (both are measured).
lengths=tests/layout/function_lengths.py
max_lines=80
mkdir -p "$tmp/long/agent/low" "$tmp/long/tools/bench"
{
  printf '// long.cpp - x\nnamespace dt {\nconst int kTable[] = {\n  1,\n  2,\n};\n'
  printf 'int short_one(int x) {\n  return x;\n}\n'
  printf 'int planted_long(int x) {\n'
  for _ in $(seq 118); do printf '  x += [](int y) { return y; }(1);\n'; done
  printf '}\n}  // namespace dt\n'
} >"$tmp/long/agent/low/long.cpp"
cp "$tmp/long/agent/low/long.cpp" "$tmp/long/tools/bench/long.cpp"
if out=$(python3 "$lengths" "$tmp/long" --max "$max_lines") ||
   ! grep -q 'agent/low/long.cpp:10 planted_long 120 lines' <<<"$out" ||
   ! grep -q 'tools/bench/long.cpp:10 planted_long 120 lines' <<<"$out" || grep -q -e short_one -e kTable <<<"$out"; then
  echo "FAIL layers/detects-long-function: the planted 120-line functions (agent/, tools/) were not reported alone (got: $out)"
else
  echo "PASS layers/detects-long-function"
fi

if out=$(python3 "$lengths" --max "$max_lines"); then
  echo "PASS layers/function-length: no function in agent/ or tools/ over $max_lines lines"
else
  echo "FAIL layers/function-length: split these by phase into named functions (longest first):"
  sed 's/^/  /' <<<"$out"
fi

# docs/internals.md: the block between the layout markers is what `layers.py tree` prints.
python3 "$layers" tree >"$tmp/tree"
sed -n '/<!-- layout:begin/,/<!-- layout:end/p' docs/internals.md | sed '1,2d;$d' | sed '$d' >"$tmp/readme"
if diff -u "$tmp/readme" "$tmp/tree" >"$tmp/diff"; then
  echo "PASS layers/readme-layout"
else
  echo "FAIL layers/readme-layout: docs/internals.md's layout section differs from the tree; regenerate it with" \
       "'python3 $layers readme' (diff: - docs/internals.md, + tree):"
  head -40 "$tmp/diff"
fi
