#!/usr/bin/env bash
# provision.sh - sets up one VM of the Vagrant lab; Vagrant runs it as root (Vagrantfile).
#
#   provision.sh edge NAME ADDR PEERS RATE BURST
#       builds the agent from the source tree in /opt/dthrottle (make deps, make,
#       make install), writes /etc/dthrottle/IFACE.conf (IFACE: the interface that has
#       ADDR, eth1) with the policy and the PEERS, and runs it as dthrottle@IFACE
#   provision.sh client NAME ADDR
#       python3, for spray.sh's sender
#
# Safe to run again (`vagrant provision`): it rebuilds, rewrites the config and
# restarts the agent.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

die() {
	echo "provision: $*" >&2
	exit 1
}

# lab_iface ADDR: the interface that has the IPv4 address ADDR.
lab_iface() { ip -o -4 addr show to "$1/32" | awk '{ print $2; exit }'; }

edge() {
	local name=$1 addr=$2 peers=$3 rate=$4 burst=$5 iface conf
	iface=$(lab_iface "$addr")
	[ -n "$iface" ] || die "no interface has the lab address $addr"
	cd /opt/dthrottle
	bash scripts/deps.sh # the project's own package list: compilers, libbpf, bpftool, ZeroMQ...
	make -j"$(nproc)" build/agent
	make install
	conf=/etc/dthrottle/$iface.conf
	cat >"$conf" <<EOF
# $conf - written by vagrant/provision.sh (vagrant provision rewrites it)
rate = $rate
burst = $burst
# The other edges, and where this one publishes its reports: the lab network only.
peers = $peers
listen = $addr:7700
node-id = $name
# A private lab network: the cluster runs without keys, asked for by name (on any other
# network give every edge a key pair instead: docs/security.md).
insecure-cluster = true
EOF
	dthrottle-agent check --config "$conf" --iface "$iface" || die "$conf was refused"
	systemctl daemon-reload
	systemctl enable "dthrottle@$iface"
	systemctl restart "dthrottle@$iface"
	sleep 2
	systemctl is-active --quiet "dthrottle@$iface" || {
		journalctl -u "dthrottle@$iface" -n 20 --no-pager
		die "dthrottle@$iface is not running"
	}
	journalctl -u "dthrottle@$iface" -n 5 --no-pager
	echo "provision: $name throttles $iface ($addr): rate $rate/s, burst $burst, peers $peers"
}

client() {
	command -v python3 >/dev/null || {
		apt-get update -q
		apt-get install -y -q --no-install-recommends python3
	}
	[ -n "$(lab_iface "$3")" ] || die "no interface has the lab address $3"
	echo "provision: $2 ($3) is ready: run ./spray.sh on the workstation"
}

case "${1:-}" in
edge) [ $# -eq 6 ] || die "usage: provision.sh edge NAME ADDR PEERS RATE BURST"; shift; edge "$@" ;;
client) [ $# -eq 3 ] || die "usage: provision.sh client NAME ADDR"; shift; client "$@" ;;
*) die "usage: provision.sh edge|client ..." ;;
esac
