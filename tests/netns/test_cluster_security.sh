#!/usr/bin/env bash
# test_cluster_security.sh - a cluster no stranger can forge, read or silence (README
# "Security", docs/security.md). Three hosts on the control bridge: h1 and h2 run agents,
# h3's namespace holds the attacker (a hostile process written below in Python with pyzmq):
# it reads what it can, and publishes forged reports of 10^9 hits for a victim source V
# under node id h3, from h3's own report endpoint (which h1 and h2 have in their --peers:
# a peer's address taken over) and into the hub.
#
#   a. Without --insecure-cluster a cluster without keys refuses to start, exit 2, naming both
#      ways out: a mesh agent, a hub agent, `agent hub`, `agent check`.
#   b. The attack works on an insecure cluster (--insecure-cluster; so that (c) can fail):
#      the stranger reads every report, and h1 debits V's 10^9 hits (V's traffic dropped);
#      the agents warned once at start and `agent stats` says "insecure".
#   c. The same attack on the cluster with keys (lib.sh's default): the stranger, without a key
#      or with a key nobody allowed, reads nothing; its forged reports are not debited (V's
#      debited count 0, V's traffic passes); h1 logs the refused subscriber and the refused
#      handshake at h3's endpoint; `agent stats` says "keys".
#   d. b and c through `agent hub` (XSUB 7701 / XPUB 7702).
#   e. A member forging another node's id: with h3's key pair (stolen) the hostile process
#      serves h3's endpoint in the mesh, and publishes into the hub, reports signed with h3's
#      key under node ids h2 and h9 (no such node): h1 (and through the hub h2) rejects them,
#      counted as bad_signature and unknown_node; V is not debited; the real h2 is still
#      heard. Its reports under h3's own id (for W) are applied: its signatures are valid.
#      In the mesh, messages on a member's own connection that name it are proved by the link
#      (no signature check, link_authenticated counted); through the hub none are.
# Nothing waits a fixed time: each "nothing happened" is judged after h1 has applied at
# least 3 more of h2's messages (2 s or more of heartbeats: a quiet agent sends one every 5
# periods) while the attacker was at work.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=cluster-security
# Debian's interpreter: python3-zmq installs there (a python3 earlier in PATH may lack it).

RATE=10
BURST=50
V=198.18.7.7    # the victim: a client whose budget the attacker wants spent
VICTIM_SENDS=20 # within the burst: all pass unless its bucket was debited
REFUSAL="a cluster without keys lets anyone on the network forge, read or silence reports: give --curve-key FILE --curve-peers DIR (make them with \`agent keygen NAME\`, see docs/security.md), or --insecure-cluster to run it unauthenticated"

"$PYTHON" -c 'import zmq' 2>/dev/null || { echo "FAIL setup: $PYTHON has no zmq module: apt-get install python3-zmq (make deps)"; exit 1; }

lab_init dtsec
mlab_up 3
mlab_hub_up

# The hostile process. Options (any together, for --seconds at most or until SIGTERM):
#   --read EP             subscribe to EP without a key (ZeroMQ's NULL mechanism)
#   --read-curve EP=PUB   subscribe as a CURVE client of the server whose key is in the .pub
#                         file PUB, with a key of its own that nobody allowed
#   --publish EP          connect a PUB socket to EP (a hub's XSUB) without a key
#   --publish-curve EP=PUB  the same as a CURVE client with a key of its own
#   --serve EP            bind a PUB socket at EP without a key (a peer's endpoint taken over)
#   --member-key FILE     a member's stolen key pair (agent keygen's .key): --publish-curve
#                         then uses it, --serve binds a CURVE server with it, and every report
#                         is signed with the member's signing key (derived from its CURVE
#                         secret as agent/cluster/report_signing.h says: tests/netns/report_signing.py)
#   --as ID,... --victim ADDR --hits N   what the forged reports say (one every 100 ms on each
#                         publishing socket, the node ids in turn: wire format v2 of
#                         agent/cluster_core/peer_protocol.h)
#   --victim-of ID=ADDR   reports under node id ID name ADDR instead of the victim
# stderr: "forged N" after 10 reports, "received ..." at the first message read. At the end,
# stdout: {"forged": N, "received": {EP: messages, ...}}.
cat >"$WORK/hostile.py" <<'PY'
import json, signal, socket, struct, sys, time, random
import zmq
from report_signing import signer, varint  # copied beside this script

args = sys.argv[1:]
opt = {"reads": [], "curve_reads": [], "pubs": [], "curve_pubs": [], "serves": [], "as": "h3",
       "victim": "198.18.7.7", "hits": 10**9, "seconds": 60}
while args:
    k, v = args.pop(0), args.pop(0)
    key = {"--read": "reads", "--read-curve": "curve_reads", "--publish": "pubs",
           "--publish-curve": "curve_pubs", "--serve": "serves"}.get(k)
    if key:
        opt[key].append(v)
    elif k == "--victim-of":
        opt.setdefault("victim_of", {})[v.split("=")[0]] = v.split("=")[1]
    else:
        opt[k[2:]] = v

def server_key(pub_file):
    for line in open(pub_file):
        name, _, value = line.partition("=")
        if name.strip() == "public":
            return value.strip().encode()
    sys.exit("no 'public =' line in " + pub_file)

def key_pair(key_file):
    keys = {}
    for line in open(key_file):
        name, _, value = line.partition("=")
        keys[name.strip()] = value.strip().encode()
    return keys["public"], keys["secret"]

def as_stranger(sock, pub_file):  # a CURVE client: a key of its own allowed by nobody, or the member's
    public, secret = key_pair(opt["member-key"]) if "member-key" in opt else zmq.curve_keypair()
    sock.curve_publickey, sock.curve_secretkey = public, secret
    sock.curve_serverkey = server_key(pub_file)

def report(node_id, boot_id, seq, victim, hits):
    nid, rule = node_id.encode(), b"default"
    head = b"DTRP" + bytes([2, 0, len(nid)]) + nid + b"\x00"  # v2: to everyone
    head += struct.pack("<QQQQHH", boot_id, seq, seq, int(time.time() * 1000), 0, 1)
    group = bytes([len(rule)]) + rule + varint(1) + socket.inet_aton(victim) + varint(hits) + varint(0)
    return head + varint(1) + group + varint(0)

ctx = zmq.Context()
readers, publishers = {}, []
for ep in opt["reads"] + opt["curve_reads"]:
    s = ctx.socket(zmq.SUB)
    s.linger = 0
    endpoint, _, pub_file = ep.partition("=")
    if pub_file:
        as_stranger(s, pub_file)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    s.connect(endpoint)
    readers[s] = ep
for ep in opt["pubs"] + opt["curve_pubs"] + opt["serves"]:
    s = ctx.socket(zmq.PUB)
    s.linger = 0
    endpoint, _, pub_file = ep.partition("=")
    if pub_file:
        as_stranger(s, pub_file)
    if ep in opt["serves"] and "member-key" in opt:  # the member's own endpoint, as its CURVE server
        s.curve_publickey, s.curve_secretkey = key_pair(opt["member-key"])
        s.curve_server = True
    (s.bind if ep in opt["serves"] else s.connect)(endpoint)
    publishers.append(s)

stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
poller = zmq.Poller()
for s in readers:
    poller.register(s, zmq.POLLIN)
received = {ep: 0 for ep in readers.values()}
boot, seq, forged = random.getrandbits(63), {}, 0
sign = signer(key_pair(opt["member-key"])[1]) if "member-key" in opt else (lambda msg: msg)
ids = opt["as"].split(",")
end, next_send = time.time() + float(opt["seconds"]), 0.0
while not stop and time.time() < end:
    if publishers and time.time() >= next_send:
        node = ids[forged % len(ids)]
        seq[node] = seq.get(node, 0) + 1  # each node id's messages in sequence
        msg = sign(report(node, boot, seq[node], opt.get("victim_of", {}).get(node, opt["victim"]), int(opt["hits"])))
        for s in publishers:
            s.send(msg)
        forged += 1
        next_send = time.time() + 0.1
        if forged == 10:
            print("forged 10", file=sys.stderr, flush=True)
    for s, _ in poller.poll(50):
        while True:
            try:
                s.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            received[readers[s]] += 1
            if received[readers[s]] == 1:
                print("received from " + readers[s], file=sys.stderr, flush=True)
print(json.dumps({"forged": forged, "received": received}))
PY
cp "$(dirname "$0")/report_signing.py" "$WORK/"

# hostile_start NAME ARGS...: the hostile process in h3's namespace (logs: $WORK/hostile-NAME.*).
hostile_start() {
	local name=$1
	shift
	nsenter --net="/run/netns/${M_NS[3]}" -- "$PYTHON" "$WORK/hostile.py" --seconds 60 --victim "$V" --as h3 "$@" \
		>"$WORK/hostile-$name.json" 2>"$WORK/hostile-$name.err" &
	LAB_PIDS[hostile-$name]=$!
	wait_for_line "$WORK/hostile-$name.err" 'forged 10|Traceback' "${LAB_PIDS[hostile-$name]}" 10 &&
		! grep -q Traceback "$WORK/hostile-$name.err" || {
		echo "--- the hostile process $name did not get to work:"
		cat "$WORK/hostile-$name.err"
		return 1
	}
}

# hostile_stop NAME: ends it; HOSTILE_OUT: its JSON.
hostile_stop() {
	stop_pid "${LAB_PIDS[hostile-$1]}"
	HOSTILE_OUT=$(cat "$WORK/hostile-$1.json")
	echo "  hostile $1: $HOSTILE_OUT"
}

# received JSON ENDPOINT: messages the hostile process read from ENDPOINT (as given to it).
received() { grep -o "\"${2//./\\.}\": [0-9]*" <<<"$1" | awk '{ print $NF }'; }


# applied I: the cluster messages host I's agent has applied (its status file, every second).
applied() { json_num "$(stats_json "${M_PIN[$1]}")" messages_applied; }
applied_at_least() { num_ge "$(applied "$1")" "$2"; }
# debited I [ADDR]: hits debited from the bucket of ADDR (default V) on host I (0 if none).
debited() {
	local v
	v=$(source_num "$(stats_json "${M_PIN[$1]}")" "${2:-$V}" debited)
	echo "${v:-0}"
}
debited_at_least() { num_ge "$(debited "$1" "${3:-$V}")" "$2"; }

# more_messages I [N]: waits until host I has applied N (10) more messages than now (2 s of
# its peer's reports): then whatever the attacker (forging every 100 ms) sent meanwhile had
# its chance. Its peer (host 3 - I) serves a client of its own meanwhile, so that it reports
# every period (an idle agent with keys in a full mesh sends a signed heartbeat every 20 s
# only). Where the attacker's own valid reports count too (e), they come on top.
more_messages() {
	local before rc pid peer=$((3 - $1))
	before=$(applied "$1")
	nsenter --net="/run/netns/$C_NS" -- timeout 20 "$PKTGEN" send --iface "${M_CIF[$peer]}" --dst-ip "${M_IP[$peer]}" \
		--dst-mac "${M_MAC[$peer]}" --dport 9999 --sources 198.18.7.9 --rate 50 --count 750 --duration 15s \
		>/dev/null 2>&1 &
	pid=$!
	wait_until 15 applied_at_least "$1" "$((${before:-0} + ${2:-10}))"
	rc=$?
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return $rc
}

# victim_passes NAME I: V sends VICTIM_SENDS frames to host I; sets PASSED (what host I let through).
victim_passes() {
	local before
	before=$(source_num "$(stats_json "${M_PIN[$2]}")" "$V" passed)
	in_ns "$C_NS" timeout 30 "$PKTGEN" send --iface "${M_CIF[$2]}" --dst-ip "${M_IP[$2]}" --dst-mac "${M_MAC[$2]}" \
		--dport 9999 --json --sources "$V" --rate 50 --count "$VICTIM_SENDS" --duration 5s \
		>"$WORK/victim-$1.json" 2>"$WORK/victim-$1.err" || { cat "$WORK/victim-$1.err"; return 1; }
	PASSED=$(($(source_num "$(stats_json "${M_PIN[$2]}")" "$V" passed) - ${before:-0}))
}

# agents_start NAME mesh|hub: h1 and h2 (NAME1, NAME2); in a mesh both have h3's endpoint
# among their peers (mlab_peers). Waits until they hear each other.
agents_start() {
	local i topo
	for i in 1 2; do
		if [ "$2" = mesh ]; then topo=(--peers "$(mlab_peers "$i")"); else topo=(--hub "$HUB_CTL:7701"); fi
		MLAB_NO_WAIT=1 mlab_agent_start "$i" "$1$i" --rate "$RATE" --burst "$BURST" --period 200ms --stats-interval 10m \
			"${topo[@]}" || die "the agent of h$i ($1) did not start"
	done
	for i in 1 2; do mlab_agent_wait "$1$i" || die "the agent of h$i ($1) did not start"; done
	mlab_wait_peers "$1"1 1 10 h2 && mlab_wait_peers "$1"2 1 10 h1 || die "h1 and h2 ($1) did not hear each other within 10 s"
}

agents_stop() {
	agent_signal "$1"1 TERM && agent_signal "$1"2 TERM || die "the agents $1 did not stop"
}

# refused NAME WHAT OUTPUT RC: exit status 2 and the refusal's words.
refused() {
	check_eq "security/a/$1/exit" "$2: exit status ($3)" "$4" 2
	check "security/a/$1/message" "$2 did not say why and both ways out: $3" grep -qF "$REFUSAL" <<<"$3"
}

# --- a. a cluster without keys refuses to start ----------------------------------------------
echo "== a. without --insecure-cluster, a cluster without keys refuses to start"
for topo in mesh hub; do
	if [ "$topo" = mesh ]; then args=(--peers "$(mlab_peers 1)"); else args=(--hub "$HUB_CTL:7701"); fi
	out=$(in_ns "${M_NS[1]}" timeout 20 "$AGENT" --iface "${M_DIF[1]}" --pin-dir "${M_PIN[1]}" --rate "$RATE" \
		--burst "$BURST" "${args[@]}" 2>&1)
	refused "$topo-agent" "an agent with ${args[0]} and no key" "$out" $?
	check "security/a/$topo-agent/nothing-attached" "the refused agent pinned its maps in ${M_PIN[1]}" \
		test ! -e "${M_PIN[1]}/buckets"
done
out=$(in_ns "$HUB_NS" timeout 20 "$AGENT" hub --listen "$HUB_CTL:7701" 2>&1)
refused hub "agent hub without --curve-key" "$out" $?
out=$("$AGENT" check --iface "${M_DIF[1]}" --rate "$RATE" --burst "$BURST" --peers "$(mlab_peers 1)" 2>&1)
refused check "agent check of a mesh without keys" "$out" $?

# --- b. an insecure mesh: the attack works --------------------------------------------------------
echo
echo "== b. --insecure-cluster: a stranger in h3's place reads the reports and forges 10^9 hits for $V"
H1_PUB=tcp://${M_CTL[1]}:7700
H3_PUB=tcp://${M_CTL[3]}:7700
MLAB_INSECURE=1 agents_start open mesh
hostile_start open --read "$H1_PUB" --serve "$H3_PUB" || die "the hostile process did not start"
check security/b/stranger-reads "the stranger read nothing from h1's reports without a key on an insecure cluster" \
	wait_for_line "$WORK/hostile-open.err" "received from $H1_PUB" "${LAB_PIDS[hostile-open]}" 10
check security/b/forged-debited "h1 did not debit the forged 10^9 hits for $V (debited $(debited 1))" \
	wait_until 10 debited_at_least 1 1000000000
hostile_stop open
victim_passes open 1 || die "pktgen failed"
check_le security/b/victim-dark "frames of $V h1 let through after the forged debit (of $VICTIM_SENDS)" "$PASSED" 0
for i in 1 2; do
	check_eq "security/b/h$i/one-warning" "h$i's warnings naming --insecure-cluster" \
		"$(count_lines "$WORK/agent-open$i.log" 'insecure cluster \(--insecure-cluster\)')" 1
done
security=$(json_get "$(stats_json "${M_PIN[1]}")" .cluster.security)
check security/b/stats-json-insecure "agent stats --json says \"security\":\"$security\", not insecure" \
	test "$security" = insecure
check security/b/stats-text-insecure "agent stats does not say 'security insecure'" \
	grep -qF 'security insecure' <<<"$("$AGENT" stats --pin-dir "${M_PIN[1]}")"
agents_stop open

# --- c. the mesh with keys: the same stranger gets nothing in ------------------------------------
echo
echo "== c. the same attack on the mesh with keys"
agents_start keyed mesh
hostile_start keyed --read "$H1_PUB" --read-curve "$H1_PUB=$MLAB_KEYS/h1.pub" --serve "$H3_PUB" ||
	die "the hostile process did not start"
check security/c/unknown-key-refused "h1 did not log refusing the stranger's key" \
	wait_for_line "$WORK/agent-keyed1.log" "refused a subscriber from ${M_CTL[3]}: its public key" \
	"${LAB_PIDS[agent-keyed1]}" 10
check security/c/impostor-refused "h1 did not log the failed handshake at h3's endpoint" \
	wait_for_line "$WORK/agent-keyed1.log" "peer ${M_CTL[3]}:7700 refused our CurveZMQ handshake" \
	"${LAB_PIDS[agent-keyed1]}" 10
more_messages 1 || fail security/c/h1-applies "h1 applied fewer than 10 more of h2's messages in 15 s"
hostile_stop keyed
check_eq security/c/nothing-read "messages the stranger read from h1 without a key" "$(received "$HOSTILE_OUT" "$H1_PUB")" 0
check_eq security/c/nothing-read-unknown-key "messages the stranger read from h1 with an unknown key" \
	"$(received "$HOSTILE_OUT" "$H1_PUB=$MLAB_KEYS/h1.pub")" 0
for i in 1 2; do
	check_eq "security/c/h$i/not-debited" "hits debited from $V on h$i" "$(debited "$i")" 0
	check_eq "security/c/h$i/no-h3" "'peer h3 is up' lines of h$i" "$(count_lines "$WORK/agent-keyed$i.log" 'peer h3 is up')" 0
done
victim_passes keyed 1 || die "pktgen failed"
check_eq security/c/victim-passes "frames of $V h1 let through (of $VICTIM_SENDS)" "$PASSED" "$VICTIM_SENDS"
security=$(json_get "$(stats_json "${M_PIN[1]}")" .cluster.security)
check security/c/stats-json-keys "agent stats --json says \"security\":\"$security\", not keys" test "$security" = keys
agents_stop keyed

# --- d. the hub: insecure, then with keys ------------------------------------------------------------
echo
echo "== d. through agent hub: --insecure-cluster, then keys"
HUB_IN=tcp://$HUB_CTL:7701
HUB_OUT=tcp://$HUB_CTL:7702
MLAB_INSECURE=1 mlab_hub_start open-hub || die "the insecure hub did not start"
check_eq security/d/hub-one-warning "the insecure hub's warnings naming --insecure-cluster" \
	"$(count_lines "$WORK/agent-open-hub.log" 'insecure cluster \(--insecure-cluster\)')" 1
MLAB_INSECURE=1 agents_start openhub hub
hostile_start openhub --read "$HUB_OUT" --publish "$HUB_IN" || die "the hostile process did not start"
check security/d/open/stranger-reads "the stranger read nothing from an insecure hub" \
	wait_for_line "$WORK/hostile-openhub.err" "received from $HUB_OUT" "${LAB_PIDS[hostile-openhub]}" 10
check security/d/open/forged-debited "h1 did not debit the forged hits relayed by the insecure hub (debited $(debited 1))" \
	wait_until 10 debited_at_least 1 1000000000
hostile_stop openhub
agents_stop openhub
stop_pid "${LAB_PIDS[agent-open-hub]}"

mlab_hub_start keyed-hub || die "the hub with keys did not start"
agents_start keyedhub hub
hostile_start keyedhub --read "$HUB_OUT" --read-curve "$HUB_OUT=$MLAB_KEYS/hub.pub" --publish "$HUB_IN" \
	--publish-curve "$HUB_IN=$MLAB_KEYS/hub.pub" || die "the hostile process did not start"
check security/d/keys/unknown-keys-refused "the hub did not log refusing the stranger's key on both ports" \
	wait_for_lines "$WORK/agent-keyed-hub.log" "refused an agent from ${M_CTL[3]}: its public key" 2 \
	"${LAB_PIDS[agent-keyed-hub]}" 10
more_messages 1 || fail security/d/keys/h1-applies "h1 applied fewer than 10 more of h2's messages in 15 s"
hostile_stop keyedhub
check_eq security/d/keys/nothing-read "messages the stranger read from the hub without a key" \
	"$(received "$HOSTILE_OUT" "$HUB_OUT")" 0
check_eq security/d/keys/nothing-read-unknown-key "messages the stranger read from the hub with an unknown key" \
	"$(received "$HOSTILE_OUT" "$HUB_OUT=$MLAB_KEYS/hub.pub")" 0
for i in 1 2; do
	check_eq "security/d/keys/h$i/not-debited" "hits debited from $V on h$i" "$(debited "$i")" 0
done
victim_passes keyedhub 2 || die "pktgen failed"
check_eq security/d/keys/victim-passes "frames of $V h2 let through (of $VICTIM_SENDS)" "$PASSED" "$VICTIM_SENDS"
agents_stop keyedhub

# --- e. a member forging another node's id --------------------------------------------------------
echo
echo "== e. a member (h3's key, stolen) signs reports under h2's and an unknown node id: rejected and counted"
W=198.18.7.8 # what h3 reports under its own id: accepted (the hostile process signs correctly)
# reason I NAME: host I's count of rejected reports for reason NAME (0 if none).
reason() {
	local v
	# shellcheck disable=SC2016 # jq's own $r
	v=$(json_get "$(stats_json "${M_PIN[$1]}")" '.cluster.rejected[$r] // empty' --arg r "$2")
	echo "${v:-0}"
}
reason_at_least() { num_ge "$(reason "$1" "$2")" "$3"; }
# by_link I: host I's count of messages its CurveZMQ connection proved (no signature check).
by_link() { json_get "$(stats_json "${M_PIN[$1]}")" '.cluster.counters.link_authenticated // 0'; }
# member_attack NAME I: while the hostile process NAME forges, host I rejects the reports under
# h2's id (bad_signature) and h9's (unknown_node), debits nothing from V, still hears its peer,
# and debits W's 10^9 hits that h3 signed as itself.
member_attack() {
	local name=$1 i=$2 peer=$((3 - $2))
	check "security/e/$name/h$i-bad-signature" "h$i did not count the reports signed by h3 under h2's id (bad_signature $(reason "$i" bad_signature))" \
		wait_until 10 reason_at_least "$i" bad_signature 1
	check "security/e/$name/h$i-unknown-node" "h$i did not count the reports under node id h9 (unknown_node $(reason "$i" unknown_node))" \
		wait_until 10 reason_at_least "$i" unknown_node 1
	check "security/e/$name/h$i-own-report-applied" "h$i did not debit what h3 signed as itself for $W: the forger's signatures would not be valid ($(debited "$i"))" \
		wait_until 10 debited_at_least "$i" 1000000000 "$W"
	more_messages "$i" 10 || fail "security/e/$name/h$i-hears-h$peer" "h$i applied fewer than 10 more messages (h$peer's and h3's) in 15 s"
	check_eq "security/e/$name/h$i-not-debited" "hits debited from $V on h$i" "$(debited "$i")" 0
	# In the mesh h3's and h2's own messages come on their own links, which prove them; through
	# the hub (one connection for every member's messages) each signature is checked.
	if [ "$name" = mesh ]; then
		check_ge "security/e/$name/h$i-proved-by-link" "h$i's messages proved by their link" "$(by_link "$i")" 1
	else
		check_eq "security/e/$name/h$i-none-by-link" "h$i's messages through the hub taken as proved by their link" \
			"$(by_link "$i")" 0
	fi
}
HOSTILE_MEMBER=(--member-key "$MLAB_KEYS/h3.key" --as h2,h9,h3 --victim-of "h3=$W")
agents_start member mesh
hostile_start member "${HOSTILE_MEMBER[@]}" --serve "$H3_PUB" || die "the hostile process did not start"
member_attack mesh 1
hostile_stop member
victim_passes member 1 || die "pktgen failed"
check_eq security/e/mesh/victim-passes "frames of $V h1 let through (of $VICTIM_SENDS)" "$PASSED" "$VICTIM_SENDS"
agents_stop member

agents_start memberhub hub
hostile_start memberhub "${HOSTILE_MEMBER[@]}" --publish-curve "$HUB_IN=$MLAB_KEYS/hub.pub" ||
	die "the hostile process did not start"
member_attack hub 1
member_attack hub 2
hostile_stop memberhub
victim_passes memberhub 1 || die "pktgen failed"
check_eq security/e/hub/victim-passes "frames of $V h1 let through (of $VICTIM_SENDS)" "$PASSED" "$VICTIM_SENDS"
agents_stop memberhub

lab_finish
