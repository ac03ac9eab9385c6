#!/usr/bin/env bash
# crowdsec_lab.sh - a real CrowdSec Local API (Debian 12's crowdsec package) for tests, run
# from the build tree: never installed, never registered online.
#
#   crowdsec_lab.sh fetch                 download (apt-get download, cached in build/) and
#                                         unpack (dpkg-deb -x) into build/crowdsec; exit 3
#                                         with the reason when the package cannot be had
#   crowdsec_lab.sh config DIR ADDR:PORT  write a LAPI-only configuration into DIR (sqlite
#                                         in DIR, no online API, no agent, no acquisition)
#   crowdsec_lab.sh start DIR             start the LAPI of DIR in the background (pid in
#                                         DIR/crowdsec.pid, log in DIR/crowdsec.log) and
#                                         wait until it answers (10 s)
#   crowdsec_lab.sh stop DIR              stop that process (SIGTERM, SIGKILL after 5 s)
#   crowdsec_lab.sh cscli DIR ARGS...     cscli -c DIR/config.yaml ARGS
#
# `apt-get install crowdsec` is never used: its postinst registers with the online API,
# fails without internet and leaves dpkg half-configured (every later install breaks).
# Start the LAPI in a namespace with `nsenter --net=... crowdsec_lab.sh start DIR`: the
# process started is recorded by pid, so a test stops exactly what it started.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEB_DIR=$ROOT/build/crowdsec-deb
TREE=$ROOT/build/crowdsec
CROWDSEC=$TREE/usr/bin/crowdsec
CSCLI=$TREE/usr/bin/cscli

die() { echo "crowdsec_lab.sh: $*" >&2; exit 1; }

fetch() {
	[ -x "$CROWDSEC" ] && [ -x "$CSCLI" ] && return 0
	mkdir -p "$DEB_DIR" || die "cannot create $DEB_DIR"
	if ! ls "$DEB_DIR"/crowdsec_*.deb >/dev/null 2>&1; then
		# The package lists may be missing (a fresh container): fetch them once.
		apt-cache show crowdsec >/dev/null 2>&1 || apt-get update -qq >/dev/null 2>&1
		(cd "$DEB_DIR" && timeout 300 apt-get download -qq crowdsec >/dev/null 2>"$DEB_DIR/download.err") || {
			echo "crowdsec_lab.sh: cannot download Debian's crowdsec package: $(tail -n 1 "$DEB_DIR/download.err")" >&2
			exit 3
		}
	fi
	rm -rf "$TREE.tmp"
	dpkg-deb -x "$(ls "$DEB_DIR"/crowdsec_*.deb | tail -n 1)" "$TREE.tmp" || die "dpkg-deb -x failed on $DEB_DIR"
	rm -rf "$TREE" && mv "$TREE.tmp" "$TREE" || die "cannot move the unpacked package to $TREE"
}

# The profile that turns alerts into decisions (the package's own) and an empty
# simulation file; everything else points into DIR.
config() {
	local dir=$1 listen=$2
	mkdir -p "$dir/data" "$dir/hub" "$dir/notifications" "$dir/acquis.d" || die "cannot create $dir"
	cp "$TREE/etc/crowdsec/profiles.yaml" "$dir/profiles.yaml" || die "no profiles.yaml in $TREE: run fetch"
	printf 'simulation: false\n' >"$dir/simulation.yaml"
	: >"$dir/acquis.yaml"
	cat >"$dir/config.yaml" <<EOF
common:
  daemonize: false
  log_media: stdout
  log_level: info
  working_dir: $dir
config_paths:
  config_dir: $dir/
  data_dir: $dir/data/
  simulation_path: $dir/simulation.yaml
  hub_dir: $dir/hub/
  index_path: $dir/hub/.index.json
  notification_dir: $dir/notifications/
  plugin_dir: $TREE/usr/lib/crowdsec/plugins/
crowdsec_service:
  acquisition_path: $dir/acquis.yaml
  acquisition_dir: $dir/acquis.d
  parser_routines: 1
cscli:
  output: human
  color: false
db_config:
  log_level: info
  type: sqlite
  db_path: $dir/data/crowdsec.db
  flush:
    max_items: 5000
    max_age: 7d
plugin_config:
  user: nobody
  group: nogroup
api:
  client:
    insecure_skip_verify: false
    credentials_path: $dir/local_api_credentials.yaml
  server:
    log_level: info
    listen_uri: $listen
    profiles_path: $dir/profiles.yaml
    console_path: $dir/console.yaml
    trusted_ips:
      - 127.0.0.1
      - ::1
prometheus:
  enabled: false
  level: full
EOF
	printf 'share_manual_decisions: false\nshare_custom: false\nshare_tainted: false\n' >"$dir/console.yaml"
}

start() {
	local dir=$1 listen i pid
	listen=$(sed -n 's/^    listen_uri: //p' "$dir/config.yaml")
	[ -n "$listen" ] || die "no listen_uri in $dir/config.yaml: run config first"
	"$CROWDSEC" -c "$dir/config.yaml" -no-cs -no-capi >"$dir/crowdsec.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/crowdsec.pid"
	for ((i = 0; i < 200; i++)); do  # bounded: 10 s
		kill -0 "$pid" 2>/dev/null || { cat "$dir/crowdsec.log" >&2; die "crowdsec exited at start"; }
		# Any HTTP answer (401 without a key) means the LAPI listens.
		curl -s -o /dev/null "http://$listen/v1/decisions" 2>/dev/null && return 0
		sleep 0.05
	done
	cat "$dir/crowdsec.log" >&2
	die "the LAPI did not answer on $listen within 10 s"
}

stop() {
	local dir=$1 pid i
	pid=$(cat "$dir/crowdsec.pid" 2>/dev/null) || return 0
	[ -n "$pid" ] || return 0
	# Only the crowdsec we started: the pid must still be that binary.
	[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$CROWDSEC" ] || { rm -f "$dir/crowdsec.pid"; return 0; }
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	rm -f "$dir/crowdsec.pid"
}

case ${1:-} in
	fetch) fetch ;;
	config) [ $# -eq 3 ] || die "usage: config DIR ADDR:PORT"; fetch && config "$2" "$3" ;;
	start) [ $# -eq 2 ] || die "usage: start DIR"; start "$2" ;;
	stop) [ $# -eq 2 ] || die "usage: stop DIR"; stop "$2" ;;
	cscli) [ $# -ge 2 ] || die "usage: cscli DIR ARGS..."; dir=$2; shift 2; exec "$CSCLI" -c "$dir/config.yaml" "$@" ;;
	*) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
