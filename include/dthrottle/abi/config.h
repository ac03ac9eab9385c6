/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/config.h - the global configuration (struct dt_config, DT_MAP_CONFIG): the live bank,
 * the report period, the DT_CFG_* flags and the program that owns the frames.
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
	__u32 owner; /* the instance (dt_instance) of the hook program whose frames count;
	              * 0: any. An agent sets its own once its program is attached: while it
	              * takes over in libxdp's dispatcher, the old program and the new both see
	              * each frame, and the one that is not the owner passes it on uncounted. */
	__u32 pad;
};
/* With DT_CFG_RULES, `bank` also selects the live rules trie (rules0 / rules1). */

/* dt_config.flags */
#define DT_CFG_REPORT (1u << 0) /* announce newly active sources in `active` */
#define DT_CFG_EXEMPT (1u << 1) /* consult `cluster_exempt` (the cluster's TCP ports) */
#define DT_CFG_RULES  (1u << 2) /* match rules in the live rules trie; else rule 0 */
#define DT_CFG_COARSE_CLOCK (1u << 3) /* bpf_ktime_get_coarse_ns (one tick of lag) */
#define DT_CFG_DRY_RUN (1u << 4) /* --dry-run: bans and the deny list count would-drops, drop nothing */
#define DT_CFG_SYN_COOKIES (1u << 5) /* a live rule has DT_POL_SYN_COOKIES: check handshakes' ACKs */

DT_LAYOUT_ASSERT(dt_config, 24);

/*
 * What is in force that the packet path would otherwise look for on every packet: one
 * element at key 0 of DT_MAP_FEATURES (BPF_F_MMAPABLE). A check whose bit is clear is
 * skipped without a lookup, so an idle allow list, deny list or ban trie costs a packet
 * one test (docs/performance.md). A map of its own, not dt_config, and one word per
 * writer: `bans` is written by whichever process changes the bans (agent/bans/ban_store.h,
 * under the bans' lock: the CLI, the query socket, the bouncer, the daemon), `lists` by
 * the daemon's list loader (agent/dataplane/list_maps.h), each with one store into its
 * own word through a mapping, so neither rewrites the other's (nor the daemon's
 * read-modify-writes of dt_config lose them). The order keeps a bit true: it is set
 * before the entry it announces is written, and cleared only once its map holds none
 * (a bit set over an empty map costs the lookup, never a verdict). The agent ORs in the
 * bits of what the pinned maps hold at every start.
 */
struct dt_features {
	__u32 lists; /* DT_FEAT_ALLOW_V4 ...: a list's range set is in its slot */
	__u32 bans;  /* DT_FEAT_BANS_V4, _V6: the family's ban trie may hold a ban */
};
#define DT_FEAT_ALLOW_V4 (1u << 0)
#define DT_FEAT_ALLOW_V6 (1u << 1)
#define DT_FEAT_DENY_V4  (1u << 2)
#define DT_FEAT_DENY_V6  (1u << 3)
#define DT_FEAT_BANS_V4  (1u << 0)
#define DT_FEAT_BANS_V6  (1u << 1)
/* The bit of list `list` (DT_LIST_ALLOW 0, DT_LIST_DENY 1) in `lists`, per family. */
#define DT_FEAT_LIST(list, is_v6) (1u << ((list) * 2 + ((is_v6) ? 1 : 0)))

DT_LAYOUT_ASSERT(dt_features, 8);

#endif /* DTHROTTLE_ABI_CONFIG_H */
