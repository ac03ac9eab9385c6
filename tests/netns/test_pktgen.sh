#!/usr/bin/env bash
# test: runs alone (timing-heavy: tests/run_all.sh starts nothing beside it)
# test_pktgen.sh - the traffic tool itself, with no throttle in the path.
#
#   - frames it builds are valid: the host stack delivers every IPv4 and IPv6 one to
#     the sink (a bad IP or UDP checksum would be dropped by the kernel), counted
#     per source;
#   - its TCP SYNs (--tcp-syn) are valid too: a real listener's stack answers every one
#     (a half-open connection per source, IPv4 and IPv6), with no checksum error;
#   - pacing never sends faster than asked, and --duration and --count both stop it;
#   - its guards: no run without both bounds, no address outside 198.18.0.0/15 and
#     2001:2::/48, no interface but a veth; each refusal says why, exit code 2
#     (usage) or 1 (runtime).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=pktgen

lab_init dtnet
lab_up
sink_start 30 || die "the UDP sink did not start"

# --- valid frames, per-source counts --------------------------------------------------------
send_traffic "$WORK/ok.json" --sources 198.18.3.1,198.18.3.2,2001:2::3:1 --rate 100 --count 30 \
	--duration 5s || die "pktgen send failed"
ok=$(cat "$WORK/ok.json")
sink_stop || die "the sink did not exit cleanly"
for src in 198.18.3.1 198.18.3.2 2001:2::3:1; do
	check_eq "pktgen/frames/$src/sent" "frames sent from $src" "$(source_num "$ok" "$src" sent)" 10
	check_eq "pktgen/frames/$src/delivered" "datagrams from $src the sink received" \
		"$(source_num "$SINK_JSON" "$src" received)" 10
done
# Pacing: 30 frames at 100/s span at least 29 intervals of 10 ms.
check_ge pktgen/pacing "seconds from first to last of 30 frames at 100/s" "$(json_num "$ok" elapsed_s)" 0.287

# --- TCP SYNs: a real listener answers each ---------------------------------------------------
# One SYN from each of 10 IPv4 and 10 IPv6 sources: the listener's stack keeps one half-open
# connection per valid SYN (its SYN-ACK goes to an address nobody has, so none completes).
SYN_PORT=8080
line_listener "$H_NS" "$SYN_PORT" syn || die "the TCP listener did not start"
csum0=$(tcp_counter TcpInCsumErrors)
send_traffic "$WORK/syn.json" --tcp-syn --dport "$SYN_PORT" --src-range 198.18.4.1+10 \
	--src-range 2001:2::4:1+10 --rate 200 --count 20 --duration 5s || die "pktgen send --tcp-syn failed"
check_eq pktgen/tcp-syn/sent "SYNs pktgen sent" "$(json_num "$(cat "$WORK/syn.json")" sent)" 20
syn_recv_all() { [ "$(syn_recv_count "$SYN_PORT")" -ge 20 ]; }
wait_until 10 syn_recv_all
check_eq pktgen/tcp-syn/answered "half-open connections at the listener (one per SYN it accepted)" \
	"$(syn_recv_count "$SYN_PORT")" 20
check_eq pktgen/tcp-syn/v6-answered "half-open connections from 2001:2::4:0/112 at the listener" \
	"$(in_ns "$H_NS" ss -Htn state syn-recv "sport = :$SYN_PORT" | grep -c '2001:2::4:')" 10
check_eq pktgen/tcp-syn/checksums "TCP checksum errors at the host" \
	"$(($(tcp_counter TcpInCsumErrors) - csum0))" 0

# --- bounds: whichever of --count and --duration comes first --------------------------------
send_traffic "$WORK/dur.json" --sources 198.18.3.1 --rate 100 --count 1000000 --duration 300ms ||
	die "pktgen send failed"
check_le pktgen/duration-bound "frames sent in 300ms at 100/s" "$(json_num "$(cat "$WORK/dur.json")" sent)" 31
# A rate above what the link takes (pktgen catches up on every frame due): D still ends it.
t0=$(now_s)
send_traffic "$WORK/max.json" --src-range 198.18.5.0+256 --src-random --rate 10000000 --count 100000000 \
	--duration 500ms || die "pktgen send failed"
check_le pktgen/duration-bound-at-max-rate "seconds pktgen ran with --rate 10000000 --duration 500ms" \
	"$(calc "$(now_s) - $t0")" 1.5
echo "pktgen: $(json_num "$(cat "$WORK/max.json")" sent) frames in 500 ms at the highest rate"
send_traffic "$WORK/cnt.json" --sources 198.18.3.1 --rate 1000 --count 7 --duration 10s ||
	die "pktgen send failed"
check_eq pktgen/count-bound "frames sent with --count 7" "$(json_num "$(cat "$WORK/cnt.json")" sent)" 7

# --- refusals -----------------------------------------------------------------------------
# refused NAME EXPECTED_RC PATTERN ARGS...: runs pktgen in the client namespace.
refused() {
	local name=$1 rc=$2 pattern=$3 out code
	shift 3
	out=$(in_ns "$C_NS" timeout 20 "$PKTGEN" "$@" 2>&1)
	code=$?
	echo "$name: exit $code: $(head -n 1 <<<"$out")"
	check_eq "pktgen/refuse/$name/exit-code" "exit code of 'pktgen $*'" "$code" "$rc"
	check "pktgen/refuse/$name/message" "'pktgen $*' said '$out', expected '$pattern'" \
		grep -qE -- "$pattern" <<<"$out"
}
base=(send --iface "$C_IF" --dst-mac "$H_MAC" --rate 10)
refused no-count 2 'both --count and --duration' "${base[@]}" --dst-ip "$LAB_V4_HOST" \
	--sources 198.18.3.1 --duration 1s
refused no-duration 2 'both --count and --duration' "${base[@]}" --dst-ip "$LAB_V4_HOST" \
	--sources 198.18.3.1 --count 5
refused dst-outside 2 'destination 192.0.2.1 is outside' "${base[@]}" --dst-ip 192.0.2.1 \
	--sources 198.18.3.1 --count 5 --duration 1s
refused src-outside 2 'source 10.1.1.1 is outside' "${base[@]}" --dst-ip "$LAB_V4_HOST" \
	--sources 198.18.3.1,10.1.1.1 --count 5 --duration 1s
refused src6-outside 2 'source 2001:db8::1 is outside' "${base[@]}" --dst-ip "$LAB_V6_HOST" \
	--sources 2001:db8::1 --count 5 --duration 1s
refused range-leaves 2 "leaves 198.18.0.0/15" "${base[@]}" --dst-ip "$LAB_V4_HOST" \
	--src-range 198.19.255.255+2 --count 5 --duration 1s
refused no-dst-family 2 'no --dst-ip of its family' "${base[@]}" --dst-ip "$LAB_V4_HOST" \
	--sources 2001:2::3:1 --count 5 --duration 1s
refused duration-too-long 2 '--duration' "${base[@]}" --dst-ip "$LAB_V4_HOST" \
	--sources 198.18.3.1 --count 5 --duration 2h
refused not-veth 1 'not a veth interface' send --iface lo --dst-mac "$H_MAC" --rate 10 \
	--dst-ip "$LAB_V4_HOST" --sources 198.18.3.1 --count 5 --duration 1s
refused unknown-iface 1 "unknown interface 'dtnope$$'" send --iface "dtnope$$" --dst-mac "$H_MAC" \
	--rate 10 --dst-ip "$LAB_V4_HOST" --sources 198.18.3.1 --count 5 --duration 1s
refused sink-no-duration 2 '--duration is required' sink --port 9999
refused syn-size 2 'bare SYN' "${base[@]}" --dst-ip "$LAB_V4_HOST" --tcp-syn \
	--sources 198.18.3.1 --count 5 --duration 1s --size 200
refused no-mode 2 'send or sink'

lab_finish
