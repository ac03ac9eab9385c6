#!/usr/bin/env bash
# demo.sh - dthrottle on real packets, in a throwaway lab (`make demo`, as root).
#
# Builds nothing (make does that first). A client namespace, three host namespaces
# (one veth link each from the client: the "load balancer") and a control bridge for
# the agents (tests/netns/lib.sh, mlab_up). Four spoofed sources, from polite to 20x
# over the limit, are sprayed evenly over the three hosts for 10 s, twice: first with
# three agents that do not talk to each other, then with the same agents in a full
# mesh. Prints per source what was offered, the budget, what got through in each run
# and the ratio to the budget. Removes everything it created. Exit status 1 if the
# cluster run let any source through more than 10% off its budget (or dropped
# packets of a polite source).
#
# Then a third, shorter run shows adaptive limits: the same mesh with a rules file whose
# one rule ("api", the demo's IPv4 sources, the same rate and burst) is adaptive, and a
# query socket on h1. The flooding source alone is sprayed for ADAPT_SECS; from BUSY_AT s,
# h1's "service" says it is busy (`BUSY api` on the query socket every 200 ms for
# BUSY_FOR s). Prints a per-second table (what the cluster admitted, the rule's limit in
# force and its factor) and a verdict line. Exit status 1 also if the cluster's admitted
# rate did not fall below 70% of the rate within 2 s of the first busy signal, or was not
# back to 80% of it within 8 s of the last one.
#
# It also charts, for the flooding source, what the client offered and what the hosts
# let through per second, host by host and in total, alone vs as a cluster (and, in a
# third panel, under the busy signals): a sampler reads every host's counters each TICK
# during every run; the rates go to build/demo.dat (gnuplot datablocks) and
# scripts/plot.gnuplot draws build/demo.png (`make plot` redraws it). No chart (gnuplot
# missing or failing) is reported but does not fail the demo.
set -uo pipefail
source "$(dirname "$0")/../tests/netns/lib.sh"
TEST_NAME=demo

RATE=100
BURST=50
SECS=10
HOSTS=3
# source:packets per second the client sends in total (over all hosts)
OFFERS=(198.18.1.1:50 198.18.1.2:300 198.18.1.3:2000 2001:2:0:11:::1000)
FLOOD=198.18.1.3 # shown host by host, and charted
TICK=0.25        # the chart's sampling period (s)
# Run 3 (adaptive limits): FLOOD alone, ADAPT_SECS long; busy signals for rule RULE
# from BUSY_AT s after the spray started, one every BUSY_GAP s for BUSY_FOR s.
ADAPT_SECS=14
RULE=api
BUSY_AT=3
BUSY_FOR=3
BUSY_GAP=0.2
PYTHON=${PYTHON:-python3}
for offer in "${OFFERS[@]}"; do [ "${offer%:*}" = "$FLOOD" ] && FLOOD_PPS=${offer##*:}; done
CHART_DATA=$DT_ROOT/build/demo.dat
CHART=$DT_ROOT/build/demo.png
declare -A SPRAY_T0=() # run -> when its spray started (s)

lab_init dtdemo
cat <<EOF
dthrottle demo: a load balancer sprays each client over $HOSTS hosts, and every host runs
dthrottle: a source address gets a bucket of $BURST packets that refills at $RATE per second;
its packets beyond that are dropped by XDP before the kernel spends any work on them.
So in $SECS s a source should get at most $BURST + $RATE x $SECS = $((BURST + RATE * SECS)) packets through: its budget.

But each host sees only a third of a client's packets. On its own, each host grants the
client a full budget, and the client gets $HOSTS budgets. In a cluster, every host tells
the others every 200 ms how many packets it let through from each source, and the
others take that many tokens from their own bucket for that source (it may go below
zero): the client gets one budget in total, whichever host it lands on.

Two runs of $SECS s with the same traffic: agents alone, then agents in a full mesh;
then a run of $ADAPT_SECS s in which a service behind the hosts says it is busy.
Lab: namespaces $LAB-*, 198.18.0.0/15 and 2001:2::/48 only. Everything is removed at the end.
EOF
command -v "$PYTHON" >/dev/null || die "$PYTHON is missing (the busy signals are sent with it): make deps"
mlab_up "$HOSTS"
RULES=$WORK/rules.toml
QSOCK=$WORK/query-h1.sock # h1's query socket (run 3)

# sample NAME SECS [RULE]: every TICK s, until $WORK/stop-NAME exists (and for SECS + 10 s
# at most), appends to $WORK/samples-NAME a line: the time, then FLOOD's passed and
# dropped counters on each host (agent stats, read from the pins); with RULE, then the
# rate in force of packet rule RULE on each host.
sample() {
	local name=$1 secs=$2 rule=${3:-} start max k i json line limits limit delay
	trap - EXIT INT TERM # the lab's cleanup belongs to the demo, not to this subshell
	start=$(now_s)
	max=$(floor "$(calc "($secs + 10) / $TICK")")
	for ((k = 1; k <= max; k++)); do
		[ -e "$WORK/stop-$name" ] && return 0
		line=$(now_s) limits=
		for ((i = 1; i <= HOSTS; i++)); do
			# A read that fails loses this sample only: the next rate spans the gap.
			json=$("$AGENT" stats --pin-dir "${M_PIN[i]}" --json --top 0 2>/dev/null) || { line=; break; }
			line+=" $(flood_num "$json" passed) $(flood_num "$json" dropped)"
			[ -z "$rule" ] && continue
			limit=$(rule_rate "$json" "$rule")
			[ -n "$limit" ] || { line=; break; } # not in force (yet): no sample
			limits+=" $limit"
		done
		[ -n "$line" ] && echo "$line$limits" >>"$WORK/samples-$name"
		delay=$(calc "$start + $k * $TICK - $(now_s)") # keep to the schedule, not TICK + work
		num_ge "$delay" 0 && sleep "$delay"
	done
}

# flood_num JSON KEY: KEY of FLOOD in agent stats JSON; 0 for a source not seen yet.
flood_num() {
	local v
	v=$(source_num "$1" "$FLOOD" "$2")
	echo "${v:-0}"
}

# rule_rate JSON RULE: the rate in force (in the kernel) of packet rule RULE, from the
# "rules" list of agent stats JSON (its objects alone start with "id").
rule_rate() { json_num "$(grep -o "{\"id\":[0-9]*,\"name\":\"$2\"[^}]*}" <<<"$1")" rate; }

# sampler_start NAME SECS [RULE]: starts sample in the background and waits for its
# first sample (all zeros, before the first packet: the chart's origin).
sampler_start() {
	sample "$@" &
	LAB_PIDS[sampler-$1]=$!
	wait_for_line "$WORK/samples-$1" . "${LAB_PIDS[sampler-$1]}" 5 ||
		die "the chart's sampler could not read the agents' counters"
}

# sampler_stop NAME: ends sampler NAME and waits for it (5 s at most).
sampler_stop() {
	touch "$WORK/stop-$1"
	wait_exit "${LAB_PIDS[sampler-$1]}" 5
}

# mesh_wait NAME: waits until each agent of run NAME has heard every other host.
mesh_wait() {
	local i j
	for ((i = 1; i <= HOSTS; i++)); do
		for ((j = 1; j <= HOSTS; j++)); do
			[ "$j" -eq "$i" ] || mlab_wait_peers "$1$i" 1 10 "h$j" ||
				die "the agent of h$i did not hear h$j within 10 s"
		done
	done
}

# agents_stop NAME: stops the agents of run NAME.
agents_stop() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do
		agent_signal "$1$i" TERM || die "agent $1$i did not exit"
	done
}

# run NAME [CLUSTER OPTIONS]: starts the three agents, sprays every source for SECS
# seconds, reads every host's counters (snapshot NAME) and stops the agents.
run() {
	local name=$1 mesh=${2:-} i offer peers
	for ((i = 1; i <= HOSTS; i++)); do
		peers=()
		[ -n "$mesh" ] && peers=(--peers "$(mlab_peers "$i")")
		mlab_agent_start "$i" "$name$i" --rate "$RATE" --burst "$BURST" --stats-interval 10m "${peers[@]}" ||
			die "the agent of h$i did not start"
	done
	[ -n "$mesh" ] && mesh_wait "$name"
	sampler_start "$name" "$SECS"
	SPRAY_T0[$name]=$(now_s)
	for offer in "${OFFERS[@]}"; do
		spray_start "$name-${offer%:*}" "${offer##*:}" "$SECS" "${offer%:*}"
	done
	for offer in "${OFFERS[@]}"; do
		spray_wait "$name-${offer%:*}" || die "pktgen failed"
	done
	sleep 0.8 # the last reports reach every peer
	sampler_stop "$name" || die "the chart's sampler did not stop"
	mlab_snapshot "$name" || die "agent stats failed"
	agents_stop "$name"
}

echo
echo "Run 1: $HOSTS agents, each on its own..."
run alone
# The cluster runs with keys (docs/security.md), made in the two steps an operator takes:
# `agent keygen hI --endpoint ADDR:7700` per host, then every .pub in every host's
# --curve-peers directory (here one shared directory); mlab_agent_start then passes each
# agent its --curve-key and --curve-peers.
mlab_keys
echo "Run 2: $HOSTS agents in a cluster (full mesh over ZeroMQ, reports every 200 ms, CurveZMQ keys"
echo "       from \`agent keygen\` in $MLAB_KEYS: every report encrypted and signed, only the hosts' keys allowed)..."
run cluster mesh
grep -q 'CurveZMQ on' "$WORK/agent-cluster1.log" || die "the cluster did not run with keys"

echo
printf '%-12s %-23s | %-15s | %s\n' "" "   ---- OFFERED ----" " ---- ALONE ----" " --- CLUSTER ---"
printf '%-12s %7s %6s %8s | %9s %5s | %9s %5s |  %s\n' SOURCE RATE SENT BUDGET ADMITTED x ADMITTED x VERDICT
ratio_of() { calc "$1 / $2"; }
bad=0
for offer in "${OFFERS[@]}"; do
	src=${offer%:*} pps=${offer##*:}
	sent=$(spray_total "cluster-$src" "$src")
	budget=$(calc "$BURST + $RATE * $(spray_elapsed "cluster-$src")")
	budget_alone=$(calc "$BURST + $RATE * $(spray_elapsed "alone-$src")")
	alone=$(snap_sum alone "$src" passed)
	cluster=$(snap_sum cluster "$src" passed)
	if [ "$sent" -le "$(floor "$budget")" ]; then
		if [ "$cluster" -eq "$sent" ]; then verdict="ok: under the limit, nothing dropped"
		else verdict="WRONG: dropped packets of a source under its limit"; fi
	elif num_le "$cluster" "$(calc "1.1 * $budget")" && num_ge "$cluster" "$(calc "0.9 * $budget")"; then
		verdict="ok: one budget over $HOSTS hosts"
	else
		verdict="WRONG: more than 10% off its budget"
	fi
	[[ $verdict == ok* ]] || bad=$((bad + 1))
	[ "$src" = "$FLOOD" ] && FLOOD_BUDGET=$budget
	printf '%-12s %5s/s %6s %8.0f | %9s %5.2f | %9s %5.2f |  %s\n' "$src" "$pps" "$sent" "$budget" \
		"$alone" "$(ratio_of "$alone" "$budget_alone")" "$cluster" "$(ratio_of "$cluster" "$budget")" "$verdict"
done

per_host() { # SNAPSHOT: what FLOOD got through on each host
	local i
	for ((i = 1; i <= HOSTS; i++)); do printf ' h%s %s' "$i" "$(snap_num "$1" "$i" "$FLOOD" passed)"; done
}
cat <<EOF

RATE/SENT: what the client sent from that (spoofed) address, over all $HOSTS hosts. BUDGET: $BURST +
$RATE/s x the seconds it sent. ADMITTED: what the XDP programs let through, summed over the
hosts (agent stats); x: admitted / budget. 198.18.1.2 sends 3 times the rate, but each host
sees only $RATE/s of it, exactly the rate: alone, no host drops any of it. $FLOOD got
through, host by host:
  alone:  $(per_host alone)   (each host granted its own budget)
  cluster:$(per_host cluster)   (one budget, shared)
EOF

# --- run 3: adaptive limits -------------------------------------------------------------

# sleep_to T0 OFFSET: sleeps until OFFSET seconds after T0 (epoch seconds).
sleep_to() { sleep "$(awk -v t0="$1" -v d="$2" -v now="$(now_s)" 'BEGIN { t = t0 + d - now; printf "%.3f", (t > 0 ? t : 0) }')"; }

# busy_lines SOCKET NAME COUNT GAP: a busy service: COUNT lines "BUSY NAME" on one
# connection to SOCKET, GAP s apart, each answer read before the next (20 s at most).
# Prints the epoch times of the first and the last line, and how many were answered OK.
busy_lines() {
	timeout 20 "$PYTHON" - "$@" <<'PY'
import socket, sys, time
path, name, count, gap = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(path)
answers = s.makefile("rb")
first = last = time.time()
oks = 0
for i in range(count):
    time.sleep(max(0.0, first + i * gap - time.time()))  # on schedule, not gap + work
    last = time.time()
    s.sendall(f"BUSY {name}\n".encode())
    oks += answers.readline() == b"OK\n"
print(f"{first:.3f} {last:.3f} {oks}")
PY
}

# run_adaptive NAME: the agents in a full mesh with RULES (rule RULE: adaptive) and a
# query socket on h1; FLOOD alone sprayed for ADAPT_SECS; BUSY_AT s into it, h1's service
# sends busy signals for BUSY_FOR s. Sets BUSY_FIRST, BUSY_LAST (epoch s) and BUSY_OKS.
run_adaptive() {
	local name=$1 i q out
	cat >"$RULES" <<EOF
# scripts/demo.sh, run 3: the demo's IPv4 sources, the same limit as before, adaptive
version = 1

[[rule]]
name = "$RULE"
cidr = "198.18.1.0/24"
rate = $RATE
burst = $BURST
adaptive = true
EOF
	for ((i = 1; i <= HOSTS; i++)); do
		q=()
		[ "$i" -eq 1 ] && q=(--query-socket "$QSOCK")
		mlab_agent_start "$i" "$name$i" --rules "$RULES" --rate "$RATE" --burst "$BURST" --stats-interval 10m \
			--peers "$(mlab_peers "$i")" "${q[@]}" || die "the agent of h$i did not start"
	done
	mesh_wait "$name"
	sampler_start "$name" "$ADAPT_SECS" "$RULE"
	SPRAY_T0[$name]=$(now_s)
	spray_start "$name" "$FLOOD_PPS" "$ADAPT_SECS" "$FLOOD"
	sleep_to "${SPRAY_T0[$name]}" "$BUSY_AT"
	BUSY_COUNT=$(floor "$(calc "$BUSY_FOR / $BUSY_GAP + 1")")
	out=$(busy_lines "$QSOCK" "$RULE" "$BUSY_COUNT" "$BUSY_GAP" 2>&1) ||
		die "could not send busy signals to h1's query socket: $out"
	read -r BUSY_FIRST BUSY_LAST BUSY_OKS <<<"$out"
	spray_wait "$name" || die "pktgen failed"
	sleep 0.8 # the last reports reach every peer
	sampler_stop "$name" || die "the chart's sampler did not stop"
	agents_stop "$name"
}

# Run 3's samples in awk: c[r], FLOOD's passed packets (all hosts) at time t[r]; lim[r],
# the lowest rate in force of the rule over the hosts.
# shellcheck disable=SC2016 # awk's own $ fields
ADAPT_AWK='
{
	t[NR] = $1; c[NR] = 0; lim[NR] = ""
	for (i = 1; i <= n; i++) c[NR] += $(2 * i)
	for (i = 2 * n + 2; i <= NF; i++) if (lim[NR] == "" || $i + 0 < lim[NR]) lim[NR] = $i + 0
}
# cum(x): the passed packets at time x, interpolated between the samples around it.
function cum(x,   r) {
	for (r = 2; r <= NR; r++) if (t[r] >= x) return c[r - 1] + (c[r] - c[r - 1]) * (x - t[r - 1]) / (t[r] - t[r - 1])
	return c[NR]
}
# per_s(a, b): admitted/s between a and b. limit_at(x): the limit of the last sample by x.
function per_s(a, b) { return (cum(b) - cum(a)) / (b - a) }
function limit_at(x,   r, l) { for (r = 1; r <= NR && t[r] <= x; r++) l = lim[r]; return l }
'

# adaptive_awk NAME PROGRAM: runs PROGRAM (an END block) over the samples of run NAME.
adaptive_awk() {
	awk -v n="$HOSTS" -v t0="${SPRAY_T0[$1]}" -v secs="$ADAPT_SECS" -v rate="$RATE" -v first="$BUSY_FIRST" \
		-v last="$BUSY_LAST" "$ADAPT_AWK$2" "$WORK/samples-$1"
}

# adaptive_table NAME: second by second, what the cluster admitted of FLOOD, and the
# rule's limit and factor at the end of that second; the busy signals marked.
adaptive_table() {
	adaptive_awk "$1" '
	END {
		printf "  %7s %11s %8s %7s\n", "SECOND", "ADMITTED/S", "LIMIT/S", "FACTOR"
		for (k = 1; k <= secs; k++) {
			a = t0 + k - 1; b = t0 + k; l = limit_at(b); mark = ""
			if (first > a && first <= b) mark = mark "   <- busy signals start"
			if (last > a && last <= b) mark = mark "   <- the last busy signal"
			printf "  %3d-%-3d %11.0f %8.1f %7.3f%s\n", k - 1, k, per_s(a, b), l, l / rate, mark
		}
	}'
}

# adaptive_figures NAME: "BEFORE AFTER LOW FALL BACK BACK80" of run NAME: admitted/s over
# the 2 s before the first busy signal, over the second after it, at the lowest over a
# second from then until a second after the last signal, and at the lowest over a second
# ending within 2 s of the first signal (FALL); the seconds after the last signal until
# the admitted/s over the second before reached 90% (BACK) and 80% (BACK80) of the rate
# ("never": not within 8 s, or not before the spray ended).
adaptive_figures() {
	adaptive_awk "$1" '
	function lowest(from, to,   a, x, m) {
		m = -1
		for (a = from; a <= to + 0.001; a += 0.05) { x = per_s(a, a + 1); if (m < 0 || x < m) m = x }
		return m
	}
	END {
		back = back80 = "never"
		for (b = last + 1; b <= last + 8.001 && b <= t0 + secs; b += 0.05) {
			x = per_s(b - 1, b)
			if (back80 == "never" && x >= 0.8 * rate) back80 = sprintf("%.1f", b - last)
			if (back == "never" && x >= 0.9 * rate) back = sprintf("%.1f", b - last)
		}
		printf "%.0f %.0f %.0f %.0f %s %s\n", per_s(first - 2, first), per_s(first, first + 1),
			lowest(first, last + 1), lowest(first, first + 1), back, back80
	}'
}

cat <<EOF

Run 3: adaptive limits. A service behind the hosts can say it is overloaded: a busy signal,
e.g. the line "BUSY $RULE" on its agent's query socket. The whole cluster then backs off: the
rule's limit becomes half the rate admitted in the last second (at most once a second), and
grows x3 a second once a second passes without signals, up to the rule's rate.
Rule $RULE: 198.18.1.0/24, $RATE/s, burst $BURST, adaptive = true; $FLOOD alone, $FLOOD_PPS/s for $ADAPT_SECS s;
from ${BUSY_AT} s on, h1's service sends "BUSY $RULE" every ${BUSY_GAP} s for ${BUSY_FOR} s...
EOF
run_adaptive adaptive
echo
adaptive_table adaptive
read -r A_BEFORE A_AFTER A_LOW A_FALL A_BACK A_BACK80 <<<"$(adaptive_figures adaptive)"
cat <<EOF

ADMITTED/S: what the cluster let through of $FLOOD in that second (the $HOSTS hosts' passed
counters, agent stats --json); LIMIT/S: the rule's rate in force at the end of it (the lowest
over the hosts, read from the kernel's rules); FACTOR: LIMIT / $RATE.
EOF
ADAPT_WRONG=
if ! num_cmp "$A_FALL" '<' "$(calc "0.7 * $RATE")"; then
	ADAPT_WRONG="over every second ending within 2 s of the first busy signal, the cluster admitted ${A_FALL:-?}/s or more of $FLOOD: expected below 70% of $RATE/s (h1 answered OK to ${BUSY_OKS:-0} of $BUSY_COUNT BUSY lines)"
	echo "adaptive: the cluster did not back off: ~$A_BEFORE/s before the first busy signal, ~$A_AFTER/s in the second after it."
else
	[ "$A_BACK80" = never ] &&
		ADAPT_WRONG="the cluster did not admit 80% of $RATE/s of $FLOOD again (over a second) within 8 s of the last busy signal"
	if [ "$A_BACK" = never ]; then
		back="was not back to 90% of $RATE/s within $(floor "$(calc "$ADAPT_SECS - $BUSY_AT - $BUSY_FOR")") s of the last one"
	else
		back="was back to ~$RATE/s (90%) $A_BACK s after the last one"
	fi
	echo "adaptive: the cluster went from ~$A_BEFORE/s to ~$A_AFTER/s within a second of the first busy signal"
	echo "          (down to ~$A_LOW/s at the lowest) and $back."
fi

# rates NAME: the samples of run NAME as rates, one line per sample: the time since the
# spray started, then FLOOD's admitted packets/s on each host, in total, and offered
# (admitted + dropped, all hosts), each over the WINDOW s before it (run 3: then the
# rule's limit in force, the lowest over the hosts, at that time). A whole second,
# not one TICK: a host's share in the cluster is a few packets per TICK, and the peers'
# reports arrive every 200 ms, so per-TICK rates beat against them.
WINDOW=1
rates() {
	awk -v t0="${SPRAY_T0[$1]}" -v n="$HOSTS" -v window="$WINDOW" '
	{
		t[NR] = $1
		for (i = 1; i <= n; i++) { p[NR, i] = $(2 * i); d[NR, i] = $(2 * i + 1) }
		for (j = NR - 1; j > 1 && t[NR] - t[j - 1] <= window + 0.01; j--) {}
		if (NR == 1 || t[NR] <= t[j]) next
		dt = t[NR] - t[j]; total = 0; offered = 0
		line = sprintf("%.3f", t[NR] - t0)
		for (i = 1; i <= n; i++) {
			a = (p[NR, i] - p[j, i]) / dt
			total += a; offered += a + (d[NR, i] - d[j, i]) / dt
			line = line sprintf(" %.1f", a)
		}
		line = sprintf("%s %.1f %.1f", line, total, offered)
		# Run 3: then the lowest rate in force of its rule over the hosts.
		for (i = 2 * n + 2; i <= NF; i++) if (i == 2 * n + 2 || $i + 0 < m) m = $i + 0
		print line (NF > 2 * n + 1 ? sprintf(" %.3f", m) : "")
	}' "$WORK/samples-$1"
}

# chart: writes CHART_DATA (the parameters and one datablock per run) and draws CHART.
chart() {
	local name
	command -v gnuplot >/dev/null || { echo "chart: none (gnuplot is missing: make deps)"; return; }
	{
		echo "# dthrottle demo ($(date -u +%Y-%m-%dT%H:%MZ)), written by scripts/demo.sh; draw with: make plot"
		printf 'source = "%s"; offer = %s; rate = %s; burst = %s; hosts = %s; secs = %s\n' \
			"$FLOOD" "$FLOOD_PPS" "$RATE" "$BURST" "$HOSTS" "$SECS"
		printf 'budget = %.0f; admitted_alone = %s; admitted_cluster = %s\n' \
			"$FLOOD_BUDGET" "$(snap_sum alone "$FLOOD" passed)" "$(snap_sum cluster "$FLOOD" passed)"
		for name in alone cluster; do
			echo "\$$name << EOD"
			echo "# t_s ${HOSTS} hosts' admitted/s, total admitted/s, offered/s"
			rates "$name"
			echo EOD
		done
		# Run 3: when the busy signals started and stopped, in seconds since its spray started.
		printf 'rule = "%s"; adaptive_secs = %s; busy_from = %.2f; busy_to = %.2f; busy_gap = %s\n' "$RULE" \
			"$ADAPT_SECS" "$(calc "$BUSY_FIRST - ${SPRAY_T0[adaptive]}")" "$(calc "$BUSY_LAST - ${SPRAY_T0[adaptive]}")" "$BUSY_GAP"
		echo "\$adaptive << EOD"
		echo "# t_s ${HOSTS} hosts' admitted/s, total admitted/s, offered/s, limit/s"
		rates adaptive
		echo EOD
	} >"$CHART_DATA"
	if gnuplot -e "data='$CHART_DATA'; out='$CHART'" "$DT_ROOT/scripts/plot.gnuplot"; then
		echo "chart: $CHART (what $FLOOD offered and got through per second: alone, cluster, busy service)"
	else
		echo "chart: none (gnuplot failed on $CHART_DATA)"
	fi
}
echo
chart

echo
[ "$bad" -gt 0 ] && echo "demo: the cluster misbehaved for $bad source(s)"
[ -n "$ADAPT_WRONG" ] && echo "demo: adaptive limits: $ADAPT_WRONG"
if [ "$bad" -gt 0 ] || [ -n "$ADAPT_WRONG" ]; then
	FAILURES=$((bad + (${#ADAPT_WRONG} > 0)))
	exit 1
fi
echo "demo: ok - alone, the hosts let the flooding sources through about $HOSTS times their budget;"
echo "      as a cluster, they held each of them to one budget, and the polite source lost nothing;"
echo "      when a service said it was busy, the whole cluster backed off, then came back."
exit 0
