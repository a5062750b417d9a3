// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floor for a sampling capture's kernel-side cost: every frame and a
 * 16-byte header into the CPU's perf ring, nothing else (no filter, no
 * counters, no metadata beyond length and time).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

struct header {
	__u32 len;
	__u32 queue;
	__u64 tstamp_ns;
};

SEC("xdp")
int min_sampler(struct xdp_md *ctx)
{
	const __u64 len = ctx->data_end - ctx->data;
	struct header hdr = {
		.len = (__u32)len,
		.queue = ctx->rx_queue_index,
		.tstamp_ns = bpf_ktime_get_ns(),
	};
	const __u64 sample = len < 65024 ? len : 65024;

	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU | (sample << 32), &hdr, sizeof(hdr));
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
