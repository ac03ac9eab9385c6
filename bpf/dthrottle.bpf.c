// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * dthrottle.bpf.c - the packet path: one token bucket per source address.
 *
 * For every frame: parse down to the source address, find its rule (longest
 * prefix in the rules trie, then its conditions: protocol, ports, TCP flags, ICMP,
 * destination, length; rule 0, the default,
 * without --rules), then act: `allow` passes, `deny` drops, `throttle` finds (or
 * creates, full) the bucket of the source's key prefix under that rule (or, key_by
 * destination, of the destination's) and takes
 * one token with a compare-and-swap; no whole token means XDP_DROP (in dry run:
 * XDP_PASS, counted as would-drop). A rule with prefix budgets first checks the
 * source's prefixes (bpf/prefix.bpf.h). Anything the throttle cannot decide about passes and is counted:
 * non-IP frames (ARP, ...), IPv6 neighbour discovery, malformed headers (the stack discards those itself),
 * no policy configured yet, or no bucket to be had. In cluster mode the cluster's own
 * TCP traffic (peers' and hubs' addresses, on the cluster's ports only) passes too.
 * Then, before any rule, the allow list passes and the deny list drops (bpf/lists.bpf.h,
 * docs/lists.md): cluster traffic > allow list > bans > deny list > rules > budgets.
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
#include "lists.bpf.h"    /* allow and deny lists: checked before the rules */
#include "debit.bpf.h"    /* dt_debit: the agent's writes into live buckets */
#include "collect.bpf.h"  /* dt_collect: what active sources owe the next report */
#include "bans.bpf.h"     /* bans: addresses and prefixes dropped until their expiry */
#include "capture.bpf.h"  /* agent capture: samples of decided packets */

/* Bytes of headers the tc entry point makes linear before parsing: Ethernet, two
 * VLAN tags, IPv6 with its extension headers as far as the parser follows them, and
 * the TCP flags. */
#define DT_TC_PULL_LEN 256

/* The packet's destination in dt_key's 16-byte form as two words in memory order (what
 * dt_rule_cond's dst and dst_mask are compared with), read straight from the header.
 * 0 if the header is not within data_end (it always is after DT_PARSE_OK). */
static __always_inline int dt_dst_words(const struct dt_l3 *l3, void *data_end, __u64 *hi, __u64 *lo)
{
	if (l3->is_v6) {
		struct ipv6hdr *ip6 = l3->net;

		if ((void *)(ip6 + 1) > data_end)
			return 0;
		__builtin_memcpy(hi, &ip6->daddr, 8);
		__builtin_memcpy(lo, (__u8 *)&ip6->daddr + 8, 8);
	} else {
		struct iphdr *ip = l3->net;
		__u32 daddr;

		if ((void *)(ip + 1) > data_end)
			return 0;
		daddr = ip->daddr;
		*hi = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		*lo = 0xffff0000ull | ((__u64)daddr << 32);  /* bytes 00 00 ff ff, then the address */
#else
		*lo = 0x0000ffff00000000ull | daddr;
#endif
	}
	return 1;
}

/* The conditions of rule `rule` kept in its struct dt_rule_cond (DT_MATCH_DST, DT_MATCH_LEN
 * in f): 1 if they hold. */
static __always_inline int dt_cond_holds(__u32 rule, __u8 f, const struct dt_l3 *l3, void *data_end,
					 __u64 len_bank)
{
	const struct dt_rule_cond *c;
	__u64 hi, lo, want, mask;
	__u32 slot, len = (__u32)len_bank;

	if (rule >= DT_MAX_RULES)
		return 0;
	slot = rule * 2 + ((len_bank >> 32) & 1);
	c = bpf_map_lookup_elem(&rule_cond, &slot);
	if (!c)
		return 0;
	if ((f & DT_MATCH_LEN) && (len < c->len_lo || len > c->len_hi))
		return 0;
	if (!(f & DT_MATCH_DST))
		return 1;
	if (!dt_dst_words(l3, data_end, &hi, &lo))
		return 0;
	__builtin_memcpy(&want, &c->dst[0], 8);
	__builtin_memcpy(&mask, &c->dst_mask[0], 8);
	if ((hi & mask) != want)
		return 0;
	__builtin_memcpy(&want, &c->dst[8], 8);
	__builtin_memcpy(&mask, &c->dst_mask[8], 8);
	return (lo & mask) == want;
}

/* ICMP's type and code conditions of candidate m: 1 if they hold. */
static __always_inline int dt_icmp_holds(const struct dt_rule_match *m, const struct dt_l4 *l4)
{
	if (!l4->has_icmp)
		return 0;
	if ((m->flags & DT_MATCH_ICMP_TYPE) && l4->icmp_type != m->icmp_type)
		return 0;
	return !(m->flags & DT_MATCH_ICMP_CODE) || l4->icmp_code == m->icmp_code;
}

/*
 * The newer conditions of candidate m (source port, ICMP, destination, length): 1 if they
 * hold. `len_bank`: the frame's length (low 32 bits, capped) and the live bank (bit 32).
 * A function of its own (a static one: the verifier follows the packet pointers in l3):
 * only a candidate with one of these conditions pays the call, and its stack is not part
 * of dt_decide's frame, on which the global prefix-budget functions stack (512 bytes in
 * all); an older rule set's scan is what it was.
 */
static __noinline int dt_newer_conds_hold(const struct dt_rule_match *m, const struct dt_l4 *l4,
					  const struct dt_l3 *l3, void *data_end, __u64 len_bank)
{
	__u8 f = m->flags;

	if ((f & DT_MATCH_SPORT) && (!l4->has_port || l4->sport < m->sport_lo || l4->sport > m->sport_hi))
		return 0;
	if ((f & (DT_MATCH_ICMP_TYPE | DT_MATCH_ICMP_CODE)) && !dt_icmp_holds(m, l4))
		return 0;
	return !(f & DT_MATCH_COND) || dt_cond_holds(m->rule, f, l3, data_end, len_bank);
}

/* The conditions of candidate m beyond its protocol (m->flags != 0): 1 if all hold. The
 * older ones (TCP flags, destination port) are compared here, the others by
 * dt_newer_conds_hold, called only for a candidate that has some. */
static __always_inline int dt_conds_hold(const struct dt_rule_match *m, const struct dt_l4 *l4,
					 const struct dt_l3 *l3, void *data_end, __u64 frame_len, __u32 bank)
{
	__u8 f = m->flags;

	if ((f & DT_MATCH_TCP_FLAGS) && (!l4->has_port || (l4->tcp_flags & m->tcp_mask) != m->tcp_value))
		return 0;
	if ((f & DT_MATCH_PORTS) && (!l4->has_port || l4->dport < m->dport_lo || l4->dport > m->dport_hi))
		return 0;
	if (!(f & ~(DT_MATCH_TCP_FLAGS | DT_MATCH_PORTS)))
		return 1;
	return dt_newer_conds_hold(m, l4, l3, data_end,
				   (frame_len < 0xffffffffull ? frame_len : 0xffffffffull) | ((__u64)(bank & 1) << 32));
}

/*
 * The rule for this packet: the longest prefix of the source in the live rules trie,
 * then the first of its candidate rules whose conditions (protocol, ports, TCP flags,
 * ICMP type and code, destination prefix, length) hold. The agent compiles every
 * prefix's candidates so that the default rule (0) always closes the list: one lookup
 * decides. A candidate without conditions costs one test of its flags, one with only
 * the older conditions (protocol, dport, TCP flags) three.
 */
static __always_inline __u32 dt_match_rule(__u32 bank, const struct dt_key *key, const struct dt_l3 *l3,
					   void *data_end, __u64 frame_len)
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
		if (m->flags && !dt_conds_hold(m, &l4, l3, data_end, frame_len, bank))
			continue;
		return m->rule;
	}
	return DT_RULE_DEFAULT;
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

/* One packet on its way through dt_decide: what the steps below share. */
struct dt_packet {
	struct dt_key key;          /* the source; then its bucket key under the rule */
	struct dt_l3 l3;
	struct dt_stats *st;        /* this CPU's global counters */
	struct dt_rule_stats *rst;  /* this CPU's counters of the rule */
	struct dt_config *cfg;
	const struct dt_policy *pol;
	__u32 rule, bank;           /* rule: DT_CAP_RULE_* until a rule decides (for the capture) */
	int verdict;                /* a list's verdict, or -1: none */
	__u64 cost;                 /* tokens the packet costs (1, segments, or bytes) */
	int would_drop;             /* a dry-run pass (for the capture) */
};

/*
 * Dry run (DT_POL_DRY_RUN in the rule's policy): a packet that enforcing would drop
 * passes instead, counted as would-drop for its rule (per CPU) and its source (`b`,
 * none for a deny rule), and marked for the capture. Everything before it was decided
 * and charged as usual.
 */
static __always_inline int dt_dry_run_pass(struct dt_packet *p, struct dt_bucket *b, __u64 cost, __u64 now)
{
	__u64 *wd = bpf_map_lookup_elem(&rule_would_drop, &p->rule);

	if (wd)
		*wd += 1;
	if (b)
		dt_count_drop(b, &p->key, cost, 1, now);
	p->would_drop = 1;
	return XDP_PASS;
}


/* Parses the frame into `key` and `l3`: 1, or 0 with the reason counted (it passes:
 * non-IP frames, IPv6 neighbour discovery, malformed headers). */
static __always_inline int dt_parse_counted(struct dt_stats *st, void *data, void *data_end, struct dt_key *key,
					    struct dt_l3 *l3)
{
	switch (dt_parse_packet(data, data_end, key, l3)) {
	case DT_PARSE_OK:
		return 1;
	case DT_PARSE_NON_IP:
		st->non_ip++;
		return 0;
	case DT_PARSE_ND:
		st->nd_exempt++;
		return 0;
	default:
		st->parse_errors++;
		return 0;
	}
}

/* Bit `port` of a struct dt_cluster_ports bitmap. */
static __always_inline int dt_port_bit(const __u64 *bits, __u16 port)
{
	return (bits[port >> 6] >> (port & 63)) & 1;
}

/*
 * The cluster's own traffic (struct dt_exempt_key): a TCP segment from a peer's or hub's
 * address from one of the ports it serves the cluster on, or to our --listen port. Any
 * other packet from that address (UDP, ICMP, TCP elsewhere) is throttled like any
 * source's. Only TCP reads the port bitmaps (an array element: no hash), and only a port
 * of the cluster's costs a hash lookup.
 */
static __always_inline int dt_cluster_traffic(const struct dt_key *src, const struct dt_l3 *l3, void *data_end)
{
	const struct dt_cluster_ports *cp;
	struct dt_exempt_key k;
	__u16 sport, dport;
	__u32 zero = 0;
	int from, to;

	if (!dt_parse_tcp_ports(l3, data_end, &sport, &dport))
		return 0;
	cp = bpf_map_lookup_elem(&cluster_ports, &zero);
	if (!cp)
		return 0;
	from = dt_port_bit(cp->from_port, sport);
	to = dt_port_bit(cp->to_port, dport);
	if (!from && !to)
		return 0;
	__builtin_memcpy(k.addr, src->addr, 16);
	k.pad = 0;
	if (from) {
		k.port = sport;
		k.side = DT_EXEMPT_FROM_PORT;
		if (bpf_map_lookup_elem(&cluster_exempt, &k))
			return 1;
	}
	if (!to)
		return 0;
	k.port = dport;
	k.side = DT_EXEMPT_TO_PORT;
	return bpf_map_lookup_elem(&cluster_exempt, &k) != NULL;
}

/* Nothing to decide with (no config, policy or bucket): the packet passes, counted. */
static __always_inline int dt_fail_open(struct dt_stats *st)
{
	st->fail_open++;
	return XDP_PASS;
}

/* An `allow` or `deny` rule's verdict: no bucket. */
static __always_inline int dt_rule_action(struct dt_packet *p)
{
	if (p->pol->action == DT_ACT_ALLOW) {
		p->rst->passed++;
		p->st->allowed++;
		return XDP_PASS;
	}
	if (p->pol->flags & DT_POL_DRY_RUN)
		return dt_dry_run_pass(p, NULL, 1, 0);
	p->rst->dropped++;
	p->st->denied++;
	return XDP_DROP;
}

/* A dropped packet, in this CPU's global and rule counters. */
static __always_inline int dt_dropped(const struct dt_packet *p)
{
	p->st->dropped++;
	p->rst->dropped++;
	dt_count_rule_bytes(p->pol, p->rule, p->cost, 0);
	return XDP_DROP;
}

/* A packet admitted by bucket `b`: counted, and announced in cluster mode. */
static __always_inline int dt_admitted(const struct dt_packet *p, struct dt_bucket *b)
{
	__sync_fetch_and_add(&b->passed, p->cost);
	p->st->passed++;
	p->rst->passed++;
	dt_count_rule_bytes(p->pol, p->rule, p->cost, 1);
	if (p->cfg->flags & DT_CFG_REPORT)
		dt_mark_active(b, &p->key, p->cfg->epoch, p->st);
	return XDP_PASS;
}

/*
 * Prefix budgets first (bpf/prefix.bpf.h): -1 when a level of the packet's prefix is
 * out of budget (the packet is dropped before its source gets a bucket of its own),
 * else 0 with `pfx` ready for the source's take. The levels are looked at this CPU's
 * clock bound (bpf/clock.h); the clock is read here only without one.
 */
static __always_inline int dt_prefix_first(const struct dt_packet *p, struct dt_prefix_pass *pfx)
{
	struct dt_time_bound tb;
	__u64 now;

	dt_time_bound(p->cfg, &tb);
	now = tb.bound ? 0 : dt_time_read(p->cfg, &tb);
	dt_prefix_init(pfx, p->bank, p->rule, &p->key, p->l3.is_v6, tb.bound ? tb.bound : now, now, p->cost,
		       p->cfg);
	return dt_prefix_check(pfx, p->pol);
}

/*
 * A `throttle` rule: the prefix levels, then the source's bucket (created full on first
 * sight) gives a token with one compare-and-swap, or the packet is dropped. The time of
 * the source's take is the levels' if they took their tokens, else chosen for this
 * take: a packet refused at this CPU's clock bound is refused without reading a clock,
 * so a flood's drop path reads none (bpf/clock.h), and writes nothing shared.
 */
static __always_inline int dt_throttle(struct dt_packet *p)
{
	struct dt_prefix_pass pfx;
	enum dt_take_result take;
	struct dt_bucket *b;
	int refused = 0;
	__u64 now;

	pfx.state = DT_PFX_NONE;
	if ((p->pol->flags & DT_POL_PREFIX) && dt_prefix_first(p, &pfx) != 0)
		return (p->pol->flags & DT_POL_DRY_RUN) ? dt_dry_run_pass(p, NULL, p->cost, 0)
							: dt_dropped(p);
	b = dt_bucket_get(&p->key, p->st, DT_FRESH_PACKET);
	if (!b)
		return dt_fail_open(p->st);
	if (pfx.state == DT_PFX_TAKEN)
		now = pfx.a.now;
	else
		now = dt_now_for_take(p->cfg, b, p->pol, p->cost, &refused);
	dt_touch(b, now);
	take = refused ? DT_TAKE_DENY : dt_bucket_take(b, now, p->pol, p->cost);
	if (pfx.state != DT_PFX_NONE)
		take = dt_prefix_settle(&pfx, b, p->pol, take);
	if (take == DT_TAKE_ADMIT)
		return dt_admitted(p, b);
	if (take == DT_TAKE_CONTENDED)
		p->st->contended++;  /* and dropped: never admit a token we could not take */
	if (p->pol->flags & DT_POL_DRY_RUN)
		return dt_dry_run_pass(p, b, p->cost, now);
	dt_count_drop(b, &p->key, p->cost, 0, now);  /* held per CPU: see dt_count_drop */
	return dt_dropped(p);
}

/*
 * The decision for one frame, whatever hook it arrives at: XDP_PASS or XDP_DROP
 * (the hook's entry point turns these into its own verdict codes). `data` is the
 * Ethernet header, `data_end` the end of the linear data the program may read;
 * `frame_len` is the whole frame's length (what a byte rule charges) and `segs`
 * the packets it stands for (what a packet rule charges): 1, or at tc the
 * segments GRO merged into one skb. `p` says what decided it, for the capture.
 */
static __always_inline int dt_decide(struct dt_packet *p, void *data, void *data_end, __u64 frame_len, __u32 segs)
{
	__u32 zero = 0;

	p->rule = DT_CAP_RULE_NONE;
	p->would_drop = 0;
	p->st = bpf_map_lookup_elem(&stats, &zero);
	if (!p->st || !dt_parse_counted(p->st, data, data_end, &p->key, &p->l3))
		return XDP_PASS;
	p->cfg = dt_config_get();
	if (!p->cfg)
		return dt_fail_open(p->st);
	if ((p->cfg->flags & DT_CFG_EXEMPT) && dt_cluster_traffic(&p->key, &p->l3, data_end)) {
		p->st->exempt++;
		return XDP_PASS;
	}
	p->rule = DT_CAP_RULE_ALLOW_LIST;
	if (dt_allow_listed(&p->key, p->l3.is_v6))
		return XDP_PASS;
	p->rule = DT_CAP_RULE_BAN;
	if (dt_banned(&p->key, p->l3.is_v6, p->cfg, p->st))  /* bpf/bans.bpf.h */
		return dt_ban_verdict(p->cfg);
	p->rule = DT_CAP_RULE_DENY_LIST;
	if ((p->verdict = dt_deny_listed(p->cfg, &p->key, p->l3.is_v6)) >= 0)
		return p->verdict;
	p->bank = DT_READ_ONCE(p->cfg->bank); /* once: the rule and its policy from one rule set */
	p->rule = (p->cfg->flags & DT_CFG_RULES) ? dt_match_rule(p->bank, &p->key, &p->l3, data_end, frame_len) : DT_RULE_DEFAULT;
	p->pol = dt_policy_in_bank(p->bank, p->rule);
	p->rst = bpf_map_lookup_elem(&rule_stats, &p->rule);
	if (!p->pol || !p->rst)
		return dt_fail_open(p->st);
	if (p->pol->action == DT_ACT_ALLOW || p->pol->action == DT_ACT_DENY)
		return dt_rule_action(p);
	if (!p->pol->interval_ns)
		return dt_fail_open(p->st);
	/* key_by = "destination": the bucket is the destination's, whoever sends. */
	if ((p->pol->flags & DT_POL_KEY_DEST) && !dt_l3_dst(&p->l3, data_end, p->key.addr))
		return dt_fail_open(p->st);
	dt_key_for_rule(&p->key, p->pol, p->rule, p->l3.is_v6);
	/* Tokens this packet costs: 1, or its bytes as XDP sees them (Ethernet header
	 * included) under a byte rule. A bucket's passed/dropped count the same unit, so
	 * reports and debits are in bytes for byte rules. */
	p->cost = (p->pol->flags & DT_POL_BYTES) ? frame_len : segs;
	return dt_throttle(p);
}

SEC("xdp")
int dt_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct dt_packet p;
	int verdict = dt_decide(&p, data, data_end, (__u64)(data_end - data), 1);

	dt_capture(ctx, DT_CAP_HOOK_XDP, data_end - data, verdict, p.rule, p.would_drop);
	return verdict;
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
	struct dt_packet p;
	int verdict;

	if (data + want > data_end) {
		/* The call invalidates packet pointers, failed or not: read them again. */
		bpf_skb_pull_data(skb, want);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	verdict = dt_decide(&p, data, data_end, skb->len, skb->gso_segs ? skb->gso_segs : 1);
	dt_capture(skb, DT_CAP_HOOK_TC, skb->len, verdict, p.rule, p.would_drop);
	if (verdict == XDP_DROP)
		return TC_ACT_SHOT;
	/* Not TC_ACT_OK: that would end classification, and the tc programs or
	 * filters after ours (another product's) would never see the packet. */
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
