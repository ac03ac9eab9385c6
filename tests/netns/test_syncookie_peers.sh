#!/usr/bin/env bash
# test_syncookie_peers.sh - a client a SYN cookie verified on one host is not challenged on
# another (docs/rules.md "SYN cookies"): the verified sources travel between peers.
#
# Two hosts in a mesh with keys, reports every 200 ms, each with a real TCP listener
# (line_server.py) on port 8080 and the same rule for SYNs to it: a per-source budget the client stays
# within, a v4/16 prefix budget a small spoofed SYN flood of the client's /16 (pktgen, on
# both hosts' links) keeps spent, and syn_cookies = true. The client (198.18.0.2, the
# kernel's TCP stack) has a link to each host and counts the SYN-ACKs of window 0 it gets
# from each (an XDP cookie's: a listener's own SYN-ACK opens its window) in nftables.
#   1. control: another client address (198.18.0.3), never verified, connecting to h2 is
#      answered with a cookie (so the count below can see one);
#   2. the client connects to h1: answered with a cookie, its ACK checks out (h1's
#      cookie_ack_valid); h2 learns it from h1 (its cluster status: verified.learned);
#   3. the client connects to h2 CONNS times: every connection completes, h2 sends the
#      client no cookie, and h2's verified_hits rise (its SYNs skipped the spent budget);
#      `agent explain` on h2 says the client is verified.
# --peer-verified: h2 takes h1's verified sources (listed), h1 takes no one's but h3's: the
# control address h2 verified in 1 is refused at h1 (verified.refused_peer), never learned.
# h1's --peer-verified comes from its --config file: 4. the file says h2 instead, `agent
# reload` says so, and a third address h2 verifies then is learned at h1. 5. The file says h3
# again: the reload deletes what h2 verified from h1's verified map (`agent explain` on h1:
# the third address is no longer verified; verified.withdrawn), the client h1 verified
# itself stays verified. 6. The file says all; a fourth address h2 verifies is learned at h1;
# h2 leaves h1's --peers-file: the reload deletes that address from h1's verified map as in 5
# (a peer no longer in the cluster vouches for no one, whatever --peer-verified says), the
# client h1 verified itself stays verified.
# About 25 s; everything it creates goes with the lab.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=syncookie_peers

PORT=8080
CLIENT=198.18.0.2
OTHER=198.18.0.3
THIRD=198.18.0.4
FOURTH=198.18.0.5
CONNS=5
FLOOD_PPS=3000
FLOOD_SRC=198.18.100.0 # + 256: the flood's sources, routed back to the client's link
FLOOD_SECS=100 # the floods' bound (s): the lab's end stops them sooner
# WAIT: the deadline (s) for what an agent does on its own after a step (a peer's message
# learned or refused, a reload's counters), read in `agent stats`, whose cluster figures the
# agent writes about once a second. On a real machine each comes within a period or two.
# Under qemu's TCG (DT_EMULATED=1, make test-kernel) the floods keep the emulated CPUs
# busy and the agents' loops, status files and `agent stats` itself take seconds each:
# the waits are longer, and so is the floods' bound (the suite took 700 s there with them at
# 3,000/s, the script's limit being 900). The floods are 1,000/s each there: still 50 times
# the /16's 20/s. Every wait returns as soon as its counter moves; what is checked is the same.
WAIT=5
if emulated; then
	WAIT=60
	FLOOD_SECS=800
	FLOOD_PPS=1000
	echo "an emulated CPU (qemu TCG): waits of up to $WAIT s on the agents' counters, floods of $FLOOD_PPS/s" \
		"bounded by $FLOOD_SECS s"
fi

syncookie_tools
lab_init dtsp
mlab_up 2

# The client's address on both links, a host route to each host; the pass-all XDP program at
# its ends drains what XDP_TX sends back out of a veth (lib/syncookies.sh).
for i in 1 2; do
	ip -n "$C_NS" addr add "$CLIENT/32" dev "${M_CIF[i]}" &&
		ip -n "$C_NS" route add "${M_IP[i]}/32" dev "${M_CIF[i]}" src "$CLIENT" ||
		die "cannot give the client its address and route to h$i"
	pass_all_xdp "$C_NS:${M_CIF[i]}"
	# Replies to the flood's sources go to the client's link (dropped there), not to ARP.
	ip -n "${M_NS[i]}" route add "$FLOOD_SRC/24" via "$CLIENT" dev "${M_DIF[i]}" onlink ||
		die "cannot route the flood's replies on h$i"
	line_listener "${M_NS[i]}" "$PORT" "h$i" || die "the listener of h$i did not start"
done
for a in "$OTHER" "$THIRD" "$FOURTH"; do
	ip -n "$C_NS" addr add "$a/32" dev "${M_CIF[2]}" || die "cannot add the control address $a"
done

# SYN-ACKs of window 0 from host I to ADDR, counted at the client.
in_ns "$C_NS" nft -f - <<EOF || die "cannot add the client's nftables counters"
table inet dtsp_count {
	chain in {
		type filter hook prerouting priority -400; policy accept;
		ip saddr ${M_IP[1]} ip daddr $CLIENT tcp flags & (syn | ack) == (syn | ack) tcp window 0 counter
		ip saddr ${M_IP[2]} ip daddr $CLIENT tcp flags & (syn | ack) == (syn | ack) tcp window 0 counter
		ip saddr ${M_IP[2]} ip daddr $OTHER tcp flags & (syn | ack) == (syn | ack) tcp window 0 counter
	}
}
EOF
# cookies_seen N: the packets of the client's Nth counter (1: h1 to the client, 2: h2 to the
# client, 3: h2 to the control address).
cookies_seen() { in_ns "$C_NS" nft list chain inet dtsp_count in | grep -o 'packets [0-9]*' | sed -n "$1p" | cut -d' ' -f2; }

syn_rule "$WORK/rules.toml" "$PORT" 100 200 20 5 "syn_cookies = true"
declare -A CUR_AGENT=()
HOSTS=2
PERIOD=200ms
# shellcheck disable=SC2034 # read by mlab_agents_start
# h1's --peer-verified in a --config file and its peers in a --peers-file, both read again by
# a reload (parts 4 to 6); h2's on the command line. A mesh all the same, started host by host.
echo "peer-verified = h3" >"$WORK/h1.conf"
mlab_peers 1 >"$WORK/h1.peers"
declare -A MLAB_HOST_OPTS=([1]="--config $WORK/h1.conf --peers-file $WORK/h1.peers"
	[2]="--peer-verified h1 --peers $(mlab_peers 2)")
mlab_agents_start sp local --rules "$WORK/rules.toml" --stats-interval 10m --period "$PERIOD"
for i in 1 2; do
	# shellcheck disable=SC2046
	mlab_wait_peers "sp$i" 1 10 $(mlab_others "$i") || die "the agent of h$i did not hear its peer within 10 s"
done

# counter I KEY: a number of host I's `agent stats --json` (a global counter, or a cluster one
# by its path, e.g. .cluster.verified.learned).
counter() {
	case $2 in
	.*) json_get "$(stats_json "${M_PIN[$1]}")" "$2 // empty" ;;
	*) json_num "$(stats_json "${M_PIN[$1]}")" "$2" ;;
	esac
}
counter_ge() { num_ge "$(counter "$1" "$2")" "$3"; }
# check_until NAME WHY CMD...: PASS once CMD succeeds within WAIT s (wait_until), else FAIL
# with WHY, which is evaluated then (eval): the figures it names are those after the wait.
check_until() {
	local name=$1 why=$2
	shift 2
	if wait_until "$WAIT" "$@"; then pass "$name"; else fail "$name" "$(eval "echo \"$why\"")"; fi
}

for i in 1 2; do
	nsenter --net="/run/netns/$C_NS" -- timeout $((FLOOD_SECS + 20)) "$PKTGEN" send --tcp-syn --iface "${M_CIF[i]}" \
		--dst-ip "${M_IP[i]}" --dst-mac "${M_MAC[i]}" --dport "$PORT" --src-range "$FLOOD_SRC+256" --src-random \
		--rate "$FLOOD_PPS" --count $((FLOOD_PPS * FLOOD_SECS)) --duration "${FLOOD_SECS}s" >"$WORK/flood-$i.out" 2>&1 &
	LAB_PIDS[flood-$i]=$!
done
for i in 1 2; do
	wait_until "$((WAIT * 2))" counter_ge "$i" cookie_sent 100 ||
		die "h$i sent no cookies to the flood within $((WAIT * 2)) s (got $(counter "$i" cookie_sent)): its prefix budget is not spent"
done

# connect ADDR N: N connects from the client to ADDR (timed_connects.py), into $WORK/conn-ADDR.
connect() {
	in_ns "$C_NS" timeout 60 /usr/bin/python3 "$DT_ROOT/tests/netns/timed_connects.py" "$2" 5 "$1" "$PORT" \
		dthrottle-ok >"$WORK/conn-$1" 2>&1
	grep -c '^ok ' "$WORK/conn-$1"
}
# check_connects NAME FROM I N: N connects from FROM to host I must all complete; a failure
# says how each connect ended and host I's cookie counters.
check_connects() {
	local name=$1 from=$2 i=$3 n=$4 ok doc what
	ok=$(connect "${M_IP[i]}" "$n")
	doc=$(stats_json "${M_PIN[i]}")
	what="connections from $from to h$i that completed (of $n; they ended:"
	what+=" $(grep -v '^late ' "$WORK/conn-${M_IP[i]}" | sed 's/^ok .*/ok/' | sort | uniq -c | xargs);"
	what+=" h$i's cookies sent $(json_num "$doc" cookie_sent), cookie ACKs valid"
	what+=" $(json_num "$doc" cookie_ack_valid), invalid $(json_num "$doc" cookie_ack_invalid))"
	check_eq "$name" "$what" "$ok" "$n"
}

# --- 1. control: an address never verified is challenged by h2 --------------------------------
ip -n "$C_NS" route change "${M_IP[2]}/32" dev "${M_CIF[2]}" src "$OTHER" || die "cannot route from $OTHER"
check_connects peers/control-connects "$OTHER" 2 1
check_ge peers/control-challenged "cookies h2 sent $OTHER (a client it has not verified)" "$(cookies_seen 3)" 1
ip -n "$C_NS" route change "${M_IP[2]}/32" dev "${M_CIF[2]}" src "$CLIENT" || die "cannot route from $CLIENT"
check_until peers/h1-refuses-h2 "h1 did not refuse h2's verified source within $WAIT s (verified.refused_peer \$(counter 1 .cluster.verified.refused_peer), h2 told \$(counter 2 .cluster.verified.shared))" \
	counter_ge 1 .cluster.verified.refused_peer 1
check_eq peers/h1-learned-none "verified sources h1 learned from h2 (--peer-verified h3)" \
	"$(counter 1 .cluster.verified.learned)" 0
check peers/h1-refusal-logged "h1 did not log the refusal of h2's verified sources" \
	grep -q 'verified sources of h2: --peer-verified does not list it' "$WORK/agent-sp1.log"

# --- 2. the client verified by h1's cookie; h2 learns it --------------------------------------
valid0=$(counter 1 cookie_ack_valid)
check_connects peers/h1-connects "the client" 1 1
check_ge peers/h1-challenged "cookies h1 sent the client" "$(cookies_seen 1)" 1
check_ge peers/h1-verified "valid cookie ACKs at h1" "$(counter 1 cookie_ack_valid)" $((valid0 + 1))
check_until peers/h2-learned "h2 did not learn a verified source from h1 within $WAIT s (verified.learned \$(counter 2 .cluster.verified.learned), h1 told \$(counter 1 .cluster.verified.shared))" \
	counter_ge 2 .cluster.verified.learned 1

# --- 3. the client at h2: not challenged ------------------------------------------------------
hits0=$(counter 2 verified_hits)
check_connects peers/h2-connects "the client" 2 "$CONNS"
check_eq peers/h2-no-cookie "cookies h2 sent the client h1 had verified" "$(cookies_seen 2)" 0
check_ge peers/h2-verified-hits "h2's verified_hits after the client's connects (before: $hits0)" \
	"$(counter 2 verified_hits)" $((hits0 + CONNS))
explained=$("$AGENT" explain "$CLIENT" --pin-dir "${M_PIN[2]}" --watch 0 2>&1)
check peers/h2-explain "agent explain on h2 does not say the client is verified: $(grep -i verified <<<"$explained")" \
	grep -q 'verified (SYN cookies): yes, for' <<<"$explained"
# reload_h1 CHECK SAYS: `agent reload` of h1 (its output in RELOAD_OUT) must say SAYS.
reload_h1() {
	RELOAD_OUT=$("$AGENT" reload --pin-dir "${M_PIN[1]}" 2>&1)
	check "peers/$1" "agent reload on h1 does not say '$2' (it said: $RELOAD_OUT)" grep -qF -- "$2" <<<"$RELOAD_OUT"
}
# verified_at I ADDR: `agent explain` on host I says ADDR is verified (by a cookie or a peer).
verified_at() { "$AGENT" explain "$2" --pin-dir "${M_PIN[$1]}" --watch 0 2>&1 | grep -q 'verified (SYN cookies): yes, for'; }
not_verified_at() { ! verified_at "$@"; }
# h1_verified_intake: what became of the verified sources messages h1 received (for a failure).
h1_verified_intake() {
	local doc
	doc=$(stats_json "${M_PIN[1]}")
	printf 'messages received %s, refused (--peer-verified) %s, stale messages %s, expired in transit %s, ' \
		"$(json_get "$doc" '.cluster.verified.messages_received // empty')" \
		"$(json_get "$doc" '.cluster.verified.refused_peer // empty')" \
		"$(json_get "$doc" '.cluster.rejected["stale verified"] // 0')" \
		"$(json_get "$doc" '.cluster.verified.expired_in_transit // empty')"
	printf 'kept %s, over budget %s, write failures %s' "$(json_get "$doc" '.cluster.verified.kept // empty')" \
		"$(json_get "$doc" '.cluster.verified.over_budget // empty')" \
		"$(json_get "$doc" '.cluster.verified.write_failed // empty')"
}
# h2_verifies ADDR NAME: ADDR connects to h2 (a cookie verifies it there), h1 learns it.
h2_verifies() {
	local learned0
	learned0=$(counter 1 .cluster.verified.learned)
	ip -n "$C_NS" route change "${M_IP[2]}/32" dev "${M_CIF[2]}" src "$1" || die "cannot route from $1"
	check_connects "peers/$2-connects" "$1" 2 1
	check_until "peers/h1-learns-$2" "h1 did not learn h2's verified source $1 within $WAIT s (verified.learned \$(counter 1 .cluster.verified.learned), was $learned0; h2's valid cookie ACKs \$(counter 2 cookie_ack_valid), verified sources told \$(counter 2 .cluster.verified.shared); at h1: \$(h1_verified_intake))" \
		counter_ge 1 .cluster.verified.learned $((learned0 + 1))
	check "peers/h1-$2-verified" "agent explain on h1 does not say $1 (h2 verified it) is verified before the reload" \
		verified_at 1 "$1"
}
# withdrawn_at_h1 ADDR NAME WHY WITHDRAWN0: after a reload of h1 that did WHY, ADDR (only h2
# verified it) is no longer verified at h1, verified.withdrawn went past WITHDRAWN0, and the
# client h1's own cookie verified stays verified.
withdrawn_at_h1() {
	check "peers/h1-withdrew-$2" "$1, verified at h1 only by h2, is still verified there after a reload $3: $("$AGENT" explain "$1" --pin-dir "${M_PIN[1]}" --watch 0 2>&1 | grep -i 'verified (')" \
		not_verified_at 1 "$1"
	check_until "peers/h1-withdrawn-$2-counted" "h1's verified.withdrawn did not reach $(($4 + 1)) within $WAIT s of the reload (it was \$(counter 1 .cluster.verified.withdrawn))" \
		counter_ge 1 .cluster.verified.withdrawn $(($4 + 1))
	check "peers/h1-keeps-own-$2" "the client, verified at h1 by h1's own cookie, is no longer verified there after a reload $3" \
		verified_at 1 "$CLIENT"
}

# --- 4. h1's --config file lists h2 now: a reload takes it --------------------------------------
echo "peer-verified = h2" >"$WORK/h1.conf"
reload_h1 reload-says '--peer-verified: h2 (was h3)'
h2_verifies "$THIRD" third
# --- 5. h2 off h1's --peer-verified again: what h2 verified is no longer verified at h1 ----------
echo "peer-verified = h3" >"$WORK/h1.conf"
reload_h1 reload-removes-h2 '--peer-verified: h3 (was h2), 1 verified source of the peers no longer listed deleted'
withdrawn_at_h1 "$THIRD" third "took h2 off --peer-verified" 0
# --- 6. h2 off h1's peer list, under --peer-verified all: what h2 verified goes from h1 too ----
echo "peer-verified = all" >"$WORK/h1.conf"
reload_h1 reload-all '--peer-verified: all (was h3)'
h2_verifies "$FOURTH" fourth
withdrawn0=$(counter 1 .cluster.verified.withdrawn)
: >"$WORK/h1.peers"
reload_h1 reload-removes-peer "peers: 1 removed (${M_CTL[2]}:7700); 0 peers; 1 verified source of the removed peers deleted"
withdrawn_at_h1 "$FOURTH" fourth "took h2 off h1's peers (--peer-verified all)" "$withdrawn0"
echo "syncookie_peers: h1 told $(counter 1 .cluster.verified.shared) verified sources, h2 learned" \
	"$(counter 2 .cluster.verified.learned); h2 sent the client $(cookies_seen 2) cookies, $OTHER $(cookies_seen 3)"
lab_finish
