# lib.sh - helpers for the network-namespace tests and the demo (source it; needs bash, root).
#
# Two kinds of lab: the single-host lab (lib/lab.sh: lab_up), and a multi-host lab for the
# cluster (lib/mlab.sh: mlab_up: a client, N hosts with one agent each, a control bridge).
# The single-host lab is two namespaces and a veth pair:
#
#   client namespace  $C_NS  $C_IF  198.18.0.1/15  2001:2::1/48   pktgen sends from here
#   host namespace    $H_NS  $H_IF  198.18.0.2/15  2001:2::2/48   agent (XDP) + sink
#
# The /15 and /48 are on-link on both sides, so spoofed sources from those ranges
# are valid for reverse-path filtering. Everything a lab creates is named after
# $LAB (PREFIX-PID) and removed by lab_cleanup on exit, whatever happened: the
# processes it started (by PID), its pin directories under /sys/fs/bpf (and the
# agent's lock files for them), its namespaces and its scratch directory.
#
# Commands enter a namespace with `nsenter --net=/run/netns/NAME`, never with
# `ip netns exec`: that one also gives the command a private mount namespace with a
# fresh /sys, so the pins the agent makes under /sys/fs/bpf would be invisible to
# every later command (agent stats, the next agent, the cleanup).
#
# Results: pass/fail print "PASS name" / "FAIL name: reason"; lab_finish exits 1
# if anything failed (and the logs of the failed run are printed first).
#
# The helpers live in lib/, one file a concern; this file sets the globals they share and
# sources them all, so a suite sources this file alone:
#   lib/results.sh       PASS/FAIL, check, check_eq/le/ge, num_*, calc, floor, now_s, sleep_to
#   lib/json.sh          json_num, json_value, json_get, json_test, json_source, source_num,
#                        json_rule, rule_num, json_bucket, bucket_num (jq)
#   lib/lab.sh           scratch_init, lab_init, lab_up, in_ns, pins_present, lab_cleanup, lab_finish
#   lib/procs.sh         emulated, alive, wait_exit, wait_for_line(s), wait_until, stop_pid, count_lines
#   lib/agent.sh         agent_start, agent_signal, agent_fg, stats_json, query_ask, sources_seen,
#                        ban_value
#   lib/traffic.sh       send_traffic(_bg), wait_traffic, sink_start, sink_stop, udp_counter, sender_stalled,
#                        line_listener, listening_in, syn_recv_count, tcp_counter, budget_check
#   lib/mlab.sh          the multi-host lab: mlab_up, mlab_hub_up, mlab_cut/heal, mlab_peers
#   lib/mlab_agents.sh   its keys, agents and hub: mlab_agent_start, mlab_agents_start,
#                        mlab_hub_start, mlab_wait_peers
#   lib/spray.sh         its traffic: spray_start/wait/stop, mlab_send_bg, senders_wait, spray_*
#   lib/landed.sh        mlab_snapshot, snap_num/sum, mlab_wait_landed/steady, mlab_reporting...
#   lib/events.sh        event_hook (an --on-event command writing a file), event_count, has_event, event_field,
#                        event_lines
#   lib/escalation.sh    the escalation suites' flood: escalation_scenario, flood_rule
#   lib/syncookies.sh    the SYN cookie suites': syncookie_tools, syn_rule, pass_all_xdp

DT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Debian's python3 first: the suites use the Python packages `make deps` installs for it
# (python3-zmq), and a version manager's shim ahead of it on root's PATH (pyenv's took
# 1.4 s a call on a loaded machine) would turn every timed poll into a measure of itself.
[ -x /usr/bin/python3 ] && case ":$PATH:" in :/usr/bin:*) ;; *) PATH=/usr/bin:$PATH ;; esac
AGENT=${DT_AGENT:-$DT_ROOT/build/agent}   # DT_AGENT: test another build
PKTGEN=${DT_PKTGEN:-$DT_ROOT/build/pktgen}
PYTHON=${PYTHON:-python3}  # the Python of the suites' clients and helpers (the system's: see PATH)

LAB_V4_CLIENT=198.18.0.1
LAB_V4_HOST=198.18.0.2
LAB_V6_CLIENT=2001:2::1
LAB_V6_HOST=2001:2::2

FAILURES=0
declare -A LAB_PIDS=()  # name -> PID of every background process we started
LAB_NAMESPACES=()       # namespaces we created
LAB_PIN_DIRS=()         # pin directories our agents use
LAB_CLEANED=0

# The JSON the suites read is parsed by jq (lib/json.sh): without it no check could read a
# count, so say so once, here, rather than fail every check that reads one.
command -v jq >/dev/null || { echo "FAIL setup: jq is missing (the suites read JSON with it); run make deps"; exit 1; }

# shellcheck source=lib/results.sh
source "$DT_ROOT/tests/netns/lib/results.sh"
# shellcheck source=lib/json.sh
source "$DT_ROOT/tests/netns/lib/json.sh"
# shellcheck source=lib/lab.sh
source "$DT_ROOT/tests/netns/lib/lab.sh"
# shellcheck source=lib/procs.sh
source "$DT_ROOT/tests/netns/lib/procs.sh"
# shellcheck source=lib/agent.sh
source "$DT_ROOT/tests/netns/lib/agent.sh"
# shellcheck source=lib/traffic.sh
source "$DT_ROOT/tests/netns/lib/traffic.sh"
# shellcheck source=lib/mlab.sh
source "$DT_ROOT/tests/netns/lib/mlab.sh"
# shellcheck source=lib/mlab_agents.sh
source "$DT_ROOT/tests/netns/lib/mlab_agents.sh"
# shellcheck source=lib/spray.sh
source "$DT_ROOT/tests/netns/lib/spray.sh"
# shellcheck source=lib/landed.sh
source "$DT_ROOT/tests/netns/lib/landed.sh"
# shellcheck source=lib/events.sh
source "$DT_ROOT/tests/netns/lib/events.sh"
# shellcheck source=lib/escalation.sh
source "$DT_ROOT/tests/netns/lib/escalation.sh"
# shellcheck source=lib/syncookies.sh
source "$DT_ROOT/tests/netns/lib/syncookies.sh"
