/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/prefix.h - prefix budgets (struct dt_prefix_policy, DT_MAP_PREFIX_POLICY) and the
 * bits of key.rule that tell a prefix or destination bucket from a source's.
 */
#ifndef DTHROTTLE_ABI_PREFIX_H
#define DTHROTTLE_ABI_PREFIX_H

#include <linux/types.h>
#include "layout.h"
#include "policy.h"

/*
 * Prefix budgets: a throttle rule may also cap the aggregate of its sources per
 * prefix, at up to DT_PREFIX_LEVELS levels per family (e.g. IPv4 /24 and /16, IPv6
 * /48 and /32), each a token bucket of its own. A packet passes only when every
 * level of its family and its source bucket have a token (bpf/prefix.bpf.h).
 *
 * The levels of rule R live in DT_MAP_PREFIX_POLICY at slot R*2 + bank, banked
 * like `policy` (one config.bank flip switches both). A level is a dt_policy:
 * interval_ns and burst_ns as for a source, action DT_ACT_THROTTLE, flags
 * DT_POL_BYTES as its rule's, and its prefix length in v4_key_bits (an IPv4 level)
 * or v6_key_bits (an IPv6 level). The agent sorts each family's levels broadest
 * first, so a flooded /16 refuses before any of its /24 buckets is looked at.
 */
#define DT_PREFIX_LEVELS 4u
#define DT_PREFIX_SLOTS  (2u * DT_PREFIX_LEVELS) /* per rule: IPv4 levels 0..3, IPv6 4..7 */
struct dt_prefix_policy {
	__u8 n_v4;  /* levels in use in v4[] */
	__u8 n_v6;  /* levels in use in v6[] */
	__u8 pad[6];
	struct dt_policy v4[DT_PREFIX_LEVELS];
	struct dt_policy v6[DT_PREFIX_LEVELS];
};

/*
 * A prefix bucket lives in DT_MAP_BUCKETS beside the source buckets, so that the
 * collect, debit and report machinery shares it across the cluster unchanged. Its
 * key is the address cut to the level's prefix, and key.rule (and bucket.rule)
 *   bit 31       DT_KEY_PREFIX: a prefix bucket
 *   bit 30       DT_KEY_PREFIX_V6: an IPv6 level (else IPv4)
 *   bits 16..23  the level's prefix length within its family (24 for an IPv4 /24)
 *   bits 0..15   the rule
 *   bit 29       DT_KEY_DEST: a destination bucket (a rule with DT_POL_KEY_DEST; the
 *                address is the packet's destination cut to the rule's key prefix;
 *                never with DT_KEY_PREFIX: the rules refuse prefix budgets with key_by)
 * A source bucket's key.rule is the rule alone (< DT_MAX_RULES), so none of them meet.
 */
#define DT_KEY_PREFIX    (1u << 31)
#define DT_KEY_PREFIX_V6 (1u << 30)
#define DT_KEY_DEST      (1u << 29)
#define DT_KEY_BITS_SHIFT 16
#define DT_KEY_RULE_MASK 0xffffu

DT_LAYOUT_ASSERT(dt_prefix_policy, 200);

#endif /* DTHROTTLE_ABI_PREFIX_H */
