/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lists.bpf.h - the allow and deny lists (dthrottle/lists.h, docs/lists.md), checked
 * by dt_decide after the cluster's own traffic and before the rules: a source on the
 * allow list passes whatever else would hold it; one on the deny list is dropped
 * (under --dry-run, DT_CFG_DRY_RUN: passed and counted as would-drop).
 *
 * One lookup in the outer array (inlined by the verifier) finds the list's trie of the
 * packet's family, if the agent loaded one; one LPM lookup in it decides. An IPv4
 * source is looked up with its 4 bytes: a v4 trie is at most 32 levels deep.
 * Counters are per CPU (list_stats): the drop path writes nothing shared.
 */
#ifndef DTHROTTLE_LISTS_BPF_H
#define DTHROTTLE_LISTS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "dthrottle/lists.h"
#include "maps.h"

/* 1 if `src` (a 16-byte key, IPv4 mapped) is on list `list` of its family, else 0. */
static __always_inline int dt_on_list(__u32 list, const struct dt_key *src, __u32 is_v6)
{
	void *trie;

	if (is_v6) {
		struct dt_list_v6_key k6 = { .prefixlen = 128 };

		trie = bpf_map_lookup_elem(&lists_v6, &list);
		if (!trie)
			return 0;
		__builtin_memcpy(k6.addr, src->addr, 16);
		return bpf_map_lookup_elem(trie, &k6) != NULL;
	}
	struct dt_list_v4_key k4 = { .prefixlen = 32 };

	trie = bpf_map_lookup_elem(&lists_v4, &list);
	if (!trie)
		return 0;
	__builtin_memcpy(k4.addr, src->addr + 12, 4);
	return bpf_map_lookup_elem(trie, &k4) != NULL;
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
