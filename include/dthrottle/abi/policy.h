/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/policy.h - a rule's policy as the kernel applies it (struct dt_policy, DT_MAP_POLICY):
 * its slots, actions and flags.
 */
#ifndef DTHROTTLE_ABI_POLICY_H
#define DTHROTTLE_ABI_POLICY_H

#include <linux/types.h>
#include "layout.h"

/* Policy slots: DT_MAX_RULES rules, each in two banks (see struct dt_config).
 * Rule 0 is the default rule (--rate/--burst); rules 1.. come from --rules FILE. */
#define DT_MAX_RULES 256u
#define DT_RULE_DEFAULT 0u
#define DT_POLICY_SLOTS (2u * DT_MAX_RULES)

/* What a rule does with a packet it matches. */
#define DT_ACT_THROTTLE 0 /* token bucket per (masked) source */
#define DT_ACT_ALLOW    1 /* never throttled */
#define DT_ACT_DENY     2 /* always dropped */

/*
 * A rule's policy as the kernel applies it. The agent turns "rate R per second,
 * burst B" into integers once: one token is worth interval_ns nanoseconds, a full
 * bucket burst_ns = B * interval_ns. A throttle rule with interval_ns == 0 means
 * "no policy": the packet passes (fail open) and is counted. Sources are bucketed
 * per /v4_key_bits (IPv4) or /v6_key_bits (IPv6) prefix.
 */
struct dt_policy {
	__u64 interval_ns;
	__u64 burst_ns;
	__u8 action;      /* DT_ACT_* */
	__u8 v4_key_bits; /* 1..32 */
	__u8 v6_key_bits; /* 1..128 */
	__u8 flags;       /* DT_POL_* */
	__u8 pad[4];
};

/* dt_policy.flags */
#define DT_POL_DRY_RUN 0x1 /* decide and count as if enforcing, never drop (would_drop) */
#define DT_POL_BYTES   0x2 /* tokens are bytes of the frame (Ethernet header included), not packets */
#define DT_POL_PREFIX  0x4 /* the rule also caps its sources per prefix (struct dt_prefix_policy) */
#define DT_POL_KEY_DEST 0x8 /* key_by = "destination": one bucket per (masked) destination
                             * address, whatever the sources (key.rule has DT_KEY_DEST) */
#define DT_POL_SYN_COOKIES 0x10 /* syn_cookies = true: a SYN only a prefix budget refuses is answered
                                 * with a SYN cookie; verified sources skip the prefix budgets */

DT_LAYOUT_ASSERT(dt_policy, 24);

#endif /* DTHROTTLE_ABI_POLICY_H */
