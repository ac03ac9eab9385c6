/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bucket_ops.h - atomic operations on a live bucket (BPF side only).
 *
 * Every change to a bucket's token state is a compare-and-swap of its single
 * 64-bit tat_ns word, computed with the shared arithmetic in dthrottle/bucket.h:
 * the XDP program on every CPU and the debit program run by the agent may touch the
 * same bucket at once, and none of their updates can be lost.
 */
#ifndef DTHROTTLE_BUCKET_OPS_H
#define DTHROTTLE_BUCKET_OPS_H

#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/bucket.h"
#include "maps.h"

#define DT_READ_ONCE(x) (*(volatile typeof(x) *)&(x))

enum dt_take_result {
	DT_TAKE_ADMIT = 0,
	DT_TAKE_DENY,
	DT_TAKE_CONTENDED, /* lost DT_CAS_RETRIES races in a row: treated as deny */
};

/*
 * The time buckets are computed in. bpf_ktime_get_ns costs ~30 ns on a KVM guest,
 * about a third of the packet path; with DT_CFG_COARSE_CLOCK the coarse clock (a
 * few ns) is used instead: it lags by at most one tick (1-4 ms), so a source may
 * get up to rate x tick more in a window, never more on average. Debits always use
 * the precise clock, which is never behind the coarse one: they can only err
 * toward fewer tokens.
 */
static __always_inline __u64 dt_now(const struct dt_config *cfg)
{
	return (cfg->flags & DT_CFG_COARSE_CLOCK) ? bpf_ktime_get_coarse_ns() : bpf_ktime_get_ns();
}

static __always_inline struct dt_config *dt_config_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&config, &zero);
}

/* The policy of `rule` in policy bank `bank`, or NULL. */
static __always_inline const struct dt_policy *dt_policy_in_bank(__u32 bank, __u32 rule)
{
	__u32 slot;

	if (rule >= DT_MAX_RULES)
		return NULL;
	slot = rule * 2 + (bank & 1);
	return bpf_map_lookup_elem(&policy, &slot);
}

/* The policy that applies to `rule` right now, or NULL. A packet that also matches
 * rules must read the bank once and use dt_policy_in_bank, so that its rule and its
 * policy come from the same rule set even if a reload flips the bank meanwhile. */
static __always_inline const struct dt_policy *
dt_policy_for(const struct dt_config *cfg, __u32 rule)
{
	return dt_policy_in_bank(DT_READ_ONCE(cfg->bank), rule);
}

/* Find the bucket of `key`, creating a full one (tat 0) on first sight. */
static __always_inline struct dt_bucket *
dt_bucket_get(const struct dt_key *key, struct dt_stats *st)
{
	struct dt_bucket *b = bpf_map_lookup_elem(&buckets, key);

	if (b)
		return b;
	struct dt_bucket fresh = { .rule = key->rule };
	/* Two CPUs may race here: BPF_NOEXIST lets exactly one insert win, the other
	 * gets -EEXIST and uses the winner's bucket. */
	if (bpf_map_update_elem(&buckets, key, &fresh, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&st->new_sources, 1);
	return bpf_map_lookup_elem(&buckets, key);
}

/* Take `cost` tokens at `now` if they are all there (1 for a packet, the frame's
 * length for a byte rule): a packet never passes on part of its cost. */
static __always_inline enum dt_take_result
dt_bucket_take(struct dt_bucket *b, __u64 now, const struct dt_policy *p, __u64 cost)
{
	__u64 old = DT_READ_ONCE(b->tat_ns), next, seen;
	int i;

	for (i = 0; i < DT_CAS_RETRIES; i++) {
		if (!dt_gcra_admit_n(old, now, p, cost, &next))
			return DT_TAKE_DENY;
		seen = __sync_val_compare_and_swap(&b->tat_ns, old, next);
		if (seen == old)
			return DT_TAKE_ADMIT;
		old = seen;
	}
	return DT_TAKE_CONTENDED;
}

/* Debit `hits` tokens (may go negative). Returns 0, or -1 if every CAS lost. */
static __always_inline int dt_bucket_debit(struct dt_bucket *b, __u64 now,
					   const struct dt_policy *p, __u64 hits)
{
	__u64 old = DT_READ_ONCE(b->tat_ns), seen;
	int i;

	for (i = 0; i < DT_CAS_RETRIES; i++) {
		seen = __sync_val_compare_and_swap(&b->tat_ns, old,
						   dt_gcra_debit(old, now, p, hits));
		if (seen == old)
			return 0;
		old = seen;
	}
	return -1;
}

/*
 * Cluster mode: announce a source the first time it is admitted in report period
 * `epoch`, so the agent learns which buckets owe a report without walking the map.
 * One CPU wins the compare-and-swap of b->epoch and writes the key to the ring.
 * If the ring is full the mark is undone, so a later packet announces it again:
 * the hits themselves are never lost (they stay in passed - reported).
 */
static __always_inline void dt_mark_active(struct dt_bucket *b, const struct dt_key *key,
					   __u32 epoch, struct dt_stats *st)
{
	__u32 seen = DT_READ_ONCE(b->epoch);

	if (seen == epoch)
		return;
	if (__sync_val_compare_and_swap(&b->epoch, seen, epoch) != seen)
		return;
	struct dt_active_event ev = { .key = *key, .epoch = epoch };

	if (bpf_ringbuf_output(&active, &ev, sizeof(ev), 0) != 0) {
		b->epoch = 0;
		st->report_overflow++;
	}
}

#endif /* DTHROTTLE_BUCKET_OPS_H */
