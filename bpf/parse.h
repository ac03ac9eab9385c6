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

static __always_inline enum dt_parse_result
dt_parse_ipv4(struct dt_cursor *c, struct dt_key *key)
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

	__builtin_memset(key, 0, sizeof(*key));
	key->addr[10] = 0xff;
	key->addr[11] = 0xff;
	__builtin_memcpy(&key->addr[12], &ip->saddr, 4);
	c->pos += hdr_len;
	return DT_PARSE_OK;
}

static __always_inline enum dt_parse_result
dt_parse_ipv6(struct dt_cursor *c, struct dt_key *key)
{
	struct ipv6hdr *ip6 = c->pos;

	if ((void *)(ip6 + 1) > c->end)
		return DT_PARSE_MALFORMED;
	if (ip6->version != 6)
		return DT_PARSE_MALFORMED;
	__builtin_memcpy(key->addr, &ip6->saddr, 16);
	c->pos = ip6 + 1;
	if (ip6->nexthdr == IPPROTO_ICMPV6 && ip6->hop_limit == 255) {
		__u8 *type = c->pos;

		if ((void *)(type + 1) > c->end)
			return DT_PARSE_MALFORMED;
		if (*type >= 133 && *type <= 137)
			return DT_PARSE_ND;
	}
	return DT_PARSE_OK;
}

/* Parse a whole frame down to the source address. */
static __always_inline enum dt_parse_result
dt_parse_source(void *data, void *data_end, struct dt_key *key)
{
	struct dt_cursor c = { .pos = data, .end = data_end };
	enum dt_parse_result r;
	__be16 proto;

	r = dt_parse_eth(&c, &proto);
	if (r != DT_PARSE_OK)
		return r;
	if (proto == DT_ETH_P_IP)
		return dt_parse_ipv4(&c, key);
	if (proto == DT_ETH_P_IPV6)
		return dt_parse_ipv6(&c, key);
	return DT_PARSE_NON_IP;
}

#endif /* DTHROTTLE_PARSE_H */
