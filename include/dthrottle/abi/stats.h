/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/stats.h - the global counters (struct dt_stats, DT_MAP_STATS) and DT_STATS_FIELDS,
 * the one list every reader of them walks.
 */
#ifndef DTHROTTLE_ABI_STATS_H
#define DTHROTTLE_ABI_STATS_H

#include <linux/types.h>
#include "layout.h"

/*
 * Global counters, one per-CPU element at key 0 of DT_MAP_STATS: one line each, in the
 * order of struct dt_stats (the map's value, so a new counter goes last and bumps the
 * layout of `stats`, see maps_catalog.h). Every reader lists them from here: the
 * per-CPU sum, `agent stats` (text and JSON), /metrics and the daemon's log line.
 *   X(field, label, metric, help)
 *   label   its name in `agent stats` and the log ("": listed in neither);
 *   metric  its own Prometheus counter ("": none of its own: passed and dropped are
 *           dthrottle_packets_total{verdict}, allowed and denied
 *           dthrottle_action_packets_total{action}, debit_hits is a cluster metric);
 *   help    what it counts (the metric's HELP text).
 */
#define DT_STATS_FIELDS(X) \
	X(passed, "passed", "", "Packets admitted by a bucket.") \
	X(dropped, "dropped", "", "Packets dropped for lack of tokens.") \
	X(new_sources, "new sources", "dthrottle_new_sources_total", "Buckets created (new sources).") \
	X(parse_errors, "malformed", "dthrottle_malformed_packets_total", \
	  "Truncated or malformed headers, passed without a bucket.") \
	X(non_ip, "non-IP", "dthrottle_non_ip_packets_total", \
	  "Non-IP frames (ARP, LLDP, ...), passed without a bucket.") \
	X(fail_open, "fail-open", "dthrottle_fail_open_packets_total", \
	  "Packets passed without a decision (no policy, or no bucket).") \
	X(contended, "contended", "dthrottle_contended_packets_total", \
	  "Packets dropped because their bucket's compare-and-swap kept losing races (not in packets_total).") \
	X(debit_hits, "debited hits", "", "Peer hits debited by the debit program.") \
	X(nd_exempt, "IPv6 ND", "dthrottle_nd_packets_total", \
	  "IPv6 neighbour discovery packets, passed without a bucket.") \
	X(exempt, "exempt", "dthrottle_exempt_packets_total", "Segments of the cluster's own TCP connections (cluster_exempt), passed.") \
	X(report_overflow, "", "dthrottle_report_ring_overflows_total", \
	  "Active-source announcements lost to a full ring buffer (the packet path retries them).") \
	X(allowed, "allowed", "", "Packets passed by an allow rule.") \
	X(denied, "denied", "", "Packets dropped by a deny rule.") \
	X(ban_dropped, "banned", "dthrottle_ban_dropped_packets_total", "Packets dropped by a ban (agent ban).") \
	X(ban_would_drop, "ban would-drop", "dthrottle_ban_would_drop_packets_total", \
	  "Packets a ban would have dropped, passed in dry run (--dry-run).") \
	X(ban_expired, "ban expired", "dthrottle_ban_expired_packets_total", \
	  "Packets from an address whose ban has expired but is not swept yet, passed.") \
	X(cookie_sent, "cookies sent", "dthrottle_syncookies_sent_total", \
	  "SYNs a prefix budget refused, answered with a SYN cookie (syn_cookies).") \
	X(cookie_would_send, "cookies would-send", "dthrottle_syncookies_would_send_total", \
	  "SYNs a rule in dry run would have answered with a SYN cookie.") \
	X(cookie_ack_valid, "cookie ACKs valid", "dthrottle_syncookie_acks_valid_total", \
	  "Handshake ACKs whose SYN cookie checked out: their source is verified.") \
	X(cookie_ack_invalid, "cookie ACKs invalid", "dthrottle_syncookie_acks_invalid_total", \
	  "ACKs of unverified sources without a valid SYN cookie while cookies were being sent (passed on).") \
	X(verified_hits, "verified hits", "dthrottle_verified_hits_total", \
	  "Packets of verified sources that skipped a rule's prefix budgets.")

struct dt_stats {
#define DT_STATS_MEMBER(field, label, metric, help) __u64 field;
	DT_STATS_FIELDS(DT_STATS_MEMBER)
#undef DT_STATS_MEMBER
};

DT_LAYOUT_ASSERT(dt_stats, 168);

#endif /* DTHROTTLE_ABI_STATS_H */
