/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * capture.bpf.h - samples of decided packets for `agent capture` (docs/capture.md,
 * dthrottle/capture.h): after the decision, at XDP and at tc.
 *
 * With no capture running the packet path pays one flag test: capture_ctl's lease, an
 * array element nobody writes meanwhile (so it stays in every CPU's cache). With one
 * running, in this order, each step cheaper than the next and all before the rate bound,
 * so a rare source or rule is not starved by a flood that the bound samples out:
 *   1. the verdict (dropped, would-drop, passed) against the capture's mask, and --rule;
 *   2. the clock: past the lease's expiry, sampling stops (the lease is cleared);
 *   3. --source: the frame is parsed again for its source (only with a source filter);
 *   4. the rate bound: at most per_cpu_rate records in each one-second window of this
 *      CPU (struct dt_capture_cpu, per CPU: a flood's drop path writes nothing shared);
 *   5. a record in the ring: the header, then snaplen bytes of the frame.
 */
#ifndef DTHROTTLE_CAPTURE_BPF_H
#define DTHROTTLE_CAPTURE_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "dthrottle/common.h"
#include "dthrottle/capture.h"
#include "parse.h"
#include "maps.h"

/* The running capture's control (struct dt_capture_ctl): written by `agent capture`. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_capture_ctl);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} capture_ctl SEC(".maps");

/* Each CPU's rate window and counters (struct dt_capture_cpu). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dt_capture_cpu);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} capture_cpu SEC(".maps");

/* The samples (struct dt_capture_rec), read by `agent capture`. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DT_CAPTURE_RING_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} capture_ring SEC(".maps");

/* What a decision was, for the capture: one DT_CAP_* verdict. A ban or the deny list
 * passes a packet only in dry run (--dry-run), so such a pass is a would-drop. */
static __always_inline __u8 dt_capture_verdict(int verdict, __u32 rule, int would_drop)
{
	if (verdict == XDP_DROP)
		return DT_CAP_DROPPED;
	if (would_drop || rule == DT_CAP_RULE_BAN || rule == DT_CAP_RULE_DENY_LIST)
		return DT_CAP_WOULD_DROP;
	return DT_CAP_PASSED;
}

/* Whether the frame's source is in the capture's --source prefix (parsed again: only
 * a capture with a source filter pays for it). */
static __always_inline int dt_capture_source_in(const struct dt_capture_ctl *ctl, void *data, void *data_end)
{
	struct dt_key key DT_KEY_ALIGNED;
	struct dt_l3 l3;
	__u64 a[2], m[2], s[2];

	if (dt_parse_packet(data, data_end, &key, &l3) != DT_PARSE_OK)
		return 0;
	__builtin_memcpy(a, key.addr, 16);
	__builtin_memcpy(m, ctl->src_mask, 16);
	__builtin_memcpy(s, ctl->src, 16);
	return (a[0] & m[0]) == s[0] && (a[1] & m[1]) == s[1];
}

/* 1 when this CPU may take one more record in its current one-second window (taken),
 * 0 when the window is full (counted: sampled out). */
static __always_inline int dt_capture_take(struct dt_capture_cpu *c, __u32 rate, __u64 now)
{
	if (now - c->window_ns >= DT_NSEC_PER_SEC) {
		c->window_ns = now;
		c->taken = 0;
	}
	if (c->taken >= rate) {
		c->sampled_out++;
		return 0;
	}
	c->taken++;
	return 1;
}

/* The frame's first `len` bytes into `dst`, from the hook's context. */
static __always_inline long dt_capture_copy(void *ctx, int hook, void *dst, __u32 len)
{
	if (hook == DT_CAP_HOOK_XDP)
		return bpf_xdp_load_bytes(ctx, 0, dst, len);
	return bpf_skb_load_bytes(ctx, 0, dst, len);
}

/* The interface the frame arrived on. */
static __always_inline __u32 dt_capture_ifindex(void *ctx, int hook)
{
	if (hook == DT_CAP_HOOK_XDP)
		return ((struct xdp_md *)ctx)->ingress_ifindex;
	return ((struct __sk_buff *)ctx)->ingress_ifindex;
}

/* `len` (1 .. DT_CAPTURE_MAX_SNAPLEN) in a form older verifiers follow: Linux 6.1's
 * keeps no lower bound from a "!= 0" test, and refuses a copy of "0 to 511" bytes. The
 * barrier keeps the compiler from dropping a mask it knows changes nothing. */
static __always_inline __u32 dt_capture_bounded(__u32 len)
{
	len -= 1;
	barrier_var(len);
	return (len & (DT_CAPTURE_MAX_SNAPLEN - 1)) + 1;
}

/* One record of the frame into the ring (counted: captured, or lost to a full ring). */
static __always_inline void dt_capture_emit(struct dt_capture_cpu *c, const struct dt_capture_ctl *ctl, void *ctx,
					    int hook, __u32 frame_len, __u32 rule, __u8 verdict, __u64 now)
{
	struct dt_capture_rec *rec;
	__u32 len = ctl->snaplen;

	rec = bpf_ringbuf_reserve(&capture_ring, sizeof(*rec), 0);
	if (!rec) {
		c->ring_full++;
		return;
	}
	if (len > frame_len)
		len = frame_len;
	if (len > DT_CAPTURE_MAX_SNAPLEN)
		len = DT_CAPTURE_MAX_SNAPLEN;
	if (len && dt_capture_copy(ctx, hook, rec->data, dt_capture_bounded(len)) != 0)
		len = 0;
	rec->ts_ns = now;
	rec->ifindex = dt_capture_ifindex(ctx, hook);
	rec->len = frame_len;
	rec->cap_len = len;
	rec->rule = rule;
	rec->verdict = verdict;
	rec->hook = hook;
	rec->cpu = bpf_get_smp_processor_id();
	bpf_ringbuf_submit(rec, 0);
	c->captured++;
}

/* Steps 1-5 above, for a capture that is running (its lease seen: `lease`). */
static __always_inline void dt_capture_sample(struct dt_capture_ctl *ctl, __u32 lease, void *ctx, int hook,
					      void *data, void *data_end, __u32 frame_len, int verdict, __u32 rule,
					      int would_drop)
{
	__u8 kind = dt_capture_verdict(verdict, rule, would_drop);
	struct dt_capture_cpu *c;
	__u32 zero = 0;
	__u64 now;

	if (!(ctl->verdicts & kind))
		return;
	if ((ctl->filters & DT_CAP_FILTER_RULE) && ctl->rule != rule)
		return;
	now = bpf_ktime_get_ns();
	if (now >= DT_READ_ONCE(ctl->expires_ns)) {
		/* The capture stopped renewing: off, unless a newer capture took over. */
		__sync_val_compare_and_swap(&ctl->lease, lease, 0);
		return;
	}
	if ((ctl->filters & DT_CAP_FILTER_SOURCE) && !dt_capture_source_in(ctl, data, data_end))
		return;
	c = bpf_map_lookup_elem(&capture_cpu, &zero);
	if (!c || !dt_capture_take(c, ctl->per_cpu_rate, now))
		return;
	dt_capture_emit(c, ctl, ctx, hook, frame_len, rule, kind, now);
}

/* What the entry point decided, for the sampler (global functions take scalars only
 * behind a pointer). */
struct dt_capture_arg {
	__u32 frame_len;
	__s32 verdict;
	__u32 rule;
	__s32 would_drop;
	__u32 lease;
	__u32 pad;
};

/* The sampler for a running capture (steps 1-5 above), with the lease seen in a->lease. */
static __always_inline int dt_capture_hook(void *ctx, int hook, void *data, void *data_end,
					   const struct dt_capture_arg *a)
{
	struct dt_capture_ctl *ctl;
	__u32 zero = 0;

	ctl = bpf_map_lookup_elem(&capture_ctl, &zero);
	if (!ctl || !a)
		return 0;
	dt_capture_sample(ctl, a->lease, ctx, hook, data, data_end, a->frame_len, a->verdict, a->rule,
			  a->would_drop);
	return 0;
}

/* The sampler for each hook, as a global function: the verifier checks it once, not once
 * for every path of the decision that reaches it (inlined, dt_xdp with the rules'
 * conditions and key_by passed the verifier's 1,000,000-instruction budget). It reads the
 * frame again through its context. */
__noinline int dt_capture_xdp(struct xdp_md *ctx, const struct dt_capture_arg *a)
{
	return dt_capture_hook(ctx, DT_CAP_HOOK_XDP, (void *)(long)ctx->data, (void *)(long)ctx->data_end, a);
}

__noinline int dt_capture_tc(struct __sk_buff *ctx, const struct dt_capture_arg *a)
{
	return dt_capture_hook(ctx, DT_CAP_HOOK_TC, (void *)(long)ctx->data, (void *)(long)ctx->data_end, a);
}

/*
 * The hook the entry points call after the decision: `verdict` XDP_PASS or XDP_DROP;
 * in `a` (the entry point's, filled in by the decision) `rule` what decided it (a rule
 * or DT_CAP_RULE_*), `would_drop` a dry-run pass. No capture running: one flag test.
 */
static __always_inline void dt_capture(void *ctx, int hook, __u32 frame_len, int verdict,
				       struct dt_capture_arg *a)
{
	struct dt_capture_ctl *ctl;
	__u32 zero = 0;

	ctl = bpf_map_lookup_elem(&capture_ctl, &zero);
	if (!ctl)
		return;
	a->lease = DT_READ_ONCE(ctl->lease);
	if (!a->lease)
		return;
	a->frame_len = frame_len;
	a->verdict = verdict;
	if (hook == DT_CAP_HOOK_XDP)
		dt_capture_xdp(ctx, a);
	else
		dt_capture_tc(ctx, a);
}

#endif /* DTHROTTLE_CAPTURE_BPF_H */
