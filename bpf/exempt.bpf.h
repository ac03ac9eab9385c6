/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * exempt.bpf.h - the cluster's own traffic (struct dt_exempt_key, docs/security.md): which
 * TCP segments from a peer's or hub's address pass without a bucket.
 *
 * An entry of cluster_exempt names an address and a port the cluster uses on one side
 * of the segment (the peer's report port as the source, our --listen port as the
 * destination, a hub's ports as the source). An entry alone exempts nothing: anyone can
 * send a segment from a peer's address and port 7700 to port 22. What passes is:
 *   - DT_EX_CONN: a segment of a connection this host's stack has: the socket lookup
 *     (bpf_skc_lookup_tcp, in the device's network namespace) finds a socket for its
 *     four-tuple that is not a listener: established, opening (SYN_SENT, a request
 *     socket), closing or in TIME_WAIT. It passes before the lists and bans: a ban of a
 *     peer's address (which a flood spoofing it may earn) never cuts the cluster's links.
 *   - DT_EX_SYN: a SYN without ACK to our --listen port (a peer's subscription opening):
 *     no connection exists yet, so it passes unthrottled only after the allow list, the
 *     bans and the deny list, which it cannot bypass.
 * Anything else (a SYN, ACK or RST from a peer's report port to another local port; a
 * segment to our --listen port that belongs to no connection; an entry's port on the
 * wrong side) is throttled like any source's.
 *
 * Cost: only a TCP segment with a cluster port's bit (struct dt_cluster_ports) on its
 * side pays a hash lookup, and only one whose address and port are an entry's pays the
 * socket lookup (a SYN never does): UDP, ICMP and TCP on other ports pay what they paid.
 */
#ifndef DTHROTTLE_EXEMPT_BPF_H
#define DTHROTTLE_EXEMPT_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "dthrottle/common.h"
#include "maps.h"

#define DT_EX_NONE 0 /* not the cluster's: throttled like any source's */
#define DT_EX_CONN 1 /* a segment of one of this host's connections: passes first */
#define DT_EX_SYN  2 /* a SYN to our --listen port: passes after the lists and bans */

#define DT_TCP_FIN 0x01
#define DT_TCP_SYN 0x02
#define DT_TCP_RST 0x04
#define DT_TCP_ACK 0x10

/* A TCP segment as the exemption sees it: addresses in dt_key's form (IPv4 mapped),
 * ports in host order. */
struct dt_tcp_seg {
	const __u8 *src;
	const __u8 *dst;
	__u16 sport, dport;
	__u8 flags, is_v6;
};

/* Bit `port` of a struct dt_cluster_ports bitmap. */
static __always_inline int dt_port_bit(const __u64 *bits, __u16 port)
{
	return (bits[port >> 6] >> (port & 63)) & 1;
}

/* The sides (DT_EXEMPT_FROM_PORT | DT_EXEMPT_TO_PORT) whose port is one of the cluster's
 * (the bitmaps: an array element, no hash): 0 for almost every segment. */
static __always_inline __u32 dt_cluster_port_sides(__u16 sport, __u16 dport)
{
	const struct dt_cluster_ports *cp;
	__u32 zero = 0;

	cp = bpf_map_lookup_elem(&cluster_ports, &zero);
	if (!cp)
		return 0;
	return (dt_port_bit(cp->from_port, sport) ? DT_EXEMPT_FROM_PORT : 0) |
	       (dt_port_bit(cp->to_port, dport) ? DT_EXEMPT_TO_PORT : 0);
}

/* Of `sides`, those with an entry for the segment's source address (a hash lookup each). */
static __always_inline __u32 dt_cluster_entries(const struct dt_tcp_seg *s, __u32 sides)
{
	struct dt_exempt_key k;

	__builtin_memcpy(k.addr, s->src, 16);
	k.pad = 0;
	if (sides & DT_EXEMPT_FROM_PORT) {
		k.port = s->sport;
		k.side = DT_EXEMPT_FROM_PORT;
		if (!bpf_map_lookup_elem(&cluster_exempt, &k))
			sides &= ~DT_EXEMPT_FROM_PORT;
	}
	if (sides & DT_EXEMPT_TO_PORT) {
		k.port = s->dport;
		k.side = DT_EXEMPT_TO_PORT;
		if (!bpf_map_lookup_elem(&cluster_exempt, &k))
			sides &= ~DT_EXEMPT_TO_PORT;
	}
	return sides;
}

/* 1 if this host's stack has a socket for the segment's four-tuple that is not a
 * listener (a listener is what any segment to a listening port finds). */
static __always_inline int dt_has_connection(void *ctx, const struct dt_tcp_seg *s)
{
	struct bpf_sock_tuple t = {};
	struct bpf_sock *sk;
	__u32 state;

	if (s->is_v6) {
		__builtin_memcpy(t.ipv6.saddr, s->src, 16);
		__builtin_memcpy(t.ipv6.daddr, s->dst, 16);
		t.ipv6.sport = bpf_htons(s->sport);
		t.ipv6.dport = bpf_htons(s->dport);
		sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
	} else {
		__builtin_memcpy(&t.ipv4.saddr, s->src + 12, 4);
		__builtin_memcpy(&t.ipv4.daddr, s->dst + 12, 4);
		t.ipv4.sport = bpf_htons(s->sport);
		t.ipv4.dport = bpf_htons(s->dport);
		sk = bpf_skc_lookup_tcp(ctx, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	}
	if (!sk)
		return 0;
	state = sk->state;
	bpf_sk_release(sk);
	return state != BPF_TCP_LISTEN;
}

/* What the segment `s` is to the exemption (DT_EX_*), given the `sides` whose port bit
 * it has (dt_cluster_port_sides, non-zero). */
static __always_inline int dt_cluster_segment(void *ctx, const struct dt_tcp_seg *s, __u32 sides)
{
	sides = dt_cluster_entries(s, sides);
	if (!sides)
		return DT_EX_NONE;
	/* A connection's first SYN: there is no socket for it to find yet. */
	if ((s->flags & (DT_TCP_SYN | DT_TCP_ACK | DT_TCP_RST | DT_TCP_FIN)) == DT_TCP_SYN)
		return (sides & DT_EXEMPT_TO_PORT) ? DT_EX_SYN : DT_EX_NONE;
	return dt_has_connection(ctx, s) ? DT_EX_CONN : DT_EX_NONE;
}

#endif /* DTHROTTLE_EXEMPT_BPF_H */
