#!/usr/bin/env bash
# test_man_pages.sh - the man pages: built by make from man/*.md, rendered by man(1) without
# a warning, and dthrottle-agent(8) naming exactly the flags of every subcommand's --help
# (tests/packaging/man_vs_help.py: a flag added to the program and not to the page, or the
# reverse, fails with the flag and where it is missing).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
AGENT=${DT_AGENT:-$ROOT/build/agent}
FAILURES=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; FAILURES=$((FAILURES + 1)); }

[ -x "$AGENT" ] || { fail man/setup "$AGENT is not built (make)"; exit 1; }
command -v pandoc >/dev/null || { fail man/setup "pandoc is missing (make deps installs it)"; exit 1; }

# 1. make man builds every page.
if out=$(make -s -C "$ROOT" man 2>&1); then pass man/build; else fail man/build "make man: $out"; exit 1; fi

# 2. Each renders without a warning from groff, and has the sections a man page needs.
for src in "$ROOT"/man/*.md; do
	name=$(basename "$src" .md)
	page="$ROOT/build/man/$name"
	warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=all -l "$page" 2>&1 >/dev/null)
	if [ -n "$warnings" ]; then fail "man/render-$name" "man --warnings on $page: $warnings"; continue; fi
	text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>/dev/null)
	missing=""
	for section in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
		grep -q "^$section" <<<"$text" || missing+=" $section"
	done
	if [ -n "$missing" ]; then fail "man/render-$name" "$page lacks the section(s):$missing"; continue; fi
	# whatis(1) reads the NAME line: "name - what it is"
	if ! lexgrog "$page" >/dev/null 2>&1 && command -v lexgrog >/dev/null; then
		fail "man/render-$name" "lexgrog cannot parse the NAME section of $page: $(lexgrog "$page" 2>&1)"
		continue
	fi
	pass "man/render-$name"
done

# 3. dthrottle-agent(8) against --help, subcommand by subcommand (those main.cpp dispatches
#    must be in the usage lines too).
python3 "$ROOT/tests/packaging/man_vs_help.py" "$AGENT" "$ROOT/man/dthrottle-agent.8.md" "$ROOT/agent/main.cpp"
[ $? -eq 0 ] || FAILURES=$((FAILURES + 1))

# 4. The check itself can fail: a page missing a flag, and one with a flag the program
#    lacks, are both reported with the flag and the place.
scratch=$(mktemp /tmp/dthrottle-man.XXXXXX)
trap 'rm -f "$scratch"' EXIT
grep -v '^\*\*\\--json\*\*' "$ROOT/man/dthrottle-agent.8.md" >"$scratch"
printf '\n# OPTIONS\n\n**\\--no-such-flag**\n:   none\n' >>"$scratch"
out=$(python3 "$ROOT/tests/packaging/man_vs_help.py" "$AGENT" "$scratch" 2>&1)
if grep -q "FAIL man/stats: --json is in 'dthrottle-agent stats --help' but not in" <<<"$out" &&
	grep -q "FAIL man/run: --no-such-flag is in $scratch (# OPTIONS) but not in 'dthrottle-agent --help'" <<<"$out"; then
	pass man/check-catches-drift
else
	fail man/check-catches-drift "a page without stats' --json and with --no-such-flag was not reported as such: $out"
fi
exit $((FAILURES > 0))
