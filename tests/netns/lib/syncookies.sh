# syncookies.sh - what the SYN cookie suites share (test_syncookies.sh on one host,
# test_syncookie_peers.sh over two): their tools, the rule for SYNs to a port and the pass-all
# XDP program a client's veth end needs (their TCP listener: line_listener, traffic.sh).
# Sourced by ../lib.sh (its globals: DT_ROOT, WORK, LAB_PIDS, ...), never on its own.

# syncookie_tools [TOOL...]: dies (a FAIL setup line) if nft, clang, python3 or a TOOL is missing.
syncookie_tools() {
	local tool
	for tool in nft clang /usr/bin/python3 "$@"; do
		command -v "$tool" >/dev/null || { echo "FAIL setup: $tool is missing (scripts/deps.sh installs it)"; exit 1; }
	done
}

# syn_rule FILE PORT RATE BURST P16_RATE P16_BURST [EXTRA]: FILE holds one rule for SYNs to
# PORT from anywhere: a per-source bucket of RATE and BURST, a v4/16 prefix budget of
# P16_RATE and P16_BURST (EXTRA: one more line, e.g. syn_cookies = true).
syn_rule() {
	cat >"$1" <<EOF
version = 1
[[rule]]
name = "web-syn"
cidr = "0.0.0.0/0"
proto = "tcp"
dport = $2
syn = true
rate = $3
burst = $4
prefix_limits = [ { prefix = "v4/16", rate = $5, burst = $6 } ]
${7:-}
EOF
}

# pass_all_xdp NS:IF...: attaches a pass-all XDP program (tests/netns/foreign.bpf.c, built
# once into $WORK) to each interface. A frame XDP sends back out of a veth (XDP_TX: a
# cookie's SYN-ACK) waits in the peer end's ring, which is drained only while the peer has an
# XDP program of its own (with GRO alone the first 256 frames fill it, and every later one is
# an xdp_tx_error): the client's ends get this one. A physical NIC needs nothing of the kind.
pass_all_xdp() {
	local obj=$WORK/foreign.bpf.o end
	[ -e "$obj" ] || clang -O2 -g -target bpf -I"/usr/include/$(uname -m)-linux-gnu" \
		-c "$DT_ROOT/tests/netns/foreign.bpf.c" -o "$obj" ||
		die "cannot build the pass-all XDP program (tests/netns/foreign.bpf.c)"
	for end in "$@"; do
		ip -n "${end%%:*}" link set dev "${end#*:}" xdp obj "$obj" sec xdp ||
			die "cannot attach the pass-all XDP program to ${end#*:} (XDP_TX on a veth needs one at the peer end)"
	done
}
