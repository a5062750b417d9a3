/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one sampling routine every capture hook uses: count the packet, put an
 * xdpcap_meta in front of up to `cap_len` packet bytes, and account for the
 * outcome of bpf_perf_event_output() per CPU and hook.
 */
#ifndef XDPCAP_SAMPLE_H
#define XDPCAP_SAMPLE_H

#include <linux/bpf.h>
#include <linux/errno.h>
#include <bpf/bpf_helpers.h>

#include "xdpcap_abi.h"

/* Set by userspace before load. */
const volatile __u32 snaplen = XDPCAP_MAX_SAMPLE_SIZE;
const volatile __u32 capture_ifindex = 0;
/* With a filter, the translated filter program runs in front of each hook:
 * it counts every packet as seen and tail-calls the hook's program for the
 * packets it keeps. */
const volatile __u8 filter_enabled = 0;
/* --sample: keep one packet in `sample_every` of those the filter keeps. */
const volatile __u32 sample_every = 1;

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPCAP_COUNTERS_ENTRIES);
	__type(key, __u32);
	__type(value, struct xdpcap_counters);
} counters SEC(".maps");

/*
 * Per hook, the packets offered to sampling so far, over all CPUs. One atomic
 * counter rather than per-CPU ones, so that exactly one packet in N is kept
 * however the traffic spreads over the CPUs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPCAP_COUNTERS_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} sample_ticks SEC(".maps");

/* True when --sample leaves this packet out (counted as skipped). */
static __always_inline int sampled_out(struct xdpcap_counters *c, __u32 hook_key)
{
	if (sample_every <= 1)
		return 0;
	__u64 *ticks = bpf_map_lookup_elem(&sample_ticks, &hook_key);
	if (!ticks)
		return 0;
	if (__sync_fetch_and_add(ticks, 1) % sample_every == 0)
		return 0;
	c->sample_skipped++;
	return 1;
}

/* Counts the packet; null when there is nothing more to do with it (no
 * counters, or --sample leaves it out). */
static __always_inline struct xdpcap_counters *count_packet(__u32 hook_key)
{
	struct xdpcap_counters *c = bpf_map_lookup_elem(&counters, &hook_key);
	if (!c)
		return 0;
	if (filter_enabled)
		c->matched++;
	else
		c->seen++;
	if (sampled_out(c, hook_key))
		return 0;
	return c;
}

static __always_inline __u32 sample_length(__u64 frame_len)
{
	return frame_len < snaplen ? (__u32)frame_len : snaplen;
}

static __always_inline void fill_meta(struct xdpcap_meta *meta, const struct xdpcap_counters *c, __u32 queue,
				      __u64 frame_len, __u32 cap_len, __u8 direction, __u8 hook)
{
	meta->tag = XDPCAP_META_TAG;
	meta->ifindex = capture_ifindex;
	meta->rx_queue = queue;
	meta->orig_len = (__u32)frame_len;
	meta->cap_len = cap_len;
	meta->drops_before = (__u32)c->pending_drops;
	meta->tstamp_ns = bpf_ktime_get_ns();
	meta->direction = direction;
	meta->hook = hook;
	meta->program = 0;
	meta->verdict = 0;
	meta->hash = 0;
	meta->hash_type = 0;
	meta->flags = 0;
	meta->location = 0;
}

static __always_inline void account_output(struct xdpcap_counters *c, long err)
{
	if (err) {
		c->output_failed++;
		c->pending_drops++;
		if (err == -ENOSPC)
			c->ring_full++;
	} else {
		c->sampled++;
		c->pending_drops = 0;
	}
}

/*
 * `ctx` is the hook's context (xdp_md or __sk_buff); the kernel's variant of
 * the helper for that program type appends `cap_len` bytes of the packet,
 * from every fragment, after `meta`.
 */
static __always_inline void output_sample(void *ctx, struct xdpcap_counters *c, struct xdpcap_meta *meta)
{
	__u64 flags = BPF_F_CURRENT_CPU | ((__u64)meta->cap_len << 32);
	account_output(c, bpf_perf_event_output(ctx, &events, flags, meta, sizeof(*meta)));
}

#endif /* XDPCAP_SAMPLE_H */
