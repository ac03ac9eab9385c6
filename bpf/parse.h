/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * parse.h - bounds-checked header parsing for the XDP program (BPF side only).
 *
 * A cursor walks the frame; every helper checks the bytes it reads against
 * data_end before reading them, and says what it found. Limits, stated once:
 *   - at most two VLAN tags (802.1Q 0x8100 and 802.1ad 0x88a8, in any order);
 *     a third tag makes the frame "malformed" for our purposes;
 *   - IPv4: version must be 4 and IHL >= 5, and the whole IHL*4-byte header
 *     (options included) must be inside the frame;
 *   - TCP ports and flags for the cluster exemption (dt_parse_tcp_ports): only TCP
 *     directly after the IP header, first fragments only, its first 14 bytes (ports
 *     to flags) in the frame;
 *   - L4 (only when rules are on, dt_parse_l4): the ports of TCP and UDP and TCP's
 *     flags, when the first 4 (UDP) or 14 (TCP) bytes of the L4 header are in the
 *     frame; ICMP's and ICMPv6's type and code when their first 2 bytes are; none
 *     for non-first fragments. The destination address (dt_l3_dst) is read only
 *     when a rule asks for it. IPv6 extension headers
 *     (hop-by-hop, routing, destination options, fragment) are walked, at most
 *     DT_MAX_EXT_HDRS of them; past that the packet has no L4 information.
 *   - IPv6: the 40-byte fixed header must be inside the frame (the source address
 *     is there; extension headers do not matter for a source key). Neighbour
 *     discovery (ICMPv6 types 133-137 directly after the fixed header, hop limit
 *     255 as RFC 4861 requires) is reported apart: it is IPv6's ARP, and throttling
 *     it could cut a host off its router.
 */
#ifndef DTHROTTLE_PARSE_H
#define DTHROTTLE_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <bpf/bpf_endian.h>
#include "dthrottle/common.h"

#define DT_MAX_VLAN_DEPTH 2
#define DT_MAX_EXT_HDRS 4

/* EtherTypes in network byte order, computed at compile time. */
#define DT_ETH_P_IP     bpf_htons(ETH_P_IP)
#define DT_ETH_P_IPV6   bpf_htons(ETH_P_IPV6)
#define DT_ETH_P_8021Q  bpf_htons(ETH_P_8021Q)
#define DT_ETH_P_8021AD bpf_htons(ETH_P_8021AD)

enum dt_parse_result {
	DT_PARSE_OK = 0,     /* key filled in */
	DT_PARSE_ND,         /* IPv6 neighbour discovery: never throttled, like ARP */
	DT_PARSE_NON_IP,     /* a well-formed frame that is not IPv4/IPv6 */
	DT_PARSE_MALFORMED,  /* truncated or invalid header */
};

struct dt_cursor {
	void *pos;
	void *end;
};

/* What rules look at beyond the source: filled in by dt_parse_l4. */
struct dt_l4 {
	__u8 proto;     /* L4 protocol number (after IPv6 extension headers) */
	__u8 has_port;  /* sport and dport are valid (TCP/UDP header present, first
	                 * fragment); for TCP, tcp_flags too */
	__u8 tcp_flags; /* byte 13 of the TCP header: DT_TCP_* */
	__u8 has_icmp;  /* icmp_type and icmp_code are valid (ICMP or ICMPv6) */
	__u16 sport;    /* host order */
	__u16 dport;    /* host order */
	__u8 icmp_type;
	__u8 icmp_code;
	__u8 pad[2];
};

/* Where dt_parse_packet stopped: the L4 header position and the protocol, and the
 * network header (for the destination: dt_l3_dst). */
struct dt_l3 {
	void *net;  /* the IPv4 or IPv6 header */
	void *l4;
	__u8 proto;
	__u8 first_fragment; /* 1 unless this is a non-first fragment */
	__u8 is_v6;
};

struct dt_vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

/* Ethernet header plus up to DT_MAX_VLAN_DEPTH tags; returns the inner EtherType
 * (network order) in *proto. */
static __always_inline enum dt_parse_result
dt_parse_eth(struct dt_cursor *c, __be16 *proto)
{
	struct ethhdr *eth = c->pos;
	__be16 p;
	int i;

	if ((void *)(eth + 1) > c->end)
		return DT_PARSE_MALFORMED;
	p = eth->h_proto;
	c->pos = eth + 1;

#pragma unroll
	for (i = 0; i < DT_MAX_VLAN_DEPTH; i++) {
		struct dt_vlan_hdr *vh = c->pos;

		if (p != DT_ETH_P_8021Q && p != DT_ETH_P_8021AD)
			break;
		if ((void *)(vh + 1) > c->end)
			return DT_PARSE_MALFORMED;
		p = vh->encap_proto;
		c->pos = vh + 1;
	}
	if (p == DT_ETH_P_8021Q || p == DT_ETH_P_8021AD)
		return DT_PARSE_MALFORMED; /* deeper than DT_MAX_VLAN_DEPTH */
	*proto = p;
	return DT_PARSE_OK;
}

/*
 * The address of IPv4 source `a` (::ffff:a.b.c.d), written as the four 32-bit words the
 * map's hash (jhash2) and every copy of it read. Built byte by byte (a zeroing store,
 * two byte stores of 0xff, the address), it made the first read of word 2 span three
 * stores, which the CPU cannot forward: a stall at every lookup that cost an IPv4
 * packet several ns more than an IPv6 one. For a 4-byte aligned address (dt_facts' dst).
 */
static __always_inline void dt_addr_set_v4(__u8 *addr, __be32 a)
{
	__u32 *w = (__u32 *)addr;  /* 4-byte aligned: dt_facts' dst */

	w[0] = 0;
	w[1] = 0;
	w[2] = bpf_htonl(0xffff);
	w[3] = a;
}

/* A key the parser fills: 8-byte aligned (the verifier refuses a misaligned 8-byte
 * store to the stack). struct dt_facts' key is, as its first member. */
#define DT_KEY_ALIGNED __attribute__((aligned(8)))

/*
 * A source key's address, for `key` 8-byte aligned (DT_KEY_ALIGNED: every key the
 * parser fills): two 8-byte stores, for the copies of the key that follow at once
 * (dt_decide's, the lookup's compare), which the compiler makes of 8-byte loads. A
 * load that spans two narrower stores still in flight cannot be forwarded from them:
 * it waits for them to reach the cache, 5 ns per packet here with the key written in
 * 4-byte words.
 */
static __always_inline void dt_key_set_addr(struct dt_key *key, __u64 hi, __u64 lo)
{
	__u64 *q = (__u64 *)key->addr;

	q[0] = hi;
	q[1] = lo;
	key->rule = 0;
}

/* An IPv6 source's key from the packet's four 32-bit words, read as such: a wider load
 * of the packet could itself wait on a narrower store to it still in flight (the
 * bench's wrapper rewrites the source's last word; a program before ours may too). */
static __always_inline void dt_key_set_v6(struct dt_key *key, const __u32 *saddr)
{
	union {
		__u32 w[2];
		__u64 q;
	} hi = { .w = { saddr[0], saddr[1] } }, lo = { .w = { saddr[2], saddr[3] } };

	dt_key_set_addr(key, hi.q, lo.q);
}

/* ::ffff:saddr as dt_key_set_addr's two words (the first all zero). */
static __always_inline void dt_key_set_v4(struct dt_key *key, __be32 saddr)
{
	union {
		__be32 w[2];
		__u64 q;
	} lo = { .w = { bpf_htonl(0xffff), saddr } };

	dt_key_set_addr(key, 0, lo.q);
}

static __always_inline enum dt_parse_result
dt_parse_ipv4(struct dt_cursor *c, struct dt_key *key, struct dt_l3 *l3)
{
	struct iphdr *ip = c->pos;
	__u32 hdr_len;

	if ((void *)(ip + 1) > c->end)
		return DT_PARSE_MALFORMED;
	if (ip->version != 4 || ip->ihl < 5)
		return DT_PARSE_MALFORMED;
	hdr_len = ip->ihl * 4;
	if (c->pos + hdr_len > c->end)
		return DT_PARSE_MALFORMED; /* options cut off */

	dt_key_set_v4(key, ip->saddr);
	l3->net = ip;
	c->pos += hdr_len;
	l3->l4 = c->pos;
	l3->proto = ip->protocol;
	l3->first_fragment = (ip->frag_off & bpf_htons(0x1fff)) == 0;
	l3->is_v6 = 0;
	return DT_PARSE_OK;
}

static __always_inline enum dt_parse_result
dt_parse_ipv6(struct dt_cursor *c, struct dt_key *key, struct dt_l3 *l3)
{
	struct ipv6hdr *ip6 = c->pos;

	if ((void *)(ip6 + 1) > c->end)
		return DT_PARSE_MALFORMED;
	if (ip6->version != 6)
		return DT_PARSE_MALFORMED;
	dt_key_set_v6(key, (const __u32 *)&ip6->saddr);
	l3->net = ip6;
	c->pos = ip6 + 1;
	l3->l4 = c->pos;
	l3->proto = ip6->nexthdr;
	l3->first_fragment = 1;
	l3->is_v6 = 1;
	if (ip6->nexthdr == IPPROTO_ICMPV6 && ip6->hop_limit == 255) {
		__u8 *type = c->pos;

		if ((void *)(type + 1) > c->end)
			return DT_PARSE_MALFORMED;
		if (*type >= 133 && *type <= 137)
			return DT_PARSE_ND;
	}
	return DT_PARSE_OK;
}

/* Parse a frame down to the source address (key->rule is left 0). */
static __always_inline enum dt_parse_result
dt_parse_packet(void *data, void *data_end, struct dt_key *key, struct dt_l3 *l3)
{
	struct dt_cursor c = { .pos = data, .end = data_end };
	enum dt_parse_result r;
	__be16 proto;

	r = dt_parse_eth(&c, &proto);
	if (r != DT_PARSE_OK)
		return r;
	if (proto == DT_ETH_P_IP)
		return dt_parse_ipv4(&c, key, l3);
	if (proto == DT_ETH_P_IPV6)
		return dt_parse_ipv6(&c, key, l3);
	return DT_PARSE_NON_IP;
}

static __always_inline enum dt_parse_result
dt_parse_source(void *data, void *data_end, struct dt_key *key)
{
	struct dt_l3 l3;

	return dt_parse_packet(data, data_end, key, &l3);
}

struct dt_ipv6_opt_hdr {
	__u8 nexthdr;
	__u8 hdrlen; /* in 8-byte units, not counting the first 8 */
};

struct dt_ipv6_frag_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off; /* offset << 3 | flags */
	__be32 id;
};

/* The L4 facts rules match on; everything zero when they cannot be known. */
static __always_inline void dt_parse_l4(const struct dt_l3 *l3, void *data_end, struct dt_l4 *out)
{
	void *pos = l3->l4;
	__u8 proto = l3->proto;
	int i;

	__builtin_memset(out, 0, sizeof(*out));
	if (!l3->first_fragment)
		return;
	if (l3->is_v6) {
#pragma unroll
		for (i = 0; i < DT_MAX_EXT_HDRS; i++) {
			if (proto == IPPROTO_HOPOPTS || proto == IPPROTO_ROUTING ||
			    proto == IPPROTO_DSTOPTS) {
				struct dt_ipv6_opt_hdr *h = pos;

				if ((void *)(h + 1) > data_end)
					return;
				proto = h->nexthdr;
				pos += (h->hdrlen + 1) * 8;
			} else if (proto == IPPROTO_FRAGMENT) {
				struct dt_ipv6_frag_hdr *f = pos;

				if ((void *)(f + 1) > data_end)
					return;
				if (f->frag_off & bpf_htons(0xfff8))
					return; /* not the first fragment */
				proto = f->nexthdr;
				pos = f + 1;
			} else {
				break;
			}
		}
		if (proto == IPPROTO_HOPOPTS || proto == IPPROTO_ROUTING ||
		    proto == IPPROTO_DSTOPTS || proto == IPPROTO_FRAGMENT)
			return; /* chain longer than DT_MAX_EXT_HDRS */
	}
	out->proto = proto;
	if (proto == IPPROTO_UDP) {
		__be16 *ports = pos;

		if ((void *)(ports + 2) > data_end)
			return;
		out->sport = bpf_ntohs(ports[0]);
		out->dport = bpf_ntohs(ports[1]);
		out->has_port = 1;
	} else if (proto == IPPROTO_TCP) {
		__u8 *th = pos;

		if ((void *)(th + 14) > data_end)
			return;
		out->sport = ((__u16)th[0] << 8) | th[1];
		out->dport = ((__u16)th[2] << 8) | th[3];
		out->has_port = 1;
		out->tcp_flags = th[13];
	} else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		__u8 *ih = pos;

		if ((void *)(ih + 2) > data_end)
			return;
		out->icmp_type = ih[0];
		out->icmp_code = ih[1];
		out->has_icmp = 1;
	}
}

/*
 * The packet's destination address in the 16-byte form of dt_key (IPv4-mapped for
 * IPv4) into out (4-byte aligned): 1, or 0 if the network header is not within data_end (it always is
 * after DT_PARSE_OK; checked again for the verifier).
 */
static __always_inline int dt_l3_dst(const struct dt_l3 *l3, void *data_end, __u8 out[16])
{
	if (l3->is_v6) {
		struct ipv6hdr *ip6 = l3->net;

		if ((void *)(ip6 + 1) > data_end)
			return 0;
		__builtin_memcpy(out, &ip6->daddr, 16);
	} else {
		struct iphdr *ip = l3->net;

		if ((void *)(ip + 1) > data_end)
			return 0;
		dt_addr_set_v4(out, ip->daddr);
	}
	return 1;
}

/*
 * The TCP ports (host order) and flags of a segment whose TCP header follows the IP
 * header directly (IPv4 options allowed; no IPv6 extension headers): 1, or 0 for
 * anything else (other protocols, non-first fragments, a header cut before its flags).
 * Only what the cluster exemption needs: one comparison for every other packet.
 */
static __always_inline int dt_parse_tcp_ports(const struct dt_l3 *l3, void *data_end, __u16 *sport,
					      __u16 *dport, __u8 *flags)
{
	__u8 *th = l3->l4;

	if (l3->proto != IPPROTO_TCP || !l3->first_fragment)
		return 0;
	if ((void *)(th + 14) > data_end)
		return 0;
	/* Byte by byte: the verifier then knows each port is below 65536 (an index). */
	*sport = ((__u16)th[0] << 8) | th[1];
	*dport = ((__u16)th[2] << 8) | th[3];
	*flags = th[13];
	return 1;
}

#endif /* DTHROTTLE_PARSE_H */
