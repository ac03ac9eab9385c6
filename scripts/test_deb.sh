#!/usr/bin/env bash
# test_deb.sh DEB - the package on this machine (make test-deb; root; minutes, so not in
# make test): installs DEB with apt (its dependencies too), then checks
#   - dthrottle-agent --version names the package's version;
#   - dthrottle-agent check accepts the example config and rules it installed;
#   - the man pages are found by man, the Python client imports, the units are installed
#     and neither enabled nor started;
# then purges it and checks that none of its files, nor /etc/dthrottle, is left.
# Refuses to run if dthrottle is already installed (that package is not ours to purge) or
# if `make install` left a dthrottle-agent in /usr/local/sbin or /usr/sbin.
set -uo pipefail
DEB=${1:?usage: test_deb.sh build/dthrottle_VERSION_amd64.deb}
DEB=$(realpath "$DEB")
FAILURES=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; FAILURES=$((FAILURES + 1)); }
check() { local name=$1 why=$2; shift 2; if "$@"; then pass "$name"; else fail "$name" "$why"; fi; }

[ "$(id -u)" -eq 0 ] || { echo "FAIL deb/setup: must run as root (it installs a package)"; exit 1; }
[ -f "$DEB" ] || { echo "FAIL deb/setup: no $DEB: run make deb"; exit 1; }
if dpkg-query -W -f '${Status}' dthrottle 2>/dev/null | grep -q 'installed'; then
	echo "FAIL deb/setup: dthrottle is already installed here; remove it first (apt purge dthrottle)"
	exit 1
fi
for f in /usr/sbin/dthrottle-agent /usr/local/sbin/dthrottle-agent /etc/dthrottle; do
	[ -e "$f" ] && { echo "FAIL deb/setup: $f exists (make install?): remove it first (make uninstall)"; exit 1; }
done
version=$(dpkg-deb -f "$DEB" Version)
files=$(dpkg-deb -c "$DEB" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | grep -v '^/$')

# --- install ---------------------------------------------------------------------------------
out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$DEB" 2>&1)
rc=$?
check deb/install "apt-get install $DEB: status $rc: $(tail -5 <<<"$out")" [ "$rc" -eq 0 ]
trap 'dpkg-query -W dthrottle >/dev/null 2>&1 && dpkg --purge dthrottle >/dev/null 2>&1' EXIT

out=$(dthrottle-agent --version 2>&1)
check deb/version "dthrottle-agent --version said '$out', expected 'dthrottle-agent (dthrottle) $version'" \
	[ "$out" = "dthrottle-agent (dthrottle) $version" ]
check deb/in-path "dthrottle-agent is $(command -v dthrottle-agent), expected /usr/sbin/dthrottle-agent" \
	[ "$(command -v dthrottle-agent)" = /usr/sbin/dthrottle-agent ]
out=$(dthrottle-agent check --config /etc/dthrottle/eth0.conf.example --rules /etc/dthrottle/rules.toml.example \
	--iface lo 2>&1)
rc=$?
check deb/check-examples "dthrottle-agent check on the installed examples: status $rc: $out" \
	[ "$rc" -eq 0 ]
out=$(dthrottle-agent check --iface lo --rate 0 --burst 1 2>&1)
check deb/errors-name-program "an error of the installed program: '$out'" grep -q '^dthrottle-agent check: ' <<<"$out"
man_found() { man -w "$1" "$2" >/dev/null 2>&1; }
for page in dthrottle-agent.8 dthrottle-rules.5 dthrottle.conf.5; do
	name=${page%.*} section=${page##*.}
	check "deb/man-$name" "man -w $section $name found nothing" man_found "$section" "$name"
done
# Debian's python3 (not a python3 of pyenv or a venv earlier in PATH): the one whose
# dist-packages the package installs into.
out=$(/usr/bin/python3 -c 'import dthrottle; print(dthrottle.__file__); dthrottle.Client' 2>&1)
check deb/python-client "/usr/bin/python3 cannot import the dthrottle client: $out" \
	[ "$out" = /usr/lib/python3/dist-packages/dthrottle/__init__.py ]
# Every unit of packaging/ (the agent's template, the hub's) is in the package.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
missing_units=""
for unit in "$ROOT"/packaging/*.service.in; do
	name=$(basename "$unit" .in)
	[ -f "/lib/systemd/system/$name" ] || missing_units+=" $name"
done
check deb/units-installed "units of packaging/ not installed in /lib/systemd/system:$missing_units" [ -z "$missing_units" ]
enabled=$(find /etc/systemd/system -name 'dthrottle*' 2>/dev/null | tr '\n' ' ')
check deb/units-not-enabled "the package enabled units: $enabled" [ -z "$enabled" ]
running=$(pgrep -x dthrottle-agent | tr '\n' ' ')
check deb/not-started "the package started dthrottle-agent (pids $running)" [ -z "$running" ]
conffiles=$(dpkg-query -W -f '${Conffiles}' dthrottle | awk '{ print $1 }' | tr '\n' ' ')
check deb/conffiles "conffiles: '$conffiles', expected the example config and rules" \
	grep -q '/etc/dthrottle/eth0.conf.example.*/etc/dthrottle/rules.toml.example\|/etc/dthrottle/rules.toml.example.*/etc/dthrottle/eth0.conf.example' <<<"$conffiles"

# --- purge, then nothing left -------------------------------------------------------------------
out=$(dpkg --purge dthrottle 2>&1)
rc=$?
check deb/purge "dpkg --purge dthrottle: status $rc: $out" [ "$rc" -eq 0 ]
left=""
while IFS= read -r f; do
	[ -n "$f" ] || continue
	[ -d "$f" ] && continue # directories (/usr/sbin, /lib -> usr/lib, ...) are shared; ours are checked below
	[ -e "$f" ] || [ -L "$f" ] && left+=" $f"
done <<<"$files"
for d in /etc/dthrottle /usr/share/dthrottle /usr/share/doc/dthrottle /usr/lib/python3/dist-packages/dthrottle; do
	[ -e "$d" ] && left+=" $d"
done
check deb/nothing-left "left after purge:$left" [ -z "$left" ]
check deb/not-installed "dpkg still knows dthrottle: $(dpkg-query -W -f '${Status}' dthrottle 2>&1)" \
	eval "! dpkg-query -W -f '\${Status}' dthrottle 2>/dev/null | grep -q installed"
echo
[ "$FAILURES" -eq 0 ] && echo "test-deb: every check passed" || echo "test-deb: $FAILURES check(s) failed"
exit $((FAILURES > 0))
