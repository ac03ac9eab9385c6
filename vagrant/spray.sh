#!/usr/bin/env bash
# spray.sh - the Vagrant lab's check (vagrant/README.md): the client VM sends UDP from
# its one lab address to the three edges in turn, like a load balancer spraying one
# client over them, at PPS packets per second in total for SECONDS; then the edges'
# counters (`dthrottle-agent stats --json`, over Vagrant's ssh) must add up to one
# budget: burst + rate x the time it sent, within 10%, not one budget per edge.
#
#   ./spray.sh [PPS [SECONDS]]     on the workstation, in vagrant/, after `vagrant up`
#                                  (default 1000 packets/s for 10 s; at most 20000, 60)
#
# Bounded: the sender stops after PPS x SECONDS packets or SECONDS + 5 s, whichever
# comes first, and only ever sends to the edges' lab addresses (198.18.10.0/24).
# Exit status: 0 the edges held the client to one budget, 1 they did not, 2 the lab is
# not usable (not up, an agent not running, a bad argument).
set -uo pipefail
cd "$(dirname "$0")" || exit 2

PPS=${1:-1000}
SECS=${2:-10}
# Keep in step with the Vagrantfile.
EDGES=(edge1 edge2 edge3)
EDGE_IPS=(198.18.10.11 198.18.10.12 198.18.10.13)
CLIENT=client
CLIENT_IP=198.18.10.20

die() {
	echo "spray: $*" >&2
	exit 2
}

[[ $PPS =~ ^[0-9]+$ ]] && [ "$PPS" -ge 1 ] && [ "$PPS" -le 20000 ] || die "PPS: a whole number from 1 to 20000, not '$PPS'"
[[ $SECS =~ ^[0-9]+$ ]] && [ "$SECS" -ge 1 ] && [ "$SECS" -le 60 ] || die "SECONDS: a whole number from 1 to 60, not '$SECS'"
command -v vagrant >/dev/null || die "vagrant is not installed"

# One ssh configuration for every VM: a plain ssh per command (what `vagrant ssh -c`
# does, without starting Vagrant each time).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dthrottle-spray.XXXXXX") || die "no temporary directory"
trap 'rm -rf -- "$WORK"' EXIT
SSH_CONFIG=$WORK/ssh_config
vagrant ssh-config "${EDGES[@]}" "$CLIENT" >"$SSH_CONFIG" 2>"$WORK/err" ||
	die "cannot reach the VMs (run vagrant up first): $(cat "$WORK/err")"
on() { # VM CMD: runs CMD on VM
	local vm=$1
	shift
	ssh -F "$SSH_CONFIG" -q -o BatchMode=yes "$vm" "$@"
}

calc() { awk "BEGIN { printf \"%.6g\", ($1) }"; }
num_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }

# edge_json I: edge I's `dthrottle-agent stats --json`, its lab interface found by address.
edge_json() {
	on "${EDGES[$1]}" "sudo dthrottle-agent stats --json --top 0 --iface" \
		"\$(ip -o -4 addr show to ${EDGE_IPS[$1]}/32 | awk '{ print \$2; exit }')" | tr -d '\r'
}
# json_num JSON KEY: the first numeric value of KEY. client_num JSON KEY: KEY of the
# client's source entry (0 if the edge has not seen it).
json_num() { grep -o "\"$2\":-\{0,1\}[0-9][0-9.e+-]*" <<<"$1" | head -n 1 | cut -d: -f2; }
client_num() {
	local v
	v=$(json_num "$(grep -o "{\"source\":\"${CLIENT_IP//./\\.}\"[^}]*}" <<<"$1")" "$2")
	echo "${v:-0}"
}

# read_edges PREFIX: every edge's stats into PREFIX_JSON[i].
declare -a BEFORE AFTER
read_edges() {
	local -n into=$1
	local i
	for i in "${!EDGES[@]}"; do
		into[i]=$(edge_json "$i") && [ -n "${into[i]}" ] ||
			die "${EDGES[i]}: cannot read the agent's counters (is dthrottle@eth1 running? vagrant ssh ${EDGES[i]} -c 'sudo journalctl -u dthrottle@eth1')"
	done
}

read_edges BEFORE
RATE=$(json_num "$(grep -o '"policy":{[^}]*}' <<<"${BEFORE[0]}")" rate)
BURST=$(json_num "$(grep -o '"policy":{[^}]*}' <<<"${BEFORE[0]}")" burst)
[ -n "$RATE" ] && [ -n "$BURST" ] && [ "$BURST" -gt 0 ] || die "${EDGES[0]} has no policy"
wait_s=0
for i in "${!EDGES[@]}"; do
	pol=$(grep -o '"policy":{[^}]*}' <<<"${BEFORE[i]}")
	[ "$(json_num "$pol" rate)" = "$RATE" ] && [ "$(json_num "$pol" burst)" = "$BURST" ] ||
		die "${EDGES[i]} has another policy than ${EDGES[0]} (rate $RATE, burst $BURST): vagrant provision"
	up=$(grep -o '"up":true' <<<"${BEFORE[i]}" | wc -l)
	[ "$up" -eq $((${#EDGES[@]} - 1)) ] ||
		echo "spray: warning: ${EDGES[i]} hears $up of $((${#EDGES[@]} - 1)) peers: without a cluster it grants a budget of its own"
	# A bucket that is not full yet (an earlier spray): wait until it is, or the budget
	# below would be wrong.
	tokens=$(grep -q "\"source\":\"$CLIENT_IP\"" <<<"${BEFORE[i]}" && client_num "${BEFORE[i]}" tokens || echo "$BURST")
	wait_s=$(calc "($BURST - $tokens) / $RATE > $wait_s ? ($BURST - $tokens) / $RATE : $wait_s")
done
if ! num_le "$wait_s" 0; then
	num_le "$wait_s" 60 || die "the client's buckets need ${wait_s} s to refill: try later"
	echo "waiting ${wait_s} s for the client's buckets to refill after the last spray..."
	sleep "$(calc "$wait_s + 0.5")"
	read_edges BEFORE
fi

echo "client $CLIENT_IP sprays $PPS packets/s for $SECS s, round-robin over ${EDGES[*]} (UDP port 9999)"
echo "every edge: rate $RATE/s, burst $BURST per source"
# The sender, in Python on the client: one socket bound to the lab address, paced to
# PPS, bounded by count and time; prints "sent N1 N2 N3 errors E elapsed S".
targets=$(IFS=,; echo "${EDGE_IPS[*]}")
result=$(on "$CLIENT" python3 - "$targets" "$PPS" "$SECS" "$CLIENT_IP" <<'EOF' | tr -d '\r'
import socket, sys, time

targets, pps, secs, src = sys.argv[1].split(","), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((src, 0))  # one source address, whichever edge a packet goes to
sent, errors, first, last = [0] * len(targets), 0, None, None
start = time.monotonic()
for n in range(int(pps * secs)):
    due, now = start + n / pps, time.monotonic()
    if now > start + secs + 5:
        break
    if due > now:
        time.sleep(due - now)
    try:
        sock.sendto(b"dthrottle vagrant lab", (targets[n % len(targets)], 9999))
    except OSError:
        errors += 1
        continue
    sent[n % len(targets)] += 1
    last = time.monotonic()
    first = first or last
print("sent", *sent, "errors", errors, "elapsed %.3f" % (last - first if first else 0))
EOF
)
[[ $result == sent* ]] || die "the sender on $CLIENT failed: ${result:-no output}"
read -ra SENT <<<"$(awk '{ for (i = 2; $i != "errors"; i++) printf "%s ", $i }' <<<"$result")"
ELAPSED=$(awk '{ print $NF }' <<<"$result")
read_edges AFTER

echo
printf '%-8s %-14s %8s %9s %8s\n' EDGE ADDRESS SENT ADMITTED DROPPED
sent_all=0 admitted=0 dropped_all=0 alone=0
budget=$(calc "$BURST + $RATE * $ELAPSED")
for i in "${!EDGES[@]}"; do
	passed=$(($(client_num "${AFTER[i]}" passed) - $(client_num "${BEFORE[i]}" passed)))
	dropped=$(($(client_num "${AFTER[i]}" dropped) - $(client_num "${BEFORE[i]}" dropped)))
	printf '%-8s %-14s %8s %9s %8s\n' "${EDGES[i]}" "${EDGE_IPS[i]}" "${SENT[i]:-0}" "$passed" "$dropped"
	sent_all=$((sent_all + ${SENT[i]:-0}))
	admitted=$((admitted + passed))
	dropped_all=$((dropped_all + dropped))
	# What this edge would have let through on its own: a whole budget of its own.
	alone=$(calc "$alone + (${SENT[i]:-0} < $budget ? ${SENT[i]:-0} : $budget)")
done
printf '%-8s %-14s %8s %9s %8s\n' total "" "$sent_all" "$admitted" "$dropped_all"
echo
printf 'budget: %s + %s/s x %s s = %.0f packets; admitted %s = %.2f x the budget\n' \
	"$BURST" "$RATE" "$ELAPSED" "$budget" "$admitted" "$(calc "$admitted / $budget")"
printf '(%d edges that do not talk to each other would have let through about %.0f)\n' "${#EDGES[@]}" "$alone"
if num_le "$sent_all" "$budget"; then
	[ "$admitted" -eq "$sent_all" ] && { echo "spray: ok - under the budget, nothing dropped"; exit 0; }
	echo "spray: WRONG - the client stayed under its budget but lost packets"
	exit 1
fi
if awk -v a="$admitted" -v b="$budget" 'BEGIN { exit !(a >= 0.9 * b && a <= 1.1 * b) }'; then
	echo "spray: ok - the ${#EDGES[@]} edges held the client to one budget"
	exit 0
fi
echo "spray: WRONG - admitted is more than 10% off the budget"
exit 1
