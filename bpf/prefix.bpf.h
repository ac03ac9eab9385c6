/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * prefix.bpf.h - prefix budgets: a throttle rule's cap on the aggregate of its
 * sources per prefix (e.g. every IPv4 /24 and /16, every IPv6 /48), so that a flood
 * of random spoofed sources, each new and under its own limit, meets one budget per
 * flooded prefix instead of passing whole.
 *
 * A packet of a rule with DT_POL_PREFIX passes only when every level of its family
 * and its own source bucket have its tokens. The levels are checked first, so a
 * source whose prefix is out of budget is dropped without its own bucket being
 * created: the LRU keeps the legitimate sources. Each level is a bucket in the
 * `buckets` map (key: the address cut to the level, key.rule encoded as in
 * abi/prefix.h), so the collect, debit and report machinery shares it with the peers
 * exactly like a source bucket.
 *
 * Exactness (no token created, none lost for good): tokens are taken one bucket at a
 * time with the usual compare-and-swap, so a later refusal (a narrower level, or
 * the source) means the levels already charged must be paid back. dt_gcra_refund
 * moves a level's tat back by exactly what was taken (bucket.h), with bounded
 * compare-and-swap retries; a refund that loses DT_CAS_RETRIES races in a row is
 * given up, which errs toward fewer tokens, never more. To keep refunds (shared
 * writes) off the drop path of a flood, nothing is written until every check is
 * known to pass:
 *   1. a known source already out of tokens is left to its own bucket, which drops
 *      it (the levels are not touched: DT_PFX_DEFERRED);
 *   2. every level is looked at without writing (broadest first); one without
 *      tokens drops the packet here, counted per level and per CPU (steps 1 and 2
 *      look at the CPU's clock bound, which reads no clock: dt_pfx_now);
 *   3. only then is a token taken at every level (creating a level's bucket on
 *      first sight); a race lost since step 2 refunds the levels already taken.
 * After the source's own take, dt_prefix_settle completes the packet: admitted, the
 * levels count it as passed (and are announced for the next report in cluster
 * mode); refused, the levels get their tokens back. In the deferred case a source
 * that does get a token after all (another CPU's refund gave one back) has its
 * levels charged then, or its token refunded and the packet dropped.
 */
#ifndef DTHROTTLE_PREFIX_BPF_H
#define DTHROTTLE_PREFIX_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "dthrottle/bucket.h"
#include "maps.h"
#include "bucket_ops.h"
#include "announce.h"

enum dt_prefix_state {
	DT_PFX_NONE = 0,  /* no levels for this packet: the source bucket alone decides */
	DT_PFX_TAKEN,     /* every level's token is taken: settle after the source's take */
	DT_PFX_DEFERRED,  /* the source had no token at a first look: levels untouched */
};

/* The packet as the level functions see it (one pointer: global functions take at
 * most five arguments, and scalars only behind pointers). */
struct dt_pfx_arg {
	struct dt_key src;  /* the source's bucket key */
	__u32 rule;
	__u32 is_v6;
	__u32 epoch;        /* cluster mode: the report period (0: not reporting) */
	__u32 coarse;       /* --clock coarse: the takes read the coarse clock */
	__u32 pad;
	__u64 bound;        /* never before the precise clock (bpf/clock.h): what looks are made at */
	__u64 now;          /* the clock, read before the first take (0: not yet) */
	__u64 cost;
};

_Static_assert(sizeof(struct dt_pfx_arg) == 64, "dt_pfx_arg has no hole");

/* The time the takes are made at: the clock, read once per packet when first needed.
 * Looks (steps 1 and 2 below) are made at `bound` instead: a refusal there is the
 * clock's refusal (a GCRA take only gets easier with time), and a flood that a prefix
 * refuses reads no clock; a level that passes the look but not the take is refunded
 * like a race lost. */
static __always_inline __u64 dt_pfx_now(struct dt_pfx_arg *a)
{
	if (!a->now)
		a->now = a->coarse ? bpf_ktime_get_coarse_ns() : bpf_ktime_get_ns();
	return a->now;
}

/* What dt_prefix_check leaves for dt_prefix_settle (on the caller's stack; scalars
 * only, as global functions require). */
struct dt_prefix_pass {
	__u32 state;   /* enum dt_prefix_state */
	__u32 slot;    /* the rule's slot in prefix_policy: rule * 2 + bank */
	__u32 taken;   /* bit i: level i's token was taken (no bit: no bucket to be had) */
	__u32 pad;
	struct dt_pfx_arg a;
};

/* The level functions are global BPF functions: the verifier checks each once, not
 * once per level and per path through the packet program (with their compare-and-
 * swap loops inlined four times over, dt_xdp exceeded the verifier's budget). They
 * find the level's bucket by its key each time rather than keep pointers across calls.
 * The loops over the levels (at most DT_PREFIX_LEVELS) are unrolled: a loop whose
 * back edge is a call's fallthrough is refused by older verifiers ("back-edge from
 * insn", Linux 6.1) even for root. */

/* Level `l`'s bucket key for the packet. */
static __always_inline void dt_pfx_key(struct dt_key *lk, const struct dt_pfx_arg *a, const struct dt_policy *l)
{
	dt_key_for_level(lk, &a->src, a->rule, a->is_v6 ? l->v6_key_bits : l->v4_key_bits, a->is_v6);
}

/* Level `l`'s bucket for the packet's prefix if there is one, or NULL. */
static __always_inline struct dt_bucket *dt_pfx_bucket(const struct dt_pfx_arg *a, const struct dt_policy *l)
{
	struct dt_key lk;

	dt_pfx_key(&lk, a, l);
	return bpf_map_lookup_elem(&buckets, &lk);
}

/* Give `cost` tokens back to bucket `b` under policy `p` (a level's, or a source's in
 * the deferred case; bounded retries, see the top): 1 given back, 0 not. */
static __always_inline int dt_bucket_refund(struct dt_bucket *b, const struct dt_policy *p, __u64 cost)
{
	__u64 old = DT_READ_ONCE(b->tat_ns), seen;
	int i;

	for (i = 0; i < DT_CAS_RETRIES; i++) {
		seen = __sync_val_compare_and_swap(&b->tat_ns, old, dt_gcra_refund(old, p, cost));
		if (seen == old)
			return 1;
		old = seen;
	}
	return 0;
}

/* Step 2: 1 if level `l` has the packet's tokens (a bucket not there yet is full), else 0. */
__noinline int dt_pfx_peek(const struct dt_pfx_arg *a, const struct dt_policy *l)
{
	struct dt_bucket *b;
	__u64 next;

	if (!a || !l)
		return 1;
	b = dt_pfx_bucket(a, l);
	return !b || dt_gcra_admit_n(DT_READ_ONCE(b->tat_ns), a->bound, l, a->cost, &next);
}

/* Step 3 for one level: 1 taken, 0 refused, 2 no bucket to be had (fails open). */
__noinline int dt_pfx_take(const struct dt_pfx_arg *a, const struct dt_policy *l)
{
	struct dt_bucket *b;
	struct dt_stats *st;
	struct dt_key lk;
	__u32 zero = 0;

	if (!a || !l)
		return 2;
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return 2;
	dt_pfx_key(&lk, a, l);
	b = dt_bucket_get(&lk, st, DT_FRESH_PACKET);
	if (!b)
		return 2;
	return dt_bucket_take(b, a->now, l, a->cost) == DT_TAKE_ADMIT;
}

/* Give the packet's tokens back to level `l` (bounded retries, see the top). */
__noinline int dt_pfx_refund(const struct dt_pfx_arg *a, const struct dt_policy *l)
{
	struct dt_bucket *b;

	if (!a || !l)
		return 0;
	b = dt_pfx_bucket(a, l);
	if (!b)
		return 0;  /* evicted meanwhile: nothing to give back to */
	return dt_bucket_refund(b, l, a->cost);
}

/* The packet passed: level `l` counts it (and announces itself for the next report). */
__noinline int dt_pfx_passed(const struct dt_pfx_arg *a, const struct dt_policy *l)
{
	struct dt_bucket *b;
	struct dt_stats *st;
	struct dt_key lk;
	__u32 zero = 0;

	if (!a || !l)
		return 0;
	dt_pfx_key(&lk, a, l);
	b = bpf_map_lookup_elem(&buckets, &lk);
	if (!b)
		return 0;
	__sync_fetch_and_add(&b->passed, a->cost);
	if (DT_READ_ONCE(b->last_seen_ns) != a->now)
		b->last_seen_ns = a->now;  /* admitted packets only: bounded by the level's rate */
	st = bpf_map_lookup_elem(&stats, &zero);
	if (a->epoch && st)
		dt_mark_active(b, &lk, a->epoch, st);
	return 1;
}

/* Level i's policy for this packet's family. */
static __always_inline const struct dt_policy *dt_prefix_level(const struct dt_prefix_policy *pp,
							       const struct dt_prefix_pass *ps, __u32 i)
{
	return ps->a.is_v6 ? &pp->v6[i] : &pp->v4[i];
}

/* Levels of the packet's family. */
static __always_inline __u32 dt_prefix_count(const struct dt_prefix_policy *pp, const struct dt_prefix_pass *ps)
{
	__u32 n = ps->a.is_v6 ? pp->n_v6 : pp->n_v4;

	return n < DT_PREFIX_LEVELS ? n : DT_PREFIX_LEVELS;
}

/* One more packet dropped by level i of the rule (per CPU: no shared write). */
static __always_inline void dt_prefix_count_drop(const struct dt_prefix_pass *ps, __u32 i)
{
	__u32 idx = ps->a.rule * DT_PREFIX_SLOTS + (ps->a.is_v6 ? DT_PREFIX_LEVELS : 0) + i;
	__u64 *c = bpf_map_lookup_elem(&prefix_drops, &idx);

	if (c)
		*c += 1;
}

/* Refund the levels whose token was taken. */
static __always_inline void dt_prefix_refund(const struct dt_prefix_policy *pp, struct dt_prefix_pass *ps)
{
	__u32 i;

#pragma unroll
	for (i = 0; i < DT_PREFIX_LEVELS; i++)
		if (ps->taken & (1u << i))
			dt_pfx_refund(&ps->a, dt_prefix_level(pp, ps, i));
	ps->taken = 0;
}

/* Step 3 for level i (of n): 1 if it refused (the caller refunds), else 0 (taken, or
 * no bucket to be had: fails open). */
static __always_inline int dt_prefix_take_refused(const struct dt_prefix_policy *pp, struct dt_prefix_pass *ps,
						  __u32 i, __u32 n)
{
	int r;

	if (i >= n)
		return 0;
	r = dt_pfx_take(&ps->a, dt_prefix_level(pp, ps, i));
	if (r == 1)
		ps->taken |= 1u << i;
	return r == 0;
}

/* Step 3: a token at every level, broadest first. 0, or -1 with the levels taken so
 * far refunded and the refusing level's drop counted. Written out, not a loop: see the
 * note on loops above. */
static __always_inline int dt_prefix_take_all(const struct dt_prefix_policy *pp, struct dt_prefix_pass *ps)
{
	__u32 n = dt_prefix_count(pp, ps), refused = DT_PREFIX_LEVELS;

	_Static_assert(DT_PREFIX_LEVELS == 4, "one dt_prefix_take_refused per level");
	ps->taken = 0;
	dt_pfx_now(&ps->a);
	if (dt_prefix_take_refused(pp, ps, 0, n))
		refused = 0;
	else if (dt_prefix_take_refused(pp, ps, 1, n))
		refused = 1;
	else if (dt_prefix_take_refused(pp, ps, 2, n))
		refused = 2;
	else if (dt_prefix_take_refused(pp, ps, 3, n))
		refused = 3;
	if (refused < DT_PREFIX_LEVELS) {
		dt_prefix_refund(pp, ps);
		dt_prefix_count_drop(ps, refused);
		return -1;
	}
	ps->state = DT_PFX_TAKEN;
	return 0;
}

/*
 * Fills `ps` for a packet of `rule` (the source's bucket key `src`, cut to the rule's
 * key prefix, which is longer than every level), to be looked at `bound` (bpf/clock.h)
 * and taken at the clock (`now` if it was read already, else 0). Then dt_prefix_check.
 */
static __always_inline void dt_prefix_init(struct dt_prefix_pass *ps, __u32 bank, __u32 rule,
					   const struct dt_key *src, int is_v6, __u64 bound, __u64 now,
					   __u64 cost, const struct dt_config *cfg)
{
	ps->state = DT_PFX_NONE;
	ps->slot = (rule & DT_KEY_RULE_MASK) * 2 + (bank & 1);
	ps->taken = 0;
	ps->pad = 0;
	ps->a.src = *src;
	ps->a.rule = rule & DT_KEY_RULE_MASK;
	ps->a.is_v6 = is_v6;
	ps->a.coarse = !!(cfg->flags & DT_CFG_COARSE_CLOCK);
	ps->a.pad = 0;
	ps->a.bound = bound;
	ps->a.now = now;
	ps->a.cost = cost;
	ps->a.epoch = (cfg->flags & DT_CFG_REPORT) ? cfg->epoch : 0;
}

/* Step 2 for level i (of n): 1 if it has no token for the packet (its drop counted), else 0. */
static __always_inline int dt_prefix_refuses(const struct dt_prefix_policy *pp, const struct dt_prefix_pass *ps,
					     __u32 i, __u32 n)
{
	if (i >= n || dt_pfx_peek(&ps->a, dt_prefix_level(pp, ps, i)))
		return 0;
	dt_prefix_count_drop(ps, i);
	return 1;
}

/*
 * Before the source bucket is looked up or created: 0 to go on (the source decides,
 * then dt_prefix_settle), or -1 when a level of the packet's prefix is out of budget
 * (the packet is to be dropped; nothing of the source was created or charged).
 * `pol` is the rule's policy. A global function: verified once, and the packet
 * program sees only its verdict.
 */
__noinline int dt_prefix_check(struct dt_prefix_pass *ps, const struct dt_policy *pol)
{
	const struct dt_prefix_policy *pp;
	struct dt_bucket *b;
	struct dt_key src;
	__u32 n, slot;
	__u64 next;

	if (!ps || !pol)
		return 0;
	ps->state = DT_PFX_NONE;
	slot = ps->slot;
	if (ps->a.rule >= DT_MAX_RULES)
		return 0;
	pp = bpf_map_lookup_elem(&prefix_policy, &slot);
	if (!pp)
		return 0;
	n = dt_prefix_count(pp, ps);
	if (!n)
		return 0;
	/* 1. A known source without a token: its own bucket drops it. (The key is copied
	 * to the stack: Linux 6.1 takes no map key from a global function's argument.) */
	src = ps->a.src;
	b = bpf_map_lookup_elem(&buckets, &src);
	if (b && !dt_gcra_admit_n(DT_READ_ONCE(b->tat_ns), ps->a.bound, pol, ps->a.cost, &next)) {
		ps->state = DT_PFX_DEFERRED;
		return 0;
	}
	/* 2. Look at every level, writing nothing (written out: see the note on loops). */
	_Static_assert(DT_PREFIX_LEVELS == 4, "one dt_prefix_refuses per level");
	if (dt_prefix_refuses(pp, ps, 0, n) || dt_prefix_refuses(pp, ps, 1, n) || dt_prefix_refuses(pp, ps, 2, n) ||
	    dt_prefix_refuses(pp, ps, 3, n))
		return -1;
	/* 3. Take them all. */
	return dt_prefix_take_all(pp, ps);
}

/*
 * After the source's own take (`res`, an enum dt_take_result, on bucket `sb`): the
 * final result. Admitted, the levels count the packet as passed (and, in cluster
 * mode, are announced for the next report like a source); refused, they get their
 * tokens back. A global function, like dt_prefix_check.
 */
__noinline int dt_prefix_settle(struct dt_prefix_pass *ps, struct dt_bucket *sb, const struct dt_policy *pol,
				int res)
{
	const struct dt_prefix_policy *pp;
	__u32 i, slot;

	if (!ps || ps->state == DT_PFX_NONE)
		return res;
	slot = ps->slot;
	pp = bpf_map_lookup_elem(&prefix_policy, &slot);
	if (!pp)
		return res;
	if (res != DT_TAKE_ADMIT) {
		if (ps->state == DT_PFX_TAKEN)
			dt_prefix_refund(pp, ps);
		return res;
	}
	if (ps->state == DT_PFX_DEFERRED && dt_prefix_take_all(pp, ps) != 0) {
		if (sb && pol)
			dt_bucket_refund(sb, pol, ps->a.cost);
		return DT_TAKE_DENY;
	}
#pragma unroll
	for (i = 0; i < DT_PREFIX_LEVELS; i++)
		if (ps->taken & (1u << i))
			dt_pfx_passed(&ps->a, dt_prefix_level(pp, ps, i));
	return res;
}

/* The policy that applies to a bucket key's rule: a source's or a destination's rule
 * (NULL unless the rule is keyed the way the key is: DT_KEY_DEST and DT_POL_KEY_DEST
 * agree), or the level a prefix bucket's key names (NULL if that rule has no such level now). */
static __always_inline const struct dt_policy *dt_policy_for_key(const struct dt_config *cfg, __u32 key_rule)
{
	const struct dt_prefix_policy *pp;
	const struct dt_policy *pol;
	__u32 slot, rule = dt_key_rule_id(key_rule);

	if (!dt_key_is_prefix(key_rule)) {
		pol = dt_policy_for(cfg, key_rule & ~DT_KEY_DEST);
		if (pol && !(pol->flags & DT_POL_KEY_DEST) != !dt_key_is_dest(key_rule))
			return NULL;
		return pol;
	}
	if (rule >= DT_MAX_RULES)
		return NULL;
	slot = rule * 2 + (DT_READ_ONCE(cfg->bank) & 1);
	pp = bpf_map_lookup_elem(&prefix_policy, &slot);
	return pp ? dt_prefix_level_of(pp, key_rule) : NULL;
}

#endif /* DTHROTTLE_PREFIX_BPF_H */
