# crowdsec_lapi.sh - sourced by the CrowdSec tests after lib.sh: Debian 12's real LAPI run from
# build/ by scripts/crowdsec_lab.sh (never installed) in one of the test's namespaces.
#   cs_fetch_or_skip       the package, or "SKIP $TEST_NAME: ..." and exit 0 when it cannot be
#                          downloaded (the only reason to skip)
#   cs_lapi_up NS          write the LAPI's configuration, start it in NS on $LAPI, register a
#                          machine; the LAPI is stopped at exit (then lab_cleanup runs)
#   cs_lapi_start/stop     start or stop it again (a test of the bouncer through an outage)
#   cs_bouncer_key NAME F  a new bouncer NAME with a random key, written to F (0600)
#   cscli ARGS             cscli against that LAPI, its output in $WORK/cscli.log
CS_LAB_SCRIPT=$DT_ROOT/scripts/crowdsec_lab.sh
LAPI=${LAPI:-127.0.0.1:8080}
CS_STARTED=0

cs_fetch_or_skip() {
	local out rc
	out=$("$CS_LAB_SCRIPT" fetch 2>&1) && return 0
	rc=$?
	[ "$rc" -eq 3 ] && { echo "SKIP $TEST_NAME: ${out#crowdsec_lab.sh: }"; exit 0; }
	die "scripts/crowdsec_lab.sh fetch failed: $out"
}

cscli() { in_ns "$CS_NS" "$CS_LAB_SCRIPT" cscli "$CS_DIR" "$@" >>"$WORK/cscli.log" 2>&1; }

cs_lapi_start() {
	in_ns "$CS_NS" "$CS_LAB_SCRIPT" start "$CS_DIR" || die "the LAPI did not start: $(tail -n 5 "$CS_DIR/crowdsec.log")"
	CS_STARTED=1
}

# The LAPI is ours to stop, whatever happens (lab_cleanup knows only the PIDs it started).
cs_lapi_stop() { [ "$CS_STARTED" -eq 1 ] && "$CS_LAB_SCRIPT" stop "$CS_DIR"; CS_STARTED=0; }

cs_lapi_up() {
	CS_NS=$1
	CS_DIR=$WORK/crowdsec
	trap 'rc=$?; cs_lapi_stop; (exit $rc); lab_cleanup' EXIT
	"$CS_LAB_SCRIPT" config "$CS_DIR" "$LAPI" || die "cannot write the LAPI's configuration"
	cs_lapi_start
	cscli machines add --auto || die "cscli machines add failed: $(tail -n 3 "$WORK/cscli.log")"
}

cs_bouncer_key() {
	local key
	key=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	cscli bouncers add "$1" -k "$key" || die "cscli bouncers add $1 failed: $(tail -n 3 "$WORK/cscli.log")"
	printf '%s\n' "$key" >"$2" && chmod 600 "$2"
}
