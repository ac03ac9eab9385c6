#!/usr/bin/env bash
# test_match.sh - conditions beside cidr (docs/rules.md "Conditions") on real packets.
#
# The agent runs with a default rule that throttles nothing (100000/s per source: a bucket per
# source shows what it passed) and with:
#   ntp-refl   198.18.0.0/15  udp sport 123, 20/s burst 10 per source (a reflection flood)
#   ping       198.18.0.0/15  icmp type 8 (echo request), 5/s burst 5
#   icmp-other 198.18.0.0/15  icmp, allow (counts the other ICMP apart)
#   ping6      2001:2::/48    icmpv6 type 128 (echo request), 5/s burst 5
# Then:
#   1. two sources send UDP from port 123 and, at the same time, other UDP (pktgen, 400 pps
#      each stream): the port-123 stream is held to its budget per source, every other
#      datagram passes (the default rule's bucket of each source counts exactly what was
#      sent), and the sink gets both;
#   2. ICMP echo requests and timestamp requests (type 13) from the client, IPv4, and
#      ICMPv6 echo requests: echo is held to its budget, every timestamp request passes;
#   3. `agent stats --json` and `agent explain` say what each rule needs;
#   4. `agent check` refuses icmp_type on a tcp rule with FILE:LINE and what to write.
# About 10 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=match

PPS=400 # per stream
T=2     # seconds of each phase

lab_init dtmatch
lab_up
RULES=$WORK/rules.toml
cat >"$RULES" <<-EOF
	version = 1
	[[rule]]
	name = "ntp-refl"
	cidr = "198.18.0.0/15"
	proto = "udp"
	sport = 123
	rate = 20
	burst = 10
	[[rule]]
	name = "ping"
	cidr = "198.18.0.0/15"
	proto = "icmp"
	icmp_type = 8
	rate = 5
	burst = 5
	[[rule]]
	name = "icmp-other"
	cidr = "198.18.0.0/15"
	proto = "icmp"
	action = "allow"
	[[rule]]
	name = "ping6"
	cidr = "2001:2::/48"
	proto = "icmp"
	icmp_type = 128
	rate = 5
	burst = 5
EOF

sent() { local v; v=$(source_num "$(cat "$1")" "$2" sent); echo "${v:-0}"; }

# icmp_send FAMILY DST TYPE COUNT RATE: COUNT ICMP (FAMILY 4) or ICMPv6 (6) messages of TYPE
# from the client namespace, paced to RATE per second (bounded: COUNT / RATE + 1 s); prints
# how many the stack took.
icmp_send() {
	in_ns "$C_NS" timeout 30 python3 - "$@" <<-'EOF'
		import socket, struct, sys, time
		fam, dst, typ, count, rate = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
		def csum(b):
		    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
		    s = (s >> 16) + (s & 0xffff)
		    return ~(s + (s >> 16)) & 0xffff
		if fam == 4:
		    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
		else:  # the kernel fills in the ICMPv6 checksum
		    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
		body = struct.pack('!HH', 0x4454, 0) + bytes(12 if typ == 13 else 8)
		sent, t0 = 0, time.monotonic()
		for i in range(count):
		    hdr = struct.pack('!BBH', typ, 0, 0) + body[:2] + struct.pack('!H', i) + body[4:]
		    if fam == 4:
		        hdr = hdr[:2] + struct.pack('!H', csum(hdr)) + hdr[4:]
		    s.sendto(hdr, (dst, 0))
		    sent += 1
		    delay = t0 + (i + 1) / rate - time.monotonic()
		    if delay > 0:
		        time.sleep(delay)
		print(sent)
	EOF
}

sink_start 60 || die "the UDP sink did not start"
agent_start main --rate 100000 --burst 100000 --rules "$RULES" --stats-interval 10m || die "the agent did not start with the rules"

# --- 1. a reflection flood from port 123 beside other UDP of the same sources ------------------
SRC=198.18.1.1,198.18.1.2
send_traffic_bg refl "$WORK/refl.json" --sources "$SRC" --sport 123 --rate $((2 * PPS)) \
	--count $((2 * PPS * T)) --duration $((T + 2))s
send_traffic "$WORK/other.json" --sources "$SRC" --rate $((2 * PPS)) --count $((2 * PPS * T)) \
	--duration $((T + 2))s || die "pktgen send (other UDP) failed"
wait_traffic refl "$WORK/refl.json" || die "pktgen send (sport 123) failed"
sink_stop || die "the sink did not stop"
s1=$(stats_json) || die "agent stats --json failed"
el=$(json_num "$(cat "$WORK/refl.json")" elapsed_s)
refl_sent=$(($(sent "$WORK/refl.json" 198.18.1.1) + $(sent "$WORK/refl.json" 198.18.1.2)))
other_sent=$(($(sent "$WORK/other.json" 198.18.1.1) + $(sent "$WORK/other.json" 198.18.1.2)))
echo "phase 1: $refl_sent datagrams from port 123 and $other_sent others in ${el} s"
for src in 198.18.1.1 198.18.1.2; do
	p=$(bucket_num "$s1" $src ntp-refl passed)
	check_le "match/sport/$src/within-budget" "$src from port 123 passed more than 10 + 20/s x $el s + 2" \
		"$p" "$(calc "$(floor "$(calc "10 + 20 * $el")") + 2")"
	check_ge "match/sport/$src/dropped" "$src from port 123: too few dropped (the flood was not held)" \
		"$(bucket_num "$s1" $src ntp-refl dropped)" "$(calc "$(sent "$WORK/refl.json" $src) / 2")"
done
check_eq match/sport/accounted "ntp-refl: passed + dropped vs datagrams sent from port 123" \
	"$(($(rule_num "$s1" ntp-refl passed) + $(rule_num "$s1" ntp-refl dropped)))" "$refl_sent"
rcv() { local v; v=$(source_num "$SINK_JSON" "$1" received); echo "${v:-0}"; }
for src in 198.18.1.1 198.18.1.2; do
	check_eq "match/other-udp/$src/all-passed" "$src: other UDP passed by the default rule vs sent (none throttled)" \
		"$(bucket_num "$s1" $src default passed)" "$(sent "$WORK/other.json" $src)"
	check_eq "match/other-udp/$src/none-dropped" "$src: other UDP dropped" "$(bucket_num "$s1" $src default dropped)" 0
	check_eq "match/sink/$src" "$src: datagrams the sink received vs what XDP passed" "$(rcv $src)" \
		"$(($(bucket_num "$s1" $src default passed) + $(bucket_num "$s1" $src ntp-refl passed)))"
done

# --- 2. ICMP by type --------------------------------------------------------------------------
N=$((100 * T))
t0=$(now_s)
echo_sent=$(icmp_send 4 "$LAB_V4_HOST" 8 $N 100) || die "sending ICMP echo requests failed"
ts_sent=$(icmp_send 4 "$LAB_V4_HOST" 13 $N 200) || die "sending ICMP timestamp requests failed"
echo6_sent=$(icmp_send 6 "$LAB_V6_HOST" 128 $N 100) || die "sending ICMPv6 echo requests failed"
el2=$(calc "$(now_s) - $t0")
s2=$(stats_json) || die "agent stats --json failed"
echo "phase 2: $echo_sent echo, $ts_sent timestamp, $echo6_sent ICMPv6 echo requests in ${el2} s"
check_le match/icmp/echo-within-budget "echo requests passed more than 5 + 5/s x $el2 s + 2" \
	"$(rule_num "$s2" ping passed)" "$(calc "$(floor "$(calc "5 + 5 * $el2")") + 2")"
check_eq match/icmp/echo-accounted "ping: passed + dropped vs echo requests sent" \
	"$(($(rule_num "$s2" ping passed) + $(rule_num "$s2" ping dropped)))" "$echo_sent"
check_eq match/icmp/other-types-pass "icmp-other passed vs timestamp requests sent" \
	"$(rule_num "$s2" icmp-other passed)" "$ts_sent"
check_le match/icmp6/echo-within-budget "ICMPv6 echo requests passed more than 5 + 5/s x $el2 s + 2" \
	"$(rule_num "$s2" ping6 passed)" "$(calc "$(floor "$(calc "5 + 5 * $el2")") + 2")"
check_eq match/icmp6/echo-accounted "ping6: passed + dropped vs ICMPv6 echo requests sent" \
	"$(($(rule_num "$s2" ping6 passed) + $(rule_num "$s2" ping6 dropped)))" "$echo6_sent"

# --- 3. what the views say ------------------------------------------------------------------------
check match/stats-json/conditions "stats --json lacks ntp-refl's match: $(json_get "$(json_rule "$s2" ntp-refl)" '{cidr, when, conditions}')" \
	json_test "$(json_rule "$s2" ntp-refl)" \
	'.cidr == "198.18.0.0/15" and .when == "udp sport 123" and .conditions == {proto: "udp", sport: "123"}'
out=$("$AGENT" explain 198.18.1.1 --pin-dir "$PIN_DIR" --watch 0 2>&1)
echo "$out" | sed 's/^/  explain: /' | head -8
check match/explain/sport "explain does not list 'udp sport 123 -> rule ntp-refl'" grep -q 'udp sport 123 *-> rule ntp-refl' <<<"$out"
check match/explain/icmp "explain does not list 'icmp type 8 -> rule ping'" grep -q 'icmp type 8 *-> rule ping' <<<"$out"
out=$("$AGENT" stats --pin-dir "$PIN_DIR" --top 0 2>&1)
check match/stats-text/when "agent stats has no 'when udp sport 123' line" grep -q 'when udp sport 123' <<<"$out"

# --- 4. agent check: a condition that cannot hold is refused with FILE:LINE ---------------------
BAD=$WORK/bad.toml
printf 'version = 1\n[[rule]]\nname = "x"\ncidr = "198.18.0.0/15"\nproto = "tcp"\nicmp_type = 8\naction = "deny"\n' >"$BAD"
out=$("$AGENT" check --iface "$H_IF" --pin-dir "$WORK/pins" --rules "$BAD" 2>&1)
rc=$?
check_eq match/check/exit "agent check's exit status for icmp_type on a tcp rule ($out)" "$rc" 2
check match/check/file-line "agent check does not say $BAD:6 and what to write: $out" \
	grep -qF "$BAD:6: 'icmp_type' needs proto = \"icmp\"" <<<"$out"

agent_signal main TERM || fail match/stop "the agent did not stop on SIGTERM"
lab_finish
