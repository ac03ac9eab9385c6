/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/bans.h - bans as the kernel and the agent share them (struct dt_ban, dt_ban_key4,
 * dt_ban_info, dt_ban_counts; DT_MAP_BANS_V4, _V6, BAN_INFO, BAN_COUNTS).
 */
#ifndef DTHROTTLE_ABI_BANS_H
#define DTHROTTLE_ABI_BANS_H

#include <linux/types.h>
#include "layout.h"
#include "keys.h"

/*
 * Bans (agent ban, bpf/bans.bpf.h, docs/bans.md): an address or prefix dropped until
 * `expires_ns` (CLOCK_MONOTONIC, bpf_ktime_get_ns), checked right after the cluster's own
 * traffic. Keys: struct dt_ban_key4 in DT_MAP_BANS_V4 (an IPv4 packet looks up its
 * address, not the mapped form), struct dt_lpm_key in DT_MAP_BANS_V6. The value names
 * a slot (0 .. DT_MAX_BANS-1) that is the ban's key in DT_MAP_BAN_INFO (what, why, who:
 * never read by the programs) and DT_MAP_BAN_COUNTS (its packets, per CPU: the drop path
 * writes nothing shared). An expired ban passes the packet (counted ban_expired) until
 * the agent sweeps it. Written by the agent only (agent/bans/ban_store.h), whole elements.
 */
#define DT_MAX_BANS 65536u
#define DT_BAN_REASON_LEN 96
#define DT_BAN_ORIGIN_LEN 64
#define DT_BAN_WHO_LEN 64
struct dt_ban_key4 {
	__u32 prefixlen;  /* 0..32 */
	__u8 addr[4];
};
struct dt_ban {
	__u64 expires_ns;  /* CLOCK_MONOTONIC; the ban holds while now < expires_ns */
	__u32 slot;        /* its key in ban_info and ban_counts */
	__u32 pad;
};
struct dt_ban_counts {
	__u64 dropped;     /* packets dropped by the ban */
	__u64 would_drop;  /* packets it would have dropped (DT_CFG_DRY_RUN) */
};
struct dt_ban_info {
	__u8 addr[16];           /* IPv4-mapped for an IPv4 ban, as dt_key */
	__u8 prefixlen;          /* within its family: 0..32 or 0..128 */
	__u8 is_v6;
	__u8 remote;             /* 1: learned from a peer (never re-announced by this host) */
	__u8 pad[5];
	__u64 expires_ns;        /* as the trie's value */
	__u64 set_unix_ms;       /* when it was set (at its origin) */
	char reason[DT_BAN_REASON_LEN];
	char origin[DT_BAN_ORIGIN_LEN];  /* "local", "crowdsec", "query", or a peer's node id */
	char who[DT_BAN_WHO_LEN];        /* who set it: "uid 0 (agent ban)", ... */
};

DT_LAYOUT_ASSERT(dt_ban_key4, 8);
DT_LAYOUT_ASSERT(dt_ban, 16);
DT_LAYOUT_ASSERT(dt_ban_counts, 16);
DT_LAYOUT_ASSERT(dt_ban_info, 40 + DT_BAN_REASON_LEN + DT_BAN_ORIGIN_LEN + DT_BAN_WHO_LEN);

#endif /* DTHROTTLE_ABI_BANS_H */
