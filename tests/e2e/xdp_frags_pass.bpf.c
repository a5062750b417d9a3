// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test helper for test_trace.py: an XDP program that takes multi-buffer
 * frames (xdp.frags: the kernel may hand it frames longer than a page, the
 * rest in fragments) and passes every frame.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp.frags")
int xdp_frags_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
