// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * dthrottle.bpf.c - the packet path: one token bucket per source address.
 *
 * For every frame: parse down to the source address, find (or create, full) that
 * source's bucket, take one token with a compare-and-swap; no whole token means
 * XDP_DROP. Anything the throttle cannot decide about passes and is counted:
 * non-IP frames (ARP, ...), IPv6 neighbour discovery, malformed headers (the stack discards those itself),
 * no policy configured yet, or no bucket to be had.
 *
 * Refill is lazy (see dthrottle/bucket.h): nothing sweeps the map, so the cost per
 * packet and per period does not grow with the number of sources.
 *
 * The second program, dt_debit, is how the agent writes to live buckets: it runs it
 * with BPF_PROG_RUN over a batch of (source, hits) pairs staged in debit_batch, and
 * each debit is a compare-and-swap like the packet path's (bpf/debit.bpf.h).
 * The third, dt_collect, reads what each active source owes the next peer report
 * (bpf/collect.bpf.h). In cluster mode the packet path announces a source once per
 * report period (dt_mark_active), so the agent's work per period grows with the
 * sources active in that period, never with the size of the map.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "parse.h"
#include "maps.h"
#include "bucket_ops.h"

/* Rule for a new source. Issue-2 scope: every source uses rule 0 (--rate/--burst). */
static __always_inline __u32 dt_rule_for(const struct dt_key *key)
{
	(void)key;
	return 0;
}

SEC("xdp")
int dt_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct dt_policy *pol;
	struct dt_config *cfg;
	struct dt_bucket *b;
	struct dt_stats *st;
	struct dt_key key;
	__u32 zero = 0, rule;
	__u64 now;

	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return XDP_PASS;

	switch (dt_parse_source(data, data_end, &key)) {
	case DT_PARSE_OK:
		break;
	case DT_PARSE_NON_IP:
		st->non_ip++;
		return XDP_PASS;
	case DT_PARSE_ND:
		st->nd_exempt++;
		return XDP_PASS;
	default:
		st->parse_errors++;
		return XDP_PASS;
	}

	cfg = dt_config_get();
	if (!cfg) {
		st->fail_open++;
		return XDP_PASS;
	}
	if ((cfg->flags & DT_CFG_EXEMPT) && bpf_map_lookup_elem(&exempt, &key)) {
		st->exempt++;
		return XDP_PASS;
	}
	rule = dt_rule_for(&key);
	pol = dt_policy_for(cfg, rule);
	if (!pol || !pol->interval_ns) {
		st->fail_open++;
		return XDP_PASS;
	}

	b = dt_bucket_get(&key, rule, st);
	if (!b) {
		st->fail_open++;
		return XDP_PASS;
	}

	now = bpf_ktime_get_ns();
	b->last_seen_ns = now;
	switch (dt_bucket_take(b, now, pol)) {
	case DT_TAKE_ADMIT:
		__sync_fetch_and_add(&b->passed, 1);
		st->passed++;
		if (cfg->flags & DT_CFG_REPORT)
			dt_mark_active(b, &key, cfg->epoch, st);
		return XDP_PASS;
	case DT_TAKE_CONTENDED:
		st->contended++;
		/* fallthrough: never admit a token we could not take */
	default:
		__sync_fetch_and_add(&b->dropped, 1);
		st->dropped++;
		return XDP_DROP;
	}
}

#include "debit.bpf.h"
#include "collect.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";
