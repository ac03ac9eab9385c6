#!/usr/bin/env bash
# test: runs alone (timing-heavy: tests/run_all.sh starts nothing beside it)
# test_adaptive.sh - adaptive limits on a 3-host cluster (the feature's acceptance test): a real
# service that signals busy while its queue is full makes the admitted rate fall within a
# second on every host, and the rate comes back once the service is healthy again.
#
# lib.sh's multi-host lab: three hosts, agents in a full mesh (reports every 200 ms), each
# with a query socket and the rules file
#     [[rule]] name = "svc", cidr = 198.18.7.0/24, rate 1000/s, burst 200,
#              adaptive = { listen_port = 8080 }     (decrease 0.5, recovery x3/s, floor 0.01)
# Traffic for the whole run, from the client namespace:
#   - 198.18.7.1 sprayed over the three hosts at 4.5x the rate (the load balancer): one
#     budget for the cluster, split between the hosts in whatever way their reports settle
#     on (a host can go on admitting none of it), so it is checked as a cluster total;
#   - 198.18.7.1I sent to host I only, at 1.5x the rate: host I's own admitted rate is then
#     exactly its limit, so "every host's admitted rate" is measured on these.
# The service, busy_service.py, listens on 8080 (backlog 4) in h1's namespace, with its own
# clients (50 connections/s to h1's address, over lo: never through XDP). A sampler reads
# every host's `agent stats --json` every 100 ms: the sources' admitted packets, the rule's
# limit in the kernel (rules[].rate) and the factor the agent reports ("adaptive").
# Rates are measured from the first busy signal (the agent's log line): "before" over the
# 2 s before it; "falls within D s": the rate over some window (0.2 s for a host's own
# source, 0.5 s for the sprayed total) starting after the signal and ending within D s.
#   1. The kernel signal: the service stops accepting for 3 s (its clients fill the accept
#      queue: the agent on h1 sees 5 queued for a backlog of 4), then accepts again.
#        - before: every host's own source and the sprayed total admit `rate` (+-15%; at
#          least 85% of what the sender offered, if that was less: pktgen falls behind on a
#          loaded machine, and the agents' stats count what arrived, passed plus dropped);
#        - every host's own source admits below 60% of before within 1 s of h1's first
#          busy signal (the sprayed total within 1.5 s); while busy every host's limit
#          keeps falling, and over the last second of busy all admit below 40% of before;
#        - h1 logs the busy signal (TCP port 8080's listen queue), h2 and h3 log that peer
#          h1 is backing off; `agent stats` (text and JSON) shows the rule's factor < 1 on
#          every host;
#        - 5-6 s after the service is healthy again (1 s hold, then x3 per second from
#          the low point), all admit at least 80% of before; the factor reads 1 everywhere.
#   2. The application signal: `BUSY svc` on h2's query socket every 200 ms for 2 s (each
#      answered OK; `BUSY nonexistent` answers NO): the same fall, measured from h2's first
#      signal, and recovery 5-6 s after the last line; h1 and h3 log peer h2 backing off.
# The rates table (every 0.5 s) is printed; DT_ADAPTIVE_SAMPLES=FILE keeps the raw samples.
# About 30 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=adaptive
SERVICE=$DT_ROOT/tests/netns/busy_service.py

RATE=1000
BURST=200
PERIOD=200ms
HOSTS=3
SPRAY=198.18.7.1 # OWN[i]: 198.18.7.1i
PORT=8080
BACKLOG=4
SAMPLE_S=0.1
BUSY_S=3    # phase 1: how long the service stays busy
RECOVER_S=6 # recovery is checked over [RECOVER_S - 1, RECOVER_S] s after the last signal
Q_COUNT=10  # phase 2: BUSY lines, one every Q_GAP s
Q_GAP=0.2

lab_init dtadapt
mlab_up "$HOSTS"
RULES=$WORK/rules.toml
BUSY_FILE=$WORK/service.busy
# One line per sample: t, own1..3 passed (columns 2-4), spray1..3 passed (5-7),
# kernel limit1..3 (8-10), factor1..3 (11-13), own1..3 offered (passed + dropped, 14-16),
# spray1..3 offered (17-19).
SAMPLES=$WORK/samples.txt
OWN=()
for ((i = 1; i <= HOSTS; i++)); do OWN[i]=198.18.7.1$i; done
OWN_COLS=(- 2 3 4)
SPRAY_COLS=5,6,7
OFFERED_COLS=(- 14 15 16)
SPRAY_OFFERED_COLS=17,18,19

cat >"$RULES" <<EOF
# test_adaptive.sh
version = 1

[[rule]]
name = "svc"
cidr = "198.18.7.0/24"
rate = $RATE
burst = $BURST
adaptive = { listen_port = $PORT }
EOF

# --- helpers ---------------------------------------------------------------------------------

# t_add T D: the time T (epoch seconds) plus D seconds, to the millisecond (calc's %g would
# round an epoch time to 10 s).
t_add() { awk -v t="$1" -v d="$2" 'BEGIN { printf "%.3f", t + d }'; }
# sleep_to T0 OFFSET: sleeps until OFFSET seconds after T0.
# since T0 T: T - T0 in seconds, 2 decimals (nothing if T is empty).
since() { [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# since_or T0 T: the same, or "never" if T is empty (a log line that was not found).
since_or() { [ -n "$2" ] && since "$1" "$2" || echo never; }

# traffic_start SECONDS: per host link one pktgen, 198.18.7.1 and the host's own source
# at 1.5 x RATE/s each, for SECONDS at most (count-bounded too). Named like spray_start's
# senders, so spray_stop ends them.
traffic_start() {
	local i rate=$((3 * RATE)) secs=$1
	for ((i = 1; i <= HOSTS; i++)); do
		nsenter --net="/run/netns/$C_NS" -- timeout $((secs + 10)) "$PKTGEN" send --iface "${M_CIF[i]}" \
			--dst-ip "${M_IP[i]},${M_IP6[i]}" --dst-mac "${M_MAC[i]}" --dport 9999 --json \
			--sources "$SPRAY,${OWN[i]}" --rate "$rate" --count $((rate * secs)) --duration "${secs}s" \
			>"$WORK/spray-run-$i.json" 2>"$WORK/spray-run-$i.err" &
		LAB_PIDS[spray-run-$i]=$!
	done
}

# adaptive_num JSON KEY: KEY of the adaptive rule svc (the running agent's status).
adaptive_num() { json_num "$(json_get "$1" 'first(.adaptive[]? | select(.kind == "rule" and .name == "svc"))')" "$2"; }

# sampler MAX: every SAMPLE_S (at most MAX times) reads the three hosts' `agent stats
# --json` at once and appends a line to $SAMPLES (the time: the middle of the reads).
# In Python (exec: the background job is the sampler itself, so stop_pid ends it): one
# process per read and no per-value greps keep the samples 0.1 s apart.
sampler() {
	exec "$PYTHON" - "$1" "$SAMPLE_S" "$SAMPLES" "$AGENT" "$SPRAY" "${M_PIN[@]:1}" "${OWN[@]:1}" <<'PY'
import json, subprocess, sys, time
count, gap, out, agent, spray = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rest = sys.argv[6:]
pins, own = rest[: len(rest) // 2], rest[len(rest) // 2 :]

def passed(js, src, keys=("passed",)):
    return next((sum(s[k] for k in keys) for s in js.get("sources", []) if s["source"] == src), 0)

def rule(js, key, section="rules"):
    return next((r[key] for r in js.get(section) or [] if r.get("name") == "svc"), "-")

with open(out, "a") as f:
    for _ in range(count):
        t0 = time.time()
        try:
            procs = [subprocess.Popen([agent, "stats", "--pin-dir", p, "--json", "--top", "0"], stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL) for p in pins]
            outs = [p.communicate(timeout=5)[0] for p in procs]
        except (OSError, subprocess.TimeoutExpired) as e:  # e.g. build/agent being rebuilt: skip
            print(f"sampler: {e}", file=sys.stderr)
            time.sleep(gap)
            continue
        t1 = time.time()
        try:
            js = [json.loads(o) for o in outs]
        except ValueError as e:  # a read that failed: no sample rather than a wrong one
            print(f"sampler: {e}", file=sys.stderr)
            continue
        cols = [passed(j, o) for j, o in zip(js, own)] + [passed(j, spray) for j in js]
        cols += [rule(j, "rate") for j in js] + [rule(j, "factor", "adaptive") for j in js]
        offered = ("passed", "dropped")
        cols += [passed(j, o, offered) for j, o in zip(js, own)] + [passed(j, spray, offered) for j in js]
        f.write(f"{(t0 + t1) / 2:.3f} " + " ".join(str(c) for c in cols) + "\n")
        f.flush()
        time.sleep(max(0.0, gap - (time.time() - t0)))
PY
}

# The sample file in awk: column lists like "5,6,7" are summed.
# shellcheck disable=SC2016 # awk's own $ fields
AWK_LIB='
function val(r, cols,   k, n, c, s) { n = split(cols, c, ","); s = 0; for (k = 1; k <= n; k++) s += v[r, c[k]]; return s }
{ t[NR] = $1; for (c = 2; c <= NF; c++) v[NR, c] = $c }'

# win_rate COLS A B: admitted/s of COLS between the first sample at or after A and the
# last at or before B (nothing if fewer than two samples there).
win_rate() {
	awk -v cols="$1" -v a="$2" -v b="$3" "$AWK_LIB"'
		END {
			for (r = 1; r <= NR; r++) if (t[r] >= a && t[r] <= b) { if (!i) i = r; j = r }
			if (i && j > i) printf "%.1f", (val(j, cols) - val(i, cols)) / (t[j] - t[i])
		}' "$SAMPLES"
}

# time_to COLS FROM SPAN OP LEVEL: seconds after FROM until the rate of COLS over a window
# of at least SPAN s (starting at or after FROM) is first OP (<= or >=) LEVEL; nothing if never.
time_to() {
	awk -v cols="$1" -v from="$2" -v span="$3" -v op="$4" -v lvl="$5" "$AWK_LIB"'
		END {
			j = 0
			for (r = 1; r <= NR; r++) {
				if (t[r] < from) continue
				if (!j) j = r
				while (j + 1 < r && t[r] - t[j + 1] >= span) j++
				if (t[r] - t[j] < span) continue
				x = (val(r, cols) - val(j, cols)) / (t[r] - t[j])
				if ((op == "<=" && x <= lvl) || (op == ">=" && x >= lvl)) { printf "%.2f", t[r] - from; exit }
			}
		}' "$SAMPLES"
}

# limit_at HOST T: host HOST's kernel limit of rule svc in the last sample at or before T.
limit_at() { awk -v c=$((7 + $1)) -v t="$2" '$1 <= t { x = $c } END { print x }' "$SAMPLES"; }
# min_limit HOST A B: its lowest kernel limit sampled between A and B.
min_limit() {
	awk -v c=$((7 + $1)) -v a="$2" -v b="$3" '$1 >= a && $1 <= b && $c != "-" && (m == "" || $c + 0 < m) { m = $c + 0 } END { print m }' \
		"$SAMPLES"
}

# log_time NAME PATTERN AFTER: epoch seconds of agent NAME's first log line matching
# PATTERN at or after AFTER (epoch seconds; the log's stamps are UTC, cut to the ms).
log_time() {
	local line stamp t
	while read -r line; do
		stamp=${line%% *}
		t=$(date -d "$stamp" +%s.%N) || continue
		num_ge "$t" "$(t_add "$3" -0.001)" && { echo "$t"; return; }
	done < <(grep -E "$2" "$WORK/agent-$1.log")
}

# logged NAME PATTERN: agent NAME logged PATTERN (at least once).
logged() { grep -qE "$2" "$WORK/agent-$1.log"; }
# log_wait NAME PATTERN: waits up to 2 s for it.
log_wait() { wait_for_line "$WORK/agent-$1.log" "$2" "${LAB_PIDS[agent-$1]}" 2; }

# text_factor I / json_factor I: the factor of rule svc in host I's `agent stats` / --json.
text_factor() { "$AGENT" stats --pin-dir "${M_PIN[$1]}" | awk '$1 == "rule" && $2 == "svc" { print $4; exit }'; }
json_factor() { adaptive_num "$("$AGENT" stats --pin-dir "${M_PIN[$1]}" --json)" factor; }

# factors_are OP VALUE: every host's factor, text and JSON, OP VALUE (for wait_until).
factors_are() {
	local i
	for ((i = 1; i <= HOSTS; i++)); do
		num_cmp "$(text_factor "$i")" "$1" "$2" && num_cmp "$(json_factor "$i")" "$1" "$2" || return 1
	done
}
# until_t T: the seconds from now until the time T (epoch seconds), 0 if past.
until_t() { awk -v t="$1" -v now="$(now_s)" 'BEGIN { d = t - now; printf "%.3f", (d > 0 ? d : 0) }'; }

# check_factors NAME OP VALUE WHEN: every host's factor, text and JSON, OP VALUE.
check_factors() {
	local name=$1 op=$2 want=$3 when=$4 i f
	for ((i = 1; i <= HOSTS; i++)); do
		f=$(text_factor "$i")
		check "$name/h$i/stats-text" "h$i's 'agent stats' shows factor ${f:-nothing} for rule svc $when, expected $op $want" \
			num_cmp "$f" "$op" "$want"
		f=$(json_factor "$i")
		check "$name/h$i/stats-json" "h$i's 'agent stats --json' adaptive factor is ${f:-nothing} $when, expected $op $want" \
			num_cmp "$f" "$op" "$want"
	done
}

# check_peers_back_off PHASE HOST I...: each host I logs (within 2 s) that HOST, the one
# getting the busy signals, is backing off.
check_peers_back_off() {
	local phase=$1 from=$2 i
	shift 2
	for i in "$@"; do
		check "adaptive/$phase/h$i/peer-backs-off" "h$i did not log 'peer $from is backing off' within 2 s" \
			log_wait "a$i" "adaptive rule 'svc': peer $from is backing off"
	done
}

# check_recovered PHASE T WHAT: RECOVER_S + 1 s after T (epoch s, when WHAT happened),
# every factor is back at 1 (the recovery is measured over [RECOVER_S - 1, RECOVER_S] s after).
check_recovered() {
	sleep_to "$2" $((RECOVER_S + 1))
	check_factors "adaptive/$1/recovered" '==' 1 "$((RECOVER_S + 1)) s after $3"
}

# busy_lines SOCKET NAME COUNT GAP: COUNT lines "BUSY NAME" on one connection to SOCKET,
# GAP seconds apart, each answer read before the next; prints the answers, one a line.
busy_lines() {
	"$PYTHON" - "$@" <<'PY'
import socket, sys, time
path, name, count, gap = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(path)
f = s.makefile("rb")
for i in range(count):
    if i:
        time.sleep(gap)
    s.sendall(f"BUSY {name}\n".encode())
    print(f.readline().decode().strip() or "(no answer)", flush=True)
PY
}

# The rates checked: every host's own source (over 0.2 s windows: its bucket admits
# evenly), and the sprayed source over all hosts (0.5 s windows: it is admitted in
# report-sized lumps, and falls only once every host has applied the factor and the
# hosts' buckets have settled their debts). LABEL:COLUMNS:OFFERED COLUMNS:WINDOW:FALL DEADLINE.
SERIES=("h1 own:${OWN_COLS[1]}:${OFFERED_COLS[1]}:0.2:1.0" "h2 own:${OWN_COLS[2]}:${OFFERED_COLS[2]}:0.2:1.0"
	"h3 own:${OWN_COLS[3]}:${OFFERED_COLS[3]}:0.2:1.0" "sprayed total:$SPRAY_COLS:$SPRAY_OFFERED_COLS:0.5:1.5")
# expected RATE OFFERED: what a source can be admitted at: the rate, or less when the sender
# (pktgen, on a loaded machine) offered less than that in the window.
expected() { awk -v r="$1" -v o="$2" 'BEGIN { if (o != "" && o + 0 < r + 0) r = o; printf "%.1f", r }'; }

# check_phase NAME SIGNAL LAST [BUSY_END]: for every series, its rate over the 2 s before
# the first busy signal SIGNAL (about RATE), its fall below 60% of that within its
# deadline of SIGNAL, its recovery after the last signal LAST; with BUSY_END (phase 1)
# also the rate over the last second of busy and, per host, the limit falling further.
check_phase() {
	local name=$1 first=$2 last=$3 end=${4:-} s label cols ocols span deadline before r r2 tt i early late
	local want offered
	printf '  %-14s %9s %17s %12s %17s\n' "" "BEFORE/s" "<60% AFTER (s)" "BUSY END/s" ">=80% AFTER (s)"
	for s in "${SERIES[@]}"; do
		IFS=: read -r label cols ocols span deadline <<<"$s"
		before=$(win_rate "$cols" "$(t_add "$first" -2)" "$first")
		offered=$(win_rate "$ocols" "$(t_add "$first" -2)" "$first")
		want=$(expected "$RATE" "$offered")
		check_ge "$name/${label// /-}/before-min" \
			"$label: admitted/s over the 2 s before (the rate, or the ${offered:-?}/s offered if less, - 15%)" \
			"$before" "$(calc "0.85 * $want")"
		check_le "$name/${label// /-}/before-max" "$label: admitted/s over the 2 s before (rate + 15%)" \
			"$before" "$(calc "1.15 * $RATE")"
		[ -n "$before" ] || before=$RATE
		tt=$(time_to "$cols" "$first" "$span" '<=' "$(calc "0.6 * $before")")
		check_le "$name/${label// /-}/falls" \
			"$label: seconds after the first busy signal until the admitted rate (over ${span}s) fell below 60% of its $before/s before" \
			"$tt" "$deadline"
		r=
		if [ -n "$end" ]; then
			r=$(win_rate "$cols" "$(t_add "$end" -1)" "$end")
			check_le "$name/${label// /-}/low-while-busy" \
				"$label: admitted/s over the last second of busy (40% of its $before/s before)" "$r" "$(calc "0.4 * $before")"
		fi
		r2=$(win_rate "$cols" "$(t_add "$last" $((RECOVER_S - 1)))" "$(t_add "$last" "$RECOVER_S")")
		offered=$(win_rate "$ocols" "$(t_add "$last" $((RECOVER_S - 1)))" "$(t_add "$last" "$RECOVER_S")")
		want=$(expected "$before" "$offered")
		check_ge "$name/${label// /-}/recovers" \
			"$label: admitted/s $((RECOVER_S - 1))-$RECOVER_S s after the last busy signal (80% of its $before/s before, or of the ${offered:-?}/s offered if less)" \
			"$r2" "$(calc "0.8 * $want")"
		printf '  %-14s %9s %17s %12s %17s\n' "$label" "$before" "${tt:-never} (<=$deadline)" "${r:--}" \
			"$(time_to "$cols" "$last" "$span" '>=' "$(calc "0.8 * $before")")"
	done
	[ -n "$end" ] || return 0
	for ((i = 1; i <= HOSTS; i++)); do
		early=$(limit_at "$i" "$(t_add "$first" 1.0)")
		late=$(min_limit "$i" "$(t_add "$end" -1)" "$end")
		check "$name/h$i/limit-keeps-falling" \
			"h$i's kernel limit of rule svc was ${early:-nothing}/s 1 s after the first busy signal and ${late:-nothing}/s at the end of busy: expected lower" \
			num_cmp "$late" '<' "$early"
	done
}

# rates_table FROM TO: every 0.5 s, the admitted/s over the last 0.5 s of each host's own
# source and of the sprayed source (all hosts), each host's kernel limit and reported
# factor (the status file is rewritten every second); T in seconds after T0; events marked.
rates_table() {
	awk -v from="$1" -v to="$2" -v t0="$T0" -v ev="$EVENTS" "$AWK_LIB"'
		BEGIN {
			n = split(ev, e, ";")
			for (k = 1; k <= n; k++) if (split(e[k], kv, "=") == 2) { evn[k] = kv[1]; evt[k] = kv[2] }
			printf "  %5s  %6s %6s %6s %8s  %5s %5s %5s  %6s %6s %6s\n", "T", "h1", "h2", "h3", "spray", "lim1", "lim2", "lim3",
				"f1", "f2", "f3"
		}
		END {
			j = 1; next_t = from + 0.5; prev = from
			for (r = 2; r <= NR; r++) {
				if (t[r] < next_t || t[r] > to) continue
				while (t[r] - t[j + 1] >= 0.5) j++
				if (t[r] <= t[j]) continue
				mark = ""
				for (k = 1; k <= n; k++) if (evt[k] != "" && evt[k] > prev && evt[k] <= t[r]) mark = mark "  <- " evn[k]
				d = t[r] - t[j]
				printf "  %5.1f  %6.0f %6.0f %6.0f %8.0f  %5.0f %5.0f %5.0f  %6.3f %6.3f %6.3f%s\n", t[r] - t0,
					(v[r, 2] - v[j, 2]) / d, (v[r, 3] - v[j, 3]) / d, (v[r, 4] - v[j, 4]) / d,
					(val(r, "5,6,7") - val(j, "5,6,7")) / d, v[r, 8], v[r, 9], v[r, 10], v[r, 11], v[r, 12], v[r, 13], mark
				next_t = t[r] + 0.5; prev = t[r]
			}
		}' "$SAMPLES"
}
EVENTS=
event() { EVENTS+="$1=$2;"; }

T_START=$(now_s)

# --- the cluster, the service, the traffic ---------------------------------------------------
for ((i = 1; i <= HOSTS; i++)); do
	mlab_agent_start "$i" "a$i" --rules "$RULES" --period "$PERIOD" --peers "$(mlab_peers "$i")" \
		--query-socket "$WORK/q$i.sock" --stats-interval 10m || die "the agent of h$i did not start"
done
for ((i = 1; i <= HOSTS; i++)); do
	# shellcheck disable=SC2046
	mlab_wait_peers "a$i" 1 10 $(mlab_others "$i") || die "the agent of h$i did not hear every peer within 10 s"
done

nsenter --net="/run/netns/${M_NS[1]}" -- "$PYTHON" "$SERVICE" serve --port "$PORT" --backlog "$BACKLOG" \
	--busy-file "$BUSY_FILE" --duration 90 >"$WORK/service.out" 2>&1 &
LAB_PIDS[service]=$!
wait_for_line "$WORK/service.out" listening "${LAB_PIDS[service]}" 10 || {
	cat "$WORK/service.out"
	die "the service did not start listening on port $PORT in h1's namespace"
}
nsenter --net="/run/netns/${M_NS[1]}" -- "$PYTHON" "$SERVICE" clients --addr "${M_IP[1]}" --port "$PORT" \
	--rate 50 --max-open 16 --duration 80 >"$WORK/clients.out" 2>&1 &
LAB_PIDS[clients]=$!

echo "== $SPRAY sprayed over $HOSTS hosts at $((9 * RATE / 2))/s, host I's own 198.18.7.1I at $((3 * RATE / 2))/s;" \
	"rule svc $RATE/s burst $BURST, adaptive, TCP port $PORT of h1 watched"
T0=$(now_s)
traffic_start 60 # stopped once both phases are measured
sampler 700 &
LAB_PIDS[sampler]=$!

# --- 1. the kernel signal: the service's accept queue full -----------------------------------
sleep_to "$T0" 4.5 # 4.5 s of traffic: the rates before the busy signal are measured over 2 s
T_BUSY=$(now_s)
touch "$BUSY_FILE"
event "service busy" "$T_BUSY"
echo "== 1. the service on h1 stops accepting for ${BUSY_S}s (its clients fill the accept queue)"
check adaptive/1/h1/busy-signal "h1 did not log the busy signal of TCP port $PORT's listen queue within 2 s" \
	log_wait a1 "adaptive rule 'svc': busy signal \(TCP port $PORT listen queue"
check_peers_back_off 1 h1 2 3
# The status files (rewritten every second) show the factors fallen, before busy ends.
wait_until "$(until_t "$(t_add "$T_BUSY" "$(calc "$BUSY_S - 0.4")")")" factors_are '<' 1
check_factors adaptive/1/busy '<' 1 "while the service is busy"
sleep_to "$T_BUSY" "$BUSY_S" # the service stays busy for BUSY_S seconds
rm -f "$BUSY_FILE"
T_HEALTHY=$(now_s)
event "service healthy" "$T_HEALTHY"
check_recovered 1 "$T_HEALTHY" "the service is healthy again"

# --- 2. the application signal: BUSY on h2's query socket ------------------------------------
echo "== 2. BUSY svc on h2's query socket every ${Q_GAP}s, $Q_COUNT times"
T_Q=$(now_s)
event "BUSY svc on h2" "$T_Q"
answers=$(busy_lines "$WORK/q2.sock" svc "$Q_COUNT" "$Q_GAP")
T_QLAST=$(now_s)
event "last BUSY" "$T_QLAST"
oks=$(grep -c '^OK$' <<<"$answers")
check_eq adaptive/2/busy-answered-ok "answers OK to 'BUSY svc' on h2 ($(tr '\n' ' ' <<<"$answers"))" "$oks" "$Q_COUNT"
got=$(busy_lines "$WORK/q2.sock" nonexistent 1 0)
check adaptive/2/busy-unknown-no "h2 answered '$got' to 'BUSY nonexistent', expected NO" [ "$got" = NO ]
check adaptive/2/h2/busy-signal "h2 did not log the busy signal from its query socket" \
	logged a2 "adaptive rule 'svc': busy signal \(query socket\)"
check_peers_back_off 2 h2 1 3
check_recovered 2 "$T_QLAST" "the last BUSY line"
T_END=$(now_s)

stop_pid "${LAB_PIDS[sampler]}"
spray_stop run || die "pktgen failed"
[ -n "${DT_ADAPTIVE_SAMPLES:-}" ] && cp "$SAMPLES" "$DT_ADAPTIVE_SAMPLES" # the raw samples, on request

# --- the figures -----------------------------------------------------------------------------
echo
echo "== admitted/s over the last 0.5 s: each host's own source (h1-h3) and the sprayed one (all hosts);"
echo "   each host's kernel limit (rules[].rate) and factor ('agent stats'); T: seconds after the traffic started"
rates_table "$T0" "$T_END"

echo
echo "== 1. kernel signal (service busy at T=$(since "$T0" "$T_BUSY"), healthy at T=$(since "$T0" "$T_HEALTHY"))"
T_SIG=$(log_time a1 "busy signal \(TCP port $PORT" "$T_BUSY")
echo "  h1's first busy signal: $(since_or "$T_BUSY" "$T_SIG") s after the service turned busy;" \
	"h2, h3 applied h1's factor $(since_or "$T_SIG" "$(log_time a2 "peer h1 is backing off" "$T_BUSY")") s," \
	"$(since_or "$T_SIG" "$(log_time a3 "peer h1 is backing off" "$T_BUSY")") s after that signal"
check_phase adaptive/1 "${T_SIG:-$T_BUSY}" "$T_HEALTHY" "$T_HEALTHY"
echo "== 2. BUSY on h2's query socket (T=$(since "$T0" "$T_Q") to $(since "$T0" "$T_QLAST"))"
T_SIG=$(log_time a2 "busy signal \(query socket\)" "$T_Q")
echo "  h2's first busy signal: $(since_or "$T_Q" "$T_SIG") s after the first BUSY line was sent;" \
	"h1, h3 applied h2's factor $(since_or "$T_SIG" "$(log_time a1 "peer h2 is backing off" "$T_Q")") s," \
	"$(since_or "$T_SIG" "$(log_time a3 "peer h2 is backing off" "$T_Q")") s after that signal"
check_phase adaptive/2 "${T_SIG:-$T_Q}" "$T_QLAST"

for ((i = 1; i <= HOSTS; i++)); do
	agent_signal "a$i" TERM || die "agent a$i did not exit on SIGTERM"
	check_eq "adaptive/stop/h$i" "exit code of h$i's agent after SIGTERM" "$EXIT_RC" 0
done
stop_pid "${LAB_PIDS[service]}"
stop_pid "${LAB_PIDS[clients]}"
echo "service: $(tr '\n' ' ' <"$WORK/service.out")"
echo "its clients: $(cat "$WORK/clients.out")"
echo
echo "adaptive test: $(calc "$(now_s) - $T_START") s"
lab_finish
