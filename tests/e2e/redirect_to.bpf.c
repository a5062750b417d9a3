// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test helper for test_egress_vlan.py: a tc ingress program that sends every
 * frame it gets out of interface TARGET_IFINDEX. A VLAN-tagged frame arrives
 * with its tag moved into skb metadata by the receive path, so it leaves the
 * target the way a transmit-offloaded tag does. Compiled by the test with
 * -DTARGET_IFINDEX=N.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int redirect_to(struct __sk_buff *skb)
{
	return bpf_redirect(TARGET_IFINDEX, 0);
}

char LICENSE[] SEC("license") = "GPL";
