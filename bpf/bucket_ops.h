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
#include <bpf/bpf_helpers.h>
#include "dthrottle/bucket.h"
#include "maps.h"

#define DT_READ_ONCE(x) (*(volatile typeof(x) *)&(x))

enum dt_take_result {
	DT_TAKE_ADMIT = 0,
	DT_TAKE_DENY,
	DT_TAKE_CONTENDED, /* lost DT_CAS_RETRIES races in a row: treated as deny */
};

/* The policy that applies to `rule` right now, or NULL. */
static __always_inline const struct dt_policy *dt_policy_for(__u32 rule)
{
	__u32 zero = 0, slot;
	struct dt_config *cfg = bpf_map_lookup_elem(&config, &zero);

	if (!cfg || rule >= DT_MAX_RULES)
		return NULL;
	slot = rule * 2 + (DT_READ_ONCE(cfg->bank) & 1);
	return bpf_map_lookup_elem(&policy, &slot);
}

/* Find the bucket of `key`, creating a full one (tat 0) on first sight. */
static __always_inline struct dt_bucket *
dt_bucket_get(const struct dt_key *key, __u32 rule, struct dt_stats *st)
{
	struct dt_bucket *b = bpf_map_lookup_elem(&buckets, key);

	if (b)
		return b;
	struct dt_bucket fresh = { .rule = rule };
	/* Two CPUs may race here: BPF_NOEXIST lets exactly one insert win, the other
	 * gets -EEXIST and uses the winner's bucket. */
	if (bpf_map_update_elem(&buckets, key, &fresh, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&st->new_sources, 1);
	return bpf_map_lookup_elem(&buckets, key);
}

/* Take one token at `now` if there is a whole one. */
static __always_inline enum dt_take_result
dt_bucket_take(struct dt_bucket *b, __u64 now, const struct dt_policy *p)
{
	__u64 old = DT_READ_ONCE(b->tat_ns), next, seen;
	int i;

	for (i = 0; i < DT_CAS_RETRIES; i++) {
		if (!dt_gcra_admit(old, now, p, &next))
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

#endif /* DTHROTTLE_BUCKET_OPS_H */
