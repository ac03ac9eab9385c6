/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * abi/cluster.h - cluster mode's maps: the cluster's own connections (cluster_exempt,
 * cluster_ports), the active-source announcements, the debit and collect batches.
 */
#ifndef DTHROTTLE_ABI_CLUSTER_H
#define DTHROTTLE_ABI_CLUSTER_H

#include <linux/types.h>
#include "layout.h"
#include "keys.h"

/* One debit batch: how many (source, hits) pairs one BPF_PROG_RUN applies. */
#define DT_DEBIT_BATCH 4096u
/* One collect batch: how many sources one BPF_PROG_RUN of dt_collect reads. */
#define DT_COLLECT_BATCH 4096u
/* Ring buffer of sources that became active in a period (bytes, power of 2). */
#define DT_ACTIVE_RING_BYTES (16u << 20)
/* A record wakes the agent only once the ring is more than 1/2^shift full; the
 * agent drains it at every period's end anyway (see bpf/announce.h). */
#define DT_ACTIVE_WAKE_SHIFT 1
/* Announcements gather per CPU and go to the ring this many at a time (a power of 2). */
#define DT_STAGE_KEYS 32u
/* Entries of the cluster_exempt map: (address, port, side) of the cluster's own traffic. */
#define DT_MAX_EXEMPT 4096u

/*
 * Key of DT_MAP_CLUSTER_EXEMPT: the cluster's own TCP connections, passed without a
 * bucket while DT_CFG_EXEMPT is set. Written by the agent only (Cluster::refresh_exempt:
 * whole elements, value 1), for every address a peer or hub resolves to: a peer's report
 * port (DT_EXEMPT_FROM_PORT: its PUB answers our SUB), our --listen port
 * (DT_EXEMPT_TO_PORT: the peers' SUB connections to us), a hub's frontend and backend
 * ports (FROM). The packet path looks a TCP segment (first fragment, TCP right after the
 * IP header) up as (source, source port, FROM) and (source, destination port, TO), each
 * only if struct dt_cluster_ports has that port's bit. A match is not enough
 * (bpf/exempt.bpf.h): the segment passes only if the stack has a socket for its
 * four-tuple that is not a listener, or if it is a SYN to a TO port (after the lists and
 * bans). No other packet is looked up at all: UDP, ICMP, TCP between other ports.
 */
struct dt_exempt_key {
	__u8 addr[16];  /* IPv4-mapped or IPv6, as dt_key */
	__u16 port;     /* host byte order, so bpftool shows the port number */
	__u8 side;      /* DT_EXEMPT_FROM_PORT or DT_EXEMPT_TO_PORT */
	__u8 pad;       /* 0 */
};
#define DT_EXEMPT_FROM_PORT 1 /* `port` is the packet's TCP source port */
#define DT_EXEMPT_TO_PORT   2 /* `port` is the packet's TCP destination port */

/*
 * The ports of the cluster_exempt entries, as bitmaps (bit p of from_port: some entry
 * has side FROM and port p), one element at key 0 of DT_MAP_CLUSTER_PORTS, so that a TCP
 * flood to any other port (a SYN flood on a web server) costs two bit tests rather than
 * two hash lookups. Written by the agent only (whole value, after the entries: while it
 * is being written a packet may see an entry's bit a moment late, and be throttled).
 */
#define DT_PORT_WORDS (65536u / 64u)
struct dt_cluster_ports {
	__u64 from_port[DT_PORT_WORDS];
	__u64 to_port[DT_PORT_WORDS];
};

/* One entry of a debit batch (DT_MAP_DEBIT_BATCH). */
struct dt_debit {
	struct dt_key key; /* key.rule: the rule whose policy applies */
	__u32 hits;        /* hits to debit */
};

/*
 * Sources admitted for the first time in report period `epoch` (bpf/announce.h):
 * each CPU gathers them in its element of the per-CPU map `active_stage`, and writes
 * the whole element to the `active` ring as one record once it holds DT_STAGE_KEYS
 * (or, with keys of an older period, before its next announcement). The agent reads
 * the ring's records and, at a period's end, what the CPUs still hold (keys[0..count)).
 */
struct dt_active_stage {
	__u32 epoch;  /* the period of the keys held */
	__u32 count;  /* keys held: keys[0 .. count) */
	struct dt_key keys[DT_STAGE_KEYS];
};

/* One entry of a collect batch (DT_MAP_COLLECT_BATCH): in, the source; out, the
 * admitted packets not yet reported (0 if the bucket is gone). */
struct dt_collect {
	struct dt_key key;
	__u32 pad;
	__u64 hits;
};

/* Context passed to the debit program through BPF_PROG_RUN (ctx_in/ctx_out). */
struct dt_debit_ctx {
	__u32 count;    /* in: entries 0..count-1 of the batch are valid */
	__u32 applied;  /* out: entries applied */
	__u32 failed;   /* out: entries not applied (bucket could not be created,
	                   or the CAS kept losing); the agent retries them */
	__u32 pad;
};

DT_LAYOUT_ASSERT(dt_exempt_key, 20);
DT_LAYOUT_ASSERT(dt_cluster_ports, 16384);
DT_LAYOUT_ASSERT(dt_debit, 24);
DT_LAYOUT_ASSERT(dt_debit_ctx, 16);
DT_LAYOUT_ASSERT(dt_collect, 32);
DT_LAYOUT_ASSERT(dt_active_stage, 8 + 20 * DT_STAGE_KEYS);

#endif /* DTHROTTLE_ABI_CLUSTER_H */
