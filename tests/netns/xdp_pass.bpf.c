// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xdp_pass.bpf.c - a foreign XDP program for tests/netns/test_tc.sh: it owns the XDP hook
 * (as Katran, Cilium or a scrubber would) and passes every frame. Unrelated to dthrottle:
 * it has no maps and shares nothing with it. Built by the test (clang -target bpf) and
 * attached with `ip link set dev IF xdp obj xdp_pass.bpf.o sec xdp`.
 */
#include <linux/bpf.h>

#define SEC(name) __attribute__((section(name), used))

SEC("xdp")
int foreign_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
