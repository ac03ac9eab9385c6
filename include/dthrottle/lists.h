/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * lists.h - the allow and deny lists (rules file: allow_file, deny_file) as the
 * kernel and the agent share them. See docs/lists.md.
 *
 * A list is a set: is the source covered by any of its prefixes? So the agent turns a
 * family's prefixes into sorted, disjoint [lo, hi] address ranges (overlapping and adjacent
 * prefixes merged) and writes them into one BPF_MAP_TYPE_ARRAY of its own (a "range set"),
 * laid out as
 *   element 0                  the header (bits of the index, prefixes loaded, ...)
 *   elements 1 ..              the index: for each of the 2^bits buckets (the address bits
 *                              just past the set's common prefix), [start, end): the
 *                              elements of the ranges that meet the bucket
 *   the rest                   the ranges, ascending
 * A lookup is the header, one index entry and a bounded binary search within the slice.
 *
 * Each family has an outer BPF_MAP_TYPE_ARRAY_OF_MAPS (lists_v4, lists_v6) with one
 * slot per list (DT_LIST_ALLOW, DT_LIST_DENY). A slot holds a range set, or nothing (no
 * list). A reload fills a fresh set while the old one is in force, then swaps it into the
 * slot with one update: every packet sees the old list or the new one, whole.
 */
#ifndef DTHROTTLE_LISTS_H
#define DTHROTTLE_LISTS_H

#include <linux/types.h>

#include "abi/layout.h"

#define DT_MAP_LISTS_V4    "lists_v4"
#define DT_MAP_LISTS_V6    "lists_v6"
#define DT_MAP_LIST_STATS  "list_stats"

/* Slots of the outer maps. */
#define DT_LIST_ALLOW 0u
#define DT_LIST_DENY  1u
#define DT_LISTS      2u

/* Prefixes of one list and family the agent accepts (together, the lists hold at most
 * this many: rules/list_file.h). */
#define DT_LIST_MAX_PREFIXES (4u << 20)

/* Bits of a range set's index, at most (2^20 buckets); the binary search within a bucket
 * takes at most DT_LIST_SEARCH_STEPS halvings (2^24 ranges: more than any set holds). */
#define DT_LIST_INDEX_BITS_MAX 20u
#define DT_LIST_SEARCH_STEPS   24u

/* A prefix as list files give it (rules/list_file.h), address in network order. */
struct dt_list_v4_key {
	__u32 prefixlen;
	__u8 addr[4];
};

struct dt_list_v6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/* An IPv4 range set's element (8 bytes), addresses in host order. Header: `a` the index
 * bits (1..DT_LIST_INDEX_BITS_MAX; the index covers the top bits of the address), `b` the
 * prefixes loaded. Index entry of bucket i (element 1 + i): [a, b) the ranges' elements.
 * Range: [a, b] = [lo, hi]. */
struct dt_list_v4_elem {
	__u32 a, b;
};

/* An IPv6 range set's element (32 bytes), addresses as two host-order halves. */
struct dt_list_v6_head {
	__u32 bits;      /* index bits, 1..DT_LIST_INDEX_BITS_MAX */
	__u32 skip;      /* common prefix of every range (0..127): the index covers the bits past it */
	__u32 prefixes;  /* prefixes loaded */
	__u32 ranges;
	__u64 base_hi, base_lo;  /* an address of the common prefix (the first range's lo) */
};
struct dt_list_v6_slice {
	__u32 start, end;
};
struct dt_list_v6_range {
	__u64 lo_hi, lo_lo, hi_hi, hi_lo;
};
/* Index of bucket i: element 1 + i / 4, slice i % 4. */
#define DT_LIST_V6_SLICES_PER_ELEM 4u
union dt_list_v6_elem {
	struct dt_list_v6_head head;
	struct dt_list_v6_slice slice[DT_LIST_V6_SLICES_PER_ELEM];
	struct dt_list_v6_range range;
};

/* Per CPU, one element: what the lists decided. */
struct dt_list_stats {
	__u64 allowed;     /* passed by the allow list */
	__u64 denied;      /* dropped by the deny list */
	__u64 would_drop;  /* deny list under --dry-run: passed, counted */
};

DT_LAYOUT_ASSERT(dt_list_v4_key, 8);
DT_LAYOUT_ASSERT(dt_list_v6_key, 20);
DT_LAYOUT_ASSERT(dt_list_stats, 24);
DT_LAYOUT_ASSERT(dt_list_v4_elem, 8);
DT_UNION_LAYOUT_ASSERT(dt_list_v6_elem, 32);

#endif /* DTHROTTLE_LISTS_H */
