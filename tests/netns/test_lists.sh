#!/usr/bin/env bash
# test_lists.sh - allow and deny lists (docs/lists.md) on real traffic: a 1,000,000-line
# deny file loads and is enforced; a reload with a bad line changes nothing; the allow
# list beats a deny rule.
#
# The rules file names allow_file and deny_file (relative to its folder) and holds a deny
# rule for 198.18.4.0/24. The deny file has 1,000,000 lines: 3 comments, 65,536 IPv4
# /32s (all of 198.19.0.0/16), 934,460 IPv6 /128s in 2001:2:0:1::/64 and an ipset line
# (add blocked 2001:2:0:2::/64). Packets from its first, middle and last prefix (and the last IPv4 one) are
# dropped, counted by the deny list, the last ones from the first packet after the start
# (they send across it); an unlisted source passes. 198.18.4.4, on the allow
# list, passes the deny rule; 198.18.4.5 does not. Then a line "not-an-address" appended
# to the deny file: `agent reload` exits 1 naming FILE:LINE, and the old list is still
# enforced. Then the bad line and the first prefix removed: the reload swaps the new list
# in (the first prefix passes, the last is still dropped). About 20 s (the file is
# generated, loaded twice and parsed three times).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=lists

N=20 # packets per source
V4_LINES=65536
LINES=1000000

lab_init dtlst
lab_up

RULES=$WORK/rules.toml
DENY=$WORK/lists/deny.netset
mkdir -p "$WORK/lists"
cat >"$RULES" <<'TOML'
version = 1
allow_file = "lists/allow.txt"
deny_file = "lists/deny.netset"
[[rule]]
name = "blocked"
cidr = "198.18.4.0/24"
action = "deny"
TOML
printf '# the test allow list\n198.18.4.4\n' >"$WORK/lists/allow.txt"
# 1,000,000 lines, FireHOL style, with an ipset line among them.
awk -v v4="$V4_LINES" -v total="$LINES" 'BEGIN {
	print "#"; print "# a generated deny list: 198.19.0.0/16 as /32s, then 2001:2:0:1::/64 as /128s"; print "#"
	for (i = 0; i < v4; i++) printf "198.19.%d.%d\n", int(i / 256), i % 256
	for (i = 1; i <= total - v4 - 4; i++) printf "2001:2:0:1::%x:%x\n", int(i / 65536), i % 65536
	print "add blocked 2001:2:0:2::/64"
}' >"$DENY"
lines=$(wc -l <"$DENY")
prefixes=$(grep -vc '^#' "$DENY")
FIRST=198.19.0.0
LAST_V4=198.19.255.255
MIDDLE=$(sed -n 500000p "$DENY") # an IPv6 /128
LAST=2001:2:0:2::9                # in the last line's /64
echo "deny file: $lines lines, $prefixes prefixes ($V4_LINES IPv4)"

deny_dropped() { json_num "$(json_value "$1" deny)" dropped; }

# In force from the first packet: the last lines' sources send from before the start
# until the deny list has dropped some of theirs. Had the program been attached before
# the lists were in force, their packets of that window would have reached the rules and
# made buckets (an IPv6 source's: its /64's).
EARLY=$LAST_V4,$LAST
send_traffic_bg early "$WORK/early.json" --sources "$EARLY" --rate 1000 --count 120000 --duration 120s
t0=$(now_s)
agent_start lists --rules "$RULES" --rate 100000 --burst 100000 --stats-interval 10m ||
	die "the agent did not start with a 1M-line deny list"
load_line=$(grep -m1 'lists in force' "$(agent_log lists)")
echo "agent up after $(calc "$(now_s) - $t0") s; $load_line"
check lists/first-packet/sender-ran "the sender of $EARLY stopped before the agent was up (nothing to test)" \
	alive "${LAB_PIDS[send-early]}"
early_dropped() { s0=$(stats_json) && num_ge "$(deny_dropped "$s0")" 100; }
wait_until 20 early_dropped
stop_pid "${LAB_PIDS[send-early]}"
s0=$(stats_json) || die "agent stats --json failed"
check_ge lists/first-packet/dropped "deny-list drops while $EARLY sent across the start" "$(deny_dropped "$s0")" 100
# The buckets of KEY: of the address itself, or of any address of an IPv6 /64 (KEY ending in ::).
early='[.sources[] | select(.source == $k or ($k | endswith("::")) and (.source | startswith($k)))]'
for key in 198.19.255.255 2001:2:0:2::; do
	check_eq "lists/first-packet/$key" "buckets of $key (the deny list's last lines) since the program was attached: $(json_get "$s0" "$early" --arg k "$key")" \
		"$(json_get "$s0" "$early | length" --arg k "$key")" 0
done
check lists/loaded "the log does not say the lists are in force" \
	grep -q "deny list $V4_LINES IPv4 + $((prefixes - V4_LINES)) IPv6 prefixes ($DENY)" <<<"$load_line"
load_s=$(sed -n 's/.*loaded in \([0-9.]*\) s.*/\1/p' <<<"$load_line")
check_le lists/load-time "seconds to load $prefixes prefixes into the kernel" "$load_s" 60

# offer NAME SOURCES: N packets from each source (comma-separated).
offer() {
	local n
	n=$(tr ',' '\n' <<<"$2" | wc -l)
	send_traffic "$WORK/$1.json" --sources "$2" --rate 2000 --count $((N * n)) --duration 5s
}
sent() { source_num "$(cat "$1")" "$2" sent; }
# received SRC: datagrams the sink got from SRC (0: the sink lists no source it never heard).
received() {
	local n
	n=$(source_num "$SINK_JSON" "$1" received)
	echo "${n:-0}"
}

DENIED="$FIRST,$LAST_V4,$MIDDLE,$LAST"
# 198.18.4.4 is banned too: the allow list comes before bans (docs/lists.md "Order").
out=$("$AGENT" ban 198.18.4.4 --for 1m --reason "the allow list beats it" --pin-dir "$PIN_DIR" 2>&1)
check_eq lists/ban-allow-listed/exit "agent ban 198.18.4.4 (on the allow list) exit code: $out" "$?" 0
sink_start 30 || die "the UDP sink did not start"
offer p1 "$DENIED,198.18.3.3,198.18.4.4,198.18.4.5" || die "pktgen send failed"
sink_stop "$(($(sent "$WORK/p1.json" 198.18.3.3) + $(sent "$WORK/p1.json" 198.18.4.4)))" ||
	die "the sink did not exit cleanly"
s1=$(stats_json) || die "agent stats --json failed"
total=0
for src in ${DENIED//,/ }; do
	check_eq "lists/deny/$src" "$src (on the deny list): datagrams delivered" \
		"$(received "$src")" 0
	total=$((total + $(sent "$WORK/p1.json" "$src")))
done
check_eq lists/deny/counted "the deny list's dropped vs frames sent from its sources" \
	"$(($(deny_dropped "$s1") - $(deny_dropped "$s0")))" "$total"
check_eq lists/unlisted "198.18.3.3 (on no list): datagrams delivered vs sent" \
	"$(received 198.18.3.3)" "$(sent "$WORK/p1.json" 198.18.3.3)"
check_eq lists/allow-beats-ban-and-deny-rule "198.18.4.4 (allow list, banned, deny rule): datagrams delivered vs sent" \
	"$(received 198.18.4.4)" "$(sent "$WORK/p1.json" 198.18.4.4)"
check_eq lists/deny-rule "198.18.4.5 (deny rule only): datagrams delivered" \
	"$(received 198.18.4.5)" 0
check_eq lists/allow/counted "the allow list's passed vs frames sent from 198.18.4.4" \
	"$(json_num "$(json_value "$s1" allow)" passed)" "$(sent "$WORK/p1.json" 198.18.4.4)"
bans=$("$AGENT" bans --pin-dir "$PIN_DIR" --json)
check lists/ban-allow-listed/listed "agent bans does not list 198.18.4.4: $bans" grep -q '"198.18.4.4' <<<"$bans"
text=$("$AGENT" stats --pin-dir "$PIN_DIR")
check lists/stats-text "agent stats has no deny list line: $(grep -A2 '^lists:' <<<"$text")" \
	grep -q "deny list    $V4_LINES IPv4 + $((prefixes - V4_LINES)) IPv6 prefixes, dropped $(deny_dropped "$s1")" <<<"$text"
ex=$("$AGENT" explain --pin-dir "$PIN_DIR" "$MIDDLE" 2>&1)
check lists/explain "agent explain $MIDDLE does not say it is on the deny list: $ex" grep -q 'on the deny list' <<<"$ex"

# --- a reload with a bad line changes nothing ---------------------------------------------
echo "not-an-address" >>"$DENY"
t0=$(now_s)
out=$("$AGENT" reload --pin-dir "$PIN_DIR" 2>&1)
rc=$?
echo "reload (bad line, exit $rc, $(calc "$(now_s) - $t0") s): $out"
check_eq lists/reload-bad/exit "agent reload exit code for a deny file with a bad line" "$rc" 1
check lists/reload-bad/file-line "the message does not name $DENY:$((lines + 1)): $out" \
	grep -qF "$DENY:$((lines + 1)): 'not-an-address' is not an IPv4 or IPv6 address" <<<"$out"
check lists/reload-bad/alive "the agent exited after a bad reload" alive "$AGENT_PID"
offer p2 "$FIRST,$LAST" || die "pktgen send failed"
s2=$(stats_json) || die "agent stats --json failed"
check_eq lists/reload-bad/still-enforced "more deny-list drops vs frames sent from $FIRST and $LAST" \
	"$(($(deny_dropped "$s2") - $(deny_dropped "$s1")))" "$(($(sent "$WORK/p2.json" "$FIRST") + $(sent "$WORK/p2.json" "$LAST")))"

# --- a good reload swaps the new list in whole ---------------------------------------------
sed -i -e '$d' -e "/^$FIRST\$/d" "$DENY" # the bad line and the first prefix gone
out=$("$AGENT" reload --pin-dir "$PIN_DIR" 2>&1)
rc=$?
echo "reload ($FIRST removed, exit $rc): $out"
check_eq lists/reload-good/exit "agent reload exit code for the corrected deny file" "$rc" 0
# `agent reload` answers once the new tries are in their slots: agent stats reads the slot.
text=$("$AGENT" stats --pin-dir "$PIN_DIR")
check lists/reload-good/in-force "agent stats does not show the new deny list: $(grep -A2 '^lists:' <<<"$text")" \
	grep -q "deny list    $((V4_LINES - 1)) IPv4 + $((prefixes - V4_LINES)) IPv6 prefixes" <<<"$text"
sink_start 30 || die "the UDP sink did not start"
offer p3 "$FIRST,$LAST" || die "pktgen send failed"
sink_stop "$(sent "$WORK/p3.json" "$FIRST")" || die "the sink did not exit cleanly"
check_eq lists/reload-good/removed "$FIRST (no longer listed): datagrams delivered vs sent" \
	"$(received "$FIRST")" "$(sent "$WORK/p3.json" "$FIRST")"
check_eq lists/reload-good/kept "$LAST (still listed): datagrams delivered" "$(received "$LAST")" 0
agent_signal lists TERM || die "the agent did not exit within 10 s of SIGTERM"
lab_finish
