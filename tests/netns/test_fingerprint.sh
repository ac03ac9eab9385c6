#!/usr/bin/env bash
# test_fingerprint.sh - agent fingerprint on a real capture: a lab agent (rate 20/s, burst
# 20), 50 ordinary clients at 5 pps each (UDP, source ports 40000+, 58-byte frames) and a
# reflection flood from 8 sources (UDP source port 123, 482-byte frames, 2000 pps in all).
# `agent capture --dropped --passed` samples both; `agent fingerprint` must name source
# port 123 as the dominant value, propose a rule with sport = 123 that matches at least 95%
# of the dropped samples and under 1% of the ordinary ones, and that rule must pass
# `agent check`. About 15 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=fingerprint

lab_init dtfpr
lab_up

agent_start fp --rate 20 --burst 20 --stats-interval 10m || die "the agent did not start"
# The senders run until the capture is done (60 s at most; 110 s, within send_traffic_bg's
# 120 s bound, on an emulated CPU, make test-kernel's TCG guest, where 60 s ended them before
# the capture did), however long the waits take.
SEND_S=60
emulated && SEND_S=110
send_traffic_bg clients "$WORK/clients.json" --src-range 198.18.3.1+50 --rate 250 --count $((250 * SEND_S)) \
	--duration "${SEND_S}s"
send_traffic_bg flood "$WORK/flood.json" --src-range 198.18.9.1+8 --sport 123 --size 482 --rate 2000 \
	--count $((2000 * SEND_S)) --duration "${SEND_S}s"
wait_until 30 sources_seen 198.18.3.1 198.18.3.50 198.18.9.1 198.18.9.8 || die "the senders' sources never reached the buckets"

timeout 20 "$AGENT" capture --pin-dir "$PIN_DIR" --dropped --would-drop --passed --count 5000 --per-cpu-rate 100000 \
	--duration 3s -w "$WORK/attack.pcapng" 2>"$WORK/capture.err"
check_eq fingerprint/capture "agent capture's exit status ($(cat "$WORK/capture.err"))" "$?" 0
"$AGENT" fingerprint -r "$WORK/attack.pcapng" --name ntp-flood >"$WORK/fp.txt" 2>"$WORK/fp.err"
rc=$?
for s in clients flood; do
	alive "${LAB_PIDS[send-$s]}" || fail "fingerprint/sender-$s" "the $s sender ended before the capture did: $(cat "$WORK/$s.json.err")"
	stop_pid "${LAB_PIDS[send-$s]}"
done
sed 's/^/  | /' "$WORK/fp.txt"
check_eq fingerprint/exit "agent fingerprint's exit status ($(cat "$WORK/fp.err"))" "$rc" 0

# The first line: N samples: D dropped, P passed (O ordinary ...).
read -r dropped ordinary < <(sed -n 's/^[0-9]* samples: \([0-9]*\) dropped, [0-9]* passed (\([0-9]*\) ordinary.*/\1 \2/p' "$WORK/fp.txt")
check_ge fingerprint/dropped-samples "dropped samples in the capture" "${dropped:-}" 100
check_ge fingerprint/ordinary-samples "ordinary samples (the clients' passed packets)" "${ordinary:-}" 20
check fingerprint/top-sport "source port 123 is not the top source port value: $(grep '^sport' "$WORK/fp.txt" | head -n 1)" \
	grep -qE '^sport +udp 123 +100\.0% +0\.0%' "$WORK/fp.txt"
# "  matches A of B dropped samples (X%) and C of D ordinary ones (Y%)"
read -r hit hit_of leak leak_of < <(sed -n 's/^  matches \([0-9]*\) of \([0-9]*\) dropped samples .* and \([0-9]*\) of \([0-9]*\) ordinary.*/\1 \2 \3 \4/p' "$WORK/fp.txt")
echo "fingerprint matches ${hit:-?} of ${hit_of:-?} dropped samples and ${leak:-?} of ${leak_of:-?} ordinary ones"
check_ge fingerprint/coverage "dropped samples the fingerprint matches x 100 (95% of ${hit_of:-?})" "$((${hit:-0} * 100))" "$((${hit_of:-1} * 95))"
check_le fingerprint/leak "ordinary samples the fingerprint matches x 100 (under 1% of ${leak_of:-?})" "$((${leak:-1} * 100))" "$((${leak_of:-0} - 1))"
sed -n '/^\[\[rule\]\]/,$p' "$WORK/fp.txt" >"$WORK/rule.toml"
check fingerprint/rule "the proposed rule lacks sport = 123: $(tr '\n' ' ' <"$WORK/rule.toml")" grep -qx 'sport = 123' "$WORK/rule.toml"
{ echo "version = 1"; cat "$WORK/rule.toml"; } >"$WORK/rules.toml"
check fingerprint/check "agent check refuses the proposed rule: $("$AGENT" check --rate 1 --burst 1 --iface lo --rules "$WORK/rules.toml" 2>&1 | tail -2)" \
	"$AGENT" check --rate 1 --burst 1 --iface lo --rules "$WORK/rules.toml"

# --json: the same figures as one document, read with jq.
"$AGENT" fingerprint -r "$WORK/attack.pcapng" --name ntp-flood --json >"$WORK/fp.json" 2>"$WORK/fp-json.err"
check_eq fingerprint/json-exit "agent fingerprint --json's exit status ($(cat "$WORK/fp-json.err"))" "$?" 0
fp_json=$(cat "$WORK/fp.json")
check_eq fingerprint/json-dropped "dropped samples in --json against the text" "$(json_get "$fp_json" .dropped)" "${dropped:-}"
check_eq fingerprint/json-matches "matched dropped samples in --json against the text" "$(json_get "$fp_json" .fingerprint.dropped)" "${hit:-}"
check_eq fingerprint/json-leak "matched ordinary samples in --json against the text" "$(json_get "$fp_json" .fingerprint.ordinary)" "${leak:-}"
check_eq fingerprint/json-top-sport "the top source port value in --json" \
	"$(json_get "$fp_json" '.fields[] | select(.field == "sport") | .values[0] | "\(.value) \(.dropped_share) \(.ordinary_share)"')" "udp 123 1 0"
check fingerprint/json-condition "--json's fingerprint lacks the condition sport 123: $(json_get "$fp_json" .fingerprint.conditions)" \
	jq -e '.fingerprint.conditions | index("sport 123")' "$WORK/fp.json"
check_eq fingerprint/json-rule "--json's rule against the text's" "$(json_get "$fp_json" .fingerprint.rule)" "$(cat "$WORK/rule.toml")"

agent_signal fp TERM || die "the agent did not exit within 10 s of SIGTERM"
lab_finish
