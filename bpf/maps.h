/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * maps.h - the maps of the dthrottle BPF object, BTF-typed and pinned by name under
 * the agent's --pin-dir, so that `bpftool map dump pinned DIR/buckets` prints named
 * fields and a restarted agent reuses them (no bucket state lost). Every map here has
 * its line in include/dthrottle/maps_catalog.h (checked by tests/bpf/test_map_catalog.cpp).
 */
#ifndef DTHROTTLE_MAPS_H
#define DTHROTTLE_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "dthrottle/lists.h"
#include "dthrottle/verified_ring.h"

/* One read of a map value's field that other CPUs (or the agent) may write meanwhile. */
#define DT_READ_ONCE(x) (*(volatile typeof(x) *)&(x))

/* One bucket per source. The agent sets max_entries (--max-sources) before load. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DT_DEFAULT_MAX_SOURCES);
	__type(key, struct dt_key);
	__type(value, struct dt_bucket);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} buckets SEC(".maps");

/* Global counters: per CPU, so the fast path needs no atomics; readers sum CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} stats SEC(".maps");

/* Rule policies, two banks per rule (slot = rule * 2 + bank). Agent-written only. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DT_POLICY_SLOTS);
	__type(key, __u32);
	__type(value, struct dt_policy);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} policy SEC(".maps");

/* Which policy bank is live. Agent-written only. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} config SEC(".maps");

/* Staging area for one batch of peer debits; written by the agent, then consumed
 * by the debit program in the same thread (see bpf/debit.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DT_DEBIT_BATCH);
	__type(key, __u32);
	__type(value, struct dt_debit);
} debit_batch SEC(".maps");

/* Sources admitted for the first time in a report period (cluster mode only):
 * the XDP program writes records of struct dt_active_stage, the agent drains it
 * once per period. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DT_ACTIVE_RING_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} active SEC(".maps");

/* Each CPU's announcements on their way to the ring (struct dt_active_stage). Pinned:
 * a taken-over program's stages are read by the next agent's first period. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_active_stage);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} active_stage SEC(".maps");

/* A bucket as first created (tat 0: full) for dt_bucket_get to copy into `buckets`, one
 * per CPU and per kind of caller, instead of one built on the stack: 64 bytes of the frame
 * of every function that creates buckets, and the packet program has 512 bytes in all with
 * the global functions it calls (Linux 6.1 counts each frame rounded up to 32). Only its
 * `rule` is ever written. DT_FRESH_PACKET: the packet programs (XDP and tc never nest on
 * a CPU); DT_FRESH_DEBIT: dt_debit, which runs in process context where a packet may
 * interrupt it. */
#define DT_FRESH_PACKET 0
#define DT_FRESH_DEBIT 1
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct dt_bucket);
} bucket_fresh SEC(".maps");

/* Staging area for the collect program (see bpf/collect.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DT_COLLECT_BATCH);
	__type(key, __u32);
	__type(value, struct dt_collect);
} collect_batch SEC(".maps");

/* The cluster's own TCP ports: (peer address, port, side), see struct dt_exempt_key; a
 * segment that matches passes unthrottled only as bpf/exempt.bpf.h says. Agent-written
 * only. Named apart from the old `exempt` (keyed by address alone), so that a pin of
 * that layout is never reused. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DT_MAX_EXEMPT);
	__type(key, struct dt_exempt_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cluster_exempt SEC(".maps");

/* The ports of cluster_exempt's entries as bitmaps (struct dt_cluster_ports): only a
 * port with its bit set is looked up there. Agent-written only. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_cluster_ports);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cluster_ports SEC(".maps");

/* Packet rules, two banks (config.bank selects the live one; the agent fills the
 * other and flips, so a reload is atomic for every packet). */
struct dt_rules_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, DT_MAX_PREFIXES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dt_lpm_key);
	__type(value, struct dt_rule_set);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
};
struct dt_rules_trie rules0 SEC(".maps");
struct dt_rules_trie rules1 SEC(".maps");

/* Per-rule counters: per CPU, indexed by rule. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DT_MAX_RULES);
	__type(key, __u32);
	__type(value, struct dt_rule_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rule_stats SEC(".maps");

/*
 * Dry run: per rule, what enforcing would have dropped (packets, or bytes for byte
 * rules); per CPU, indexed by rule. A map of its own rather than a field of
 * dt_rule_stats, so that pins of an older agent (taken over on upgrade) still fit.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DT_MAX_RULES);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rule_would_drop SEC(".maps");

/* Byte rules' bytes per rule (dt_rule_bytes): per CPU, written only for DT_POL_BYTES rules. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DT_MAX_RULES);
	__type(key, __u32);
	__type(value, struct dt_rule_bytes);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rule_bytes SEC(".maps");

/* Drops on their way to their bucket (struct dt_drop_pending): per CPU, by slot. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DT_DROP_SLOTS);
	__type(key, __u32);
	__type(value, struct dt_drop_pending);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} drop_pending SEC(".maps");
/* Each CPU's clock anchor (struct dt_clock_anchor, bpf/clock.h): a per-CPU cache,
 * not pinned (a new program starts without one). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_clock_anchor);
} clock_anchor SEC(".maps");

/* Prefix budgets (struct dt_prefix_policy), two banks per rule (slot = rule * 2 + bank),
 * switched with `policy` by config.bank. Agent-written only. A map of its own, so pins
 * of an older agent (taken over on upgrade) still fit. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DT_POLICY_SLOTS);
	__type(key, __u32);
	__type(value, struct dt_prefix_policy);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} prefix_policy SEC(".maps");

/* Packets dropped by each prefix level (index rule * DT_PREFIX_SLOTS + level, IPv6
 * levels from DT_PREFIX_LEVELS): per CPU, so a flood's drops write no shared line. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DT_MAX_RULES * DT_PREFIX_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} prefix_drops SEC(".maps");

/* Each rule's destination prefix and length range (struct dt_rule_cond), two banks per
 * rule (slot = rule * 2 + bank), switched with `policy` by config.bank; read only for a
 * candidate whose flags ask (DT_MATCH_COND). Agent-written only. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DT_POLICY_SLOTS);
	__type(key, __u32);
	__type(value, struct dt_rule_cond);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rule_cond SEC(".maps");

/* Rule names, agent-written, never read by the programs (for bpftool and stats). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DT_MAX_RULES);
	__type(key, __u32);
	__type(value, struct dt_rule_name);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rule_names SEC(".maps");

/* The layout version of the pins (include/dthrottle/maps_catalog.h), written by the agent
 * at every start, never read by the programs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} layout SEC(".maps");

/* Which lists and ban tries are in force (struct dt_features): a clear bit skips the
 * lookup. Agent-written only, through a mapping (one word per writer). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct dt_features);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} features SEC(".maps");

/* The allow and deny lists (dthrottle/lists.h): per family, one slot per list holding
 * a range set (an array) the agent fills and swaps in whole, or nothing. The arrays below
 * are only the template the slots' maps must match (type, key, value, flags; BPF_F_INNER_MAP:
 * any size); given by size, not BTF type, as the agent's arrays carry no BTF. */
struct dt_list_v4_set {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct dt_list_v4_elem));
};
struct dt_list_v6_set {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(union dt_list_v6_elem));
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, DT_LISTS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct dt_list_v4_set);
} lists_v4 SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, DT_LISTS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct dt_list_v6_set);
} lists_v6 SEC(".maps");

/* What the lists decided (struct dt_list_stats): per CPU, one element. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_list_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} list_stats SEC(".maps");

/* Bans (bpf/bans.bpf.h): one LPM trie per family, agent-written only (whole elements). */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, DT_MAX_BANS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dt_ban_key4);
	__type(value, struct dt_ban);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bans_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, DT_MAX_BANS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dt_lpm_key);
	__type(value, struct dt_ban);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bans_v6 SEC(".maps");

/* Each ban's description by slot (struct dt_ban_info), agent-written, never read by the
 * programs (for agent bans, bpftool, and the next agent). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DT_MAX_BANS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct dt_ban_info);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ban_info SEC(".maps");

/* Each ban's packets by slot: per CPU, so a banned flood writes no shared line. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DT_MAX_BANS);
	__type(key, __u32);
	__type(value, struct dt_ban_counts);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ban_counts SEC(".maps");

/* SYN cookies (bpf/syncookie.bpf.h): the sources whose cookie checked out, by address
 * and family (struct dt_verified). The agent sets max_entries (--max-verified) before load. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DT_DEFAULT_MAX_VERIFIED);
	__type(key, struct dt_key);
	__type(value, struct dt_verified);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} verified SEC(".maps");

/* SYN cookies: the sources the packet path verified, as it verifies them (struct
 * dt_verified_rec), for the agent to tell its peers (drained once a period). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DT_VERIFIED_RING_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} verified_ring SEC(".maps");

/* SYN cookies: the verified sources' TTL (agent-written) and when a cookie was last sent
 * (struct dt_syncookie, one element). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_syncookie);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} syncookie SEC(".maps");

#endif /* DTHROTTLE_MAPS_H */
