/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/keys.h - the keys by address: a bucket's (struct dt_key) and an LPM trie's
 * (struct dt_lpm_key: the rules tries, the IPv6 bans).
 */
#ifndef DTHROTTLE_ABI_KEYS_H
#define DTHROTTLE_ABI_KEYS_H

#include <linux/types.h>
#include "layout.h"

/*
 * Bucket key: the source address as 16 bytes. IPv6 sources are stored as they are;
 * IPv4 sources as IPv4-mapped IPv6 (::ffff:a.b.c.d), so one map holds both families
 * and `bpftool map dump` shows the familiar mapped form.
 */
struct dt_key {
	__u8 addr[16];  /* masked to the rule's key prefix (e.g. an IPv6 /64) */
	__u32 rule;     /* the rule this bucket belongs to */
};

/* Key of the rules LPM trie: prefixlen bits of the 16-byte (IPv4-mapped) address. */
struct dt_lpm_key {
	__u32 prefixlen;
	__u8 addr[16];
};

DT_LAYOUT_ASSERT(dt_key, 20);
DT_LAYOUT_ASSERT(dt_lpm_key, 20);

#endif /* DTHROTTLE_ABI_KEYS_H */
