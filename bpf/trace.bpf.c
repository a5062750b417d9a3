// SPDX-License-Identifier: GPL-2.0-only
/*
 * Trace mode: fentry and fexit programs on an XDP program someone else
 * attached. They sample the frame as the traced program sees it on entry and
 * as it left it on exit (with its verdict) into the capture object's perf
 * event array and counters (userspace hands over their fds before load).
 * They only read: the traced program's traffic is never changed. With a
 * filter they are not attached themselves: a tracing program built at run
 * time (programs/trace.cpp) runs the filter and tail-calls them for what it keeps.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sample.h"
#include "frame_pieces.h"

/* Just the members read here; CO-RE relocates them against the running
 * kernel's BTF, so no vmlinux.h is needed. */
struct xdp_rxq_info {
	__u32 queue_index;
} __attribute__((preserve_access_index));

struct xdp_buff {
	void *data;
	void *data_end;
	void *data_hard_start;
	struct xdp_rxq_info *rxq;
	__u32 frame_sz;
	__u32 flags; /* 5.18 and later */
} __attribute__((preserve_access_index));

#define XDP_FLAGS_HAS_FRAGS 1
#define SMP_CACHE_BYTES 64

/* A multi-buffer frame's fragments are listed in the skb_shared_info at the
 * end of its first buffer, as the kernel's xdp_get_shared_info_from_buff()
 * finds it. */
static __always_inline void find_xdp_pieces(struct frame_pieces *p, struct xdp_buff *xdp)
{
	const __u64 data = (__u64)xdp->data;
	start_pieces(p, data, (__u64)xdp->data_end - data);
	if (!bpf_core_field_exists(xdp->flags) || !(xdp->flags & XDP_FLAGS_HAS_FRAGS))
		return;
	const __u64 shinfo_size = (bpf_core_type_size(struct skb_shared_info) + SMP_CACHE_BYTES - 1) & ~(__u64)(SMP_CACHE_BYTES - 1);
	add_page_frags(p, (__u64)xdp->data_hard_start + xdp->frame_sz - shinfo_size);
}

/*
 * The bytes past the first record of a frame longer than one, as parts:
 * there only the fragments' pages hold them. Returns 0 or the first error.
 */
static __always_inline long output_trace_parts(void *ctx, struct xdp_buff *xdp, const struct xdpcap_meta *meta)
{
	__u32 key = 0, cpu = bpf_get_smp_processor_id();
	struct frame_pieces *pieces = bpf_map_lookup_elem(&frame_pieces, &key);
	struct gather_frame *w = bpf_map_lookup_elem(&gather_scratch, &cpu);
	if (!pieces || !w)
		return -EFAULT;
	find_xdp_pieces(pieces, xdp);
	/* cap_len read back from the map, for 6.1's verifier (see output_piece_parts). */
	struct xdpcap_meta *kept = (struct xdpcap_meta *)w->head;
	kept->cap_len = meta->cap_len;
	return output_piece_parts(ctx, w, pieces, kept->cap_len, meta->tstamp_ns, 0);
}

/* Set by userspace before load: which traced program this instance is on. */
const volatile __u16 program_index = 0;

static __always_inline void sample_trace(void *ctx, struct xdp_buff *xdp, __u32 key, __u8 hook, __u32 verdict)
{
	struct xdpcap_counters *c = count_packet(key);
	if (!c)
		return;
	/* Tracing programs get the helper variant that takes the xdp_buff. */
	__u64 frame_len = bpf_xdp_get_buff_len((struct xdp_md *)xdp);
	struct xdpcap_meta meta;
	/* The helper copies the first record's bytes from every fragment;
	 * beyond it, parts need the fragments' pages (read_pages). */
	const __u32 cap_len = sample_length(frame_len);
	fill_meta(&meta, c, xdp->rxq->queue_index, frame_len, read_pages ? cap_len : first_record_length(cap_len),
		  XDPCAP_DIR_INGRESS, hook);
	meta.program = program_index;
	meta.verdict = verdict;
	/* A small frame joins the CPU's batch from its linear bytes, where
	 * they hold it (nearly always: fragments follow a full first buffer). */
	const __u64 data = (__u64)xdp->data;
	if (meta.cap_len <= XDPCAP_BATCH_FRAME_MAX && meta.cap_len <= (__u64)xdp->data_end - data) {
		/* Trace mode names no process: nothing to copy behind the metadata. */
		const struct xdpcap_process none[2] = {};
		if (stage_frame_at(ctx, XDPCAP_FROM_KERNEL, data, c, &meta, none, 0, 0, 0))
			return;
	}
	__u64 flags = BPF_F_CURRENT_CPU | ((__u64)first_record_length(meta.cap_len) << 32);
	flush_pending(ctx);
	long err = bpf_xdp_output(xdp, &events, flags, &meta, sizeof(meta));
	if (!err && meta.cap_len > XDPCAP_MAX_SAMPLE_SIZE)
		err = output_trace_parts(ctx, xdp, &meta);
	account_output(c, err);
}

/* The attach target (program and function) is set by userspace. */
SEC("fentry/xdp")
int xdpcap_entry(__u64 *ctx)
{
	sample_trace(ctx, (struct xdp_buff *)ctx[0], XDPCAP_COUNTERS_TRACE(program_index, 0), XDPCAP_HOOK_FENTRY, 0);
	return 0;
}

SEC("fexit/xdp")
int xdpcap_exit(__u64 *ctx)
{
	/* Arguments first, then the traced function's return value. */
	sample_trace(ctx, (struct xdp_buff *)ctx[0], XDPCAP_COUNTERS_TRACE(program_index, 1), XDPCAP_HOOK_FEXIT,
		     (__u32)ctx[1]);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
