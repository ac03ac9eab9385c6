/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/buckets.h - a source's bucket (struct dt_bucket, DT_MAP_BUCKETS), the limits that keep
 * its arithmetic in 64 bits, the drops pending per CPU and the clock anchor.
 */
#ifndef DTHROTTLE_ABI_BUCKETS_H
#define DTHROTTLE_ABI_BUCKETS_H

#include <linux/types.h>
#include "layout.h"
#include "keys.h"

/*
 * The drop path writes nothing shared (see struct dt_drop_pending): a bucket's
 * last_seen_ns is rewritten only once it is DT_LAST_SEEN_SLACK_NS old, and its
 * dropped / would_drop counts gather per CPU in one of DT_DROP_SLOTS slots, added
 * into the bucket after DT_DROP_FLUSH_PACKETS packets or DT_DROP_FLUSH_NS.
 */
#define DT_LAST_SEEN_SLACK_NS 4000000ull   /* 4 ms */
#define DT_DROP_SLOTS 8u                   /* per CPU; a power of 2 */
#define DT_DROP_FLUSH_PACKETS 256u
#define DT_DROP_FLUSH_NS 10000000ull       /* 10 ms */

/* Bounded compare-and-swap retries on a contended bucket. */
#define DT_CAS_RETRIES 16

/* Limits on the policy, so that no bucket arithmetic can overflow 64 bits
 * (see dthrottle/bucket.h): rates in [DT_RATE_MIN, DT_RATE_MAX] packets per second,
 * bursts in [1, DT_BURST_MAX] packets. */
#define DT_RATE_MIN 0.000001
#define DT_RATE_MAX 1000000.0
#define DT_BURST_MAX 1000000000ull
#define DT_NSEC_PER_SEC 1000000000ull

/*
 * Per-source state, one element per source in the LRU hash map DT_MAP_BUCKETS.
 *
 * Who writes what (the agent never calls bpf_map_update_elem on a live bucket, since
 * that would replace the element and lose concurrent kernel updates):
 *   tat_ns       compare-and-swap only, by the XDP program (admit) and by the
 *                debit program the agent runs with BPF_PROG_RUN (peer hits).
 *   passed       atomic add, XDP program (admissions are rare under a flood: the
 *                bucket's rate bounds them).
 *   dropped,
 *   would_drop   atomic add, XDP program, but not per packet: drops gather per CPU
 *                in the drop_pending map (struct dt_drop_pending) and reach the
 *                bucket DT_DROP_FLUSH_PACKETS at a time, or after DT_DROP_FLUSH_NS.
 *                Readers add the pending counts (dt::for_each_bucket, read_bucket).
 *   debited      atomic add, debit program.
 *   reported     the collect program only (the agent runs it, one thread): the value
 *                of `passed` already reported to peers; passed - reported is owed.
 *   last_seen_ns plain store by the XDP program (any CPU's recent time is fine),
 *                only when it is more than DT_LAST_SEEN_SLACK_NS old: a flood
 *                rewrites it every few ms, not every packet.
 *   rule         set once when the bucket is created.
 *   epoch        compare-and-swap by the XDP program: the last report period in
 *                which this source was announced as active (see dt_mark_active).
 */
struct dt_bucket {
	__u64 tat_ns;       /* GCRA theoretical arrival time, CLOCK_MONOTONIC ns */
	__u64 passed;       /* packets admitted */
	__u64 dropped;      /* packets dropped for lack of tokens */
	__u64 debited;      /* hits debited on behalf of peers */
	__u64 reported;     /* admitted packets already reported to peers */
	__u64 last_seen_ns; /* time of the last packet from this source */
	__u32 rule;         /* index of the rule whose policy applies */
	__u32 epoch;        /* report period this source was last announced in */
	__u64 would_drop;   /* dry run: packets (or bytes) that enforcing would have dropped */
};

/*
 * Drops not yet added to their bucket: DT_DROP_SLOTS per CPU (a per-CPU array
 * DT_MAP_DROP_PENDING, the slot chosen by a hash of the key), so that a source
 * flooding every CPU costs each CPU no write to the shared bucket per packet.
 * A slot belongs to one bucket key while it holds counts (packets > 0). A drop of
 * that key adds to it; after DT_DROP_FLUSH_PACKETS packets, or once the slot is
 * DT_DROP_FLUSH_NS old, its counts go into the bucket with one atomic add each.
 * A drop of another key whose slot is held adds to its bucket directly (as before
 * this map), unless the holder is DT_DROP_FLUSH_NS old: then the holder's counts
 * go to its bucket and the slot changes hands. Readers add every CPU's pending
 * counts to the bucket of the same key: exact when nothing is being dropped; while
 * a flush is under way a reading may miss up to DT_DROP_FLUSH_PACKETS packets of
 * a slot for a moment. A map of its own, so older pins still fit.
 */
struct dt_drop_pending {
	struct dt_key key;   /* the bucket these counts belong to (packets > 0) */
	__u32 packets;       /* drops held, in packets (the flush threshold) */
	__u64 dropped;       /* to add to the bucket's dropped (packets, or bytes) */
	__u64 would_drop;    /* to add to its would_drop (dry run) */
	__u64 since_ns;      /* when the slot took its first held drop */
};

/*
 * Where a CPU's clock bound counts jiffies from (bpf/clock.h): the precise time `ns`
 * read just after jiffies was `jiffies`. Per CPU (map clock_anchor, not pinned: a
 * cache, valid for the boot), written by the packet path of its CPU only.
 */
struct dt_clock_anchor {
	__u64 jiffies;
	__u64 ns;       /* 0: no anchor yet */
};
/* An anchor older than this many ticks is taken again (one precise read per CPU every
 * 256 ticks at most: 0.26-2.6 s), so no error of the bound can build up. */
#define DT_ANCHOR_MAX_TICKS 256u

DT_LAYOUT_ASSERT(dt_bucket, 64);
DT_LAYOUT_ASSERT(dt_drop_pending, 48);

#endif /* DTHROTTLE_ABI_BUCKETS_H */
