#!/usr/bin/env bash
# test_member_replay.sh - a cluster member replays what it hears, and gains nothing
# (docs/security.md, "Who can do what"): five agents h1 to h5 in a full mesh with keys (the
# owner scheme needs 5 members), and a member h6 (a hostile process with a key of its own,
# in every --curve-peers, whose endpoint every agent but h2 subscribes to) that subscribes
# to h2 and publishes h2's own signed messages again, unaltered:
#
#   a. Re-addressed: every message h2 sends to one owner (the owner scheme's directed
#      messages) wrapped for each other agent, and every report h2 sends to everyone
#      wrapped for each agent alone. Before, the envelope was outside the signature and
#      directed messages had a tracker of their own: each copy was charged again (and
#      relayed on). Now the recipient is signed: the agents refuse them ("not for us",
#      "recipient mismatch") and every host debits exactly what the others admitted.
#   b. An old boot: h2's reports recorded in (a), replayed after h2 restarted (its boot
#      counter moved on) and h1 restarted (it remembers no earlier boot of h2), once h2's
#      new boot has been silent at h1 for --down-after. Before, h1 took the old boot as
#      h2's restart and dropped every later report of the live one as a replay: h2's hits
#      were no longer charged on h1. Now boots only move forward: h1 refuses it ("old
#      boot") and still charges what h2 admits.
#   c. A relay naming a stranger: the member, as an owner would, relays 10^6 hits of V "that
#      node h9 admitted" (no key speaks for h9), in a relay message of its own, signed with
#      its key. Before, every agent charged them; now relay blocks are charged only for
#      members ("relay names a stranger").
# All but h2 report as a mesh (--report-scheme mesh: an owner among them relays what h2
# sends it at once, so every host hears every hit); h2 reports to owners. Nothing waits a
# fixed time.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=member_replay
# Debian's interpreter: python3-zmq installs there (a python3 earlier in PATH may lack it).
"$PYTHON" -c 'import zmq' 2>/dev/null || { echo "FAIL setup: $PYTHON has no zmq module: apt-get install python3-zmq (make deps)"; exit 1; }

RATE=100
BURST=50
S=198.18.7.1 # admitted by h2 alone: to its owner only (directed)
T=198.18.7.2 # admitted by h2 and h3: shared, to everyone
W=198.18.7.3 # (b) admitted by h2's new boot
V=198.18.7.4 # (c) the victim of a relay naming a stranger

lab_init dtmrp
HOSTS=5
# How long the agents may take to subscribe to the member: 10 s, or 60 s on an emulated CPU
# (make test-kernel's TCG guest, where five agents took longer after a restart).
SUB_WAIT=10
emulated && SUB_WAIT=60
# How long the member serves: 120 s, or 900 s on an emulated CPU (where the test itself took
# over 200 s to reach h1's restart, and found the member gone).
MEMBER_S=120
emulated && MEMBER_S=900
mlab_up "$HOSTS"
mlab_hub_up # the member's namespace (no hub runs there)
M6=$HUB_CTL
mlab_keys
"$AGENT" keygen h6 --dir "$MLAB_KEYS" --endpoint "$M6:7700" >/dev/null || die "agent keygen h6 failed"

# The member. It serves h6's endpoint (a CURVE server with h6's key) and subscribes to h2's
# (a CURVE client with h6's key, which h2 allows) to every message for everyone and to
# h2's messages to each other agent. Files in $WORK steer it: rewrap.stop ends (a), record.stop
# ends the recording of h2's reports to everyone, replay.go publishes what it recorded
# (once), relay.go publishes 10 relays of V's hits naming h9, signed as h6 (wire format v2,
# agent/cluster_core/peer_protocol.h; the signing key derived from the CURVE secret as
# agent/cluster/report_signing.h says: report_signing.py). stderr: one line per
# subscription it serves, "rewrapped N" every 20, "replayed N", "relayed N".
cat >"$WORK/member.py" <<'PY'
import os, socket, struct, sys, time
import zmq
from report_signing import signer, varint  # copied beside this script

key_file, h2_pub, serve, h2_ep, work = sys.argv[1:6]

def keys(path):
    out = {}
    for line in open(path):
        name, _, value = line.partition("=")
        out[name.strip()] = value.strip().encode()
    return out

def wrap(to, msg):
    return b"DTO" + bytes([len(to)]) + to + msg

def waiting(sock):  # every message waiting on sock now, without blocking
    while True:
        try:
            yield sock.recv(zmq.NOBLOCK)
        except zmq.Again:
            return

me = keys(key_file)

def relay(seq, host, victim, hits):  # kFlagRelay (32): host's hits, passed on by us (h6)
    head = b"DTRP" + bytes([2, 32, 2]) + b"h6" + b"\x00"
    head += struct.pack("<QQQQHH", (int(time.time()) << 32) | 6, seq, seq, int(time.time() * 1000), 0, 1)
    group = bytes([7]) + b"default" + varint(1) + socket.inet_aton(victim) + varint(hits) + varint(0)
    return head + varint(0) + varint(0) + varint(1) + bytes([len(host)]) + host + varint(1) + group

sign = signer(me["secret"])  # h6's report signing key
ctx = zmq.Context()
pub = ctx.socket(zmq.XPUB)  # XPUB: it sees who subscribes
pub.linger = 0
pub.setsockopt(zmq.XPUB_VERBOSE, 1)  # every subscriber's subscriptions, not only the first
pub.curve_publickey, pub.curve_secretkey, pub.curve_server = me["public"], me["secret"], True
pub.bind(serve)
sub = ctx.socket(zmq.SUB)
sub.linger = 0
sub.curve_publickey, sub.curve_secretkey = me["public"], me["secret"]
sub.curve_serverkey = keys(h2_pub)["public"]
AGENTS = [b"h1", b"h3", b"h4", b"h5"]  # all but h2
for prefix in [b"DTR"] + [b"DTO\x02" + a for a in AGENTS]:
    sub.setsockopt(zmq.SUBSCRIBE, prefix)
sub.connect(h2_ep)
poller = zmq.Poller()
poller.register(pub, zmq.POLLIN)
poller.register(sub, zmq.POLLIN)
recorded, rewrapped, replayed, end = [], 0, False, time.time() + int(sys.argv[7])
print("listening", file=sys.stderr, flush=True)
while time.time() < end:
    events = dict(poller.poll(50))
    if pub in events:
        for s in waiting(pub):
            print("subscription %r" % s, file=sys.stderr, flush=True)
    if sub in events:
        for m in waiting(sub):
            if os.path.exists(work + "/rewrap.stop"):
                pass
            elif m.startswith(b"DTO"):  # to one owner: to every other agent too
                to, inner = m[4:4 + m[3]], m[4 + m[3]:]
                for a in AGENTS:
                    if a != to:
                        pub.send(wrap(a, inner))
                        rewrapped += 1
            else:  # to everyone: to each one alone as well
                for a in AGENTS:
                    pub.send(wrap(a, m))
                rewrapped += len(AGENTS)
            if rewrapped and rewrapped % 20 < 4:
                print("rewrapped %d" % rewrapped, file=sys.stderr, flush=True)
            if m.startswith(b"DTR") and not os.path.exists(work + "/record.stop"):
                recorded.append(m)
    if os.path.exists(work + "/relay.go") and not os.path.exists(work + "/relay.done"):
        for seq in range(1, 11):
            pub.send(sign(relay(seq, b"h9", sys.argv[6], 10**6)))
        open(work + "/relay.done", "w").close()
        print("relayed 10", file=sys.stderr, flush=True)
    if not replayed and os.path.exists(work + "/replay.go"):
        for m in recorded[-50:]:
            pub.send(m)
        replayed = True
        print("replayed %d" % min(len(recorded), 50), file=sys.stderr, flush=True)
PY
cp "$(dirname "$0")/report_signing.py" "$WORK/"

nsenter --net="/run/netns/$HUB_NS" -- "$PYTHON" "$WORK/member.py" "$MLAB_KEYS/h6.key" "$MLAB_KEYS/h2.pub" \
	"tcp://$M6:7700" "tcp://${M_CTL[2]}:7700" "$WORK" "$V" "$MEMBER_S" 2>"$WORK/member.err" &
LAB_PIDS[member]=$!
wait_for_line "$WORK/member.err" '^listening|Traceback' "${LAB_PIDS[member]}" 10 && ! grep -q Traceback "$WORK/member.err" ||
	die "the member did not start: $(cat "$WORK/member.err")"

# cluster_field I EXPR: a Python expression over host I's cluster status `c` (0 if absent).
cluster_field() {
	"$AGENT" stats --pin-dir "${M_PIN[$1]}" --json --top 0 | python3 -c "import json, sys
c = json.load(sys.stdin).get('cluster', {})
peer = lambda n: next((p for p in c.get('peers', []) if p['node_id'] == n), {})
try:
    print(int($2))
except (KeyError, TypeError, StopIteration):
    print(0)"
}
rejected() { cluster_field "$1" "c['rejected'].get('$2', 0)"; }
rejected_at_least() { num_ge "$(rejected "$1" "$2")" "$3"; }
# subscribed N: the member serves N subscriptions to messages for everyone (one per agent but h2).
subscribed() { [ "$(count_lines "$WORK/member.err" "subscription b'\\\\x01DTR'")" -ge "$1" ]; }

# start_agent I NAME ARGS...: host I's agent; all but h2 also hear the member.
start_agent() {
	local i=$1 name=$2 peers
	shift 2
	peers=$(mlab_peers "$i")
	[ "$i" -ne 2 ] && peers+=",$M6:7700"
	MLAB_NO_WAIT=1 mlab_agent_start "$i" "$name" --rate "$RATE" --burst "$BURST" --period 200ms --stats-interval 10m \
		--peers "$peers" "$@" || die "the agent of h$i did not start"
}
start_agent 1 mr1 --report-scheme mesh --down-after 2s
start_agent 2 mr2 --down-after 30s
for ((i = 3; i <= HOSTS; i++)); do start_agent "$i" "mr$i" --report-scheme mesh; done
for ((i = 1; i <= HOSTS; i++)); do mlab_agent_wait "mr$i" || die "the agent of h$i did not start"; done
for ((i = 1; i <= HOSTS; i++)); do
	mlab_wait_peers "mr$i" 1 15 $(mlab_others "$i") || die "the agent of h$i did not hear every peer within 15 s"
done
wait_until "$SUB_WAIT" subscribed 4 || die "the agents did not subscribe to the member within $SUB_WAIT s: $(cat "$WORK/member.err")"

# --- a. re-addressed messages -------------------------------------------------------------------
echo "== a. the member wraps h2's messages for the other recipients while $S (h2 alone) and $T (h2, h3) are sent"
mlab_send_bg s2 2 "${M_IP[2]}" --sources "$S" --rate 40 --count 160 --duration 6s
mlab_send_bg t2 2 "${M_IP[2]}" --sources "$T" --rate 40 --count 160 --duration 6s
mlab_send_bg t3 3 "${M_IP[3]}" --sources "$T" --rate 40 --count 160 --duration 6s
senders_wait s2 t2 t3
mlab_wait_landed 5 "$S" $(mlab_mesh_specs)
mlab_wait_landed 5 "$T" $(mlab_mesh_specs)
printf '  %-6s %8s %8s %8s %8s\n' HOST "$S" passed "$T" passed
for ((i = 1; i <= HOSTS; i++)); do
	printf '  %-6s %8s %8s %8s %8s\n' "h$i" "$(snap_num landed "$i" "$S" debited)" "$(snap_num landed "$i" "$S" passed)" \
		"$(snap_num landed "$i" "$T" debited)" "$(snap_num landed "$i" "$T" passed)"
done
echo "  member: $(grep rewrapped "$WORK/member.err" | tail -n 1); h2 sent $(cluster_field 2 "c['counters']['directed_sent']") messages to one owner ($(cluster_field 2 "c['counters']['mesh_periods']") periods as a mesh)"
check member_replay/a/member-at-work "the member re-addressed nothing of h2's (its log: $(tail -n 2 "$WORK/member.err"))" \
	grep -q rewrapped "$WORK/member.err"
for src in "$S" "$T"; do
	for spec in $(mlab_mesh_specs); do
		i=${spec%%:*} want=0
		for ((j = 1; j <= HOSTS; j++)); do [ "$j" -eq "$i" ] || want=$((want + $(snap_num landed "$j" "$src" passed))); done
		# Nothing extra (before: every copy charged); and the hits arrive (the owner scheme may
		# leave a source's first hits uncharged: docs/cluster-scale.md, "First contact").
		check_le "member_replay/a/h$i/$src-nothing-extra" "hits of $src h$i debited (at most what its peers admitted)" \
			"$(snap_num landed "$i" "$src" debited)" "$want"
		check_ge "member_replay/a/h$i/$src-charged" "hits of $src h$i debited (what its peers admitted, within 5%)" \
			"$(snap_num landed "$i" "$src" debited)" "$(calc "0.95 * $want")"
	done
done
mismatch=0 not_for_us=0
for i in 1 3 4 5; do
	mismatch=$((mismatch + $(rejected "$i" 'recipient mismatch')))
	not_for_us=$((not_for_us + $(rejected "$i" 'not for us')))
done
check_ge member_replay/a/readdressed-refused "h2's reports to everyone, wrapped for one agent, that the agents refused (rejected \"recipient mismatch\")" \
	"$mismatch" 4
check_ge member_replay/a/not-for-us "h2's messages to one owner, wrapped for another, refused (rejected \"not for us\")" \
	"$not_for_us" 1

# --- b. an old boot replayed ---------------------------------------------------------------------
echo
echo "== b. h2 and h1 restart; h2's old boot replayed to h1 once h2's new boot is silent there for --down-after"
touch "$WORK/rewrap.stop" "$WORK/record.stop"
agent_signal mr2 TERM && agent_signal mr1 TERM || die "the agents of h1 and h2 did not stop"
start_agent 2 mr2b --down-after 30s --report-scheme mesh
mlab_agent_wait mr2b || die "the agent of h2 did not restart"
start_agent 1 mr1b --report-scheme mesh --down-after 2s
mlab_agent_wait mr1b || die "the agent of h1 did not restart"
mlab_wait_peers mr1b 1 10 h2 || die "h1 did not hear h2's new boot within 10 s"
wait_until "$SUB_WAIT" subscribed 5 || die "the restarted h1 did not subscribe to the member within $SUB_WAIT s"
# h2's new boot is quiet (a heartbeat every 15 s): h1 takes it for down after 2 s.
wait_for_line "$WORK/agent-mr1b.log" 'peer h2 is down' "${LAB_PIDS[agent-mr1b]}" 10 ||
	die "h2 never went silent at h1 (its log: $(grep 'peer h2' "$WORK/agent-mr1b.log"))"
touch "$WORK/replay.go"
wait_for_line "$WORK/member.err" '^replayed' "${LAB_PIDS[member]}" 5 || die "the member did not replay"
echo "  member: $(grep '^replayed' "$WORK/member.err")"
check member_replay/b/old-boot-refused "h1 did not refuse h2's old boot (rejected \"old boot\": $(rejected 1 'old boot'))" \
	wait_until 5 rejected_at_least 1 'old boot' 1
check_eq member_replay/b/no-restart "h2's restarts seen by h1 (its old boot taken for one)" \
	"$(cluster_field 1 "peer('h2')['restarts']")" 0
mlab_send_bg w2 2 "${M_IP[2]}" --sources "$W" --rate 20 --count 40 --duration 4s
senders_wait w2
mlab_wait_landed 5 "$W" 1:2
check_ge member_replay/b/h2-admitted "frames of $W h2 admitted" "$(snap_num landed 2 "$W" passed)" 30
check_eq member_replay/b/live-boot-charged "hits of $W h1 debited (what h2's live boot admitted)" \
	"$(snap_num landed 1 "$W" debited)" "$(snap_num landed 2 "$W" passed)"

# --- c. a relay naming a stranger ----------------------------------------------------------------
echo
echo "== c. the member relays 10^6 hits of $V that a stranger (node h9, no key) admitted"
touch "$WORK/relay.go"
wait_for_line "$WORK/member.err" '^relayed' "${LAB_PIDS[member]}" 5 || die "the member did not relay"
strangers() {
	local i n=0
	for i in 1 3 4 5; do n=$((n + $(rejected "$i" 'relay names a stranger'))); done
	echo "$n"
}
strangers_at_least() { num_ge "$(strangers)" "$1"; }
check member_replay/c/stranger-refused "the agents did not refuse the relays naming h9 (rejected \"relay names a stranger\": $(strangers))" \
	wait_until 5 strangers_at_least 4
mlab_snapshot relayed || die "agent stats failed"
for ((i = 1; i <= HOSTS; i++)); do
	check_eq "member_replay/c/h$i/not-debited" "hits of $V debited on h$i (relayed for a stranger)" \
		"$(snap_num relayed "$i" "$V" debited)" 0
done

lab_finish
