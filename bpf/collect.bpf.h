/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * collect.bpf.h - what each active source owes the next peer report.
 *
 * The agent stages up to DT_COLLECT_BATCH source keys (those the packet path
 * announced in the `active` ring) in collect_batch and runs dt_collect once with
 * BPF_PROG_RUN. For each source it reads the bucket's `passed` counter and returns
 * passed - reported, then sets reported = passed. Only this program writes
 * `reported`, and the agent runs it from one thread, so every admitted packet is
 * reported exactly once: packets admitted while it runs show up in the next report.
 */
#ifndef DTHROTTLE_COLLECT_BPF_H
#define DTHROTTLE_COLLECT_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "maps.h"
#include "bucket_ops.h"
#include "batch.h"

struct dt_collect_loop {
	__u32 count;
	__u32 found;
};

static long dt_collect_one(__u32 i, void *arg)
{
	struct dt_collect_loop *lc = arg;
	struct dt_collect *c;
	struct dt_bucket *b;
	__u64 passed;

	c = dt_batch_entry(&collect_batch, i, lc->count);
	if (!c)
		return 1;
	b = bpf_map_lookup_elem(&buckets, &c->key);
	if (!b) {
		c->hits = 0; /* evicted: its unreported hits are gone with it */
		return 0;
	}
	passed = DT_READ_ONCE(b->passed);
	c->hits = passed - b->reported;
	b->reported = passed;
	lc->found++;
	return 0;
}

SEC("syscall")
int dt_collect(struct dt_debit_ctx *ctx)
{
	struct dt_collect_loop lc = {};

	lc.count = ctx->count;
	if (lc.count > DT_COLLECT_BATCH)
		lc.count = DT_COLLECT_BATCH;
	bpf_loop(lc.count, dt_collect_one, &lc, 0);
	ctx->applied = lc.found;
	ctx->failed = lc.count - lc.found;
	return 0;
}

#endif /* DTHROTTLE_COLLECT_BPF_H */
