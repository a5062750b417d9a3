// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test helper for test_redirects.py: a tc program (direct action) that does
 * one thing to every frame, the way an eBPF CNI moves traffic between devices.
 * Compiled by the test with -DACTION=N and, for the redirects,
 * -DTARGET_IFINDEX=N:
 *   ACTION_REDIRECT          bpf_redirect(TARGET_IFINDEX, 0): out of the target
 *   ACTION_REDIRECT_PEER     bpf_redirect_peer(TARGET_IFINDEX, 0): into the
 *                            ingress of the target veth's peer
 *   ACTION_REDIRECT_INGRESS  bpf_redirect(TARGET_IFINDEX, BPF_F_INGRESS): into
 *                            the target's ingress
 *   ACTION_SHOT              TC_ACT_SHOT: drop it
 *   ACTION_SHOT_LARGE        drop every fourth frame longer than LARGE bytes
 *                            (default 60 000: a super-frame), pass the rest
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#define ACTION_REDIRECT 1
#define ACTION_REDIRECT_PEER 2
#define ACTION_REDIRECT_INGRESS 3
#define ACTION_SHOT 4
#define ACTION_SHOT_LARGE 5

#ifndef ACTION
#error "compile with -DACTION=N"
#endif
#if ACTION != ACTION_SHOT && ACTION != ACTION_SHOT_LARGE && !defined(TARGET_IFINDEX)
#error "compile with -DTARGET_IFINDEX=N"
#endif

#ifndef LARGE
#define LARGE 60000
#endif

__u32 large_seen = 0;

SEC("tc")
int tc_redirect(struct __sk_buff *skb)
{
#if ACTION == ACTION_REDIRECT
	return bpf_redirect(TARGET_IFINDEX, 0);
#elif ACTION == ACTION_REDIRECT_PEER
	return bpf_redirect_peer(TARGET_IFINDEX, 0);
#elif ACTION == ACTION_REDIRECT_INGRESS
	return bpf_redirect(TARGET_IFINDEX, BPF_F_INGRESS);
#elif ACTION == ACTION_SHOT
	return TC_ACT_SHOT;
#elif ACTION == ACTION_SHOT_LARGE
	if (skb->len <= LARGE)
		return TC_ACT_OK;
	return large_seen++ % 4 == 3 ? TC_ACT_SHOT : TC_ACT_OK; /* races only move which one */
#else
#error "unknown ACTION"
#endif
}

char LICENSE[] SEC("license") = "GPL";
