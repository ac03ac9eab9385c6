#!/usr/bin/env bash
# test_units.sh - the systemd units as systemd reads them (there is no systemd as PID 1 here),
# and the key-file rules they rely on:
#
#   1. packaging/dthrottle@.service.in and packaging/dthrottle-hub.service.in, their
#      placeholders filled and ExecStart pointed at the built agent: systemd-analyze verify
#      accepts both without a word.
#   2. Their settings: the agent's UMask=0077, LimitNOFILE= above the query server's default
#      connection cap, MemoryMax= at least the stated 512 B per default --max-sources + 512 MiB
#      + 224 B per list prefix the agent accepts (measured: packaging/dthrottle@.service.in),
#      the bounding set CAP_BPF CAP_NET_ADMIN CAP_PERFMON CAP_SETPCAP CAP_CHOWN (the one
#      test_privileges.sh starts an agent with), NoNewPrivileges; the hub's DynamicUser=yes,
#      no capability, its key through LoadCredential=; and systemd's own reading of them
#      (systemd-analyze security --offline).
#   2b. The agent's and the bouncer's (dthrottle-crowdsec@.service) kernel-facing hardening:
#      /proc/sys, /sys and sysrq read-only (ProtectKernelTunables=yes) but /sys/fs/bpf, where
#      the agent's pins are made (ReadWritePaths=/sys/fs/bpf; the bouncer's stays
#      read-only: it only opens pins), other users' processes hidden
#      (ProtectProc=invisible), kernel modules, logs, cgroups, clock and hostname protected,
#      no set-uid files, no personality change: in the unit text and in systemd's reading.
#   3. The hub as that unit runs it: an unprivileged uid with no capability, the key a
#      credential (mode 0400, its uid's): it starts and relays.
#   4. `agent check` and the agent refuse a .key that others may read (exit 2, with `chmod 600 FILE`).
# Touches nothing outside its temporary directory (no namespaces, no BPF). About 3 s.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
TEST_NAME=units

scratch_init units
command -v systemd-analyze >/dev/null || die "systemd-analyze is missing (Debian systemd: make deps)"
mkdir -p "$WORK/sbin" "$WORK/etc/agents" "$WORK/units"
ln -s "$AGENT" "$WORK/sbin/dthrottle-agent"
# As make install fills them in (without MANDOC=1: no Documentation= naming man pages that
# are not installed here, which verify would look for).
for u in dthrottle@.service dthrottle-hub.service dthrottle-crowdsec@.service; do
	sed -e "s|@SBINDIR@|$WORK/sbin|g" -e "s|@CONFDIR@|$WORK/etc|g" -e '/^@MANDOC@/d' "$DT_ROOT/packaging/$u.in" \
		>"$WORK/units/$u"
done
cp "$WORK/units/dthrottle@.service" "$WORK/units/dthrottle@eth0.service"
AGENT_UNIT=$WORK/units/dthrottle@eth0.service
HUB_UNIT=$WORK/units/dthrottle-hub.service
cp "$WORK/units/dthrottle-crowdsec@.service" "$WORK/units/dthrottle-crowdsec@eth0.service"
BOUNCER_UNIT=$WORK/units/dthrottle-crowdsec@eth0.service

# --- 1. verify --------------------------------------------------------------------------------
for unit in "$AGENT_UNIT" "$HUB_UNIT" "$BOUNCER_UNIT"; do
	name=$(basename "$unit")
	out=$(cd "$WORK/units" && systemd-analyze verify "$unit" 2>&1)
	rc=$?
	check "units/$name/verifies" "systemd-analyze verify: status $rc: $out" [ "$rc:$out" = "0:" ]
done

# --- 2. settings --------------------------------------------------------------------------------
# setting UNIT KEY: the value of KEY= in the [Service] section (the last one; "" resets).
setting() { awk -v k="$2=" '/^\[/ { s = ($0 == "[Service]") } s && index($0, k) == 1 { v = substr($0, length(k) + 1) } END { print v }' "$1"; }
expect() { # NAME UNIT KEY EXPECTED
	local got
	got=$(setting "$2" "$3")
	check "units/$1" "$(basename "$2"): $3='$got', expected '$4'" [ "$got" = "$4" ]
}
expect agent/umask "$AGENT_UNIT" UMask 0077
expect agent/no-new-privileges "$AGENT_UNIT" NoNewPrivileges yes
caps=$(setting "$AGENT_UNIT" CapabilityBoundingSet | tr ' ' '\n' | sort | tr '\n' ' ')
check units/agent/bounding-set "CapabilityBoundingSet='$caps'" [ "$caps" = "CAP_BPF CAP_CHOWN CAP_NET_ADMIN CAP_PERFMON CAP_SETPCAP " ]
nofile=$(setting "$AGENT_UNIT" LimitNOFILE)
query_cap=$("$AGENT" --help 2>&1 | grep -A1 -- '--query-max-connections' | grep -o 'default [0-9]*' | grep -o '[0-9]*')
check units/agent/limit-nofile "LimitNOFILE=$nofile: not above the query server's default connection cap (${query_cap:-?})" \
	num_cmp "$nofile" '>' "${query_cap:-999999}"
max_sources=$(sed -n 's/^#define DT_DEFAULT_MAX_SOURCES \([0-9]*\)u*$/\1/p' "$DT_ROOT/include/dthrottle/abi/names.h")
memory=$(setting "$AGENT_UNIT" MemoryMax)
memory_bytes=$(numfmt --from=iec "$memory" 2>/dev/null)
# The lists' cap (rules/list_file.h: kListsMaxPrefixes = DT_LIST_MAX_PREFIXES) at 224 B a prefix.
list_cap=$(sed -n 's/^#define DT_LIST_MAX_PREFIXES (\([0-9]*\)u << \([0-9]*\))$/\1 << \2/p' "$DT_ROOT/include/dthrottle/lists.h")
list_cap=$((${list_cap:-0}))
check units/agent/list-cap "cannot read DT_LIST_MAX_PREFIXES from include/dthrottle/lists.h" [ "$list_cap" -gt 0 ]
need=$((512 * ${max_sources:-0} + 512 * 1024 * 1024 + 224 * list_cap))
check units/agent/memory-max "MemoryMax=$memory ($memory_bytes B) below 512 B x $max_sources sources + 512 MiB + 224 B x $list_cap list prefixes = $need B" \
	num_ge "${memory_bytes:-0}" "$need"
expect hub/dynamic-user "$HUB_UNIT" DynamicUser yes
expect hub/no-capability "$HUB_UNIT" CapabilityBoundingSet ""
expect hub/no-ambient "$HUB_UNIT" AmbientCapabilities ""
expect hub/umask "$HUB_UNIT" UMask 0077
expect hub/credential "$HUB_UNIT" LoadCredential "hub.key:$WORK/etc/hub.key"
check units/hub/key-from-credential "ExecStart: $(setting "$HUB_UNIT" ExecStart)" \
	grep -qF -- '--curve-key ${CREDENTIALS_DIRECTORY}/hub.key' <<<"$(setting "$HUB_UNIT" ExecStart)"
for key in LimitNOFILE MemoryMax; do
	check "units/hub/$key" "dthrottle-hub.service has no $key=" [ -n "$(setting "$HUB_UNIT" "$key")" ]
done
# systemd's own reading: "set" true means the unit restricts that.
assessed() { # UNIT JSON_FIELD: true/false as systemd-analyze security reads the unit
	(cd "$WORK/units" && systemd-analyze security --offline=true --json=short "$1" 2>/dev/null) |
		python3 -c 'import json, sys; print([e["set"] for e in json.load(sys.stdin) if e["json_field"] == sys.argv[1]])' "$2"
}
for f in UMask NoNewPrivileges CapabilityBoundingSet_CAP_SYS_ADMIN; do
	got=$(assessed "$AGENT_UNIT" "$f")
	check "units/agent/systemd-reads-$f" "systemd-analyze security: $f set = $got" [ "$got" = "[True]" ]
done
for f in UserOrDynamicUser UMask NoNewPrivileges CapabilityBoundingSet_CAP_SYS_ADMIN CapabilityBoundingSet_CAP_NET_ADMIN \
	CapabilityBoundingSet_CAP_BPF PrivateUsers; do
	got=$(assessed "$HUB_UNIT" "$f")
	[ "$f" = CapabilityBoundingSet_CAP_BPF ] && [ "$got" = "[]" ] && continue # not assessed by this systemd
	check "units/hub/systemd-reads-$f" "systemd-analyze security: $f set = $got" [ "$got" = "[True]" ]
done

# --- 2b. kernel-facing hardening of the agent and the bouncer -----------------------------------
for unit in "$AGENT_UNIT" "$BOUNCER_UNIT"; do
	who=$(basename "$unit" .service)
	for kv in ProtectKernelTunables=yes ProtectProc=invisible ProtectKernelModules=yes \
		ProtectKernelLogs=yes ProtectControlGroups=yes ProtectClock=yes ProtectHostname=yes RestrictSUIDSGID=yes \
		LockPersonality=yes ProtectSystem=strict PrivateDevices=yes; do
		expect "$who/${kv%%=*}" "$unit" "${kv%%=*}" "${kv#*=}"
	done
	# The agent pins (BPF_OBJ_PIN fails with EROFS under a read-only /sys/fs/bpf); the bouncer does not.
	[ "$unit" = "$AGENT_UNIT" ] && rw=/sys/fs/bpf || rw=
	expect "$who/ReadWritePaths" "$unit" ReadWritePaths "$rw"
	for f in ProtectKernelTunables ProtectProc ProtectKernelModules ProtectKernelLogs ProtectControlGroups \
		ProtectClock ProtectHostname RestrictSUIDSGID LockPersonality; do
		got=$(assessed "$unit" "$f")
		check "units/$who/systemd-reads-$f" "systemd-analyze security: $f set = $got" [ "$got" = "[True]" ]
	done
done

# --- 3. the hub as its unit runs it --------------------------------------------------------------
chmod 755 "$WORK" "$WORK/etc" "$WORK/etc/agents"
"$AGENT" keygen hub --role hub --dir "$WORK/etc" --endpoint 127.0.0.1:7701 >/dev/null || die "agent keygen hub failed"
"$AGENT" keygen web1 --dir "$WORK/etc/agents" >/dev/null || die "agent keygen web1 failed"
rm "$WORK/etc/agents/web1.key"
HUB_UID=$((60000 + $$ % 5000)) # a uid nobody has, as DynamicUser= picks one
mkdir -m 0700 "$WORK/credentials"
install -m 0400 -o "$HUB_UID" "$WORK/etc/hub.key" "$WORK/credentials/hub.key"
chown "$HUB_UID" "$WORK/credentials"
port=$((20000 + $$ % 20000 / 2 * 2))
setpriv --reuid "$HUB_UID" --regid "$HUB_UID" --clear-groups --bounding-set -all --inh-caps -all --no-new-privs \
	"$AGENT" hub --listen "127.0.0.1:$port" --curve-key "$WORK/credentials/hub.key" --curve-peers "$WORK/etc/agents" \
	>"$WORK/hub.log" 2>&1 &
hub_pid=$!
if wait_for_line "$WORK/hub.log" 'hub relaying reports' "$hub_pid" 5; then
	pass units/hub/runs-unprivileged
	check_eq units/hub/no-capabilities "the hub's effective capabilities" "$((16#$(awk '/^CapEff:/ { print $2 }' "/proc/$hub_pid/status")))" 0
else
	fail units/hub/runs-unprivileged "the hub did not start as uid $HUB_UID without capabilities: $(cat "$WORK/hub.log")"
fi
stop_pid "$hub_pid"

# --- 4. agent check and a key others may read ------------------------------------------------------
"$AGENT" keygen web2 --dir "$WORK/etc" --endpoint 127.0.0.1:7702 >/dev/null || die "agent keygen web2 failed"
chmod 644 "$WORK/etc/web2.key"
out=$("$AGENT" check --iface lo --rate 10 --burst 5 --listen 127.0.0.1:7702 --curve-key "$WORK/etc/web2.key" \
	--curve-peers "$WORK/etc/agents" 2>&1)
rc=$?
check_eq units/check-key-mode/exit "agent check with a 0644 .key: exit status ($out)" "$rc" 2
check units/check-key-mode/fix "agent check does not give the fix: $out" grep -qF "chmod 600 $WORK/etc/web2.key" <<<"$out"
# The daemon refuses it the same way before it touches anything (an interface that does not
# exist: had the key passed, it would fail on that instead).
out=$("$AGENT" --iface dt-none$$ --rate 10 --burst 5 --listen 127.0.0.1:7702 --curve-key "$WORK/etc/web2.key" \
	--curve-peers "$WORK/etc/agents" 2>&1)
rc=$?
check_eq units/daemon-key-mode/exit "the agent with a 0644 .key: exit status ($out)" "$rc" 2
check units/daemon-key-mode/fix "the agent does not give the fix: $out" grep -qF "chmod 600 $WORK/etc/web2.key" <<<"$out"

lab_finish
