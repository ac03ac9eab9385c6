// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bench.bpf.c - programs for `make bench` only (never attached to an interface).
 *
 * dt_bench_rotate: BPF_PROG_TEST_RUN repeats one frame; to measure many distinct
 *   sources, this wrapper rewrites the frame's IPv4 source to the next of
 *   `nsources` addresses on every repetition, then tail-calls slot 0 of `jump`:
 *   either the production dt_xdp program (loaded from dthrottle.bpf.o, unchanged)
 *   or dt_bench_baseline below. Both sides pay the same wrapper cost.
 * dt_bench_baseline: the cheapest per-source accounting there is, for scale: the
 *   same parser, one LRU-hash lookup keyed on the source, one atomic increment.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "parse.h"

__u32 nsources = 1;  /* set by the bench before each run */
__u32 next_source;
__u32 base_addr;     /* network order */

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

SEC("xdp")
int dt_bench_rotate(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 *saddr = data + sizeof(struct ethhdr) + 12;
	__u32 i = next_source++;

	if ((void *)(saddr + 1) > data_end)
		return XDP_ABORTED;
	if (nsources > 1)
		*saddr = bpf_htonl(bpf_ntohl(base_addr) + i % nsources);
	bpf_tail_call(ctx, &jump, 0);
	return XDP_ABORTED;
}

SEC("xdp")
int dt_bench_baseline(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct dt_key key;
	__u64 one = 1, *cnt;

	if (dt_parse_source(data, data_end, &key) != DT_PARSE_OK)
		return XDP_PASS;
	cnt = bpf_map_lookup_elem(&baseline_counts, &key);
	if (cnt) {
		__sync_fetch_and_add(cnt, 1);
		return XDP_PASS;
	}
	bpf_map_update_elem(&baseline_counts, &key, &one, BPF_NOEXIST);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
