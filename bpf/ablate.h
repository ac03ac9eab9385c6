/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * ablate.h - bench only: the admitted path with one part left out.
 *
 * `bench ablate` (tools/bench/ablate.cpp) measures variants of dt_xdp side by side, each
 * built from this very source with -DDT_ABLATE=<one DT_ABLATE_* bit> (Makefile: build/ablate/),
 * so that what a part costs is the whole minus the variant without it. In the product
 * DT_ABLATE is 0: every DT_ABLATED() below is constant-false and compiles to nothing (the
 * object's instructions are the same with or without these tests). A variant is never
 * loaded by the agent: some leave out what correctness needs (the counters, the clock).
 */
#ifndef DTHROTTLE_ABLATE_H
#define DTHROTTLE_ABLATE_H

#include "dthrottle/common.h"

#ifndef DT_ABLATE
#define DT_ABLATE 0
#endif

#define DT_ABLATE_CLOCK    (1u << 0)  /* the precise clock read: the anchor's estimate instead */
#define DT_ABLATE_BOUND    (1u << 1)  /* the refusal test at the clock bound (anchor, jiffies) */
#define DT_ABLATE_CONFIG   (1u << 2)  /* the config lookup: a constant config instead */
#define DT_ABLATE_POLICY   (1u << 3)  /* the policy lookup: a constant policy instead */
#define DT_ABLATE_COUNTERS (1u << 4)  /* the per-CPU counters of an admission (and rule_stats) */
#define DT_ABLATE_CALL     (1u << 5)  /* dt_decide's call: inlined into the entry point (and
                                       * the prefix budgets' chain left out: its stack) */
#define DT_ABLATE_KEY      (1u << 6)  /* the bucket key's build (copy, mask, rule): the source's key */
#define DT_ABLATE_TOUCH    (1u << 7)  /* the last_seen test and write */
#define DT_ABLATE_PASSED   (1u << 8)  /* the bucket's passed count (an atomic add) */
#define DT_ABLATE_SCREEN   (1u << 9)  /* the lists and bans (dt_screen), idle */
#define DT_ABLATE_CAPTURE  (1u << 10) /* the capture's test, idle */
#define DT_ABLATE_PCPU     (1u << 11) /* the passed count's atomic add, replaced by this CPU's
                                       * slot (the drop path's per-CPU slots: lookup, key
                                       * compare, plain add): the floor of a per-CPU count */
#define DT_ABLATE_OWNER    (1u << 12) /* the owner test (config.owner against dt_instance) */

/* Every part above that a program specialised to its configuration could leave out at
 * once (what the packet needs is the parse, the bucket's lookup, its take and its counts). */
#define DT_ABLATE_FLOOR (DT_ABLATE_CONFIG | DT_ABLATE_POLICY | DT_ABLATE_CALL | DT_ABLATE_KEY | \
			 DT_ABLATE_TOUCH | DT_ABLATE_SCREEN | DT_ABLATE_CAPTURE | DT_ABLATE_OWNER)

#define DT_ABLATED(part) ((DT_ABLATE & DT_ABLATE_##part) != 0)

#if DT_ABLATE
/* What the constant config and policy hold: `bench ablate` sets rule 0 to the same
 * (rate 1e6/s, burst 1e9, a bucket per address) and the tick of HZ=250. */
static struct dt_config dt_ablate_cfg __attribute__((unused)) = { .coarse_lag_ns = 8000000 };
static struct dt_policy dt_ablate_pol __attribute__((unused)) = {
	.interval_ns = 1000, .burst_ns = 1000ull * DT_BURST_MAX, .v4_key_bits = 32, .v6_key_bits = 128,
};
#endif

#endif /* DTHROTTLE_ABLATE_H */
