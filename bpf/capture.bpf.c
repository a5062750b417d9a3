// SPDX-License-Identifier: GPL-2.0-only
/*
 * Samples every received frame into the CPU's perf ring, behind an
 * xdpcap_meta header. Never changes the traffic: always XDP_PASS.
 */
#include <linux/bpf.h>
#include <linux/errno.h>
#include <bpf/bpf_helpers.h>

#include "xdpcap_abi.h"

/* Set by userspace before load. */
const volatile __u32 snaplen = XDPCAP_MAX_SAMPLE_SIZE;
const volatile __u32 capture_ifindex = 0;
/* With a filter, the translated filter program is attached in front of this
 * one: it counts every packet as seen and tail-calls us for those it keeps. */
const volatile __u8 filter_enabled = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

/* Slot 0: this program, for the filter program's tail call. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} capture_next SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPCAP_COUNTERS_ENTRIES);
	__type(key, __u32);
	__type(value, struct xdpcap_counters);
} counters SEC(".maps");

static __always_inline int sample(struct xdp_md *ctx, __u64 frame_len)
{
	__u32 key = XDPCAP_COUNTERS_INGRESS;
	struct xdpcap_counters *c = bpf_map_lookup_elem(&counters, &key);
	if (!c)
		return XDP_PASS;
	if (filter_enabled)
		c->matched++;
	else
		c->seen++;

	__u64 cap_len = frame_len < snaplen ? frame_len : snaplen;
	struct xdpcap_meta meta = {
		.tag = XDPCAP_META_TAG,
		.ifindex = capture_ifindex,
		.rx_queue = ctx->rx_queue_index,
		.orig_len = (__u32)frame_len,
		.cap_len = (__u32)cap_len,
		.drops_before = (__u32)c->pending_drops,
		.tstamp_ns = bpf_ktime_get_ns(),
		.direction = XDPCAP_DIR_INGRESS,
		.hook = XDPCAP_HOOK_XDP,
	};
	long err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU | (cap_len << 32),
					 &meta, sizeof(meta));
	if (err) {
		c->output_failed++;
		c->pending_drops++;
		if (err == -ENOSPC)
			c->ring_full++;
	} else {
		c->sampled++;
		c->pending_drops = 0;
	}
	return XDP_PASS;
}

/* Multi-buffer aware: sees and copies every fragment of jumbo frames. */
SEC("xdp.frags")
int xdpcap_frags(struct xdp_md *ctx)
{
	return sample(ctx, bpf_xdp_get_buff_len(ctx));
}

/* For kernels that cannot load frags programs: linear data only. */
SEC("xdp")
int xdpcap_linear(struct xdp_md *ctx)
{
	return sample(ctx, ctx->data_end - ctx->data);
}

char LICENSE[] SEC("license") = "GPL";
