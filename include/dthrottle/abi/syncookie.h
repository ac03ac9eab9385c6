/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/syncookie.h - SYN cookies (syn_cookies = true, bpf/syncookie.bpf.h, docs/rules.md).
 *
 * A source whose handshake ACK carried a valid cookie is verified: an element of the LRU
 * hash map DT_MAP_VERIFIED (sized by --max-verified) until `expires_ns` (CLOCK_MONOTONIC).
 * Its key is a struct dt_key: the source address in dt_key's form, `rule` the family
 * (DT_VERIFIED_V4 or DT_VERIFIED_V6), so an IPv6 ::ffff:a.b.c.d is not the IPv4 a.b.c.d.
 * One element of DT_MAP_SYNCOOKIE holds the TTL (written by the agent at start) and
 * when a cookie was last sent (the packet path, at most once per DT_COOKIE_SENT_SLACK_NS):
 * ACKs are checked for cookies only within DT_COOKIE_ACK_WINDOW_NS of it.
 */
#ifndef DTHROTTLE_ABI_SYNCOOKIE_H
#define DTHROTTLE_ABI_SYNCOOKIE_H

#include <linux/types.h>
#include "layout.h"

#define DT_VERIFIED_V4 4u
#define DT_VERIFIED_V6 6u
#define DT_DEFAULT_VERIFIED_TTL_NS (600ull * 1000000000ull)
#define DT_COOKIE_SENT_SLACK_NS 1000000ull            /* 1 ms */
#define DT_COOKIE_ACK_WINDOW_NS (5ull * 1000000000ull) /* 5 s */

struct dt_verified {
	__u64 expires_ns; /* CLOCK_MONOTONIC; verified while now < expires_ns */
	__u64 hits;       /* packets that skipped a prefix budget thanks to it */
};

struct dt_syncookie {
	__u64 verified_ttl_ns; /* how long a verified source stays so (the agent's --verified-ttl) */
	__u64 last_sent_ns;    /* when a cookie was last sent (0: never) */
};

DT_LAYOUT_ASSERT(dt_verified, 16);
DT_LAYOUT_ASSERT(dt_syncookie, 16);

#endif /* DTHROTTLE_ABI_SYNCOOKIE_H */
