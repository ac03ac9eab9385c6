/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/config.h - the global configuration (struct dt_config, DT_MAP_CONFIG): the live bank,
 * the report period and the DT_CFG_* flags.
 */
#ifndef DTHROTTLE_ABI_CONFIG_H
#define DTHROTTLE_ABI_CONFIG_H

#include <linux/types.h>
#include "layout.h"

/*
 * Global configuration, one element at key 0 of DT_MAP_CONFIG.
 * Policies are double-banked so that a rule's two 64-bit fields never reach a
 * packet half-written: the agent writes the inactive bank (slot rule*2 + !bank),
 * then flips `bank` with one aligned 32-bit store. See agent/dataplane/policy.cpp.
 */
struct dt_config {
	__u32 bank;  /* 0 or 1: which policy bank is live */
	__u32 epoch; /* current report period (cluster mode), from 1 */
	__u32 flags; /* DT_CFG_* */
	__u32 coarse_lag_ns; /* how far the coarse clock and jiffies may lag the precise
	                      * clock: twice the kernel's tick (set by the agent; 0: unknown),
	                      * see bpf/clock.h */
};
/* With DT_CFG_RULES, `bank` also selects the live rules trie (rules0 / rules1). */

/* dt_config.flags */
#define DT_CFG_REPORT (1u << 0) /* announce newly active sources in `active` */
#define DT_CFG_EXEMPT (1u << 1) /* consult `cluster_exempt` (the cluster's TCP ports) */
#define DT_CFG_RULES  (1u << 2) /* match rules in the live rules trie; else rule 0 */
#define DT_CFG_COARSE_CLOCK (1u << 3) /* bpf_ktime_get_coarse_ns (one tick of lag) */
#define DT_CFG_DRY_RUN (1u << 4) /* --dry-run: bans and the deny list count would-drops, drop nothing */
#define DT_CFG_SYN_COOKIES (1u << 5) /* a live rule has DT_POL_SYN_COOKIES: check handshakes' ACKs */

DT_LAYOUT_ASSERT(dt_config, 16);

#endif /* DTHROTTLE_ABI_CONFIG_H */
