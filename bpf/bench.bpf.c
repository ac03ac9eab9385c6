// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bench.bpf.c - programs for `make bench` only (never attached to an interface).
 *
 * dt_bench_rotate: BPF_PROG_TEST_RUN repeats one frame; to measure many distinct
 *   sources, this wrapper rewrites the frame's source to the next of `nsources`
 *   addresses on every repetition (an IPv4 frame's whole source address, an IPv6
 *   frame's last 32 bits: 198.18.0.0/15 holds only 131,072 addresses, 2001:2::/48
 *   holds millions), then tail-calls slot 0 of `jump`: the production dt_xdp
 *   program (loaded from dthrottle.bpf.o, unchanged), dt_bench_baseline or
 *   dt_bench_empty below. Every target pays the same wrapper cost.
 * dt_bench_baseline: the cheapest per-source accounting there is, for scale: the
 *   same parser, one LRU-hash lookup keyed on the source, one atomic increment.
 * dt_bench_clock: the floor of an exact bucket, for the full-bucket rows: the same
 *   lookup, one read of the precise clock (bpf_ktime_get_ns) and one atomic, a
 *   compare-and-swap of the source's time to max(it, now) + 1, which the clock's
 *   value decides (an admission into a full bucket needs no less).
 * dt_bench_counted: the floor of a counted bucket in debt, for the in-debt rows of the
 *   ablation: the same lookup, then what an admission into a bucket in debt cannot do
 *   without (its new time is the old plus an interval, whatever the clock says): a
 *   compare-and-swap of the source's time and an atomic add to its admitted count, two
 *   locked instructions on the source's line where the LRU baseline has one.
 * dt_bench_replay: a wrapper for targets that rewrite the frame (a SYN answered with a
 *   cookie leaves a SYN-ACK, which the test run's next repetition would be fed): it
 *   writes `replay_frame` back over the frame before every repetition, expires the
 *   verified source `replay_key` of `replay_verified` (the target's own map, shared by
 *   the bench), so every handshake ACK is checked again, then tail-calls slot 0 of
 *   `jump` as dt_bench_rotate does. Every target pays the same wrapper cost.
 * dt_bench_empty: XDP_PASS and nothing else, so the wrapper's own cost (rewrite +
 *   tail call + test-run loop) can be measured and subtracted from both sides.
 * dt_bench_readonly: what a drop costs at the least, for the drop-path rows: the
 *   same parser, one LRU-hash lookup of the source's bucket, one read of it, and
 *   the drop counted in a per-CPU array (no write to anything shared). Run directly,
 *   not through the wrapper; its first packet creates the bucket, every later one is
 *   XDP_DROP.
 * dt_bench_counted_drop: what a drop costs at the least that decides without reading a
 *   clock and counts the source's drop without a write to anything shared: the read-only
 *   program's lookup and read, a time bound from jiffies and this CPU's clock anchor (a
 *   per-CPU array, as dt_xdp's), and the drop held in this CPU's slot of the source (the
 *   slot dt_drop_slot picks, a compare of its key, the adds) beside the read-only
 *   program's per-CPU count. Run directly, as the read-only program.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "dthrottle/bucket.h"
#include "parse.h"

__u32 nsources = 1;  /* set by the bench before each run */
__u32 next_source;
__u32 base_addr;     /* network order: IPv4 source, or the IPv6 source's last word */
__u32 ipv6;          /* 0: the frame is IPv4, 1: IPv6 */

#define DT_BENCH_V4_SRC_OFF (sizeof(struct ethhdr) + 12)
#define DT_BENCH_V6_SRC_LOW_OFF (sizeof(struct ethhdr) + 8 + 12)

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} jump SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DT_DEFAULT_MAX_SOURCES);
	__type(key, struct dt_key);
	__type(value, __u64);
} baseline_counts SEC(".maps");

/* dt_bench_clock's: each source's last time (as a bucket's TAT). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DT_DEFAULT_MAX_SOURCES);
	__type(key, struct dt_key);
	__type(value, __u64);
} clock_tats SEC(".maps");

/* dt_bench_counted's: each source's time and admitted count (a bucket's TAT and passed). */
struct dt_bench_counted_value {
	__u64 tat;
	__u64 passed;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DT_DEFAULT_MAX_SOURCES);
	__type(key, struct dt_key);
	__type(value, struct dt_bench_counted_value);
} counted_buckets SEC(".maps");

/* The source address of the frame in `ctx` as a bucket key: DT_PARSE_OK, or why not. */
static __always_inline int dt_bench_source(struct xdp_md *ctx, struct dt_key *key)
{
	return dt_parse_source((void *)(long)ctx->data, (void *)(long)ctx->data_end, key);
}

SEC("xdp")
int dt_bench_rotate(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 *src_word = data + (ipv6 ? DT_BENCH_V6_SRC_LOW_OFF : DT_BENCH_V4_SRC_OFF);
	__u32 i = next_source++;

	if ((void *)(src_word + 1) > data_end)
		return XDP_ABORTED;
	if (nsources > 1)
		*src_word = bpf_htonl(bpf_ntohl(base_addr) + i % nsources);
	bpf_tail_call(ctx, &jump, 0);
	return XDP_ABORTED;
}

/* dt_bench_replay's frame (`replay_len` bytes), and the verified source it expires. */
__u8 replay_frame[128];
__u32 replay_len;
__u8 replay_key[sizeof(struct dt_key)];  /* a struct dt_key */

/* The target's verified sources (the bench gives it the map of dthrottle's object). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DT_DEFAULT_MAX_VERIFIED);
	__type(key, struct dt_key);
	__type(value, struct dt_verified);
} replay_verified SEC(".maps");

SEC("xdp")
int dt_bench_replay(struct xdp_md *ctx)
{
	long have = (long)bpf_xdp_get_buff_len(ctx);
	__u32 len = replay_len;
	struct dt_verified *v;

	if (len < sizeof(struct ethhdr) || len > sizeof(replay_frame))
		return XDP_ABORTED;
	/* Always called (by 0 mostly), so every target pays the same. */
	if (bpf_xdp_adjust_tail(ctx, (int)len - (int)have))
		return XDP_ABORTED;
	if (bpf_xdp_store_bytes(ctx, 0, replay_frame, len))
		return XDP_ABORTED;
	v = bpf_map_lookup_elem(&replay_verified, &replay_key);
	if (v)
		v->expires_ns = 0;
	bpf_tail_call(ctx, &jump, 0);
	return XDP_ABORTED;
}

SEC("xdp")
int dt_bench_baseline(struct xdp_md *ctx)
{
	struct dt_key key DT_KEY_ALIGNED;
	__u64 one = 1, *cnt;

	if (dt_bench_source(ctx, &key) != DT_PARSE_OK)
		return XDP_PASS;
	cnt = bpf_map_lookup_elem(&baseline_counts, &key);
	if (cnt) {
		__sync_fetch_and_add(cnt, 1);
		return XDP_PASS;
	}
	bpf_map_update_elem(&baseline_counts, &key, &one, BPF_NOEXIST);
	return XDP_PASS;
}

SEC("xdp")
int dt_bench_clock(struct xdp_md *ctx)
{
	struct dt_key key DT_KEY_ALIGNED;
	__u64 now, old, *tat;

	if (dt_bench_source(ctx, &key) != DT_PARSE_OK)
		return XDP_PASS;
	tat = bpf_map_lookup_elem(&clock_tats, &key);
	if (!tat) {
		now = 0;
		bpf_map_update_elem(&clock_tats, &key, &now, BPF_NOEXIST);
		return XDP_PASS;
	}
	now = bpf_ktime_get_ns();
	old = *(volatile __u64 *)tat;
	__sync_val_compare_and_swap(tat, old, (old > now ? old : now) + 1);
	return XDP_PASS;
}

SEC("xdp")
int dt_bench_counted(struct xdp_md *ctx)
{
	struct dt_bench_counted_value fresh = {}, *v;
	struct dt_key key DT_KEY_ALIGNED;
	__u64 old;

	if (dt_bench_source(ctx, &key) != DT_PARSE_OK)
		return XDP_PASS;
	v = bpf_map_lookup_elem(&counted_buckets, &key);
	if (!v) {
		bpf_map_update_elem(&counted_buckets, &key, &fresh, BPF_NOEXIST);
		return XDP_PASS;
	}
	old = *(volatile __u64 *)&v->tat;
	if (__sync_val_compare_and_swap(&v->tat, old, old + 1000) == old)
		__sync_fetch_and_add(&v->passed, 1);
	return XDP_PASS;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct dt_key);
	__type(value, struct dt_bucket);
} readonly_buckets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} readonly_drops SEC(".maps");

/* The bucket of the frame's source in readonly_buckets (into `key`): NULL for a frame
 * without one, which creates it (empty: every later frame of the source is refused). */
static __always_inline struct dt_bucket *dt_bench_readonly_bucket(struct xdp_md *ctx, struct dt_key *key)
{
	struct dt_bucket *b, fresh = { .tat_ns = ~0ull };

	if (dt_bench_source(ctx, key) != DT_PARSE_OK)
		return NULL;
	b = bpf_map_lookup_elem(&readonly_buckets, key);
	if (!b)
		bpf_map_update_elem(&readonly_buckets, key, &fresh, BPF_NOEXIST);
	return b;
}

/* A drop counted in this CPU's count (no write to anything shared). */
static __always_inline int dt_bench_dropped(void)
{
	__u32 zero = 0;
	__u64 *cnt = bpf_map_lookup_elem(&readonly_drops, &zero);

	if (cnt)
		*cnt += 1;
	return XDP_DROP;
}

SEC("xdp")
int dt_bench_readonly(struct xdp_md *ctx)
{
	struct dt_key key DT_KEY_ALIGNED;
	struct dt_bucket *b = dt_bench_readonly_bucket(ctx, &key);

	if (!b || *(volatile __u64 *)&b->tat_ns == 0)
		return XDP_PASS;
	return dt_bench_dropped();
}

/* dt_bench_counted_drop's: this CPU's clock anchor and drop slots. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_clock_anchor);
} counted_anchor SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DT_DROP_SLOTS);
	__type(key, __u32);
	__type(value, struct dt_drop_pending);
} counted_drops SEC(".maps");

/* The time bound of dt_xdp's refusals (bpf/clock.h) at a 4 ms tick: never before now. */
static __always_inline __u64 dt_bench_bound(void)
{
	struct dt_clock_anchor *a;
	__u32 zero = 0;

	a = bpf_map_lookup_elem(&counted_anchor, &zero);
	if (!a)
		return 0;
	if (!a->ns) {
		a->jiffies = bpf_jiffies64();
		a->ns = bpf_ktime_get_ns();
	}
	return a->ns + (bpf_jiffies64() - a->jiffies) * 4000000 + 8000000;
}

/* The drop of `key` held in this CPU's slot (a slot another key holds: the bucket's count). */
static __always_inline void dt_bench_hold_drop(struct dt_bucket *b, const struct dt_key *key)
{
	struct dt_drop_pending *s;
	__u32 slot = dt_drop_slot(key);

	s = bpf_map_lookup_elem(&counted_drops, &slot);
	if (!s)
		return;
	if (s->packets && !dt_key_eq(&s->key, key)) {
		__sync_fetch_and_add(&b->dropped, 1);
		return;
	}
	if (!s->packets)
		s->key = *key;
	s->packets++;
	s->dropped++;
}

SEC("xdp")
int dt_bench_counted_drop(struct xdp_md *ctx)
{
	struct dt_key key DT_KEY_ALIGNED;
	struct dt_bucket *b = dt_bench_readonly_bucket(ctx, &key);

	if (!b || *(volatile __u64 *)&b->tat_ns <= dt_bench_bound())
		return XDP_PASS;
	dt_bench_hold_drop(b, &key);
	return dt_bench_dropped();
}

SEC("xdp")
int dt_bench_empty(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
