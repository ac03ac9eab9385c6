/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * clock.h - the time a packet is decided at (BPF side only).
 *
 * Buckets are computed in CLOCK_MONOTONIC nanoseconds: bpf_ktime_get_ns (precise),
 * or with --clock coarse bpf_ktime_get_coarse_ns (one tick behind at most). Both are
 * helper calls into the timekeeping code, about 12 ns each even for the coarse one on
 * a VM with return-stack mitigations: as much as the rest of a flood's drop path.
 *
 * A refusal needs no clock read at all. jiffies (bpf_jiffies64, which the JIT turns
 * into one load) counts the kernel's ticks, and the tick is a fixed span of
 * CLOCK_MONOTONIC (TICK_NSEC, which clock_getres(CLOCK_MONOTONIC_COARSE) reports).
 * Each CPU keeps an anchor: the precise time `ns` read just after jiffies was `j0`.
 * At a later packet that sees jiffies `j`, the precise clock is below
 *
 *     bound = ns + (j - j0) * tick + 2 * tick
 *
 * (one tick because jiffies counts whole ticks, one for a tick handled late: the
 * same assumption as the coarse clock's lag, dt_config.coarse_lag_ns = 2 ticks).
 * A GCRA take only gets easier as time passes, so a take refused at `bound` is
 * refused at the precise time too: the packet is dropped exactly as the precise
 * clock would drop it, and the flood's drop path reads no clock.
 *
 * Nor does an admission into a bucket in debt at every time the packet may be at: the
 * anchor's `ns` (`lo`) was read on this CPU before, so now >= lo. When the TAT is past
 * `bound`, max(tat, now) is the TAT whatever now is, the new TAT is tat + cost x
 * interval, and a take admitted at `lo` is admitted at every later time: decided at
 * `lo`, it is exactly the precise clock's decision (dt_bucket_take_ahead). Any other
 * take (a full bucket: its new TAT is now + cost x interval; one that only a later time
 * admits) reads the precise clock (or the coarse one) and is decided on it as always:
 * one read.
 */
#ifndef DTHROTTLE_CLOCK_H
#define DTHROTTLE_CLOCK_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/bucket.h"
#include "maps.h"
#include "ablate.h"

/* The clock of the configured kind (--clock): precise, or coarse (a few ns less per
 * read, and up to a tick behind: a source may get up to rate x tick more in a window,
 * never more on average). Debits always use the precise clock. */
static __always_inline __u64 dt_now(const struct dt_config *cfg)
{
	return (cfg->flags & DT_CFG_COARSE_CLOCK) ? bpf_ktime_get_coarse_ns() : bpf_ktime_get_ns();
}

/* What this CPU knows of the time without reading a clock (see the top). */
struct dt_time_bound {
	__u64 est;    /* the anchor's estimate of now, within two ticks of it (0: none) */
	__u64 bound;  /* est + two ticks: never before the precise clock (0: none) */
};

/* Fills `t` from this CPU's anchor; empty without a known tick (an older agent's
 * config: coarse_lag_ns 0), without an anchor yet, or with one DT_ANCHOR_MAX_TICKS old. */
static __always_inline void dt_time_bound(const struct dt_config *cfg, struct dt_time_bound *t)
{
	__u32 lag = cfg->coarse_lag_ns, zero = 0;
	struct dt_clock_anchor *a;
	__u64 ticks;

	t->est = 0;
	t->bound = 0;
	if (!lag)
		return;
	a = bpf_map_lookup_elem(&clock_anchor, &zero);
	if (!a || !a->ns)
		return;
	ticks = bpf_jiffies64() - a->jiffies;
	if (ticks >= DT_ANCHOR_MAX_TICKS)
		return;
	t->est = a->ns + ticks * (lag / 2);
	t->bound = t->est + lag;
}

/* This CPU's anchor's precise time (`lo`, 0: none): a time the precise clock read before
 * now, so never after it, whichever anchor is there. Looked up again rather than kept in
 * struct dt_time_bound, which the bans and prefix budgets share. */
static __always_inline __u64 dt_anchor_ns(void)
{
	struct dt_clock_anchor *a;
	__u32 zero = 0;

	a = bpf_map_lookup_elem(&clock_anchor, &zero);
	return a ? DT_READ_ONCE(a->ns) : 0;
}

/* Reads the configured clock, after taking this CPU's anchor again if `t` found none
 * usable (and the tick is known). */
static __always_inline __u64 dt_time_read(const struct dt_config *cfg, const struct dt_time_bound *t)
{
	struct dt_clock_anchor *a;
	__u32 zero = 0;

	if (DT_ABLATED(CLOCK) && t->bound)
		return t->est;
	if (!t->bound && cfg->coarse_lag_ns && (a = bpf_map_lookup_elem(&clock_anchor, &zero))) {
		a->jiffies = bpf_jiffies64(); /* before the clock read: ns must not precede it */
		a->ns = bpf_ktime_get_ns();
		if (!(cfg->flags & DT_CFG_COARSE_CLOCK))
			return a->ns;
	}
	return dt_now(cfg);
}

/*
 * The time to decide a take of `cost` from `b` at, with the configured clock's verdict
 * but without its cost on a refusal. Sets *refused and returns the estimate of now
 * (good for last_seen and the drop counts) when the take is refused at this CPU's
 * bound; otherwise reads the clock (dt_time_read) and returns it. For takes under prefix
 * budgets; the others: dt_bucket_take_timed (bpf/bucket_ops.h), which also admits into a
 * bucket in debt without a clock.
 */
static __always_inline __u64 dt_now_for_take(const struct dt_config *cfg, const struct dt_bucket *b,
					     const struct dt_policy *p, __u64 cost, int *refused)
{
	struct dt_time_bound t;
	__u64 next;

	dt_time_bound(cfg, &t);
	if (t.bound && !dt_gcra_admit_n(DT_READ_ONCE(b->tat_ns), t.bound, p, cost, &next)) {
		*refused = 1;
		return t.est;
	}
	return dt_time_read(cfg, &t);
}

#endif /* DTHROTTLE_CLOCK_H */
