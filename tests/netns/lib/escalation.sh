# escalation.sh - the scenario both escalation suites run (test_escalation.sh on one host,
# test_escalation_cluster.sh over three): a flood that its rule bans offence after offence,
# beside a client under its rate and an allow-listed flood, neither ever banned.
# Sourced by ../lib.sh (its globals: DT_ROOT, AGENT, LAB_PIDS, ...), never on its own.

# escalation_scenario: sets its addresses and bounds:
#   FLOOD, CLIENT, ALLOWED  the flood (2,000 pps), the client (50 pps), the allow-listed flood
#   AFTER                   seconds over budget before a ban (the rule's `after`)
#   BURST_S                 the flood's first 50 packets at 2,000 pps pass: its drops begin then
#   DELAY_MAX               seconds from crossing T (the drops' start + AFTER) to the ban: the
#                           agent checks every period (200 ms) and at the moment an offence
#                           lasts `after`; the bound is a period plus 150 ms for this loaded
#                           machine (waking, reading the table, the ban and its event). Checks
#                           once a second fail it (0.3 to 2.6 s).
escalation_scenario() {
	FLOOD=198.18.7.1
	CLIENT=198.18.7.2
	ALLOWED=198.18.7.3
	AFTER=2
	BURST_S=0.025
	DELAY_MAX=0.35
}

# flood_rule: the rule "flood" as TOML: udp over the lab's /15, rate 100/s and burst 50 a
# source; a source over budget for AFTER seconds is banned for 3 s, twice as long at each
# offence up to 1m, its offences forgotten after 1m.
flood_rule() {
	cat <<-TOML
		[[rule]]
		name = "flood"
		cidr = "198.18.0.0/15"
		proto = "udp"
		rate = 100
		burst = 50
		escalate = { after = "${AFTER}s", ban = "3s", factor = 2, max = "1m", forget = "1m" }
	TOML
}
