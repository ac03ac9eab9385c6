/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lists.bpf.h - the allow and deny lists (dthrottle/lists.h, docs/lists.md), checked
 * by dt_decide after the cluster's own traffic and before the rules: a source on the
 * allow list passes whatever else would hold it; one on the deny list is dropped
 * (under --dry-run, DT_CFG_DRY_RUN: passed and counted as would-drop).
 *
 * A list is a set of address ranges (dthrottle/lists.h: a range set, an array the agent
 * built): one lookup in the outer array (inlined by the verifier) finds the list's set of
 * the packet's family, if the agent loaded one; its header and one index entry give the
 * slice of ranges that meet the source's bucket, and a binary search of at most
 * DT_LIST_SEARCH_STEPS halvings (one array lookup each) finds the one range that could hold
 * the source. The searches are global functions: verified once, whatever calls them.
 * Counters are per CPU (list_stats): the drop path writes nothing shared.
 */
#ifndef DTHROTTLE_LISTS_BPF_H
#define DTHROTTLE_LISTS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "dthrottle/common.h"
#include "dthrottle/lists.h"
#include "maps.h"

/* 1 if the IPv4 range set of list `list` holds `addr` (host order), else 0. */
__noinline int dt_list_has_v4(__u32 list, __u32 addr)
{
	const struct dt_list_v4_elem *e;
	__u32 k = 0, bits, base, n, i;
	void *set = bpf_map_lookup_elem(&lists_v4, &list);

	if (!set)
		return 0;
	e = bpf_map_lookup_elem(set, &k);
	if (!e)
		return 0;
	bits = e->a;
	if (bits < 1 || bits > DT_LIST_INDEX_BITS_MAX)
		return 0;
	k = 1 + (addr >> (32 - bits));
	e = bpf_map_lookup_elem(set, &k);
	if (!e || e->b <= e->a)
		return 0;
	base = e->a;
	n = e->b - e->a;
	/* The last range of [base, base + n) whose lo <= addr. */
	for (i = 0; i < DT_LIST_SEARCH_STEPS && n > 1; i++) {
		k = base + (n >> 1);
		e = bpf_map_lookup_elem(set, &k);
		if (!e)
			return 0;
		if (e->a <= addr)
			base = k;
		n -= n >> 1;
	}
	e = bpf_map_lookup_elem(set, &base);
	return n == 1 && e && e->a <= addr && addr <= e->b;
}

/* a <= b, 128-bit addresses as host-order halves. */
static __always_inline int dt_addr6_le(__u64 a_hi, __u64 a_lo, __u64 b_hi, __u64 b_lo)
{
	return a_hi < b_hi || (a_hi == b_hi && a_lo <= b_lo);
}

/* The 64 bits of hi:lo from bit `skip` (0..127) on. */
static __always_inline __u64 dt_addr6_from(__u64 hi, __u64 lo, __u32 skip)
{
	if (skip == 0)
		return hi;
	if (skip < 64)
		return (hi << skip) | (lo >> (64 - skip));
	return lo << ((skip - 64) & 63);
}

/* Whether the difference dh:dl of two addresses is 0 in its first `skip` (1..127) bits. */
static __always_inline int dt_addr6_shares(__u64 dh, __u64 dl, __u32 skip)
{
	if (skip <= 64)
		return (dh >> ((64 - skip) & 63)) == 0;
	return dh == 0 && (dl >> ((128 - skip) & 63)) == 0;
}

/* The slice of the IPv6 set `set` whose ranges meet the bucket of hi:lo, in *base and *n;
 * 0 if no range can hold it. */
static __always_inline int dt_list_v6_slice(void *set, __u64 hi, __u64 lo, __u32 *base, __u32 *n)
{
	const union dt_list_v6_elem *e;
	__u32 k = 0, bits, skip, b;

	e = bpf_map_lookup_elem(set, &k);
	if (!e)
		return 0;
	bits = e->head.bits;
	skip = e->head.skip;
	if (bits < 1 || bits > DT_LIST_INDEX_BITS_MAX || skip > 127)
		return 0;
	if (skip && !dt_addr6_shares(hi ^ e->head.base_hi, lo ^ e->head.base_lo, skip))
		return 0; /* outside the set's common prefix: no range holds it */
	b = dt_addr6_from(hi, lo, skip) >> (64 - bits);
	k = 1 + b / DT_LIST_V6_SLICES_PER_ELEM;
	e = bpf_map_lookup_elem(set, &k);
	if (!e)
		return 0;
	*base = e->slice[b % DT_LIST_V6_SLICES_PER_ELEM].start;
	*n = e->slice[b % DT_LIST_V6_SLICES_PER_ELEM].end - *base;
	return e->slice[b % DT_LIST_V6_SLICES_PER_ELEM].end > *base;
}

/* 1 if the IPv6 range set of list `list` holds hi:lo (host-order halves), else 0. */
__noinline int dt_list_has_v6(__u32 list, __u64 hi, __u64 lo)
{
	const union dt_list_v6_elem *e;
	__u32 k, base = 0, n = 0, i;
	void *set = bpf_map_lookup_elem(&lists_v6, &list);

	if (!set || !dt_list_v6_slice(set, hi, lo, &base, &n))
		return 0;
	for (i = 0; i < DT_LIST_SEARCH_STEPS && n > 1; i++) {
		k = base + (n >> 1);
		e = bpf_map_lookup_elem(set, &k);
		if (!e)
			return 0;
		if (dt_addr6_le(e->range.lo_hi, e->range.lo_lo, hi, lo))
			base = k;
		n -= n >> 1;
	}
	e = bpf_map_lookup_elem(set, &base);
	return n == 1 && e && dt_addr6_le(e->range.lo_hi, e->range.lo_lo, hi, lo) &&
	       dt_addr6_le(hi, lo, e->range.hi_hi, e->range.hi_lo);
}

/* 1 if `src` (a 16-byte key, IPv4 mapped) is on list `list` of its family, else 0.
 * Called only while the list's bit is on (struct dt_features, dt_screen): a list the agent
 * has not loaded (the usual case) costs that one test, no lookup. The outer lookup is
 * inlined by the verifier: a slot emptied while the bit is still on costs it alone, not a
 * call of the search that would look it up again. */
static __always_inline int dt_on_list(__u32 list, const struct dt_key *src, __u32 is_v6)
{
	__u64 hi, lo;
	__u32 a4;

	if (is_v6) {
		if (!bpf_map_lookup_elem(&lists_v6, &list))
			return 0;
		__builtin_memcpy(&hi, src->addr, 8);
		__builtin_memcpy(&lo, src->addr + 8, 8);
		return dt_list_has_v6(list, bpf_be64_to_cpu(hi), bpf_be64_to_cpu(lo));
	}
	if (!bpf_map_lookup_elem(&lists_v4, &list))
		return 0;
	__builtin_memcpy(&a4, src->addr + 12, 4);
	return dt_list_has_v4(list, bpf_ntohl(a4));
}

/* This CPU's list counters (NULL only if the map could not be read). */
static __always_inline struct dt_list_stats *dt_list_counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&list_stats, &zero);
}

/* 1 if the allow list holds the source (the packet passes, counted), else 0. */
static __always_inline int dt_allow_listed(const struct dt_key *src, __u32 is_v6)
{
	struct dt_list_stats *ls;

	if (!dt_on_list(DT_LIST_ALLOW, src, is_v6))
		return 0;
	ls = dt_list_counters();
	if (ls)
		ls->allowed++;
	return 1;
}

/* The deny list's verdict: XDP_DROP (XDP_PASS under --dry-run, counted as would-drop)
 * if it holds the source, else -1 (the rules decide). */
static __always_inline int dt_deny_listed(const struct dt_config *cfg, const struct dt_key *src, __u32 is_v6)
{
	struct dt_list_stats *ls;

	if (!dt_on_list(DT_LIST_DENY, src, is_v6))
		return -1;
	ls = dt_list_counters();
	if (cfg->flags & DT_CFG_DRY_RUN) {
		if (ls)
			ls->would_drop++;
		return XDP_PASS;
	}
	if (ls)
		ls->denied++;
	return XDP_DROP;
}

#endif /* DTHROTTLE_LISTS_BPF_H */
