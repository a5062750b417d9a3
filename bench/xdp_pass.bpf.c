// SPDX-License-Identifier: GPL-2.0-only
/* The cheapest possible XDP program: the benchmark's floor for kernel-side cost. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
