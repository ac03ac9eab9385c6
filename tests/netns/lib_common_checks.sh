# lib_common_checks.sh - sourced by netns tests after lib.sh: steps that more than one test
# takes the same way.
#   metrics_pair_start ADDR1 ADDR2   agents h1 and h2 of a two-host lab (mlab_up 2) peering
#                                    in a mesh, each serving --metrics ADDRi:$PORT

# metrics_pair_start ADDR1 ADDR2: starts agents h1 and h2 (--rate $RATE --burst $BURST,
# period 200ms, the other as --peers) with --metrics ADDR1:$PORT and ADDR2:$PORT, and waits
# until they hear each other; dies if one does not start or they do not within 10 s.
# shellcheck disable=SC2153 # RATE, BURST and PORT are the caller's
metrics_pair_start() {
	local opts=(--rate "$RATE" --burst "$BURST" --period 200ms --stats-interval 10m)
	mlab_agent_start 1 h1 "${opts[@]}" --peers "$(mlab_peers 1)" --metrics "$1:$PORT" ||
		die "the agent of h1 did not start"
	mlab_agent_start 2 h2 "${opts[@]}" --peers "$(mlab_peers 2)" --metrics "$2:$PORT" ||
		die "the agent of h2 did not start"
	mlab_wait_peers h1 1 10 h2 && mlab_wait_peers h2 1 10 h1 || die "the agents did not hear each other within 10 s"
}
