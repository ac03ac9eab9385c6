/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * maps_catalog.h - every map of the dthrottle BPF object, once: one line each,
 *   X(name, pinned, layout, what)
 *   name    the map variable in bpf/maps.h, its pin under --pin-dir, its DT_MAP_* name;
 *   pinned  DT_PINNED (pinned by name, reused by the next agent) or DT_NOT_PINNED
 *           (a scratch or cache map each load makes anew);
 *   layout  the pin layout version in which its type, key, value or size last changed
 *           (see "Pin layout" below);
 *   what    what it holds (docs/internals.md's map table says the same).
 * tests/bpf/test_map_catalog.cpp checks that these are exactly the maps of the object,
 * pinned as said, that every DT_MAP_* name is one of them, and that docs/internals.md's table
 * lists them.
 *
 * Pin layout. The pins carry the layout version of the agent that made them, in the
 * pinned map `layout` (written at every start). Pins without it are layout 1: the
 * layout of every agent before the version existed. The agent's version
 * (dt::kLayoutVersion) is the highest `layout` below. An agent meeting pins of an older
 * layout recreates the maps whose layout is newer than the pins' and keeps the others
 * (buckets and counters); pins of a newer layout it refuses, saying what to do
 * (agent/dataplane/pin_layout.h). So a change to a pinned map's key, value or type is
 * one line: its `layout` becomes the highest one + 1.
 */
#ifndef DTHROTTLE_MAPS_CATALOG_H
#define DTHROTTLE_MAPS_CATALOG_H

#define DT_PINNED 1
#define DT_NOT_PINNED 0

#define DT_MAPS(X) \
	X(buckets, DT_PINNED, 1, "one bucket per source and per prefix level (struct dt_bucket)") \
	X(stats, DT_PINNED, 6, "global counters, per CPU (struct dt_stats)") \
	X(policy, DT_PINNED, 1, "each rule's policy, two banks (struct dt_policy)") \
	X(config, DT_PINNED, 8, "live bank, report period, flags, owner (struct dt_config)") \
	X(debit_batch, DT_NOT_PINNED, 1, "one batch of peers' debits for dt_debit (struct dt_debit)") \
	X(active, DT_PINNED, 1, "ring of sources newly active in a report period") \
	X(active_stage, DT_PINNED, 1, "per CPU: announcements on their way to the ring (struct dt_active_stage)") \
	X(bucket_fresh, DT_NOT_PINNED, 4, "per CPU: a bucket as first created, copied into buckets (struct dt_bucket)") \
	X(collect_batch, DT_NOT_PINNED, 1, "one batch of sources for dt_collect (struct dt_collect)") \
	X(cluster_exempt, DT_PINNED, 2, "the cluster's own TCP traffic: (address, port, side) (struct dt_exempt_key)") \
	X(cluster_ports, DT_PINNED, 2, "the ports of cluster_exempt as two bitmaps (struct dt_cluster_ports)") \
	X(rules0, DT_PINNED, 4, "rules LPM trie, bank 0 (struct dt_rule_set by prefix)") \
	X(rules1, DT_PINNED, 4, "rules LPM trie, bank 1") \
	X(rule_stats, DT_PINNED, 1, "per rule and CPU: packets passed and dropped (struct dt_rule_stats)") \
	X(rule_would_drop, DT_PINNED, 1, "per rule and CPU: what dry run would have dropped") \
	X(rule_bytes, DT_PINNED, 1, "per rule and CPU: bytes of byte rules (struct dt_rule_bytes)") \
	X(drop_pending, DT_PINNED, 1, "per CPU: drops not yet in their bucket (struct dt_drop_pending)") \
	X(clock_anchor, DT_NOT_PINNED, 1, "per CPU: where the clock bound counts jiffies from (struct dt_clock_anchor)") \
	X(prefix_policy, DT_PINNED, 1, "prefix budgets per rule, two banks (struct dt_prefix_policy)") \
	X(prefix_drops, DT_PINNED, 1, "per prefix level and CPU: packets dropped") \
	X(rule_cond, DT_PINNED, 4, "each rule's destination prefix and length range, two banks (struct dt_rule_cond)") \
	X(rule_names, DT_PINNED, 1, "each rule's name (struct dt_rule_name)") \
	X(layout, DT_PINNED, 1, "the layout version of these pins (one __u32, see Pin layout)") \
	X(features, DT_PINNED, 7, "which lists and ban tries are in force, one word per writer (struct dt_features)") \
	X(lists_v4, DT_PINNED, 5, "allow and deny lists, IPv4: one range set (array) per list, swapped in whole (dthrottle/lists.h)") \
	X(lists_v6, DT_PINNED, 5, "allow and deny lists, IPv6: one range set (array) per list, swapped in whole") \
	X(list_stats, DT_PINNED, 3, "per CPU: packets the lists passed, dropped, would have dropped (struct dt_list_stats)") \
	X(bans_v4, DT_PINNED, 3, "bans of IPv4 prefixes: expiry and slot (struct dt_ban by struct dt_ban_key4)") \
	X(bans_v6, DT_PINNED, 3, "bans of IPv6 prefixes: expiry and slot (struct dt_ban by struct dt_lpm_key)") \
	X(ban_info, DT_PINNED, 3, "each ban's prefix, reason, origin, who and expiry, by slot (struct dt_ban_info)") \
	X(ban_counts, DT_PINNED, 3, "per ban slot and CPU: packets dropped and would-drop (struct dt_ban_counts)") \
	X(capture_ctl, DT_PINNED, 4, "agent capture: the running capture's lease and filters (struct dt_capture_ctl)") \
	X(capture_cpu, DT_PINNED, 4, "per CPU: agent capture's rate window and counts (struct dt_capture_cpu)") \
	X(capture_ring, DT_PINNED, 4, "agent capture: ring of sampled packets (struct dt_capture_rec)") \
	X(verified, DT_PINNED, 6, "SYN cookies: sources whose cookie checked out, expiry and hits (struct dt_verified)") \
	X(verified_ring, DT_PINNED, 6, "SYN cookies: ring of the sources the packet path verified, for the peers (struct dt_verified_rec)") \
	X(syncookie, DT_PINNED, 6, "SYN cookies: verified sources' TTL and when a cookie was last sent (struct dt_syncookie)")

#endif /* DTHROTTLE_MAPS_CATALOG_H */
