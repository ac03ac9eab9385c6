/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * bucket.h - the token bucket arithmetic, shared by the XDP program and the agent.
 *
 * The XDP program, the debit program and the agent's unit tests all call these
 * functions, so GoogleTest exercises the very code the verifier loads.
 *
 * Representation: GCRA (generic cell rate algorithm), i.e. a token bucket kept as a
 * single 64-bit "theoretical arrival time" (TAT) in CLOCK_MONOTONIC nanoseconds:
 *
 *     tokens(now) = (now + burst_ns - max(tat, now)) / interval_ns
 *
 * with interval_ns = 1e9 / rate (the time one token takes to accrue) and
 * burst_ns = burst * interval_ns. Hence:
 *   - refill is implicit: time passing is refill, so nothing ever sweeps the map;
 *   - the cap is implicit: max(tat, now) means tokens never exceed burst;
 *   - a new bucket (tat = 0) is full;
 *   - a debit of n hits moves tat n * interval_ns into the future, which may take the
 *     balance below zero; time pays it back at `rate`, exactly as in the reference
 *     daemon's A/B example;
 *   - the whole state is one word, so a packet's admission is one compare-and-swap
 *     (no lost decrements, never admits a token it did not have), and a fraction of
 *     a token is simply a part of interval_ns: the resolution is 1 ns of time, which
 *     is 1/1000 of a token or finer for every rate up to DT_RATE_MAX.
 *
 * Overflow: the agent keeps interval_ns <= 1e15 and burst_ns <= 2^62 (see
 * abi/buckets.h limits), and a debit never moves tat more than DT_TAT_HORIZON_NS past now
 * (in practice no more than (DT_DEBT_MAX_BURSTS + 1) x burst_ns),
 * so every sum below fits in 64 bits for any uptime below 2^62 ns (146 years).
 */
#ifndef DTHROTTLE_BUCKET_H
#define DTHROTTLE_BUCKET_H

#include <linux/types.h>
#include "common.h"

#ifdef __cplusplus
#define DT_INLINE static inline
#else
#define DT_INLINE static __inline __attribute__((always_inline))
#endif

/* Largest distance a debit may push tat past now: 2^62 ns. */
#define DT_TAT_HORIZON_NS (1ull << 62)

/* The later of a bucket's TAT and now: where the next token is drawn from. */
DT_INLINE __u64 dt_gcra_base(__u64 tat, __u64 now)
{
	return tat > now ? tat : now;
}

/*
 * Try to take `n` tokens at time `now` (n = 1 for a packet rule, the frame's length
 * for a byte rule, DT_POL_BYTES). Returns 1 and stores the bucket's next state in
 * *next if n whole tokens are available, else returns 0 (state unchanged). A cost
 * above the burst can never be met and is refused before n * interval_ns is formed,
 * so that product is at most burst_ns (<= 2^62) and cannot overflow.
 */
DT_INLINE int dt_gcra_admit_n(__u64 tat, __u64 now, const struct dt_policy *p, __u64 n,
			      __u64 *next)
{
	__u64 v;

	if (n != 1 && (!p->interval_ns || n > p->burst_ns / p->interval_ns))
		return 0;
	v = dt_gcra_base(tat, now) + n * p->interval_ns;
	if (v > now + p->burst_ns)
		return 0;
	*next = v;
	return 1;
}

/* Take one token (a packet rule's cost). */
DT_INLINE int dt_gcra_admit(__u64 tat, __u64 now, const struct dt_policy *p,
			    __u64 *next)
{
	return dt_gcra_admit_n(tat, now, p, 1, next);
}

/*
 * Most debt peers' reports may put on a bucket, in bursts: a bucket is never debited
 * below -DT_DEBT_MAX_BURSTS x burst tokens, so however many hits arrive at once (a
 * healed partition's backlog, a lying or buggy peer), a source is back to a full
 * bucket within (DT_DEBT_MAX_BURSTS + 1) x burst / rate. In steady state a bucket's
 * debt is about (hosts - 1) x what the others admit in a period, far from it.
 */
#define DT_DEBT_MAX_BURSTS 16

/*
 * The latest TAT a debit may set at `now`: now + (DT_DEBT_MAX_BURSTS + 1) x burst_ns,
 * saturating at now + DT_TAT_HORIZON_NS.
 */
DT_INLINE __u64 dt_gcra_debt_limit(__u64 now, const struct dt_policy *p)
{
	if (p->burst_ns > DT_TAT_HORIZON_NS / (DT_DEBT_MAX_BURSTS + 1))
		return now + DT_TAT_HORIZON_NS;
	return now + p->burst_ns * (DT_DEBT_MAX_BURSTS + 1);
}

/*
 * Debit `hits` tokens unconditionally (hits another host admitted): the balance may
 * go negative, but the TAT never moves past `limit` (a TAT already beyond it is left
 * where it is). dt_gcra_debit's limit is dt_gcra_debt_limit; now + DT_TAT_HORIZON_NS
 * means no cap (the simulator's "before the cap" mode).
 */
DT_INLINE __u64 dt_gcra_debit_upto(__u64 tat, __u64 now, const struct dt_policy *p,
				   __u64 hits, __u64 limit)
{
	__u64 base = dt_gcra_base(tat, now);

	if (base >= limit)
		return base;
	if (p->interval_ns && hits > (limit - base) / p->interval_ns)
		return limit;
	return base + hits * p->interval_ns;
}

/*
 * Debit `hits` tokens (hits another host admitted): the balance may go negative, down
 * to -DT_DEBT_MAX_BURSTS x burst, where it stays however many more hits come.
 */
DT_INLINE __u64 dt_gcra_debit(__u64 tat, __u64 now, const struct dt_policy *p,
			      __u64 hits)
{
	return dt_gcra_debit_upto(tat, now, p, hits, dt_gcra_debt_limit(now, p));
}

/*
 * Tokens in the bucket at `now`, in thousandths of a token, rounded toward zero.
 * Negative while the bucket is in debt. For display and tests (userspace).
 */
DT_INLINE __s64 dt_gcra_tokens_milli(__u64 tat, __u64 now, const struct dt_policy *p)
{
	__s64 diff = (__s64)(now + p->burst_ns - dt_gcra_base(tat, now));
	__s64 iv = (__s64)p->interval_ns;

	if (iv == 0)
		return 0;
	return (diff / iv) * 1000 + ((diff % iv) * 1000) / iv;
}

/* Keeps the first `bits` bits of a 16-byte address and zeroes the rest. */
DT_INLINE void dt_mask_addr(__u8 *addr, __u32 bits)
{
	int i;

#ifndef __cplusplus
#pragma unroll
#endif
	for (i = 0; i < 16; i++) {
		__u32 keep = bits > 8u * i ? bits - 8u * i : 0;

		if (keep < 8)
			addr[i] &= (__u8)(0xff00 >> keep);
	}
}

/*
 * The bucket key of a source under a rule: the address cut to the rule's key prefix
 * (v4_key_bits of an IPv4 address, v6_key_bits of an IPv6 one; 0 means the whole
 * address), and the rule. IPv4 addresses are IPv4-mapped, so their bits start at 96.
 * Under a rule keyed by destination (DT_POL_KEY_DEST) `key` holds the packet's
 * destination address and key.rule gets DT_KEY_DEST.
 */
DT_INLINE void dt_key_for_rule(struct dt_key *key, const struct dt_policy *p, __u32 rule, int is_v6)
{
	__u32 bits = is_v6 ? p->v6_key_bits : 96u + p->v4_key_bits;

	if (is_v6 ? !p->v6_key_bits : !p->v4_key_bits)
		bits = 128;
	if (bits < 128)
		dt_mask_addr(key->addr, bits);
	key->rule = rule | ((p->flags & DT_POL_KEY_DEST) ? DT_KEY_DEST : 0u);
}

/* A bucket key as its 5 32-bit words, for hashing and comparing. */
struct dt_key_words {
	__u32 w[5];
};

/* Compares two bucket keys word by word. */
DT_INLINE int dt_key_eq(const struct dt_key *a, const struct dt_key *b)
{
	struct dt_key_words x, y;

	__builtin_memcpy(&x, a, sizeof(x));
	__builtin_memcpy(&y, b, sizeof(y));
	return !((x.w[0] ^ y.w[0]) | (x.w[1] ^ y.w[1]) | (x.w[2] ^ y.w[2]) | (x.w[3] ^ y.w[3]) |
		 (x.w[4] ^ y.w[4]));
}

/*
 * The drop_pending slot (0 .. DT_DROP_SLOTS-1) that holds a key's drops on each CPU
 * (see struct dt_drop_pending). Shared so that tests can find keys that share a slot.
 */
DT_INLINE __u32 dt_drop_slot(const struct dt_key *key)
{
	struct dt_key_words k;
	__u32 h;

	__builtin_memcpy(&k, key, sizeof(k));
	h = (k.w[0] ^ k.w[1] ^ k.w[2] ^ k.w[3]) * 0x9e3779b1u ^ k.w[4];
	h *= 0x85ebca6bu;
	return (h >> 24) & (DT_DROP_SLOTS - 1);
}

/*
 * Give back `n` tokens taken from a bucket whose state is now `tat` (prefix budgets:
 * a level that took its tokens for a packet that a later check refused). Taking
 * moved tat from max(tat0, t) to max(tat0, t) + n * interval_ns, and other takes and
 * debits since then only moved it further; moving it back by the same amount leaves
 * the bucket as if this packet had never taken anything (if the result is before now,
 * the bucket is simply full, as it was). Never below 0, in case the bucket was
 * evicted and recreated meanwhile (then there is nothing to give back).
 */
DT_INLINE __u64 dt_gcra_refund(__u64 tat, const struct dt_policy *p, __u64 n)
{
	__u64 back;

	if (!p->interval_ns || n > p->burst_ns / p->interval_ns)
		return tat;  /* a cost admit_n would never have granted */
	back = n * p->interval_ns;
	return tat > back ? tat - back : 0;
}

/* The key.rule of a prefix bucket: rule, level prefix length (within its family), family. */
DT_INLINE __u32 dt_prefix_key_rule(__u32 rule, __u32 bits, int is_v6)
{
	return DT_KEY_PREFIX | (is_v6 ? DT_KEY_PREFIX_V6 : 0) | ((bits & 0xffu) << DT_KEY_BITS_SHIFT) |
	       (rule & DT_KEY_RULE_MASK);
}

DT_INLINE int dt_key_is_prefix(__u32 key_rule) { return (key_rule & DT_KEY_PREFIX) != 0; }
DT_INLINE __u32 dt_key_rule_id(__u32 key_rule) { return key_rule & DT_KEY_RULE_MASK; }
DT_INLINE __u32 dt_key_prefix_bits(__u32 key_rule) { return (key_rule >> DT_KEY_BITS_SHIFT) & 0xffu; }
DT_INLINE int dt_key_prefix_v6(__u32 key_rule) { return (key_rule & DT_KEY_PREFIX_V6) != 0; }
/* A destination bucket's key.rule (key_by = "destination"): the rule with DT_KEY_DEST. */
DT_INLINE int dt_key_is_dest(__u32 key_rule) { return (key_rule & DT_KEY_DEST) != 0; }

/*
 * The key of the prefix bucket of `addr` (a source key, IPv4-mapped) at a level of
 * `bits` (within the family) of `rule`: the address cut to the level, and the
 * encoded rule above.
 */
DT_INLINE void dt_key_for_level(struct dt_key *out, const struct dt_key *src, __u32 rule, __u32 bits,
				int is_v6)
{
	__builtin_memcpy(out->addr, src->addr, 16);
	dt_mask_addr(out->addr, is_v6 ? bits : 96u + bits);
	out->rule = dt_prefix_key_rule(rule, bits, is_v6);
}

/*
 * The level of a prefix policy that a prefix bucket's key.rule names (same family,
 * same prefix length), or NULL: how the debit program and the agent find the
 * policy of a prefix bucket a peer reported.
 */
DT_INLINE const struct dt_policy *dt_prefix_level_of(const struct dt_prefix_policy *pp, __u32 key_rule)
{
	__u32 bits = dt_key_prefix_bits(key_rule), i;
	int v6 = dt_key_prefix_v6(key_rule);

#ifndef __cplusplus
#pragma unroll
#endif
	for (i = 0; i < DT_PREFIX_LEVELS; i++) {
		const struct dt_policy *l = v6 ? &pp->v6[i] : &pp->v4[i];

		if (i >= (v6 ? pp->n_v6 : pp->n_v4))
			break;
		if ((v6 ? l->v6_key_bits : l->v4_key_bits) == bits)
			return l;
	}
	return 0;
}

#endif /* DTHROTTLE_BUCKET_H */
