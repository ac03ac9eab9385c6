/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * debit.bpf.h - the agent's write path into live buckets.
 *
 * A userspace bpf_map_update_elem() on a hash element replaces the whole element, so
 * a read-modify-write of a bucket from userspace would lose the XDP program's
 * concurrent token takes. Instead the agent stages up to DT_DEBIT_BATCH
 * (source, hits) pairs in the debit_batch array and runs this program once with
 * BPF_PROG_RUN; it applies each debit with a compare-and-swap on the bucket's
 * tat_ns, creating the bucket (full, then debited) if the source is new here.
 * Entries that could not be applied are counted in ctx->failed, and their hits
 * field is left non-zero so the agent can retry exactly those.
 */
#ifndef DTHROTTLE_DEBIT_BPF_H
#define DTHROTTLE_DEBIT_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "maps.h"
#include "bucket_ops.h"
#include "batch.h"
#include "prefix.bpf.h"

struct dt_debit_loop {
	__u64 now;
	__u32 count;
	__u32 applied;
	__u32 failed;
	__u32 pad;
	__u64 hits;
	struct dt_stats *st;
	struct dt_config *cfg;
};

/*
 * Debit `hits` tokens from the bucket of `key` under `pol` at `now`, creating it (full,
 * then debited) if the source is new here: 0, or -1 (no bucket to be had, or every
 * compare-and-swap lost). A global function: the verifier checks its retries once, not
 * once for each way dt_policy_for_key found the policy (a source's rule, each prefix level).
 */
__noinline int dt_debit_key(const struct dt_key *key, const struct dt_policy *pol, struct dt_stats *st, __u64 now,
			    __u32 hits)
{
	struct dt_bucket *b;
	struct dt_key k;

	if (!key || !pol || !st)
		return -1;
	k = *key;  /* Linux 6.1 takes no map key from a global function's argument */
	b = dt_bucket_get(&k, st, DT_FRESH_DEBIT);
	if (!b || dt_bucket_debit(b, now, pol, hits) != 0)
		return -1;
	__sync_fetch_and_add(&b->debited, hits);
	return 0;
}

static long dt_debit_one(__u32 i, void *arg)
{
	struct dt_debit_loop *lc = arg;
	const struct dt_policy *pol;
	struct dt_debit *d;
	__u32 hits;

	d = dt_batch_entry(&debit_batch, i, lc->count);
	if (!d)
		return 1;
	hits = d->hits;
	if (!hits)
		return 0;
	/* A source's rule, or the prefix level a prefix bucket's key names. */
	pol = lc->cfg ? dt_policy_for_key(lc->cfg, d->key.rule) : NULL;
	if (!pol || !pol->interval_ns || pol->action != DT_ACT_THROTTLE) {
		lc->failed++;
		return 0;
	}
	if (dt_debit_key(&d->key, pol, lc->st, lc->now, hits) != 0) {
		lc->failed++;
		return 0;
	}
	d->hits = 0;
	lc->applied++;
	lc->hits += hits;
	return 0;
}

SEC("syscall")
int dt_debit(struct dt_debit_ctx *ctx)
{
	struct dt_debit_loop lc = {};
	__u32 zero = 0;

	lc.st = bpf_map_lookup_elem(&stats, &zero);
	if (!lc.st)
		return -1;
	lc.cfg = dt_config_get();
	lc.count = ctx->count;
	if (lc.count > DT_DEBIT_BATCH)
		lc.count = DT_DEBIT_BATCH;
	/* The precise clock (syscall programs have no coarse one): never behind the
	 * packet path's, so a debit can only ever err toward fewer tokens. */
	lc.now = bpf_ktime_get_ns();
	bpf_loop(lc.count, dt_debit_one, &lc, 0);
	__sync_fetch_and_add(&lc.st->debit_hits, lc.hits);
	ctx->applied = lc.applied;
	ctx->failed = lc.failed;
	return 0;
}

#endif /* DTHROTTLE_DEBIT_BPF_H */
