#!/usr/bin/env bash
# test_check.sh - `agent check` refuses what the daemon refuses, with the same message and
# exit status 2, and its summary counts every tag rule (the rules file's and --tag-rule's).
#
#   1. a strict --tag-rule without --redis: check exits 2 naming --redis; with --redis, 0;
#   2. a tag rule set the tag table refuses (a file [[tag]] and a flag with one prefix):
#      exit 2, and the daemon gives the very same message and status;
#   3. the summary line counts the file's [[tag]] and the --tag-rule flags;
#   4. the peers file as the daemon reads it, a key for every peer;
#   5. a cluster without keys: exit 2 naming both ways out (keys, --insecure-cluster), as the
#      daemon; with --insecure-cluster check passes and its cluster line says insecure.
# Touches nothing outside its temporary directory (no namespaces, no BPF): check loads
# nothing, and the daemon stops at its configuration check before binding anything. The
# daemon runs on an interface that does not exist and a pin directory in the temporary
# directory, so that a regression could not reach a real interface either.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=check

[ -x "$AGENT" ] || { echo "FAIL setup: $AGENT is missing; run make first"; exit 1; }
WORK=$(mktemp -d /tmp/dthrottle-check.XXXXXX)
trap 'rm -rf -- "$WORK"' EXIT
IFACE=dtcheck$$ # no such interface
BASE=(--iface "$IFACE" --pin-dir "$WORK/pins" --rate 10 --burst 5)

# check_refused_like_daemon NAME WHAT COMPLAINT MESSAGE ARGS...: `agent check BASE ARGS` exits 2
# saying MESSAGE (else the failure says "check's message COMPLAINT"), and the daemon on the same
# arguments says the same with the same status. WHAT: ARGS in words, for the failures. Checks
# check/NAME/exit, check/NAME/message and check/NAME/same-as-daemon.
check_refused_like_daemon() {
	local name=$1 what=$2 complaint=$3 message=$4 out rc daemon_out daemon_rc
	shift 4
	out=$("$AGENT" check "${BASE[@]}" "$@" 2>&1)
	rc=$?
	check_eq "check/$name/exit" "check's exit status for $what ($out)" "$rc" 2
	check "check/$name/message" "check's message $complaint: $out" grep -qF "$message" <<<"$out"
	# The first line is the refusal; a hint after it names each command's own --help.
	daemon_out=$(timeout 10 "$AGENT" "${BASE[@]}" "$@" 2>&1)
	daemon_rc=$?
	daemon_out=$(head -1 <<<"$daemon_out")
	out=$(head -1 <<<"$out")
	check "check/$name/same-as-daemon" \
		"the daemon said (status $daemon_rc) '$daemon_out', check said (status $rc) '$out'" \
		[ "$daemon_rc:${daemon_out#agent: }" = "$rc:${out#agent check: }" ]
}

# --- 1. strict tag rules need --redis ------------------------------------------------------
check_refused_like_daemon strict-without-redis "a strict --tag-rule without --redis" "does not name --redis" \
	"agent check: tag rule 'pay:' is strict, which needs --redis ADDR" --tag-rule 'pay:=5/1!strict'

out=$("$AGENT" check "${BASE[@]}" --tag-rule 'pay:=5/1!strict' --redis 127.0.0.1:6379 2>&1)
rc=$?
check_eq check/strict-with-redis/exit "check's exit status for a strict --tag-rule with --redis ($out)" "$rc" 0

# --- 2. a tag rule set the tag table refuses -----------------------------------------------------
printf 'version = 1\n[[tag]]\nprefix = "api:"\nrate = 5\nburst = 10\n' >"$WORK/rules.toml"
check_refused_like_daemon duplicate-prefix "two tag rules with prefix 'api:'" "does not say which rule" \
	"agent check: tag rule 2 (prefix 'api:'): duplicate prefix" --rules "$WORK/rules.toml" --tag-rule 'api:=100/20'

# --- 3. the summary counts every tag rule ----------------------------------------------------------
out=$("$AGENT" check "${BASE[@]}" --rules "$WORK/rules.toml" --tag-rule 'user:=6/m/1' --tag-rule '=1/1' 2>&1)
rc=$?
check_eq check/summary/exit "check's exit status for valid tag rules ($out)" "$rc" 0
check check/summary/tag-rules "the summary does not count 1 [[tag]] and 2 --tag-rule as 3 tag rules: $out" \
	grep -qF "ok: $IFACE: 0 packet rules (0 throttle, 0 allow, 0 deny), 3 tag rules, default 10/s burst 5" <<<"$out"

# --- 4. the peers file, as the daemon reads it; CurveZMQ keys for every peer ---------------------
printf '# peers\n198.18.1.2:7700\n198.18.1.3\n' >"$WORK/peers"
check_refused_like_daemon peers-file-broken "a peers file line without a port" "does not name $WORK/peers:3" \
	"agent check: $WORK/peers:3: " --peers-file "$WORK/peers" --insecure-cluster
printf '# peers\n198.18.1.2:7700\n198.18.1.3:7700  # h3\n' >"$WORK/peers"
out=$("$AGENT" check "${BASE[@]}" --peers 198.18.1.4:7700 --peers-file "$WORK/peers" --insecure-cluster 2>&1)
rc=$?
check_eq check/peers-file/exit "check's exit status for a valid peers file ($out)" "$rc" 0
check check/peers-file/summary "the summary does not count 3 peers with the file: $out" \
	grep -qF "peers 3 (with $WORK/peers), hubs 0" <<<"$out"
mkdir -p "$WORK/keys" "$WORK/known"
"$AGENT" keygen me --dir "$WORK/keys" >/dev/null && "$AGENT" keygen h2 --dir "$WORK/known" --endpoint 198.18.1.2:7700 >/dev/null ||
	die "agent keygen failed"
out=$("$AGENT" check "${BASE[@]}" --peers-file "$WORK/peers" --curve-key "$WORK/keys/me.key" --curve-peers "$WORK/known" 2>&1)
rc=$?
check_eq check/curve-missing-key/exit "check's exit status for a peer without a key ($out)" "$rc" 2
check check/curve-missing-key/message "check's message does not name the peer without a key: $out" \
	grep -qF "no public key for peer tcp://198.18.1.3:7700 in $WORK/known" <<<"$out"
# The key names the node: another --node-id is refused (exit 2), the same one is fine.
out=$("$AGENT" check "${BASE[@]}" --peers 198.18.1.2:7700 --node-id web2 --curve-key "$WORK/keys/me.key" \
	--curve-peers "$WORK/known" 2>&1)
rc=$?
check_eq check/curve-node-id/exit "check's exit status for a --node-id the key does not speak for ($out)" "$rc" 2
check check/curve-node-id/message "check's message does not say which node the key speaks for: $out" \
	grep -qF -- "--node-id web2 but me.key speaks for node me" <<<"$out"
out=$("$AGENT" check "${BASE[@]}" --peers 198.18.1.2:7700 --curve-key "$WORK/keys/me.key" --curve-peers "$WORK/known" 2>&1)
rc=$?
check_eq check/curve-node-id/default-exit "check's exit status with the key's node id ($out)" "$rc" 0
check check/curve-node-id/default "check does not name the key's node id: $out" grep -qF "cluster node me:" <<<"$out"

# --- 5. secure by default: a cluster without keys is refused unless asked for by name -------------
check_refused_like_daemon keyless-cluster "--peers without --curve-key" "does not name both ways out" \
	"agent check: a cluster without keys lets anyone on the network forge, read or silence reports: give --curve-key FILE --curve-peers DIR (make them with \`agent keygen NAME\`, see docs/security.md), or --insecure-cluster to run it unauthenticated" \
	--peers 198.18.1.2:7700
out=$("$AGENT" check "${BASE[@]}" --peers 198.18.1.2:7700 --insecure-cluster 2>&1)
rc=$?
check_eq check/insecure/exit "check's exit status for --peers with --insecure-cluster ($out)" "$rc" 0
check check/insecure/summary "check's cluster line does not say insecure: $out" \
	grep -qE "^ok: cluster node .*, insecure \(--insecure-cluster" <<<"$out"
out=$("$AGENT" check "${BASE[@]}" --peers 198.18.1.2:7700 --curve-key "$WORK/keys/me.key" --curve-peers "$WORK/known" 2>&1)
rc=$?
check_eq check/keys/exit "check's exit status for --peers with keys ($out)" "$rc" 0
check check/keys/summary "check's cluster line does not say CurveZMQ keys: $out" \
	grep -qE "^ok: cluster node .*, CurveZMQ keys$" <<<"$out"

lab_finish
