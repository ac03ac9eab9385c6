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
 * TCP connections (peers' and hubs' addresses, on the cluster's ports, segments of
 * sockets this host has: bpf/exempt.bpf.h) pass too.
 * Then, before any rule, the allow list passes and the deny list drops (bpf/lists.bpf.h,
 * docs/lists.md): cluster connections > allow list > bans > deny list > a SYN to our
 * --listen port from a peer > rules > budgets.
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
#include "exempt.bpf.h"   /* the cluster's own TCP connections: passed without a bucket */
#include "syncookie.bpf.h" /* SYN cookies while a prefix budget is spent; verified sources */

/* Bytes of headers the tc entry point makes linear before parsing: Ethernet, two
 * VLAN tags, IPv6 with its extension headers as far as the parser follows them, and
 * the TCP flags. */
#define DT_TC_PULL_LEN 256

/*
 * What the decision needs of the frame, read at the hook's entry point (dt_facts_read):
 * scalars only, so that the decision is a global function the verifier checks once
 * (dt_decide). Inlined with the parser's packet pointers (each way through the parser --
 * VLAN tags, IPv4 options, IPv6 extension headers -- leaves them at another offset,
 * and every list, ban and rule branch multiplies those ways), the decision was verified
 * again for every way: dt_xdp took 462,000 instructions of the verifier's 1,000,000 on
 * Linux 6.18 and most of a second at every load, and Linux 6.1 refused it.
 */
struct dt_facts {
	struct dt_key key;      /* the source */
	__u8 dst[16];           /* the destination, in dt_key's form */
	struct dt_l4 l4;        /* with DT_CFG_RULES (else zero): what rules match on */
	__u16 ex_sport;         /* with DT_CFG_EXEMPT: a TCP segment's ports (ex_tcp) */
	__u16 ex_dport;
	__u8 ex_tcp;            /* ex_sport, ex_dport and ex_flags hold (dt_parse_tcp_ports) */
	__u8 is_v6;
	__u8 ex_flags;          /* the TCP flags */
	__u8 ex_cluster;        /* DT_EX_*: what the segment is to the cluster exemption */
	__u32 segs;             /* the packets the frame stands for (tc: GRO segments) */
	__u32 bank;             /* dt_decide, for dt_throttle_facts: the rule's bank */
	__u64 frame_len;        /* the whole frame's length: what a byte rule charges */
	__u64 cost;             /* dt_decide, for dt_throttle_facts: the tokens it costs */
	struct dt_capture_arg cap; /* what decided (rule, verdict, would_drop): the capture's */
};

_Static_assert(sizeof(struct dt_facts) == 104, "dt_facts has no hole");
_Static_assert(__builtin_offsetof(struct dt_facts, key) == 0 && _Alignof(struct dt_facts) == 8,
	       "dt_facts' key is 8-byte aligned (DT_KEY_ALIGNED: the parser writes it)");

/* The conditions of rule `rule` kept in its struct dt_rule_cond (DT_MATCH_DST, DT_MATCH_LEN
 * in f): 1 if they hold. */
static __always_inline int dt_cond_holds(__u32 rule, __u8 f, const struct dt_facts *pf, __u64 len_bank)
{
	const struct dt_rule_cond *c;
	__u64 have, want, mask;
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
	__builtin_memcpy(&have, &pf->dst[0], 8);
	__builtin_memcpy(&want, &c->dst[0], 8);
	__builtin_memcpy(&mask, &c->dst_mask[0], 8);
	if ((have & mask) != want)
		return 0;
	__builtin_memcpy(&have, &pf->dst[8], 8);
	__builtin_memcpy(&want, &c->dst[8], 8);
	__builtin_memcpy(&mask, &c->dst_mask[8], 8);
	return (have & mask) == want;
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
 * A function of its own: only a candidate with one of these conditions pays the call.
 */
static __noinline int dt_newer_conds_hold(const struct dt_rule_match *m, const struct dt_facts *pf,
					  __u64 len_bank)
{
	const struct dt_l4 *l4 = &pf->l4;
	__u8 f = m->flags;

	if ((f & DT_MATCH_SPORT) && (!l4->has_port || l4->sport < m->sport_lo || l4->sport > m->sport_hi))
		return 0;
	if ((f & (DT_MATCH_ICMP_TYPE | DT_MATCH_ICMP_CODE)) && !dt_icmp_holds(m, l4))
		return 0;
	return !(f & DT_MATCH_COND) || dt_cond_holds(m->rule, f, pf, len_bank);
}

/* The conditions of candidate m beyond its protocol (m->flags != 0): 1 if all hold. The
 * older ones (TCP flags, destination port) are compared here, the others by
 * dt_newer_conds_hold, called only for a candidate that has some. */
static __always_inline int dt_conds_hold(const struct dt_rule_match *m, const struct dt_facts *pf, __u32 bank)
{
	const struct dt_l4 *l4 = &pf->l4;
	__u64 frame_len = pf->frame_len;
	__u8 f = m->flags;

	if ((f & DT_MATCH_TCP_FLAGS) && (!l4->has_port || (l4->tcp_flags & m->tcp_mask) != m->tcp_value))
		return 0;
	if ((f & DT_MATCH_PORTS) && (!l4->has_port || l4->dport < m->dport_lo || l4->dport > m->dport_hi))
		return 0;
	if (!(f & ~(DT_MATCH_TCP_FLAGS | DT_MATCH_PORTS)))
		return 1;
	return dt_newer_conds_hold(m, pf,
				   (frame_len < 0xffffffffull ? frame_len : 0xffffffffull) | ((__u64)(bank & 1) << 32));
}

/*
 * The rule for this packet: the longest prefix of the source in the live rules trie,
 * then the first of its candidate rules whose conditions (protocol, ports, TCP flags,
 * ICMP type and code, destination prefix, length) hold. The agent compiles every
 * prefix's candidates so that the default rule (0) always closes the list: one lookup
 * decides. A candidate without conditions costs one test of its flags, one with only
 * the older conditions (protocol, dport, TCP flags) three. Inline in dt_decide: on
 * scalars (struct dt_facts) its candidates' ways cost the verifier little (5,000
 * instructions), a call of its own would cost every packet of a rule set a few ns.
 */
static __always_inline __u32 dt_match_rule(const struct dt_facts *pf, __u32 bank)
{
	struct dt_lpm_key lk = { .prefixlen = 128 };
	struct dt_rule_set *rs;
	__u32 i, n;

	__builtin_memcpy(lk.addr, pf->key.addr, 16);
	rs = (bank & 1) ? bpf_map_lookup_elem(&rules1, &lk) : bpf_map_lookup_elem(&rules0, &lk);
	if (!rs)
		return DT_RULE_DEFAULT;
	n = rs->count;
#pragma unroll
	for (i = 0; i < DT_MAX_CANDIDATES; i++) {
		const struct dt_rule_match *m = &rs->m[i];

		if (i >= n)
			break;
		if (m->proto && m->proto != pf->l4.proto)
			continue;
		if (m->flags && !dt_conds_hold(m, pf, bank))
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
	struct dt_facts *f;         /* the frame */
	struct dt_stats *st;        /* this CPU's global counters */
	struct dt_rule_stats *rst;  /* this CPU's counters of the rule */
	struct dt_config *cfg;
	const struct dt_policy *pol;
	__u32 rule, bank;           /* rule: DT_CAP_RULE_* until a rule decides (for the capture) */
	__u64 cost;                 /* tokens the packet costs (1, segments, or bytes) */
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
	p->f->cap.would_drop = 1;
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

#if DT_ABLATED(PCPU)
/* Bench only (bpf/ablate.h): `cost` admitted, held in this CPU's drop_pending slot of the
 * key (its would_drop field) and added to `passed` DT_DROP_FLUSH_PACKETS at a time, as
 * drops are; a slot another key holds means the atomic add. What the admission would pay
 * for a per-CPU passed count, before any reader of it (collect, stats) is taught. */
static __always_inline void dt_ablate_pcpu_passed(struct dt_bucket *b, const struct dt_key *key, __u64 cost)
{
	__u32 slot = dt_drop_slot(key);
	struct dt_drop_pending *s = bpf_map_lookup_elem(&drop_pending, &slot);

	if (!s || (s->packets && !dt_key_eq(&s->key, key))) {
		__sync_fetch_and_add(&b->passed, cost);
		return;
	}
	if (!s->packets)
		s->key = *key;
	s->would_drop += cost;
	if (++s->packets >= DT_DROP_FLUSH_PACKETS) {
		__sync_fetch_and_add(&b->passed, s->would_drop);
		s->would_drop = 0;
		s->packets = 0;
	}
}
#endif

/* A packet admitted by bucket `b`: counted, and announced in cluster mode. */
static __always_inline int dt_admitted(const struct dt_packet *p, struct dt_bucket *b)
{
#if DT_ABLATED(PCPU)
	dt_ablate_pcpu_passed(b, &p->key, p->cost);
#else
	if (!DT_ABLATED(PASSED))
		__sync_fetch_and_add(&b->passed, p->cost);
#endif
	if (!DT_ABLATED(COUNTERS)) {
		p->st->passed++;
		p->rst->passed++;
	}
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
	dt_prefix_init(pfx, p->bank, p->rule, &p->key, p->f->is_v6, tb.bound ? tb.bound : now, now, p->cost,
		       p->cfg);
	return dt_prefix_check(pfx, p->pol);
}

/*
 * A `throttle` rule's take from the source's bucket (created full on first sight): a
 * token with one compare-and-swap, or the packet is dropped. `pfx`: the prefix levels'
 * pass (dt_throttle_prefix), or NULL for a rule without them. The time of the take is
 * the levels' if they took their tokens, else chosen for this take (dt_bucket_take_timed):
 * a packet refused at this CPU's clock bound is refused without reading a clock, so a
 * flood's drop path reads none (bpf/clock.h), and writes nothing shared; one admitted
 * into a bucket in debt reads none either; any other reads the clock once.
 */
static __always_inline int dt_throttle(struct dt_packet *p, struct dt_prefix_pass *pfx)
{
	struct dt_bucket *b;
	__u64 now;
	int take;

	b = dt_bucket_get(&p->key, p->st, DT_FRESH_PACKET);
	if (!b)
		return dt_fail_open(p->st);
	if (pfx) {  /* the stack of dt_throttle_facts' frame: see dt_bucket_take_timed */
		int refused = 0;

		if (pfx->state == DT_PFX_TAKEN)
			now = pfx->a.now;
		else
			now = dt_now_for_take(p->cfg, b, p->pol, p->cost, &refused);
		dt_touch(b, now);
		take = refused ? DT_TAKE_DENY : dt_bucket_take(b, now, p->pol, p->cost);
	} else {
		now = dt_bucket_take_timed(b, p->cfg, p->pol, p->cost, &take);
		dt_touch(b, now);
	}
	if (pfx && pfx->state != DT_PFX_NONE)
		take = dt_prefix_settle(pfx, b, p->pol, take);
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
 * A SYN of a rule with syn_cookies that a prefix budget refused (bpf/syncookie.bpf.h):
 * XDP_TX (the entry point answers it with a cookie) if its source's own bucket has a
 * token, taken as for a pass (the bucket counts it passed and is announced; the global
 * and rule counters count it as a cookie sent, not as passed), else dropped as before.
 * A source with no bucket has every token, and gets its cookie without one: as under a
 * prefix budget alone, a spoofed flood creates no bucket (the LRU keeps the real
 * sources, and peers hear of none of the flood's addresses); the cookie is the state.
 * In dry run: counted as a cookie it would send, and passed as a would-drop, as before.
 */
static __always_inline int dt_cookie_or_drop(struct dt_packet *p)
{
	struct dt_bucket *b;
	__u64 now;

	if (p->pol->flags & DT_POL_DRY_RUN) {
		p->st->cookie_would_send++;
		return dt_dry_run_pass(p, NULL, p->cost, 0);
	}
	b = bpf_map_lookup_elem(&buckets, &p->key);
	if (!b)
		return XDP_TX;
	now = dt_now(p->cfg);
	dt_touch(b, now);
	if (dt_bucket_take(b, now, p->pol, p->cost) != DT_TAKE_ADMIT) {
		dt_count_drop(b, &p->key, p->cost, 0, now);
		return dt_dropped(p);
	}
	__sync_fetch_and_add(&b->passed, p->cost);
	if (p->cfg->flags & DT_CFG_REPORT)
		dt_mark_active(b, &p->key, p->cfg->epoch, p->st);
	return XDP_TX;
}

/* A `throttle` rule with prefix budgets: the levels first (the packet is dropped before
 * its source gets a bucket of its own if one is out of budget, or answered with a SYN
 * cookie under syn_cookies), then the source's take. */
static __always_inline int dt_throttle_prefix(struct dt_packet *p)
{
	struct dt_prefix_pass pfx;

	pfx.state = DT_PFX_NONE;
	if ((p->pol->flags & DT_POL_PREFIX) && dt_prefix_first(p, &pfx) != 0) {
		if ((p->pol->flags & DT_POL_SYN_COOKIES) && dt_is_syn(&p->f->l4))
			return dt_cookie_or_drop(p);
		return (p->pol->flags & DT_POL_DRY_RUN) ? dt_dry_run_pass(p, NULL, p->cost, 0)
							: dt_dropped(p);
	}
	return dt_throttle(p, &pfx);
}

/* The cluster's own traffic (f->ex_cluster, bpf/exempt.bpf.h): passed without a rule. */
static __always_inline int dt_exempt_pass(struct dt_facts *f, struct dt_stats *st)
{
	f->cap.rule = DT_CAP_RULE_NONE;
	st->exempt++;
	return XDP_PASS;
}

/*
 * What passes or drops a frame before any rule (segments of the cluster's connections >
 * allow list > bans > deny list > a peer's SYN to our --listen port): a verdict, with
 * f->cap.rule saying which (for the capture), or -1: the rules decide.
 */
static __always_inline int dt_screen(struct dt_facts *f, struct dt_stats *st, struct dt_config *cfg)
{
	const struct dt_features *ft;
	struct dt_key src;
	__u32 zero = 0, lists, bans;
	int verdict = -1;

	if (f->ex_cluster == DT_EX_CONN)
		return dt_exempt_pass(f, st);
	/* What is in force (struct dt_features): a list or ban trie whose bit is clear is not
	 * looked up at all. No features map: everything is looked up, as if all were on. */
	ft = bpf_map_lookup_elem(&features, &zero);
	lists = ft ? DT_READ_ONCE(ft->lists) : ~0u;
	bans = ft ? DT_READ_ONCE(ft->bans) : ~0u;
	bans &= f->is_v6 ? DT_FEAT_BANS_V6 : DT_FEAT_BANS_V4;
	lists &= DT_FEAT_LIST(DT_LIST_ALLOW, f->is_v6) | DT_FEAT_LIST(DT_LIST_DENY, f->is_v6);
	if (lists | bans) {
		src = f->key;
		f->cap.rule = DT_CAP_RULE_ALLOW_LIST;
		if ((lists & DT_FEAT_LIST(DT_LIST_ALLOW, f->is_v6)) && dt_allow_listed(&src, f->is_v6))
			return XDP_PASS;
		f->cap.rule = DT_CAP_RULE_BAN;
		if (bans && dt_banned(&src, f->is_v6, cfg, st))  /* bpf/bans.bpf.h */
			return dt_ban_verdict(cfg);
		f->cap.rule = DT_CAP_RULE_DENY_LIST;
		if (lists & DT_FEAT_LIST(DT_LIST_DENY, f->is_v6))
			verdict = dt_deny_listed(cfg, &src, f->is_v6);
	}
	if (verdict < 0 && f->ex_cluster == DT_EX_SYN)
		return dt_exempt_pass(f, st);
	return verdict;
}

/* The rule's policy and counters into `p` (with the frame, `st` and `cfg`): 1, or 0 if
 * there are none to decide with. */
static __always_inline int dt_packet_of_rule(struct dt_packet *p, struct dt_facts *f, struct dt_stats *st,
					     struct dt_config *cfg, __u32 bank, __u32 rule)
{
	p->f = f;
	p->st = st;
	p->cfg = cfg;
	p->bank = bank;
	p->rule = rule;
	p->pol = dt_policy_in_bank(bank, rule);
	p->rst = DT_ABLATED(COUNTERS) ? (void *)st : bpf_map_lookup_elem(&rule_stats, &p->rule);
	return p->pol && p->rst;
}

/* dt_decide's answer for a rule with prefix budgets: dt_throttle_facts decides. */
#define DT_DECIDE_PREFIX (-1)

/*
 * The decision for one frame, whatever hook it arrives at: XDP_PASS or XDP_DROP
 * (the hook's entry point turns these into its own verdict codes; dt_throttle_facts
 * may also say XDP_TX: a SYN to answer with a cookie) from the frame's
 * facts (dt_facts_read), or DT_DECIDE_PREFIX for a `throttle` rule with prefix
 * budgets, with f->key its bucket's key, f->cost, f->bank and f->cap.rule ready for
 * dt_throttle_facts. f->cap.rule and f->cap.would_drop say what decided, for the
 * capture. `st` and `cfg`: this CPU's counters and the configuration, looked up by the
 * entry point. A global function: the verifier checks it once, whatever way through
 * the parser the frame took; the packet pays one call for it.
 *
 * The stack (512 bytes for the deepest chain of calls, each frame rounded up to 32 bytes
 * by Linux 6.1): the prefix budgets' chain (entry point, dt_throttle_facts,
 * dt_prefix_check, dt_pfx_take) is the deepest, 160 + 192 + 64 + 64 = 480 on 6.1, so it
 * does not start from this frame (160 more). tools/verifier/verifier_stats --log prints
 * each frame's depth ("stack depth").
 */
#if DT_ABLATED(CALL)
static __always_inline
#else
__noinline
#endif
int dt_decide(struct dt_facts *f, struct dt_stats *st, struct dt_config *cfg)
{
	struct dt_packet pk, *p = &pk;
	__u32 bank, rule;
	int verdict;

	if (!f || !st || !cfg)
		return XDP_PASS;
	if (!DT_ABLATED(SCREEN) && (verdict = dt_screen(f, st, cfg)) >= 0)
		return verdict;
	bank = DT_READ_ONCE(cfg->bank); /* once: the rule and its policy from one rule set */
	rule = (cfg->flags & DT_CFG_RULES) ? dt_match_rule(f, bank) : DT_RULE_DEFAULT;
	f->cap.rule = rule;
	if (!dt_packet_of_rule(p, f, st, cfg, bank, rule))
		return dt_fail_open(st);
	if (p->pol->action == DT_ACT_ALLOW || p->pol->action == DT_ACT_DENY)
		return dt_rule_action(p);
	if (!p->pol->interval_ns)
		return dt_fail_open(st);
	if (DT_ABLATED(KEY))
		p->key = f->key;
	/* key_by = "destination": the bucket is the destination's, whoever sends. */
	else if (p->pol->flags & DT_POL_KEY_DEST)
		__builtin_memcpy(p->key.addr, f->dst, 16);
	else
		__builtin_memcpy(p->key.addr, f->key.addr, 16);
	if (!DT_ABLATED(KEY))
		dt_key_for_rule(&p->key, p->pol, rule, f->is_v6);
	/* Tokens this packet costs: 1, or its bytes as XDP sees them (Ethernet header
	 * included) under a byte rule. A bucket's passed/dropped count the same unit, so
	 * reports and debits are in bytes for byte rules. */
	p->cost = (p->pol->flags & DT_POL_BYTES) ? f->frame_len : f->segs;
	/* A verified source (syn_cookies) skips the prefix budgets, never its bucket. */
	if ((p->pol->flags & DT_POL_PREFIX) &&
	    !((p->pol->flags & DT_POL_SYN_COOKIES) && dt_verified_hit(&f->key, f->is_v6, st))) {
		f->key = p->key;
		f->cost = p->cost;
		f->bank = bank;
		return DT_DECIDE_PREFIX;
	}
	return dt_throttle(p, NULL);
}

/* A `throttle` rule with prefix budgets: its verdict (dt_throttle_prefix) for the frame
 * dt_decide prepared. A global function, called by the entry point after dt_decide (see
 * there for the stack). */
__noinline int dt_throttle_facts(struct dt_facts *f, struct dt_stats *st, struct dt_config *cfg)
{
	struct dt_packet pk, *p = &pk;

	if (!f || !st || !cfg)
		return XDP_PASS;
	if (!dt_packet_of_rule(p, f, st, cfg, f->bank, f->cap.rule))
		return dt_fail_open(st);
	p->key = f->key;
	p->cost = f->cost;
	return dt_throttle_prefix(p);
}

/*
 * The frame's facts for dt_decide, read from the headers the parser found (`l3`). The
 * L4 facts only when rules are on, the cluster's ports only in cluster mode; the
 * destination always (a rule's condition or key_by may want it: a few loads).
 */
static __always_inline void dt_facts_read(struct dt_facts *f, const struct dt_l3 *l3, void *data_end,
					  const struct dt_config *cfg, __u64 frame_len, __u32 segs)
{
	f->is_v6 = l3->is_v6;
	f->segs = segs;
	f->frame_len = frame_len;
	if (!dt_l3_dst(l3, data_end, f->dst))
		__builtin_memset(f->dst, 0, sizeof(f->dst));
	if (cfg->flags & DT_CFG_RULES)
		dt_parse_l4(l3, data_end, &f->l4);
	else
		__builtin_memset(&f->l4, 0, sizeof(f->l4));
	f->ex_sport = 0;
	f->ex_dport = 0;
	f->ex_flags = 0;
	f->ex_cluster = DT_EX_NONE;
	f->ex_tcp = (cfg->flags & DT_CFG_EXEMPT) &&
		    dt_parse_tcp_ports(l3, data_end, &f->ex_sport, &f->ex_dport, &f->ex_flags);
}

/*
 * The frame's facts (struct dt_facts) from `data` .. `data_end`: 1, or 0 when it passes
 * without a decision (counted): it cannot be parsed (non-IP, neighbour discovery,
 * malformed), or there is no configuration to decide with.
 */
static __always_inline int dt_facts_of(struct dt_facts *f, void *data, void *data_end, __u64 frame_len, __u32 segs,
				       struct dt_stats *st, const struct dt_config *cfg)
{
	struct dt_l3 l3;

	if (!f || !st || !dt_parse_counted(st, data, data_end, &f->key, &l3))
		return 0;
	if (!cfg) {
		dt_fail_open(st);
		return 0;
	}
	dt_facts_read(f, &l3, data_end, cfg, frame_len, segs);
	return 1;
}

/* The frame's facts at XDP. */
/* 1 when dt_xdp is loaded for multi-buffer XDP (BPF_F_XDP_HAS_FRAGS, Linux 5.18; the agent
 * sets both where the kernel has it): a frame larger than a page (jumbo MTU) then arrives
 * as a first buffer and fragments. The parser reads only the first buffer (every read is
 * checked against its data_end: headers that are not there are not read), and a frame is
 * charged its whole length, fragments included (bpf_xdp_get_buff_len). 0: one buffer, its
 * length the frame's. */
const volatile __u32 dt_xdp_frags = 0;

static __always_inline int dt_facts_xdp(struct xdp_md *ctx, struct dt_facts *f, struct dt_stats *st,
					const struct dt_config *cfg)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u64 frame_len = (__u64)(data_end - data);

	if (dt_xdp_frags)
		frame_len = bpf_xdp_get_buff_len(ctx);
	return dt_facts_of(f, data, data_end, frame_len, 1, st, cfg);
}

/* At tc ingress: skb->data is the Ethernet header, as for XDP, and skb->len the whole
 * frame as XDP would see it. The parser reads only the linear part: when the headers it
 * may need are not all there (a non-linear skb), they are pulled in first; if that
 * fails, the parser sees less and the frame passes as malformed. */
static __always_inline int dt_facts_tc(struct __sk_buff *skb, struct dt_facts *f, struct dt_stats *st,
				       const struct dt_config *cfg)
{
	__u32 want = skb->len < DT_TC_PULL_LEN ? skb->len : DT_TC_PULL_LEN;
	void *data = (void *)(long)skb->data, *data_end = (void *)(long)skb->data_end;

	if (data + want > data_end) {
		/* The call invalidates packet pointers, failed or not: read them again. */
		bpf_skb_pull_data(skb, want);
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
	}
	return dt_facts_of(f, data, data_end, skb->len, skb->gso_segs ? skb->gso_segs : 1, st, cfg);
}

/*
 * The decision for one frame, whatever hook it arrives at, once its facts are read
 * (`ready`, by dt_facts_xdp or dt_facts_tc): XDP_PASS or XDP_DROP (the hook's entry point
 * turns these into its own verdict codes). f->cap says what decided, for the capture.
 */
static __always_inline int dt_hook_decide(struct dt_facts *f, int ready, struct dt_stats *st, struct dt_config *cfg)
{
	int verdict;

	if (!ready)
		return XDP_PASS;
	verdict = dt_decide(f, st, cfg);
	if (DT_ABLATED(CALL))  /* inlined: no stack left for the prefix budgets' chain */
		return verdict == DT_DECIDE_PREFIX ? XDP_PASS : verdict;
	return verdict == DT_DECIDE_PREFIX ? dt_throttle_facts(f, st, cfg) : verdict;
}

/*
 * The cluster exemption's part of the facts (f->ex_cluster, bpf/exempt.bpf.h), read at
 * the entry point: its socket lookup needs the hook's context, which dt_decide, shared by
 * both hooks, does not have. Inline, only the bitmaps: a segment with a cluster port's bit
 * calls the hook's global function (dt_cluster_xdp, dt_cluster_tc: checked once by the
 * verifier) for the entries and the socket; every other packet pays one test, as before.
 */
static __always_inline __u32 dt_cluster_sides(const struct dt_facts *f, int ready)
{
	return ready && f->ex_tcp ? dt_cluster_port_sides(f->ex_sport, f->ex_dport) : 0;
}

/* DT_EX_* for the TCP segment of `f`, with the port bits `sides`, at either hook. */
static __always_inline int dt_cluster_facts(void *ctx, const struct dt_facts *f, __u32 sides)
{
	struct dt_tcp_seg s;

	if (!f)
		return DT_EX_NONE;
	s.src = f->key.addr;
	s.dst = f->dst;
	s.sport = f->ex_sport;
	s.dport = f->ex_dport;
	s.flags = f->ex_flags;
	s.is_v6 = f->is_v6;
	return dt_cluster_segment(ctx, &s, sides);
}

/* Its global function at XDP (one a hook: the context types differ), checked once by the verifier. */
__noinline int dt_cluster_xdp(struct xdp_md *ctx, struct dt_facts *f, __u32 sides)
{
	return dt_cluster_facts(ctx, f, sides);
}

/* The same at tc. */
__noinline int dt_cluster_tc(struct __sk_buff *skb, struct dt_facts *f, __u32 sides)
{
	return dt_cluster_facts(skb, f, sides);
}

/* This load's instance (struct dt_config.owner), written by the agent before the load:
 * random, never 0. 0 in the programs the tools load. */
const volatile __u32 dt_instance = 0;

/* dt_hook_run's answer for a frame this program is not the owner of (another load of it
 * owns the frames: a take-over in libxdp's dispatcher is under way): passed on as it is. */
#define DT_NOT_OWNER (-2)

/* 1 when config.owner names another load of this program (0 names none: any counts). */
static __always_inline int dt_not_owner(const struct dt_config *cfg)
{
	__u32 owner = cfg ? DT_READ_ONCE(cfg->owner) : 0;

	return owner && owner != dt_instance;
}

/* The capture's part of the frame's facts, before the decision. */
static __always_inline void dt_facts_start(struct dt_facts *f)
{
	__builtin_memset(&f->cap, 0, sizeof(f->cap));
	f->cap.rule = DT_CAP_RULE_NONE;
	f->bank = 0;
	f->cost = 0;
}

/*
 * One frame at either hook (`hook`: DT_CAP_HOOK_XDP or DT_CAP_HOOK_TC, a constant once
 * inlined, so each entry point keeps its own calls only): its facts, the cluster
 * exemption, a SYN cookie's ACK (XDP only), then the decision (dt_hook_decide); or
 * DT_NOT_OWNER, before anything is read or counted.
 */
static __always_inline int dt_hook_run(void *ctx, int hook, struct dt_facts *f)
{
	struct dt_config *cfg = dt_config_get();
	struct dt_stats *st;
	__u32 zero = 0, sides;
	int ready, xdp = hook == DT_CAP_HOOK_XDP;

	if (!DT_ABLATED(OWNER) && dt_not_owner(cfg))
		return DT_NOT_OWNER;
	dt_facts_start(f);
	st = bpf_map_lookup_elem(&stats, &zero);
	ready = st && (xdp ? dt_facts_xdp(ctx, f, st, cfg) : dt_facts_tc(ctx, f, st, cfg));
	if ((sides = dt_cluster_sides(f, ready)))
		f->ex_cluster = xdp ? dt_cluster_xdp(ctx, f, sides) : dt_cluster_tc(ctx, f, sides);
	if (xdp && ready && (cfg->flags & DT_CFG_SYN_COOKIES) && dt_is_bare_ack(&f->l4))
		dt_syncookie_ack(ctx, &f->key, f->is_v6);
	return dt_hook_decide(f, ready, st, cfg);
}

SEC("xdp")
int dt_xdp(struct xdp_md *ctx)
{
	struct dt_facts f;
	int verdict = dt_hook_run(ctx, DT_CAP_HOOK_XDP, &f);

	if (verdict == DT_NOT_OWNER)
		return XDP_PASS;
	if (verdict == XDP_TX)  /* a SYN answered with a cookie (dt_cookie_or_drop) */
		verdict = dt_syncookie_answer(ctx);
	if (!DT_ABLATED(CAPTURE))
		dt_capture(ctx, DT_CAP_HOOK_XDP, ctx->data_end - ctx->data, verdict, &f.cap);
	return verdict;
}

/*
 * The same decision at tc ingress (--attach tc: a tcx link, or a clsact filter on
 * kernels before 6.6), for hosts whose XDP hook belongs to another program (the parse:
 * dt_facts_tc). Verdicts: TC_ACT_SHOT for a drop, TC_ACT_UNSPEC (tcx: TCX_NEXT) to pass
 * it on.
 */
SEC("tc")
int dt_tc(struct __sk_buff *skb)
{
	struct dt_facts f;
	int verdict = dt_hook_run(skb, DT_CAP_HOOK_TC, &f);

	if (verdict == DT_NOT_OWNER)
		return TC_ACT_UNSPEC;
	dt_capture(skb, DT_CAP_HOOK_TC, skb->len, verdict, &f.cap);
	/* XDP_TX: a SYN to answer with a cookie, which tc cannot (the agent refuses
	 * syn_cookies at tc): dropped, as its prefix budget says. */
	if (verdict == XDP_DROP || verdict == XDP_TX)
		return TC_ACT_SHOT;
	/* Not TC_ACT_OK: that would end classification, and the tc programs or
	 * filters after ours (another product's) would never see the packet. */
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
