/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * common.h - definitions shared by the XDP program (bpf/) and the agent (agent/).
 *
 * Everything both sides must agree on lives under abi/ exactly once, one header a
 * feature: map value and key layouts, pinned map names, limits and flag bits. This
 * header includes them all, so that "dthrottle/common.h" is the one include either side
 * needs. The BPF side compiles them with clang -target bpf, the agent with g++
 * -std=c++20; the structs use only fixed-width __u32/__u64 fields and explicit padding
 * so both compilers lay them out identically (each header's DT_LAYOUT_ASSERTs pin the
 * sizes down). They hold C only: no C++, nothing but <linux/types.h>.
 *
 *   abi/names.h     the pinned maps' and links' names, the default pin root and size
 *   abi/layout.h    DT_LAYOUT_ASSERT
 *   abi/keys.h      struct dt_key (a bucket's), struct dt_lpm_key (an LPM trie's)
 *   abi/buckets.h   struct dt_bucket, its arithmetic's limits, the drops pending per CPU,
 *                   the clock anchor
 *   abi/policy.h    struct dt_policy: a rule's policy, its slots, actions and flags
 *   abi/prefix.h    prefix budgets (struct dt_prefix_policy), the bits of key.rule
 *   abi/rules.h     the rules trie (struct dt_rule_set, dt_rule_match, dt_rule_cond),
 *                   per-rule names and counters
 *   abi/config.h    struct dt_config: the live bank, the report period, DT_CFG_* flags
 *   abi/stats.h     struct dt_stats and DT_STATS_FIELDS, the global counters
 *   abi/bans.h      bans (struct dt_ban, dt_ban_key4, dt_ban_info, dt_ban_counts)
 *   abi/cluster.h   cluster mode: exempt connections, announcements, debit and collect
 *   abi/syncookie.h SYN cookies: the verified sources and the cookies' clock
 *
 * Features with headers of their own beside this one: lists.h (allow and deny lists),
 * capture.h (agent capture), verified_ring.h (the sources SYN cookies verified, for the
 * peers); bucket.h is the bucket arithmetic, maps_catalog.h the catalogue of maps.
 */
#ifndef DTHROTTLE_COMMON_H
#define DTHROTTLE_COMMON_H

#include "abi/names.h"
#include "abi/layout.h"
#include "abi/keys.h"
#include "abi/buckets.h"
#include "abi/policy.h"
#include "abi/prefix.h"
#include "abi/rules.h"
#include "abi/config.h"
#include "abi/stats.h"
#include "abi/bans.h"
#include "abi/cluster.h"
#include "abi/syncookie.h"

#endif /* DTHROTTLE_COMMON_H */
