// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test helper: an XDP program with a visible effect for the tests of a busy
 * interface (-D, the refusal, and tracing an attached program): UDP to port
 * 7001 is dropped, UDP to port 7002 has the first payload byte set to 0xee,
 * everything else passes. Compiled by the tests with clang.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_verdicts(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	__u8 *payload = (void *)(udp + 1);

	if ((void *)(payload + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	if (udp->dest == bpf_htons(7001))
		return XDP_DROP;
	if (udp->dest == bpf_htons(7002))
		*payload = 0xee;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
