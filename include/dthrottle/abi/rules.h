/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/rules.h - the rules trie's candidates and conditions (struct dt_rule_set,
 * dt_rule_match, dt_rule_cond) and the per-rule names and counters.
 */
#ifndef DTHROTTLE_ABI_RULES_H
#define DTHROTTLE_ABI_RULES_H

#include <linux/types.h>
#include "layout.h"
#include "keys.h"

/* Prefixes in one bank of the rules LPM trie, and candidate rules per prefix. */
#define DT_MAX_PREFIXES 4096u
#define DT_MAX_CANDIDATES 8

/*
 * One candidate rule of a prefix, with the conditions it adds (all must hold). A
 * condition that cannot be known for a packet (a non-first fragment has no ports, a
 * cut header no flags) does not hold. The cheap ones are here; the destination prefix
 * and the length are in the rule's struct dt_rule_cond, read only by a candidate
 * whose flags ask for them.
 */
#define DT_MATCH_TCP_FLAGS (1u << 0) /* (TCP flags & tcp_mask) == tcp_value; syn = true is SYN,!ACK */
#define DT_MATCH_PORTS     (1u << 1) /* destination port in [dport_lo, dport_hi] */
#define DT_MATCH_SPORT     (1u << 2) /* source port in [sport_lo, sport_hi] */
#define DT_MATCH_ICMP_TYPE (1u << 3) /* ICMP or ICMPv6 type == icmp_type */
#define DT_MATCH_ICMP_CODE (1u << 4) /* ICMP or ICMPv6 code == icmp_code */
#define DT_MATCH_DST       (1u << 5) /* destination in the rule's dt_rule_cond prefix */
#define DT_MATCH_LEN       (1u << 6) /* frame length in the rule's dt_rule_cond range */
#define DT_MATCH_COND      (DT_MATCH_DST | DT_MATCH_LEN) /* read the rule's dt_rule_cond */
/* TCP flag bits (byte 13 of the TCP header), for tcp_mask and tcp_value. */
#define DT_TCP_FIN 0x01
#define DT_TCP_SYN 0x02
#define DT_TCP_RST 0x04
#define DT_TCP_PSH 0x08
#define DT_TCP_ACK 0x10
#define DT_TCP_URG 0x20
#define DT_TCP_ECE 0x40
#define DT_TCP_CWR 0x80
struct dt_rule_match {
	__u16 rule;
	__u8 proto;  /* 0: any; else the L4 protocol number */
	__u8 flags;  /* DT_MATCH_* */
	__u16 dport_lo;
	__u16 dport_hi;
	__u16 sport_lo;
	__u16 sport_hi;
	__u8 tcp_mask;   /* DT_MATCH_TCP_FLAGS */
	__u8 tcp_value;
	__u8 icmp_type;  /* DT_MATCH_ICMP_TYPE */
	__u8 icmp_code;  /* DT_MATCH_ICMP_CODE */
};

/* Value of the rules LPM trie: the first candidate whose conditions hold decides. */
struct dt_rule_set {
	__u32 count;
	__u32 needs;  /* the OR of the candidates' flags: what the prefix's rules look at
	               * (for bpftool and agent explain; the packet path reads each
	               * candidate's own flags) */
	struct dt_rule_match m[DT_MAX_CANDIDATES];
};

/*
 * A rule's conditions that do not fit a candidate (DT_MAP_RULE_COND, slot rule * 2 + bank,
 * banked like `policy`): the destination prefix as an address and a mask over the
 * 16-byte form (IPv4-mapped for IPv4, as dt_key), compared word by word, and the
 * frame length range: the frame as XDP sees it, Ethernet header and VLAN tags
 * included, which is what a byte budget charges (at tc: skb->len, GRO-merged).
 * len_hi 0xffffffff: no upper bound.
 */
struct dt_rule_cond {
	__u8 dst[16];       /* masked */
	__u8 dst_mask[16];
	__u32 len_lo;
	__u32 len_hi;
};

/* A rule's name (DT_MAP_RULE_NAMES, indexed by rule), for bpftool and agent stats. */
struct dt_rule_name {
	char name[48];
};

/* Per-rule counters (per-CPU array indexed by rule). */
struct dt_rule_stats {
	__u64 passed;
	__u64 dropped;
};

/* Per-rule bytes of byte rules (DT_POL_BYTES): frame bytes passed and dropped by their
 * buckets (per-CPU array indexed by rule; a map of its own so older pins still fit). */
struct dt_rule_bytes {
	__u64 passed;
	__u64 dropped;
};

DT_LAYOUT_ASSERT(dt_rule_match, 16);
DT_LAYOUT_ASSERT(dt_rule_set, 8 + 16 * DT_MAX_CANDIDATES);
DT_LAYOUT_ASSERT(dt_rule_cond, 40);
DT_LAYOUT_ASSERT(dt_rule_bytes, 16);

#endif /* DTHROTTLE_ABI_RULES_H */
