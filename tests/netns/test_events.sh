#!/usr/bin/env bash
# test_events.sh - the agent's events (docs/events.md) reach the operator's tools.
#
# One agent with a packet rule "web" (100/s per source), a query socket (group nogroup),
# --on-event running a tiny script that appends its stdin to a file, --attack-drops 300
# and --attack-quiet 2s:
#   1. An EVENTS 1 subscriber (root: an admin) is answered OK; a client as nobody gets
#      "ERR not allowed" and no stream.
#   2. BAN over the query socket: a "ban" event (schema 1, origin query) reaches the
#      command's file and the subscriber; UNBAN: an "unban" event (why lifted) the same.
#   3. One source flooding "web" at 2000/s for 3 s: "attack_started" for web naming that
#      source first among its top sources; once the flood stops, "attack_ended" after the
#      quiet spell, not before.
#   4. The counters in `agent stats --json` ("events") say what was delivered, and that
#      nothing failed.
# Waits on the files and counters the agent writes, never fixed sleeps. About 15 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=events

lab_init dtev
lab_up
chmod 0755 "$WORK" # a client as nobody must reach the socket inside
SOCK=$WORK/q.sock
EVENTS=$WORK/events.jsonl
STREAM=$WORK/stream.jsonl
clients_group

cat >"$WORK/rules.toml" <<'EOF'
version = 1

[[rule]]
name = "web"
cidr = "198.18.0.0/15"
rate = 100
burst = 100
EOF
# The command: no shell in the agent; the script is the operator's.
HOOK=$(event_hook "$EVENTS")

agent_start ev --rules "$WORK/rules.toml" --query-socket "$SOCK" --query-socket-group "$CLIENTS_GROUP" \
	--on-event "$HOOK" --attack-drops 300 --attack-quiet 2s --stats-interval 10m ||
	die "the agent did not start"

events_num() { json_num "$(json_get "$(stats_json)" '.events')" "$1"; }
events_num_ge() { num_ge "$(events_num "$1")" "$2"; }  # for wait_until: read again each time

# --- 1. the stream: admins only ---------------------------------------------------------------
# A subscriber (root) writes what it reads to $STREAM, its first line the answer.
"$PYTHON" - "$SOCK" "$STREAM" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"EVENTS 1\n")
with open(sys.argv[2], "wb", buffering=0) as out:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out.write(chunk)
PY
LAB_PIDS[subscriber]=$!
wait_until 10 grep -qs '^OK$' "$STREAM"
check events/subscribe "EVENTS 1 from root was not answered OK (got: $(head -c 200 "$STREAM" 2>/dev/null))" \
	grep -q '^OK$' "$STREAM"
got=$(query_ask --as 65534 "$SOCK" "EVENTS 1")
check events/non-admin-refused "EVENTS 1 from nobody: got '$got', expected 'ERR not allowed'" \
	[ "$got" = "ERR not allowed" ]
wait_until 5 events_num_ge subscribers 1
check_eq events/one-subscriber "subscribers in agent stats (root's only, nobody's refused)" "$(events_num subscribers)" 1

# --- 2. ban and unban over the query socket ---------------------------------------------------
got=$(query_ask "$SOCK" "BAN 198.18.9.9 1m events test")
check events/ban-ok "BAN over the query socket: got '$got', expected OK" [ "$got" = OK ]
wait_until 10 has_event "$EVENTS" ban prefix 198.18.9.9 origin query
check events/ban-command "no ban event for 198.18.9.9 (origin query) reached the --on-event command: $(tail -3 "$EVENTS")" \
	has_event "$EVENTS" ban prefix 198.18.9.9 origin query reason "events test"
wait_until 10 has_event "$STREAM" ban prefix 198.18.9.9
check events/ban-stream "no ban event for 198.18.9.9 reached the EVENTS subscriber: $(tail -3 "$STREAM")" \
	has_event "$STREAM" ban prefix 198.18.9.9 origin query
check_eq events/ban-once "ban events for 198.18.9.9 at the command (told once, not again by the scan)" \
	"$(event_count "$EVENTS" ban prefix 198.18.9.9)" 1
got=$(query_ask "$SOCK" "UNBAN 198.18.9.9")
check events/unban-ok "UNBAN over the query socket: got '$got', expected OK" [ "$got" = OK ]
wait_until 10 has_event "$EVENTS" unban prefix 198.18.9.9 why lifted
check events/unban-command "no unban event (why lifted) for 198.18.9.9 at the command: $(tail -3 "$EVENTS")" \
	has_event "$EVENTS" unban prefix 198.18.9.9 why lifted

# --- 3. a flood: attack started, then ended after the quiet spell ----------------------------
send_traffic "$WORK/flood.json" --sources 198.18.0.50 --rate 2000 --count 6000 --duration 3s ||
	die "pktgen send failed"
FLOOD_END=$(now_s)
wait_until 10 has_event "$EVENTS" attack_started rule web
check events/attack-started "no attack_started for rule web at the command: $(tail -3 "$EVENTS")" \
	has_event "$EVENTS" attack_started rule web
top=$(event_field "$EVENTS" attack_started top)
check events/attack-top-source "attack_started's top sources do not name 198.18.0.50 first: $top" \
	json_test "$top" '.[0].source == "198.18.0.50"'
wait_until 15 has_event "$EVENTS" attack_ended rule web
check events/attack-ended "no attack_ended for rule web within 15 s of the flood's end: $(tail -3 "$EVENTS")" \
	has_event "$EVENTS" attack_ended rule web
ended_after=$(calc "$(date -r "$EVENTS" +%s.%N) - $FLOOD_END")
check_ge events/attack-quiet "attack_ended this long after the flood stopped (s; --attack-quiet 2s)" "$ended_after" 1.5
check_eq events/attack-once "attack_started events for web (one flood, no flapping)" \
	"$(event_count "$EVENTS" attack_started rule web)" 1
wait_until 10 has_event "$STREAM" attack_ended rule web
check events/attack-stream "the subscriber did not get attack_ended" has_event "$STREAM" attack_ended rule web

# --- 4. the counters ------------------------------------------------------------------------
wait_until 5 events_num_ge command_ok 4
check_ge events/command-ok "--on-event children that exited 0 (ban, unban, attack started and ended)" \
	"$(events_num command_ok)" 4
check_eq events/command-failures "--on-event failures" "$(events_num command_failures)" 0
check_ge events/stream-delivered "lines given to the subscriber" "$(events_num stream_delivered)" 4
check_eq events/emitted-vs-file "events emitted vs lines the command wrote" "$(events_num emitted)" \
	"$(grep -c '^{' "$EVENTS")"

lab_finish
