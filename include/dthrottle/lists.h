/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lists.h - the allow and deny lists (rules file: allow_file, deny_file) as the
 * kernel and the agent share them. See docs/lists.md.
 *
 * Each family has an outer BPF_MAP_TYPE_ARRAY_OF_MAPS (lists_v4, lists_v6) with one
 * slot per list (DT_LIST_ALLOW, DT_LIST_DENY). A slot holds an LPM trie the agent
 * made and filled (BPF_F_NO_PREALLOC: memory for the prefixes loaded only), or
 * nothing (no list). A reload fills a fresh trie while the old one is in force, then
 * swaps it into the slot with one update: every packet sees the old list or the
 * new one, whole. IPv4 keys are 4 bytes, so a v4 lookup walks at most 32 bits.
 */
#ifndef DTHROTTLE_LISTS_H
#define DTHROTTLE_LISTS_H

#include <linux/types.h>

#define DT_MAP_LISTS_V4    "lists_v4"
#define DT_MAP_LISTS_V6    "lists_v6"
#define DT_MAP_LIST_STATS  "list_stats"

/* Slots of the outer maps. */
#define DT_LIST_ALLOW 0u
#define DT_LIST_DENY  1u
#define DT_LISTS      2u

/* Capacity of one list's trie, per family (no memory is reserved for it). */
#define DT_LIST_MAX_PREFIXES (4u << 20)

struct dt_list_v4_key {
	__u32 prefixlen;
	__u8 addr[4];
};

struct dt_list_v6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/* The value of a list entry: unused by the program (an LPM trie needs one). */
typedef __u8 dt_list_value;

/* Per CPU, one element: what the lists decided. */
struct dt_list_stats {
	__u64 allowed;     /* passed by the allow list */
	__u64 denied;      /* dropped by the deny list */
	__u64 would_drop;  /* deny list under --dry-run: passed, counted */
};

#ifdef __cplusplus
static_assert(sizeof(struct dt_list_v4_key) == 8, "dt_list_v4_key layout");
static_assert(sizeof(struct dt_list_v6_key) == 20, "dt_list_v6_key layout");
static_assert(sizeof(struct dt_list_stats) == 24, "dt_list_stats layout");
#else
_Static_assert(sizeof(struct dt_list_v4_key) == 8, "dt_list_v4_key layout");
_Static_assert(sizeof(struct dt_list_v6_key) == 20, "dt_list_v6_key layout");
_Static_assert(sizeof(struct dt_list_stats) == 24, "dt_list_stats layout");
#endif

#endif /* DTHROTTLE_LISTS_H */
