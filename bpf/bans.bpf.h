/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bans.bpf.h - bans (agent ban, docs/bans.md): an address or prefix dropped until its
 * expiry, whatever the rules say. Checked right after the cluster's own traffic, before
 * the rules.
 *
 * One LPM lookup in the packet's family (IPv4 packets look up their 4-byte address in
 * bans_v4, IPv6 ones their 16 bytes in bans_v6). A hit holds while now < expires_ns.
 * The time: this CPU's clock bound first (bpf/clock.h): when even the bound is before
 * the expiry, the ban certainly holds and a banned flood's drop path reads no clock;
 * only near (or past) the expiry is the clock read. An expired ban passes the packet
 * (counted ban_expired) until the agent sweeps it. The counts go to this CPU's element
 * of ban_counts at the ban's slot and to its global counters: nothing shared is written.
 * With DT_CFG_DRY_RUN (--dry-run) a banned packet passes, counted as would-drop.
 * dt_screen calls dt_banned only while the family's bit is on (struct dt_features: the
 * agent sets it before it writes a ban, clears it once the trie is empty): without a ban,
 * a packet pays one test, not a call into the LPM trie.
 */
#ifndef DTHROTTLE_BANS_BPF_H
#define DTHROTTLE_BANS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "maps.h"
#include "clock.h"

/* The ban on `key`'s address (IPv4-mapped for IPv4), or NULL. */
static __always_inline struct dt_ban *dt_ban_lookup(const struct dt_key *key, int is_v6)
{
	if (!is_v6) {
		struct dt_ban_key4 k4 = { .prefixlen = 32 };

		__builtin_memcpy(k4.addr, &key->addr[12], 4);
		return bpf_map_lookup_elem(&bans_v4, &k4);
	}
	struct dt_lpm_key k6 = { .prefixlen = 128 };

	__builtin_memcpy(k6.addr, key->addr, 16);
	return bpf_map_lookup_elem(&bans_v6, &k6);
}

/* Whether a ban expiring at `expires` still holds: the clock bound when it settles it. */
static __always_inline int dt_ban_holds(const struct dt_config *cfg, __u64 expires)
{
	struct dt_time_bound tb;

	dt_time_bound(cfg, &tb);
	if (tb.bound && tb.bound < expires)
		return 1;
	return dt_time_read(cfg, &tb) < expires;
}

/*
 * 1 when the packet from `key` is banned (counted: dropped, or would-drop in dry run), so
 * the caller returns XDP_DROP (XDP_PASS in dry run); 0 when no ban holds (no ban, or an
 * expired one, counted) and the packet goes on to the next check.
 */
static __always_inline int dt_banned(const struct dt_key *key, int is_v6, const struct dt_config *cfg,
				     struct dt_stats *st)
{
	struct dt_ban_counts *bc;
	struct dt_ban *ban;
	__u32 slot;

	ban = dt_ban_lookup(key, is_v6);
	if (!ban)
		return 0;
	if (!dt_ban_holds(cfg, DT_READ_ONCE(ban->expires_ns))) {
		st->ban_expired++;
		return 0;
	}
	slot = ban->slot;
	bc = bpf_map_lookup_elem(&ban_counts, &slot);
	if (cfg->flags & DT_CFG_DRY_RUN) {
		st->ban_would_drop++;
		if (bc)
			bc->would_drop++;
	} else {
		st->ban_dropped++;
		if (bc)
			bc->dropped++;
	}
	return 1;
}

/* The verdict on a banned packet: dropped, or passed in dry run. */
static __always_inline int dt_ban_verdict(const struct dt_config *cfg)
{
	return (cfg->flags & DT_CFG_DRY_RUN) ? XDP_PASS : XDP_DROP;
}

#endif /* DTHROTTLE_BANS_BPF_H */
