/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * verified_ring.h - the sources SYN cookies verified, as the packet path tells the agent
 * (bpf/syncookie.bpf.h, docs/rules.md "SYN cookies").
 *
 * Each source the packet path verifies (a valid cookie in a handshake's ACK) is written to
 * the ring `verified_ring` as well as the verified map: a struct dt_verified_rec, with the
 * expiry written there. The agent drains the ring once a period and tells its peers
 * (agent/cluster/cluster_verified.cpp). Sources the agent writes into the verified map (a
 * peer's, the query socket's VERIFY) never go through the ring: they are not told on.
 */
#ifndef DTHROTTLE_VERIFIED_RING_H
#define DTHROTTLE_VERIFIED_RING_H

#include "common.h"

#define DT_VERIFIED_RING_BYTES (64u << 10) /* 2,048 records: 10,000 a second at 200 ms */

struct dt_verified_rec {
	struct dt_key key; /* as in the verified map: rule DT_VERIFIED_V4 or DT_VERIFIED_V6 */
	__u32 pad;
	__u64 expires_ns; /* CLOCK_MONOTONIC */
};

DT_LAYOUT_ASSERT(dt_verified_rec, 32);

#endif /* DTHROTTLE_VERIFIED_RING_H */
