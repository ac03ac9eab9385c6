/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * syncookie.bpf.h - SYN cookies while a prefix budget is spent (syn_cookies = true,
 * docs/rules.md), and the sources they verify.
 *
 * A SYN of a rule with DT_POL_SYN_COOKIES that only a prefix budget refuses (its source
 * had a token of its own: dt_throttle_prefix) is answered here, at XDP, with a SYN-ACK
 * whose sequence number is a SYN cookie of the kernel's (bpf_tcp_raw_gen_syncookie_*,
 * Linux 6.0): the frame is turned round in place (MACs, addresses and ports swapped,
 * VLAN tags kept, TTL or hop limit 64, window 0, one MSS option) and sent back out of
 * the port it came in (XDP_TX). A spoofed source never sees it; a real client answers
 * with the handshake's ACK, which passes to the host, where netfilter's SYNPROXY (the
 * same kernel secret) checks the cookie again and opens the connection to the listener
 * (docs/rules.md says how the host is set up).
 *
 * What survives of the client's options: its MSS, as one of the cookie's four MSS
 * values (the helper's choice, at most the client's). Window scaling, SACK and
 * timestamps are not offered back, so the connection runs without them (the kernel
 * keeps them by encoding them in a timestamp option; not done here). Window 0, as
 * SYNPROXY's own SYN-ACK: SYNPROXY opens the window once the listener has answered.
 *
 * Only SYNs whose TCP header follows the IP header directly (no IPv4 options, no IPv6
 * extension headers) are answered; any other is dropped, as the budget said.
 *
 * While cookies are being sent (one was sent within DT_COOKIE_ACK_WINDOW_NS), a bare
 * ACK (ACK set; SYN, RST, FIN clear) of a source not verified is checked for a cookie
 * (bpf_tcp_raw_check_syncookie_*): valid, its source is verified (DT_MAP_VERIFIED, for
 * the agent's --verified-ttl); invalid, it is counted; either way it goes on to the
 * rules as before (and the source goes to the ring `verified_ring`, dthrottle/verified_ring.h, for the
 * agent to tell its peers). A verified source skips the prefix budgets of rules with
 * DT_POL_SYN_COOKIES (never its own bucket, the bans or the lists).
 *
 * On a kernel without the helpers (before Linux 6.0) the agent sets dt_syncookie_helpers
 * to 0 before the load: the verifier then never sees the calls (a branch on a read-only
 * constant), so the object still loads down to the floor (5.17), and the agent refuses
 * syn_cookies there.
 */
#ifndef DTHROTTLE_SYNCOOKIE_BPF_H
#define DTHROTTLE_SYNCOOKIE_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "dthrottle/common.h"
#include "parse.h"
#include "maps.h"

/* 1 when the kernel has bpf_tcp_raw_{gen,check}_syncookie_ipv{4,6} (the agent's probe
 * sets it before the load; see the top). */
const volatile __u32 dt_syncookie_helpers = 1;

#define DT_SYNACK_TCP_LEN 24  /* the SYN-ACK's TCP header: 20 bytes and the MSS option */
#define DT_SYNACK_TTL 64

/* A bare ACK (ACK set; SYN, RST, FIN clear) of TCP: what may carry a cookie back. */
static __always_inline int dt_is_bare_ack(const struct dt_l4 *l4)
{
	return l4->proto == IPPROTO_TCP && l4->has_port &&
	       (l4->tcp_flags & (DT_TCP_SYN | DT_TCP_ACK | DT_TCP_RST | DT_TCP_FIN)) == DT_TCP_ACK;
}

/* A SYN (SYN set; ACK, RST, FIN clear) of TCP: what a cookie answers. */
static __always_inline int dt_is_syn(const struct dt_l4 *l4)
{
	return l4->proto == IPPROTO_TCP && l4->has_port &&
	       (l4->tcp_flags & (DT_TCP_SYN | DT_TCP_ACK | DT_TCP_RST | DT_TCP_FIN)) == DT_TCP_SYN;
}

/* The verified map's key of source `src` (dt_key's form) of the family `is_v6`. */
static __always_inline void dt_verified_key(struct dt_key *k, const struct dt_key *src, __u32 is_v6)
{
	__builtin_memcpy(k->addr, src->addr, 16);
	k->rule = is_v6 ? DT_VERIFIED_V6 : DT_VERIFIED_V4;
}

/* 1 if source `src` is verified and not expired: its hit counted (the source and this
 * CPU's counters). For rules with DT_POL_SYN_COOKIES and prefix budgets only. */
static __always_inline int dt_verified_hit(const struct dt_key *src, __u32 is_v6, struct dt_stats *st)
{
	struct dt_verified *v;
	struct dt_key k;

	dt_verified_key(&k, src, is_v6);
	v = bpf_map_lookup_elem(&verified, &k);
	if (!v || bpf_ktime_get_ns() >= DT_READ_ONCE(v->expires_ns))
		return 0;
	__sync_fetch_and_add(&v->hits, 1);
	st->verified_hits++;
	return 1;
}

/* Source `k`, verified here until `expires_ns`, into the ring the agent tells its peers
 * from (no wake-up: the agent drains it once a period; a full ring loses the record,
 * which costs that source one more cookie on another host). */
static __always_inline void dt_verified_told(const struct dt_key *k, __u64 expires_ns)
{
	struct dt_verified_rec rec = {};

	__builtin_memcpy(&rec.key, k, sizeof(rec.key));
	rec.expires_ns = expires_ns;
	bpf_ringbuf_output(&verified_ring, &rec, sizeof(rec), BPF_RB_NO_WAKEUP);
}

/* Folds a 32-bit one's complement sum (64-bit accumulator) into its 16-bit complement. */
static __always_inline __u16 dt_csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/* The network and TCP headers of a segment whose TCP header follows the IP header
 * directly (see the top), as the parser finds them: 1, or 0. */
static __always_inline int dt_tcp_headers(void *data, void *data_end, struct dt_l3 *l3)
{
	struct dt_key key DT_KEY_ALIGNED;

	if (dt_parse_packet(data, data_end, &key, l3) != DT_PARSE_OK || l3->proto != IPPROTO_TCP ||
	    !l3->first_fragment)
		return 0;
	return l3->l4 + sizeof(struct tcphdr) <= data_end;
}

/*
 * While cookies are being sent, the ACK of an unverified source checked for one (see
 * the top): its source verified if it holds. `src` and `is_v6` as the parser found them.
 * A global function: verified once, called only for bare ACKs with DT_CFG_SYN_COOKIES.
 */
__noinline int dt_syncookie_ack(struct xdp_md *ctx, const struct dt_key *src, __u32 is_v6)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	struct dt_verified *v, nv = {};
	struct dt_syncookie *sc;
	struct tcphdr *th;
	struct dt_stats *st;
	struct dt_l3 l3;
	struct dt_key k;
	__u32 zero = 0;
	__u64 now, ttl;
	long err;

	if (!dt_syncookie_helpers || !src)
		return 0;
	sc = bpf_map_lookup_elem(&syncookie, &zero);
	st = bpf_map_lookup_elem(&stats, &zero);
	if (!sc || !st || !DT_READ_ONCE(sc->last_sent_ns))
		return 0;
	now = bpf_ktime_get_ns();
	if (now - DT_READ_ONCE(sc->last_sent_ns) > DT_COOKIE_ACK_WINDOW_NS)
		return 0;
	dt_verified_key(&k, src, is_v6);
	v = bpf_map_lookup_elem(&verified, &k);
	if (v && now < DT_READ_ONCE(v->expires_ns))
		return 0;
	if (!dt_tcp_headers(data, data_end, &l3) || l3.is_v6 != !!is_v6)
		return 0;
	th = l3.l4;  /* checked again here: the verifier forgets a spilled pointer's range */
	if ((void *)(th + 1) > data_end)
		return 0;
	if (is_v6) {
		struct ipv6hdr *ip6 = l3.net;

		if ((void *)(ip6 + 1) > data_end)
			return 0;
		err = bpf_tcp_raw_check_syncookie_ipv6(ip6, th);
	} else {
		struct iphdr *ip = l3.net;

		if ((void *)(ip + 1) > data_end)
			return 0;
		err = bpf_tcp_raw_check_syncookie_ipv4(ip, th);
	}
	if (err) {
		st->cookie_ack_invalid++;
		return 0;
	}
	ttl = DT_READ_ONCE(sc->verified_ttl_ns);
	nv.expires_ns = now + (ttl ? ttl : DT_DEFAULT_VERIFIED_TTL_NS);
	bpf_map_update_elem(&verified, &k, &nv, BPF_ANY);
	st->cookie_ack_valid++;
	dt_verified_told(&k, nv.expires_ns);
	return 1;
}

/* The SYN cookie (low 32 bits) and its MSS (bits 32..47) for the SYN whose IP header is
 * `net` and TCP header at offset `th_off` of the frame, or < 0. The TCP header, options
 * and all, is copied to the stack: the helper wants its whole length checked. */
static __always_inline __s64 dt_syncookie_gen(struct xdp_md *ctx, void *net, void *data_end, __u32 th_off,
					      __u32 th_len, __u32 is_v6)
{
	__u8 th[60];

	th_len &= 0x3c;
	if (th_len < sizeof(struct tcphdr))
		return -1;
	/* The length passed must be the one tested: without the barrier clang spills the
	 * untested copy, and 6.1's verifier refuses its minimum of 0. */
	barrier_var(th_len);
	if (bpf_xdp_load_bytes(ctx, th_off, th, th_len))
		return -1;
	if (is_v6) {
		if (net + sizeof(struct ipv6hdr) > data_end)
			return -1;
		return bpf_tcp_raw_gen_syncookie_ipv6(net, (struct tcphdr *)th, th_len);
	}
	if (net + sizeof(struct iphdr) > data_end)
		return -1;
	return bpf_tcp_raw_gen_syncookie_ipv4(net, (struct tcphdr *)th, th_len);
}

/* The SYN-ACK's IPv4 header, in place of the SYN's (options-free: see the top). */
static __always_inline void dt_synack_ipv4(struct iphdr *ip)
{
	__be32 a = ip->saddr;

	ip->saddr = ip->daddr;
	ip->daddr = a;
	*(__u16 *)ip = bpf_htons(0x4500);  /* version 4, IHL 5, TOS 0 */
	ip->tot_len = bpf_htons(sizeof(struct iphdr) + DT_SYNACK_TCP_LEN);
	ip->id = 0;
	ip->frag_off = bpf_htons(0x4000);  /* don't fragment */
	ip->ttl = DT_SYNACK_TTL;
	ip->protocol = IPPROTO_TCP;
	ip->check = 0;
	ip->check = dt_csum_fold((__u32)bpf_csum_diff(0, 0, (__be32 *)ip, sizeof(*ip), 0));
}

/* The SYN-ACK's IPv6 header, in place of the SYN's (no extension headers: see the top). */
static __always_inline void dt_synack_ipv6(struct ipv6hdr *ip6)
{
	struct in6_addr a = ip6->saddr;

	ip6->saddr = ip6->daddr;
	ip6->daddr = a;
	*(__be32 *)ip6 = bpf_htonl(0x60000000);
	ip6->payload_len = bpf_htons(DT_SYNACK_TCP_LEN);
	ip6->nexthdr = IPPROTO_TCP;
	ip6->hop_limit = DT_SYNACK_TTL;
}

/* The SYN-ACK's TCP header over the SYN's first 24 bytes: ports swapped, seq the cookie,
 * ack the client's seq + 1, window 0, the MSS option; its checksum from `pseudo` (the
 * pseudo-header's sum, without the TCP length). */
static __always_inline void dt_synack_tcp(__u8 *th, __u32 cookie, __u16 mss, __u64 pseudo)
{
	struct tcphdr *t = (struct tcphdr *)th;
	__be16 port = t->source;
	__u32 seq = bpf_ntohl(t->seq);

	t->source = t->dest;
	t->dest = port;
	t->ack_seq = bpf_htonl(seq + 1);
	t->seq = bpf_htonl(cookie);
	th[12] = (DT_SYNACK_TCP_LEN / 4) << 4;
	th[13] = DT_TCP_SYN | DT_TCP_ACK;
	t->window = 0;
	t->check = 0;
	t->urg_ptr = 0;
	th[20] = 2;  /* MSS, length 4 */
	th[21] = 4;
	th[22] = mss >> 8;
	th[23] = mss & 0xff;
	pseudo += bpf_htons(IPPROTO_TCP) + bpf_htons(DT_SYNACK_TCP_LEN);
	t->check = dt_csum_fold((__u32)bpf_csum_diff(0, 0, (__be32 *)th, DT_SYNACK_TCP_LEN, 0) + pseudo);
}

/* Swaps the Ethernet addresses (the VLAN tags after them stay). */
static __always_inline void dt_synack_eth(struct ethhdr *eth)
{
	__u8 mac[ETH_ALEN];

	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
}

/* When a cookie was last sent, kept to DT_COOKIE_SENT_SLACK_NS (one shared write per ms
 * at most), and one more cookie counted. */
static __always_inline void dt_cookie_sent(void)
{
	struct dt_syncookie *sc;
	struct dt_stats *st;
	__u32 zero = 0;
	__u64 now = bpf_ktime_get_ns();

	sc = bpf_map_lookup_elem(&syncookie, &zero);
	if (sc && now - DT_READ_ONCE(sc->last_sent_ns) > DT_COOKIE_SENT_SLACK_NS)
		sc->last_sent_ns = now;
	st = bpf_map_lookup_elem(&stats, &zero);
	if (st)
		st->cookie_sent++;
}

/*
 * The frame, a SYN that dt_decide answers with a cookie, turned into its SYN-ACK:
 * XDP_TX, or XDP_DROP when it cannot be (the budget's verdict: a SYN with IP options or
 * extension headers, a frame that cannot be resized). A global function, called by the
 * entry point (it needs the context) only for such a SYN.
 */
__noinline int dt_syncookie_answer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;
	__u32 l2, ip_len, th_len, len;
	struct dt_l3 l3;
	__u64 pseudo;
	__s64 ck;
	__u8 *th;

	if (!dt_syncookie_helpers || !dt_tcp_headers(data, data_end, &l3))
		return XDP_DROP;
	ip_len = l3.is_v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	if (l3.l4 != l3.net + ip_len)
		return XDP_DROP;  /* IPv4 options */
	l2 = (l3.net - data) & 0x1f;  /* Ethernet and at most two tags: 22 bytes */
	th = l3.is_v6 ? l3.net + sizeof(struct ipv6hdr) : l3.net + sizeof(struct iphdr);
	if (th + sizeof(struct tcphdr) > (__u8 *)data_end)
		return XDP_DROP;
	th_len = (__u32)(th[12] >> 4) * 4;
	ck = dt_syncookie_gen(ctx, l3.net, data_end, l2 + ip_len, th_len, l3.is_v6);
	if (ck < 0)
		return XDP_DROP;
	len = l2 + ip_len + DT_SYNACK_TCP_LEN;
	if (len != data_end - data && bpf_xdp_adjust_tail(ctx, (int)len - (int)(data_end - data)))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + sizeof(struct ethhdr) > data_end)
		return XDP_DROP;
	dt_synack_eth(data);
	if (l3.is_v6) {
		struct ipv6hdr *ip6 = data + l2;

		if ((void *)(ip6 + 1) + DT_SYNACK_TCP_LEN > data_end)
			return XDP_DROP;
		dt_synack_ipv6(ip6);
		pseudo = (__u32)bpf_csum_diff(0, 0, (__be32 *)&ip6->saddr, 32, 0);
		th = (__u8 *)(ip6 + 1);
	} else {
		struct iphdr *ip = data + l2;

		if ((void *)(ip + 1) + DT_SYNACK_TCP_LEN > data_end)
			return XDP_DROP;
		dt_synack_ipv4(ip);
		pseudo = (__u64)ip->saddr + ip->daddr;
		th = (__u8 *)(ip + 1);
	}
	dt_synack_tcp(th, (__u32)ck, (__u16)(ck >> 32), pseudo);
	dt_cookie_sent();
	return XDP_TX;
}

#endif /* DTHROTTLE_SYNCOOKIE_BPF_H */
