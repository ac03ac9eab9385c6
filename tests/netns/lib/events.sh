# events.sh - the agent's events (docs/events.md) as a test reads them.

# event_hook FILE: writes an --on-event command that appends its stdin (one event) to FILE
# and prints its path (FILE.hook.sh). FILE starts empty.
event_hook() {
	local hook=$1.hook.sh
	printf '#!/bin/sh\ncat >>"%s"\n' "$1" >"$hook"
	chmod 0755 "$hook"
	: >"$1"
	echo "$hook"
}

# event_count FILE TYPE [KEY VALUE]...: the events of TYPE in FILE whose KEYs have VALUEs
# (compared as Python prints them: true is True).
event_count() {
	python3 - "$@" <<'PY'
import json, sys
path, kind, conds = sys.argv[1], sys.argv[2], sys.argv[3:]
n = 0
for line in open(path):
    line = line.strip()
    if not line.startswith("{"):
        continue
    e = json.loads(line)
    if e.get("v") == 1 and e.get("type") == kind and all(str(e.get(k)) == v for k, v in zip(conds[::2], conds[1::2])):
        n += 1
print(n)
PY
}
has_event() { [ "$(event_count "$@")" -ge 1 ]; }

# event_field FILE TYPE FIELD [KEY VALUE]...: FIELD (JSON) of the first event of TYPE in FILE
# whose KEYs have VALUEs.
event_field() {
	python3 - "$@" <<'PY'
import json, sys
path, kind, field, conds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
for line in open(path):
    if line.startswith("{"):
        e = json.loads(line)
        if e.get("type") == kind and all(str(e.get(k)) == v for k, v in zip(conds[::2], conds[1::2])):
            print(json.dumps(e.get(field))); break
PY
}

# event_lines FILE TYPE [FILTER]: the events of TYPE in FILE (compact, one a line) for which
# the jq FILTER is true (every one without it), e.g. event_lines "$EVENTS" ban '.offence == 2'.
event_lines() {
	jq -R -c --arg t "$2" "fromjson? | objects | select(.type == \$t) | select(${3:-true})" "$1" 2>/dev/null
}
