/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * announce.h - cluster mode: the packet path announces each source the first time it
 * is admitted in a report period, so the agent learns which buckets owe the next peer
 * report without walking the map (its work per period grows with the active sources).
 *
 * The CPU that finds the bucket's epoch behind the period's stores it (a plain store,
 * made once per source and period: a compare-and-swap would be a second locked
 * instruction beside the admission's) and adds the key to its own stage (struct
 * dt_active_stage, per CPU: no shared write). Two CPUs that admit the source at the same
 * moment of a new period may both announce it: the agent keeps a set (below).
 * A full stage goes to the `active` ring as one record, so the ring's lock, its shared
 * producer position and the record's commit are paid once per DT_STAGE_KEYS
 * announcements: a record per key cost as much as the rest of the packet path with a million new sources a period.
 * A stage holding keys of an older period is written out before a key of the new one
 * joins it; at a period's end the agent also reads what every CPU still holds
 * (Collector::end_period). A key may so be read twice (from a stage, later from its
 * record): the agent keeps a set, and a second collect of a bucket finds no new hits.
 *
 * No wakeup per record: the agent drains the ring at the end of every period, so a
 * record only wakes it when the ring is more than 1/2^DT_ACTIVE_WAKE_SHIFT full.
 *
 * If the ring is full, a full stage keeps its keys (written out at a later
 * announcement, or read by the agent at the period's end) and the key that found no
 * room has its mark undone, so a later packet announces it again. Nothing announced
 * is lost, and the hits themselves never are: they stay in passed - reported.
 */
#ifndef DTHROTTLE_ANNOUNCE_H
#define DTHROTTLE_ANNOUNCE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "maps.h"

/* Writes the stage to the ring as one record. 0, or -1 (the ring is full: kept). */
static __always_inline int dt_stage_write_out(struct dt_active_stage *s)
{
	__u64 wake = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&active, BPF_RB_AVAIL_DATA) >
	    (bpf_ringbuf_query(&active, BPF_RB_RING_SIZE) >> DT_ACTIVE_WAKE_SHIFT))
		wake = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&active, s, sizeof(*s), wake) != 0)
		return -1;
	s->count = 0;
	return 0;
}

/* Adds `key` to the CPU's stage for period `epoch`: 0, or -1 if there is no room. */
static __always_inline int dt_stage_add(const struct dt_key *key, __u32 epoch)
{
	__u32 zero = 0, n;
	struct dt_active_stage *s = bpf_map_lookup_elem(&active_stage, &zero);

	if (!s)
		return -1;
	if (s->count && s->epoch != epoch && dt_stage_write_out(s) != 0)
		return -1;  /* an older period's keys, not written out: the agent reads them */
	n = s->count;
	if (n >= DT_STAGE_KEYS) {
		if (dt_stage_write_out(s) != 0)
			return -1;
		n = 0;
	}
	/* The mask proves the bound to the verifier: Linux 6.1's loses a bound checked
	 * on a copy of the register, and the barrier keeps the compiler from dropping
	 * the mask as redundant. */
	barrier_var(n);
	n &= DT_STAGE_KEYS - 1;
	s->epoch = epoch;
	s->keys[n] = *key;
	/* The key before the count that covers it: the agent may read the stage at any
	 * moment (Collector::read_stages) and reads keys[0 .. count). */
	asm volatile("" ::: "memory");
	s->count = n + 1;
	if (n + 1 == DT_STAGE_KEYS)
		dt_stage_write_out(s);  /* at once, so that a quiet CPU holds no full stage */
	return 0;
}

/* Announces `key` (bucket `b`) in period `epoch` if it is its first admission there. */
static __always_inline void dt_mark_active(struct dt_bucket *b, const struct dt_key *key,
					   __u32 epoch, struct dt_stats *st)
{
	__u32 seen = DT_READ_ONCE(b->epoch);

	if (seen == epoch)
		return;
	b->epoch = epoch;
	if (dt_stage_add(key, epoch) != 0) {
		b->epoch = 0;
		st->report_overflow++;
	}
}

#endif /* DTHROTTLE_ANNOUNCE_H */
