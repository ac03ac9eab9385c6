#!/usr/bin/env bash
# test_alert_rules.sh - contrib/prometheus and contrib/grafana without a running agent:
#   - promtool check rules on the alert rules, and promtool test rules: the unit tests of
#     dthrottle.rules.test.yml, which must cover every alert the rules define;
#   - the Grafana dashboard is valid JSON, and each of its queries is valid PromQL
#     (promtool check rules on them written as recording rules).
# Whether the agent serves every metric they name is tests/netns/test_prometheus.sh's job
# (a live agent's /metrics).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROM=$ROOT/contrib/prometheus
FAILURES=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; FAILURES=$((FAILURES + 1)); }
command -v promtool >/dev/null || { fail alerts/setup "promtool is missing (make deps installs prometheus)"; exit 1; }
WORK=$(mktemp -d /tmp/dthrottle-alerts.XXXXXX)
trap 'rm -rf -- "$WORK"' EXIT

# promtool resolves rule_files relative to the test file: run it from there.
if out=$(cd "$PROM" && promtool check rules dthrottle.rules.yml 2>&1); then
	pass alerts/check-rules
else
	fail alerts/check-rules "promtool check rules contrib/prometheus/dthrottle.rules.yml: $out"
fi
if out=$(cd "$PROM" && promtool test rules dthrottle.rules.test.yml 2>&1); then
	pass alerts/unit-tests
else
	fail alerts/unit-tests "promtool test rules contrib/prometheus/dthrottle.rules.test.yml: $out"
fi

# Every alert has a unit test (an alert_rule_test naming it).
defined=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$PROM/dthrottle.rules.yml" | sort -u)
tested=$(sed -n 's/^ *alertname: *\([A-Za-z0-9_]*\).*/\1/p' "$PROM/dthrottle.rules.test.yml" | sort -u)
untested=$(comm -23 <(echo "$defined") <(echo "$tested") | tr '\n' ' ')
if [ -z "$defined" ]; then
	fail alerts/every-alert-tested "no alert found in contrib/prometheus/dthrottle.rules.yml"
elif [ -n "$untested" ]; then
	fail alerts/every-alert-tested "alerts without a test in dthrottle.rules.test.yml: $untested"
else
	pass alerts/every-alert-tested
fi
for alert in DthrottleAgentDown DthrottlePeerDown DthrottleReportsStale DthrottleReportsRejected DthrottleRingOverflow; do
	grep -qx "$alert" <<<"$defined" || fail alerts/required "the alert $alert is missing from dthrottle.rules.yml"
done

# The dashboard: JSON, and PromQL that parses.
for dash in "$ROOT"/contrib/grafana/*.json; do
	if ! out=$(python3 -m json.tool "$dash" 2>&1 >/dev/null); then
		fail "dashboard/json-$(basename "$dash")" "$dash is not valid JSON: $out"
	else
		pass "dashboard/json-$(basename "$dash")"
	fi
done
python3 "$ROOT/tests/packaging/contrib_metrics.py" dashboard-rules "$WORK/dashboard.rules.yml" ||
	fail dashboard/queries "cannot read the dashboard's queries"
n=$(grep -c 'record:' "$WORK/dashboard.rules.yml")
if [ "$n" -lt 10 ]; then
	fail dashboard/queries "only $n queries found in contrib/grafana (expected the dashboard's panels)"
elif out=$(promtool check rules "$WORK/dashboard.rules.yml" 2>&1); then
	pass dashboard/queries
else
	fail dashboard/queries "a dashboard query is not valid PromQL (the rule's comment names its panel): $out"
fi
exit $((FAILURES > 0))
