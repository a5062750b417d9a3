// SPDX-License-Identifier: GPL-2.0-only
/*
 * Trace mode: fentry and fexit programs on an XDP program someone else
 * attached. They sample the frame as the traced program sees it on entry and
 * as it left it on exit (with its verdict) into the capture object's perf
 * event array and counters (userspace hands over their fds before load).
 * They only read: the traced program's traffic is never changed. With a
 * filter they are not attached themselves: a tracing program built at run
 * time (loader.cpp) runs the filter and tail-calls them for what it keeps.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sample.h"

/* Just the members read here; CO-RE relocates them against the running
 * kernel's BTF, so no vmlinux.h is needed. */
struct xdp_rxq_info {
	__u32 queue_index;
} __attribute__((preserve_access_index));

struct xdp_buff {
	struct xdp_rxq_info *rxq;
} __attribute__((preserve_access_index));

/* Set by userspace before load: which traced program this instance is on. */
const volatile __u16 program_index = 0;

static __always_inline void sample_trace(struct xdp_buff *xdp, __u32 key, __u8 hook, __u32 verdict)
{
	struct xdpcap_counters *c = count_packet(key);
	if (!c)
		return;
	/* Tracing programs get the helper variant that takes the xdp_buff. */
	__u64 frame_len = bpf_xdp_get_buff_len((struct xdp_md *)xdp);
	struct xdpcap_meta meta;
	/* One record: beyond it the frame is in fragments that only the XDP
	 * program's own load helper reaches, and XDP frames are at most the MTU. */
	fill_meta(&meta, c, xdp->rxq->queue_index, frame_len, first_record_length(sample_length(frame_len)),
		  XDPCAP_DIR_INGRESS, hook);
	meta.program = program_index;
	meta.verdict = verdict;
	__u64 flags = BPF_F_CURRENT_CPU | ((__u64)meta.cap_len << 32);
	account_output(c, bpf_xdp_output(xdp, &events, flags, &meta, sizeof(meta)));
}

/* The attach target (program and function) is set by userspace. */
SEC("fentry/xdp")
int xdpcap_entry(__u64 *ctx)
{
	sample_trace((struct xdp_buff *)ctx[0], XDPCAP_COUNTERS_TRACE(program_index, 0), XDPCAP_HOOK_FENTRY, 0);
	return 0;
}

SEC("fexit/xdp")
int xdpcap_exit(__u64 *ctx)
{
	/* Arguments first, then the traced function's return value. */
	sample_trace((struct xdp_buff *)ctx[0], XDPCAP_COUNTERS_TRACE(program_index, 1), XDPCAP_HOOK_FEXIT,
		     (__u32)ctx[1]);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
