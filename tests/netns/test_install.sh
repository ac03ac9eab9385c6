#!/usr/bin/env bash
# test_install.sh - `make install` / `make uninstall` into a staging directory (DESTDIR).
#
#   1. make install DESTDIR=tmp: exactly the binary, the units (the agent's, the CrowdSec
#      bouncer's) and the sample config, with their modes; the units run the installed
#      binary with the instance's config file (the bouncer: with its key file).
#   2. systemd-analyze verify accepts both units without a warning (when systemd-analyze is
#      there; its ExecStart is pointed at the staged binary, which verify requires).
#   3. The installed binary accepts the installed sample config (`check`), and reports a
#      broken copy of it with the file and line.
#   4. make uninstall removes what install put there and keeps an operator's config.
# Touches nothing outside its temporary directory (no namespaces, no BPF).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=install

scratch_init install
STAGE=$WORK # make install's DESTDIR

SBIN=usr/local/sbin/dthrottle-agent
UNIT=usr/local/lib/systemd/system/dthrottle@.service
CS_UNIT=usr/local/lib/systemd/system/dthrottle-crowdsec@.service
HUB_UNIT=usr/local/lib/systemd/system/dthrottle-hub.service
SAMPLE=etc/dthrottle/eth0.conf.example

# --- 1. install ----------------------------------------------------------------------------
make -s -C "$DT_ROOT" install DESTDIR="$STAGE" PREFIX=/usr/local >"$STAGE.log" 2>&1 ||
	{ cat "$STAGE.log"; rm -f "$STAGE.log"; die "make install DESTDIR=$STAGE failed"; }
rm -f "$STAGE.log"
files=$(cd "$STAGE" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
expected=$(printf '%s\n' "$SBIN" "$UNIT" "$CS_UNIT" "$HUB_UNIT" "$SAMPLE" | sort | tr '\n' ' ')
check install/files "installed files: got '$files', expected '$expected'" [ "$files" = "$expected" ]
mode() { stat -c %a "$STAGE/$1" 2>/dev/null; }
check install/modes "modes: binary $(mode "$SBIN") (755), unit $(mode "$UNIT") (644), sample $(mode "$SAMPLE") (644)" \
	[ "$(mode "$SBIN")-$(mode "$UNIT")-$(mode "$SAMPLE")" = 755-644-644 ]
exec_line=$(grep '^ExecStart=' "$STAGE/$UNIT")
check install/execstart "unit: '$exec_line'" \
	[ "$exec_line" = "ExecStart=/usr/local/sbin/dthrottle-agent --config /etc/dthrottle/%I.conf --iface %I" ]
check install/no-placeholders "unit still has @...@ placeholders: $(grep -o '@[A-Z]*@' "$STAGE/$UNIT" | tr '\n' ' ')" \
	bash -c "! grep -q '@[A-Z]*@' '$STAGE/$UNIT'"
cs_exec=$(grep '^ExecStart=' "$STAGE/$CS_UNIT")
check install/crowdsec-unit "the CrowdSec bouncer's unit: mode $(mode "$CS_UNIT") (644), '$cs_exec'" \
	[ "$(mode "$CS_UNIT")" = 644 ] && [ "$cs_exec" = 'ExecStart=/usr/local/sbin/dthrottle-agent crowdsec --iface %I --lapi ${DTHROTTLE_LAPI} --key-file /etc/dthrottle/crowdsec.key $DTHROTTLE_CROWDSEC_ARGS' ]

# --- 2. systemd-analyze verify ----------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
	mkdir "$STAGE/verify"
	sed "s|=/usr/local/sbin/|=$STAGE/usr/local/sbin/|" "$STAGE/$UNIT" >"$STAGE/verify/dthrottle@eth0.service"
	out=$(systemd-analyze verify "$STAGE/verify/dthrottle@eth0.service" 2>&1)
	rc=$?
	check install/unit-verifies "systemd-analyze verify: status $rc: $out" [ "$rc:$out" = "0:" ]
	sed "s|=/usr/local/sbin/|=$STAGE/usr/local/sbin/|" "$STAGE/$CS_UNIT" >"$STAGE/verify/dthrottle-crowdsec@eth0.service"
	out=$(systemd-analyze verify "$STAGE/verify/dthrottle-crowdsec@eth0.service" 2>&1)
	rc=$?
	check install/crowdsec-unit-verifies "systemd-analyze verify of the bouncer's unit: status $rc: $out" [ "$rc:$out" = "0:" ]
	rm -rf "$STAGE/verify"
else
	echo "systemd-analyze not installed: the unit was not verified"
fi

# --- 3. the sample config is accepted; a broken one is reported with its line -----------------
out=$("$STAGE/$SBIN" check --config "$STAGE/$SAMPLE" --iface eth0 2>&1)
rc=$?
check install/sample-accepted "dthrottle-agent check on the sample: status $rc: $out" \
	[ "$rc" -eq 0 ]
check install/sample-values "the sample's policy, as check reports it: $out" \
	grep -q 'ok: eth0: 0 packet rules (0 throttle, 0 allow, 0 deny), 0 tag rules, default 100/s burst 50' <<<"$out"
sed 's/^burst = 50 /brust = 50 /' "$STAGE/$SAMPLE" >"$STAGE/etc/dthrottle/broken.conf"
line=$(grep -n '^brust' "$STAGE/etc/dthrottle/broken.conf" | cut -d: -f1)
out=$("$STAGE/$SBIN" check --config "$STAGE/etc/dthrottle/broken.conf" --iface eth0 2>&1)
rc=$?
check install/broken-config-status "check on a config with a typo: status $rc, expected 2: $out" [ "$rc" -eq 2 ]
check install/broken-config-line "check on a config with a typo on line ${line:-?}: $out" \
	grep -qF "$STAGE/etc/dthrottle/broken.conf:${line:-?}: unknown setting 'brust' (did you mean 'burst'?)" <<<"$out"
check install/broken-config-names-program "the error names the installed program (dthrottle-agent check): $out" \
	grep -q "^dthrottle-agent check: " <<<"$out"
mv "$STAGE/etc/dthrottle/broken.conf" "$STAGE/etc/dthrottle/eth0.conf" # an operator's config
out=$("$STAGE/$SBIN" --version)
check install/version "dthrottle-agent --version: '$out'" grep -qx "dthrottle-agent (dthrottle) [0-9.]*" <<<"$out"

# --- 4. uninstall ----------------------------------------------------------------------------------
make -s -C "$DT_ROOT" uninstall DESTDIR="$STAGE" PREFIX=/usr/local >/dev/null 2>&1 ||
	fail install/uninstall "make uninstall DESTDIR=$STAGE failed"
left=$(cd "$STAGE" && find . -type f | sed 's|^\./||' | tr '\n' ' ')
check install/uninstall "files left after uninstall: '$left', expected only etc/dthrottle/eth0.conf" \
	[ "$left" = "etc/dthrottle/eth0.conf " ]

lab_finish
