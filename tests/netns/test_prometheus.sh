#!/usr/bin/env bash
# test_prometheus.sh - a real Prometheus (Debian's) against live agents, and contrib/'s
# metric names against what the agents serve.
#
# Two agents peer in lib.sh's multi-host lab, each serving --metrics on its control address
# (198.19.0.1I:9100). Then:
#   - every dthrottle_* name the Grafana dashboard and the alert rules use is served by
#     h1's /metrics (the cluster's families included), else FAIL naming each missing one;
#   - Prometheus runs in h1's namespace on its control address (198.19.0.11:9090), with its
#     own data directory under $WORK, scraping both agents every second as job "dthrottle"
#     with contrib/prometheus/dthrottle.rules.yml loaded; after a bounded burst of traffic
#     its HTTP API answers `dthrottle_packets_total` for both agents (with passed packets),
#     `up{job="dthrottle"}` is 1 for both, and its rules API shows the alert group loaded
#     and healthy.
# Prometheus is stopped by PID (lab cleanup) and bounded by `timeout` in any case.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_common_checks.sh"
TEST_NAME=prometheus

RATE=50
BURST=20
PORT=9100
PROM_PORT=9090
SOURCES=198.18.6.1,198.18.6.2
command -v prometheus >/dev/null || { echo "FAIL prometheus/setup: prometheus is missing (make deps installs it)"; exit 1; }

lab_init dtprom
mlab_up 2

# http_get NS HOST PORT PATH OUT: an HTTP/1.0 GET (no chunked answer) inside NS, bounded by
# 10 s; the body to OUT. False unless the status is 200.
http_get() {
	local ns=$1 host=$2 port=$3 path=$4 out=$5
	in_ns "$ns" timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 1
		printf "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n" "$2" "$0" >&3
		cat <&3' "$host" "$port" "$path" >"$out.raw" 2>"$out.err" || return 1
	head -n 1 "$out.raw" | grep -q ' 200 ' || return 1
	sed '1,/^\r$/d' "$out.raw" >"$out"
}
# prom_query PROMQL OUT: the instant query through Prometheus's HTTP API (JSON to OUT).
prom_query() {
	local q
	q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1")
	http_get "${M_NS[1]}" "${M_CTL[1]}" "$PROM_PORT" "/api/v1/query?query=$q" "$2"
}
# series_count JSON: how many series an API answer holds (status success), else nothing.
series_count() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(len(d["data"]["result"]) if d.get("status") == "success" else "")' "$1" 2>/dev/null
}
# h1_and_h2_scraped: dthrottle_packets_total{verdict="passed"} has a series > 0 for each agent.
both_scraped() {
	prom_query 'dthrottle_packets_total{verdict="passed"} > 0' "$WORK/q-packets" &&
		[ "$(series_count "$WORK/q-packets")" = 2 ]
}

# --- two agents with metrics ---------------------------------------------------------------------
metrics_pair_start "${M_CTL[1]}" "${M_CTL[2]}"

# --- contrib's names against a live /metrics ------------------------------------------------------
http_get "${M_NS[1]}" "${M_CTL[1]}" "$PORT" /metrics "$WORK/metrics" ||
	die "cannot scrape h1 at ${M_CTL[1]}:$PORT: $(cat "$WORK/metrics.err")"
used=$(python3 "$DT_ROOT/tests/packaging/contrib_metrics.py" names | wc -l)
check_ge prometheus/contrib-names-found "dthrottle_* names found in contrib/ (dashboard and alerts)" "$used" 10
missing=$(python3 "$DT_ROOT/tests/packaging/contrib_metrics.py" missing "$WORK/metrics")
check prometheus/contrib-names-served "names contrib/ uses that a live agent (h1, in a cluster) does not serve: $missing" \
	[ -z "$missing" ]

# --- a real Prometheus ----------------------------------------------------------------------------
mkdir -p "$WORK/prom-data"
cp "$DT_ROOT/contrib/prometheus/dthrottle.rules.yml" "$WORK/"
cat >"$WORK/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $WORK/dthrottle.rules.yml
scrape_configs:
  - job_name: dthrottle
    static_configs:
      - targets: ["${M_CTL[1]}:$PORT", "${M_CTL[2]}:$PORT"]
CONF
nsenter --net="/run/netns/${M_NS[1]}" -- timeout 120 prometheus --config.file="$WORK/prometheus.yml" \
	--storage.tsdb.path="$WORK/prom-data" --storage.tsdb.retention.time=1h \
	--web.listen-address="${M_CTL[1]}:$PROM_PORT" >"$WORK/prometheus.log" 2>&1 &
LAB_PIDS[prometheus]=$!
wait_for_line "$WORK/prometheus.log" 'Server is ready to receive web requests' "${LAB_PIDS[prometheus]}" 30 || {
	tail -20 "$WORK/prometheus.log"
	die "Prometheus did not start within 30 s (log above)"
}
pass prometheus/started

spray_start a 400 2 "$SOURCES"
spray_wait a || die "the traffic could not be sent"
if wait_until 20 both_scraped; then
	pass prometheus/packets-total-found
else
	fail prometheus/packets-total-found "Prometheus's API has no dthrottle_packets_total{verdict=\"passed\"} > 0 for both agents within 20 s: $(cat "$WORK/q-packets" 2>/dev/null)"
fi
prom_query 'up{job="dthrottle"} == 1' "$WORK/q-up"
check_eq prometheus/targets-up "agents up{job=\"dthrottle\"} == 1 in Prometheus ($(cat "$WORK/q-up" 2>/dev/null))" \
	"$(series_count "$WORK/q-up")" 2
prom_query 'dthrottle_peer_up == 1' "$WORK/q-peers"
check_eq prometheus/peers-up "peers up (h1 hears h2, h2 hears h1) as Prometheus sees them" \
	"$(series_count "$WORK/q-peers")" 2
if http_get "${M_NS[1]}" "${M_CTL[1]}" "$PROM_PORT" /api/v1/rules "$WORK/rules" &&
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
rules = [r for g in d["data"]["groups"] if g["name"] == "dthrottle" for r in g["rules"]]
bad = [r["name"] for r in rules if r.get("health") not in ("ok", "unknown")]
sys.exit(0 if len(rules) >= 5 and not bad else 1)' "$WORK/rules"; then
	pass prometheus/alert-rules-loaded
else
	fail prometheus/alert-rules-loaded "the dthrottle alert group is not loaded and healthy: $(head -c 600 "$WORK/rules" 2>/dev/null)"
fi
prom_query 'ALERTS{alertname=~"Dthrottle.*", alertstate="firing"}' "$WORK/q-alerts"
check_eq prometheus/no-alert-firing "dthrottle alerts firing on a healthy lab ($(cat "$WORK/q-alerts" 2>/dev/null))" \
	"$(series_count "$WORK/q-alerts")" 0

lab_finish
