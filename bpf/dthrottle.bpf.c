// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * dthrottle.bpf.c - the packet path: one token bucket per source address.
 *
 * For every frame: parse down to the source address, find its rule (longest
 * prefix in the rules trie, then protocol/port/SYN conditions; rule 0, the default,
 * without --rules), then act: `allow` passes, `deny` drops, `throttle` finds (or
 * creates, full) the bucket of the source's key prefix under that rule and takes
 * one token with a compare-and-swap; no whole token means XDP_DROP (in dry run:
 * XDP_PASS, counted as would-drop). A rule with prefix budgets first checks the
 * source's prefixes (bpf/prefix.bpf.h). Anything the throttle cannot decide about passes and is counted:
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
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "parse.h"
#include "maps.h"
#include "bucket_ops.h"
#include "announce.h"     /* cluster mode: sources announced once per period */
#include "prefix.bpf.h"   /* prefix budgets: per-prefix caps checked before the source */
#include "debit.bpf.h"    /* dt_debit: the agent's writes into live buckets */
#include "collect.bpf.h"  /* dt_collect: what active sources owe the next report */

/* Bytes of headers the tc entry point makes linear before parsing: Ethernet, two
 * VLAN tags, IPv6 with its extension headers as far as the parser follows them, and
 * the TCP flags. */
#define DT_TC_PULL_LEN 256

/*
 * The rule for this packet: the longest prefix of the source in the live rules trie,
 * then the first of its candidate rules whose conditions (protocol, destination
 * port, TCP SYN) hold. The agent compiles every prefix's candidates so that the
 * default rule (0) always closes the list: one lookup decides.
 */
static __always_inline __u32 dt_match_rule(__u32 bank, const struct dt_key *key,
					   const struct dt_l3 *l3, void *data_end)
{
	struct dt_lpm_key lk = { .prefixlen = 128 };
	struct dt_rule_set *rs;
	struct dt_l4 l4;
	__u32 i, n;

	__builtin_memcpy(lk.addr, key->addr, 16);
	rs = (bank & 1) ? bpf_map_lookup_elem(&rules1, &lk) : bpf_map_lookup_elem(&rules0, &lk);
	if (!rs)
		return DT_RULE_DEFAULT;
	dt_parse_l4(l3, data_end, &l4);
	n = rs->count;
#pragma unroll
	for (i = 0; i < DT_MAX_CANDIDATES; i++) {
		const struct dt_rule_match *m = &rs->m[i];

		if (i >= n)
			break;
		if (m->proto && m->proto != l4.proto)
			continue;
		if ((m->flags & DT_MATCH_SYN) && !l4.syn)
			continue;
		if ((m->flags & DT_MATCH_PORTS) &&
		    (!l4.has_port || l4.dport < m->dport_lo || l4.dport > m->dport_hi))
			continue;
		return m->rule;
	}
	return DT_RULE_DEFAULT;
}

/*
 * Dry run (DT_POL_DRY_RUN in the rule's policy): a packet that enforcing would drop
 * passes instead, counted as would-drop for its rule (per CPU) and its source (`b`,
 * none for a deny rule). Everything before it was decided and charged as usual.
 */
static __always_inline int dt_dry_run_pass(__u32 rule, struct dt_bucket *b, const struct dt_key *key,
					   __u64 cost, __u64 now)
{
	__u64 *wd = bpf_map_lookup_elem(&rule_would_drop, &rule);

	if (wd)
		*wd += 1;
	if (b)
		dt_count_drop(b, key, cost, 1, now);
	return XDP_PASS;
}

/* A byte rule's bytes, per rule and per CPU (packet rules skip the lookup). */
static __always_inline void dt_count_rule_bytes(const struct dt_policy *pol, __u32 rule, __u64 bytes, int passed)
{
	struct dt_rule_bytes *rb;

	if (!(pol->flags & DT_POL_BYTES))
		return;
	rb = bpf_map_lookup_elem(&rule_bytes, &rule);
	if (!rb)
		return;
	if (passed)
		rb->passed += bytes;
	else
		rb->dropped += bytes;
}

/*
 * The decision for one frame, whatever hook it arrives at: XDP_PASS or XDP_DROP
 * (the hook's entry point turns these into its own verdict codes). `data` is the
 * Ethernet header, `data_end` the end of the linear data the program may read;
 * `frame_len` is the whole frame's length (what a byte rule charges) and `segs`
 * the packets it stands for (what a packet rule charges): 1, or at tc the
 * segments GRO merged into one skb.
 */
static __always_inline int dt_decide(void *data, void *data_end, __u64 frame_len, __u32 segs)
{
	const struct dt_policy *pol;
	struct dt_rule_stats *rst;
	struct dt_config *cfg;
	struct dt_bucket *b;
	struct dt_stats *st;
	struct dt_prefix_pass pfx;
	enum dt_take_result take;
	int refused;
	struct dt_key key;
	struct dt_l3 l3;
	__u32 zero = 0, rule = DT_RULE_DEFAULT, bank;
	__u64 now, cost;

	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return XDP_PASS;

	switch (dt_parse_packet(data, data_end, &key, &l3)) {
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
	bank = DT_READ_ONCE(cfg->bank); /* once: the rule and its policy from one rule set */
	if (cfg->flags & DT_CFG_RULES)
		rule = dt_match_rule(bank, &key, &l3, data_end);
	pol = dt_policy_in_bank(bank, rule);
	rst = bpf_map_lookup_elem(&rule_stats, &rule);
	if (!pol || !rst) {
		st->fail_open++;
		return XDP_PASS;
	}
	if (pol->action == DT_ACT_ALLOW) {
		rst->passed++;
		st->allowed++;
		return XDP_PASS;
	}
	if (pol->action == DT_ACT_DENY) {
		if (pol->flags & DT_POL_DRY_RUN)
			return dt_dry_run_pass(rule, NULL, NULL, 1, 0);
		rst->dropped++;
		st->denied++;
		return XDP_DROP;
	}
	if (!pol->interval_ns) {
		st->fail_open++;
		return XDP_PASS;
	}

	dt_key_for_rule(&key, pol, rule, l3.is_v6);
	/* Tokens this packet costs: 1, or its bytes as XDP sees them (Ethernet
	 * header included) under a byte rule. A bucket's passed/dropped count the same
	 * unit, so reports and debits are in bytes for byte rules. */
	cost = (pol->flags & DT_POL_BYTES) ? frame_len : segs;
	/* Prefix budgets first (bpf/prefix.bpf.h): a prefix out of budget drops the
	 * packet before its source gets a bucket of its own. Its levels are looked at
	 * this CPU's clock bound (the clock is read here only without one). */
	pfx.state = DT_PFX_NONE;
	if (pol->flags & DT_POL_PREFIX) {
		struct dt_time_bound tb;

		dt_time_bound(cfg, &tb);
		now = tb.bound ? 0 : dt_time_read(cfg, &tb);
		dt_prefix_init(&pfx, bank, rule, &key, l3.is_v6, tb.bound ? tb.bound : now, now, cost, cfg);
		if (dt_prefix_check(&pfx, pol) != 0) {
			if (pol->flags & DT_POL_DRY_RUN)
				return dt_dry_run_pass(rule, NULL, NULL, cost, 0);
			st->dropped++;
			rst->dropped++;
			dt_count_rule_bytes(pol, rule, cost, 0);
			return XDP_DROP;
		}
	}
	b = dt_bucket_get(&key, st);
	if (!b) {
		st->fail_open++;
		return XDP_PASS;
	}

	/* The time of the source's take: the levels' if they took their tokens, else
	 * chosen for this take: a packet refused at this CPU's clock bound is refused
	 * without reading a clock, so a flood's drop path reads none (bpf/clock.h). */
	refused = 0;
	if (pfx.state == DT_PFX_TAKEN)
		now = pfx.a.now;
	else
		now = dt_now_for_take(cfg, b, pol, cost, &refused);
	dt_touch(b, now);
	take = refused ? DT_TAKE_DENY : dt_bucket_take(b, now, pol, cost);
	if (pfx.state != DT_PFX_NONE)
		take = dt_prefix_settle(&pfx, b, pol, take);
	switch (take) {
	case DT_TAKE_ADMIT:
		__sync_fetch_and_add(&b->passed, cost);
		st->passed++;
		rst->passed++;
		dt_count_rule_bytes(pol, rule, cost, 1);
		if (cfg->flags & DT_CFG_REPORT)
			dt_mark_active(b, &key, cfg->epoch, st);
		return XDP_PASS;
	case DT_TAKE_CONTENDED:
		st->contended++;
		/* fallthrough: never admit a token we could not take */
	default:
		if (pol->flags & DT_POL_DRY_RUN)
			return dt_dry_run_pass(rule, b, &key, cost, now);
		/* Nothing shared is written from here on: see dt_count_drop. */
		dt_count_drop(b, &key, cost, 0, now);
		st->dropped++;
		rst->dropped++;
		dt_count_rule_bytes(pol, rule, cost, 0);
		return XDP_DROP;
	}
}

SEC("xdp")
int dt_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;

	return dt_decide(data, data_end, (__u64)(data_end - data), 1);
}

/*
 * The same decision at tc ingress (--attach tc: a tcx link, or a clsact filter on
 * kernels before 6.6), for hosts whose XDP hook belongs to another program. At
 * ingress skb->data is the Ethernet header, as for XDP, and skb->len the whole
 * frame as XDP would see it. The parser reads only the linear part: when the
 * headers it may need are not all there (a non-linear skb), they are pulled in
 * first; if that fails, the parser sees less and the frame passes as malformed.
 * Verdicts: TC_ACT_SHOT for a drop, TC_ACT_UNSPEC (tcx: TCX_NEXT) to pass it on.
 */
SEC("tc")
int dt_tc(struct __sk_buff *skb)
{
	__u32 want = skb->len < DT_TC_PULL_LEN ? skb->len : DT_TC_PULL_LEN;
	void *data = (void *)(long)skb->data, *data_end = (void *)(long)skb->data_end;

	if (data + want > data_end) {
		/* The call invalidates packet pointers, failed or not: read them again. */
		bpf_skb_pull_data(skb, want);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	if (dt_decide(data, data_end, skb->len, skb->gso_segs ? skb->gso_segs : 1) == XDP_DROP)
		return TC_ACT_SHOT;
	/* Not TC_ACT_OK: that would end classification, and the tc programs or
	 * filters after ours (another product's) would never see the packet. */
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
