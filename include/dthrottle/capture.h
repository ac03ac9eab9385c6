/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * capture.h - samples of decided packets (agent capture, docs/capture.md): what the
 * packet path (bpf/capture.bpf.h) and the agent (agent/capture/) share.
 *
 * The capture command writes struct dt_capture_ctl at key 0 of DT_MAP_CAPTURE_CTL (whole
 * values only). While `lease` is non-zero the packet path samples the packets whose
 * verdict is in `verdicts` and that pass the rule and source filters, at most
 * `per_cpu_rate` per second on each CPU (struct dt_capture_cpu, per CPU: a flood's drop
 * path writes nothing another CPU reads), into the ring DT_MAP_CAPTURE_RING (struct
 * dt_capture_rec). With `lease` zero the packet path pays one flag test.
 *
 * The lease: the capture renews `expires_ns` (CLOCK_MONOTONIC) every second; past it the
 * packet path samples nothing and clears `lease` (a compare-and-swap on the lease it saw,
 * so a newer capture's lease is never cleared), so a capture that dies (kill -9) leaves
 * sampling off within DT_CAPTURE_LEASE_NS.
 */
#ifndef DTHROTTLE_CAPTURE_H
#define DTHROTTLE_CAPTURE_H

#include <linux/types.h>

#include "abi/layout.h"

#define DT_MAP_CAPTURE_CTL  "capture_ctl"   /* struct dt_capture_ctl, one element */
#define DT_MAP_CAPTURE_CPU  "capture_cpu"   /* per CPU: struct dt_capture_cpu */
#define DT_MAP_CAPTURE_RING "capture_ring"  /* ring of struct dt_capture_rec */

/* Bytes of a packet a record can hold (--snaplen at most), and the ring's size. */
#define DT_CAPTURE_MAX_SNAPLEN 512u
#define DT_CAPTURE_RING_BYTES (2u << 20)
/* How long a lease lasts unless renewed (the capture renews it every second). */
#define DT_CAPTURE_LEASE_NS (3ull * 1000000000ull)
/* The default and the largest --per-cpu-rate. */
#define DT_CAPTURE_DEFAULT_RATE 100u
#define DT_CAPTURE_MAX_RATE 100000u

/* Verdicts (dt_capture_ctl.verdicts is a mask of them; dt_capture_rec.verdict one). */
#define DT_CAP_DROPPED    (1u << 0) /* dropped (XDP_DROP, TC_ACT_SHOT) */
#define DT_CAP_WOULD_DROP (1u << 1) /* dry run: passed, would have been dropped */
#define DT_CAP_PASSED     (1u << 2) /* passed */

/* dt_capture_ctl.filters */
#define DT_CAP_FILTER_RULE   (1u << 0) /* only packets decided by rule `rule` */
#define DT_CAP_FILTER_SOURCE (1u << 1) /* only sources in src/src_mask */

/*
 * What decided a packet, in dt_capture_rec.rule and dt_capture_ctl.rule: a rule
 * (0 .. DT_MAX_RULES-1), or one of these for packets decided before any rule.
 */
#define DT_CAP_RULE_NONE       0xffffu /* no decision: not IP, malformed, exempt, fail-open */
#define DT_CAP_RULE_BAN        0xfffeu /* a ban (agent ban) */
#define DT_CAP_RULE_DENY_LIST  0xfffdu /* the deny list */
#define DT_CAP_RULE_ALLOW_LIST 0xfffcu /* the allow list */

/* The hook a record was taken at (dt_capture_rec.hook). */
#define DT_CAP_HOOK_XDP 1u
#define DT_CAP_HOOK_TC  2u

struct dt_capture_ctl {
	__u32 lease;         /* 0: off; else the running capture's lease (never 0) */
	__u32 per_cpu_rate;  /* at most this many records per second on each CPU */
	__u64 expires_ns;    /* CLOCK_MONOTONIC: no sampling from this time on */
	__u8 verdicts;       /* DT_CAP_* mask */
	__u8 filters;        /* DT_CAP_FILTER_* */
	__u16 rule;          /* with DT_CAP_FILTER_RULE: the rule (or DT_CAP_RULE_*) */
	__u16 snaplen;       /* bytes of each packet to keep, 1 .. DT_CAPTURE_MAX_SNAPLEN */
	__u16 pad;
	__u8 src[16];        /* with DT_CAP_FILTER_SOURCE: the prefix (IPv4-mapped, as dt_key) */
	__u8 src_mask[16];   /* its mask: a source matches when (addr & src_mask) == src */
};

/*
 * Each CPU's sampler (per-CPU array DT_MAP_CAPTURE_CPU, one element): a fixed one-second
 * window (`window_ns` its start, `taken` its records), and counters for `agent stats`.
 */
struct dt_capture_cpu {
	__u64 window_ns;
	__u32 taken;
	__u32 pad;
	__u64 captured;     /* records written to the ring */
	__u64 sampled_out;  /* packets the filters kept but the rate bound left out */
	__u64 ring_full;    /* records lost: the ring was full (the capture reads too slowly) */
};

/* One record of the ring: the header, then cap_len bytes of the frame (of `len`). */
struct dt_capture_rec {
	__u64 ts_ns;    /* CLOCK_MONOTONIC, when it was decided */
	__u32 ifindex;  /* the interface it arrived on */
	__u32 len;      /* the frame's length */
	__u16 cap_len;  /* bytes of it in data[] */
	__u16 rule;     /* what decided it: a rule, or DT_CAP_RULE_* */
	__u8 verdict;   /* one DT_CAP_* verdict */
	__u8 hook;      /* DT_CAP_HOOK_* */
	__u16 cpu;
	__u8 data[DT_CAPTURE_MAX_SNAPLEN];
};

DT_LAYOUT_ASSERT(dt_capture_ctl, 56);
DT_LAYOUT_ASSERT(dt_capture_cpu, 40);
DT_LAYOUT_ASSERT(dt_capture_rec, 24 + DT_CAPTURE_MAX_SNAPLEN);

#endif /* DTHROTTLE_CAPTURE_H */
