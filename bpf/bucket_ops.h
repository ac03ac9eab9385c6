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
#include "clock.h"
#include "ablate.h"

enum dt_take_result {
	DT_TAKE_ADMIT = 0,
	DT_TAKE_DENY,
	DT_TAKE_CONTENDED, /* lost DT_CAS_RETRIES races in a row: treated as deny */
	DT_TAKE_NEED_CLOCK, /* dt_bucket_take_ahead: only the precise time can decide */
};

static __always_inline struct dt_config *dt_config_get(void)
{
	__u32 zero = 0;

#if DT_ABLATED(CONFIG)
	return &dt_ablate_cfg;
#endif
	return bpf_map_lookup_elem(&config, &zero);
}

/* The policy of `rule` in policy bank `bank`, or NULL. */
static __always_inline const struct dt_policy *dt_policy_in_bank(__u32 bank, __u32 rule)
{
	__u32 slot;

	if (rule >= DT_MAX_RULES)
		return NULL;
#if DT_ABLATED(POLICY)
	return &dt_ablate_pol;
#endif
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

/* Find the bucket of `key`, creating a full one (tat 0) on first sight from this CPU's
 * bucket_fresh slot `fresh_slot` (DT_FRESH_PACKET or DT_FRESH_DEBIT); NULL if none. */
static __always_inline struct dt_bucket *
dt_bucket_get(const struct dt_key *key, struct dt_stats *st, __u32 fresh_slot)
{
	struct dt_bucket *b = bpf_map_lookup_elem(&buckets, key), *fresh;

	if (b)
		return b;
	fresh = bpf_map_lookup_elem(&bucket_fresh, &fresh_slot);
	if (!fresh)
		return NULL;
	fresh->rule = key->rule;
	/* Two CPUs may race here: BPF_NOEXIST lets exactly one insert win, the other
	 * gets -EEXIST and uses the winner's bucket. */
	if (bpf_map_update_elem(&buckets, key, fresh, BPF_NOEXIST) == 0)
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

/* Compare-and-swap attempts of a take without a clock read (dt_bucket_take_ahead): a race
 * lost to another CPU's admission into the same bucket in debt leaves it in debt, so the
 * next attempt usually succeeds without the clock that the precise path would read. */
#define DT_AHEAD_TRIES 4

/*
 * A take of `cost` from `b` (whose TAT was `old`) without a clock read, for a bucket in
 * debt at every time the packet may be at (bpf/clock.h): DT_TAKE_ADMIT (the TAT moved by
 * cost x interval, as the precise clock would have moved it), or DT_TAKE_NEED_CLOCK when
 * the TAT the attempt sees is not past `bound` (the CPU's clock bound), the take is not
 * admitted at `lo` (the anchor's time: never after now), or other CPUs changed the TAT
 * DT_AHEAD_TRIES times in a row: then nothing was taken, and the precise time decides
 * (with its retries). Each attempt is judged on the TAT it swaps, as the first is.
 * `next`: the caller's scratch word (no stack of its own: see dt_time_bound).
 */
static __always_inline enum dt_take_result
dt_bucket_take_ahead(struct dt_bucket *b, __u64 old, __u64 bound, __u64 lo, const struct dt_policy *p,
		     __u64 cost, __u64 *next)
{
	__u64 seen;
	int i;

	for (i = 0; i < DT_AHEAD_TRIES; i++) {
		if (old <= bound || !dt_gcra_admit_n(old, lo, p, cost, next))
			return DT_TAKE_NEED_CLOCK;
		seen = __sync_val_compare_and_swap(&b->tat_ns, old, *next);
		if (seen == old)
			return DT_TAKE_ADMIT;
		old = seen;
	}
	return DT_TAKE_NEED_CLOCK;
}

/*
 * A take of `cost` from `b`, with the configured clock's verdict and as few clock reads
 * as that needs (bpf/clock.h): a take refused at this CPU's clock bound is refused, and
 * one admitted into a bucket in debt past it is admitted, without reading a clock (the
 * time returned: the anchor's estimate, good for last_seen and the drop counts); any
 * other reads the clock once (returned) and is decided on it. The result in *take.
 * Not under prefix budgets (dt_now_for_take there): dt_throttle_facts' frame, in the
 * deepest chain of calls, has no stack to spare for it on Linux 6.1 (see dt_decide).
 */
static __always_inline __u64 dt_bucket_take_timed(struct dt_bucket *b, const struct dt_config *cfg,
						  const struct dt_policy *p, __u64 cost, int *take)
{
	struct dt_time_bound t;
	__u64 tat, next, now;

	if (DT_ABLATED(BOUND)) {
		now = dt_now(cfg);
		*take = dt_bucket_take(b, now, p, cost);
		return now;
	}
	dt_time_bound(cfg, &t);
	if (t.bound) {
		tat = DT_READ_ONCE(b->tat_ns);
		*take = DT_TAKE_DENY;
		if (!dt_gcra_admit_n(tat, t.bound, p, cost, &next))
			return t.est;
		*take = dt_bucket_take_ahead(b, tat, t.bound, dt_anchor_ns(), p, cost, &next);
		if (*take != DT_TAKE_NEED_CLOCK)
			return t.est;
	}
	now = dt_time_read(cfg, &t);
	*take = dt_bucket_take(b, now, p, cost);
	return now;
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

/* Records that the source was seen at `now`, but writes the bucket only when its
 * last_seen_ns is more than DT_LAST_SEEN_SLACK_NS old: a flood on every CPU then
 * writes it every few ms, not per packet. (Signed: after a switch to the coarse
 * clock, which lags by a tick, a stored time a little ahead is simply fresh.) */
static __always_inline void dt_touch(struct dt_bucket *b, __u64 now)
{
	if (DT_ABLATED(TOUCH))
		return;
	if ((__s64)(now - DT_READ_ONCE(b->last_seen_ns)) > (__s64)DT_LAST_SEEN_SLACK_NS)
		b->last_seen_ns = now;
}

/* Adds a slot's held counts into bucket `b` (one atomic add per count) and frees it. */
static __always_inline void dt_drop_flush(struct dt_bucket *b, struct dt_drop_pending *s)
{
	if (b && s->dropped)
		__sync_fetch_and_add(&b->dropped, s->dropped);
	if (b && s->would_drop)
		__sync_fetch_and_add(&b->would_drop, s->would_drop);
	s->dropped = 0;
	s->would_drop = 0;
	s->packets = 0;
}

/*
 * Counts a drop (or, `would`, a dry-run would-drop) of `cost` for the bucket `b` of
 * `key` at `now`, without writing the shared bucket per packet: see struct
 * dt_drop_pending in dthrottle/abi/buckets.h for the slots and who reads them.
 * `b` must be `key`'s element of the `buckets` map: a stale slot's holder is looked
 * up there (a bucket kept in another map needs its own slots or a map argument).
 */
static __always_inline void dt_count_drop(struct dt_bucket *b, const struct dt_key *key, __u64 cost,
					  int would, __u64 now)
{
	__u32 slot = dt_drop_slot(key);
	struct dt_drop_pending *s = bpf_map_lookup_elem(&drop_pending, &slot);

	if (!s) {
		__sync_fetch_and_add(would ? &b->would_drop : &b->dropped, cost);
		return;
	}
	if (s->packets && !dt_key_eq(&s->key, key)) {
		if ((__s64)(now - s->since_ns) < (__s64)DT_DROP_FLUSH_NS) {
			/* Held by another source, recently: count this one directly. */
			__sync_fetch_and_add(would ? &b->would_drop : &b->dropped, cost);
			return;
		}
		/* Held by a source not dropped for a while: its counts go home first
		 * (its bucket may be gone: then they go with it). */
		dt_drop_flush(bpf_map_lookup_elem(&buckets, &s->key), s);
	}
	if (!s->packets) {
		s->key = *key;
		s->since_ns = now;
	}
	if (would)
		s->would_drop += cost;
	else
		s->dropped += cost;
	s->packets++;
	/* Signed: a refusal's time is an estimate (bpf/clock.h) that may be a little
	 * behind a time read earlier; that slot is simply not old yet. */
	if (s->packets >= DT_DROP_FLUSH_PACKETS || (__s64)(now - s->since_ns) >= (__s64)DT_DROP_FLUSH_NS)
		dt_drop_flush(b, s);
}

#endif /* DTHROTTLE_BUCKET_OPS_H */
