// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * foreign.bpf.c - another product's programs for tests/netns/test_tc.sh, unrelated to
 * dthrottle (no maps, nothing shared). Built by the test (clang -target bpf).
 *
 * foreign_xdp owns the XDP hook (as Katran, Cilium or a scrubber would) and passes every
 * frame: `ip link set dev IF xdp obj foreign.bpf.o sec xdp`.
 * foreign_tc is a tc filter after dthrottle's (`tc filter add dev IF ingress pref 10 bpf
 * da obj foreign.bpf.o sec tc`): it counts the IPv4 packets it sees in foreign_seen[0]
 * (what dthrottle passed on to it) and passes them.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} foreign_seen SEC(".maps");

SEC("xdp")
int foreign_xdp(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

SEC("tc")
int foreign_tc(struct __sk_buff *skb)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&foreign_seen, &zero);

	if (n && skb->protocol == bpf_htons(ETH_P_IP))
		__sync_fetch_and_add(n, 1);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
