/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A frame in kernel memory that a tracing program (--drops, trace mode)
 * copies from as it lies: its linear bytes, then each page fragment, which
 * only the kernel's direct map reaches:
 *   page_address(page) = page_offset_base
 *                        + (page - vmemmap_base) / sizeof(struct page) * PAGE_SIZE
 * (x86-64). Userspace sets read_pages where that holds, with the addresses of
 * the two bases where the kernel places them at boot
 * (CONFIG_DYNAMIC_MEMORY_LAYOUT), else 0 for the fixed 4-level ones.
 * Include after sample.h.
 */
#ifndef XDPCAP_FRAME_PIECES_H
#define XDPCAP_FRAME_PIECES_H

#include <bpf/bpf_core_read.h>

/* A page fragment as both layouts have it: struct bio_vec until 6.7 (a page
 * pointer), struct skb_frag from then (a netmem_ref, whose bit 0 marks device
 * memory no CPU reads). Its members are read as raw bytes. */
struct xdpcap_frag {
	__u64 page;
	__u32 len;
	__u32 offset;
};

struct sk_buff;

struct skb_shared_info {
	__u8 nr_frags;
	struct sk_buff *frag_list;
	struct xdpcap_frag frags[17];
} __attribute__((preserve_access_index));

struct page {
	unsigned long flags;
} __attribute__((preserve_access_index));

const volatile __u8 read_pages = 0;
const volatile __u64 page_offset_base_at = 0;
const volatile __u64 vmemmap_base_at = 0;

#define DIRECT_MAP_4LEVEL 0xffff888000000000ULL
#define VMEMMAP_4LEVEL 0xffffea0000000000ULL
#define PAGE_SHIFT 12
#define MAX_FRAGS 17
/* A GRO frame's segments on a frag_list each add theirs: enough for a
 * 64 KiB one of MTU-sized segments. Bytes past the last piece are counted
 * in the frame's length, not captured. */
#define MAX_PIECES 64

/* Where a frame's bytes are: its linear part, then each fragment in order,
 * as kernel addresses; `total` bytes in all. */
struct frame_pieces {
	__u64 addr[MAX_PIECES];
	__u32 len[MAX_PIECES];
	__u32 count;
	__u32 total;
	/* copy_pieces' progress, kept here rather than on the stack: the
	 * verifier does not track map memory, so the step it checks converges
	 * at once instead of once per piece. */
	__u32 copy_at;    /* the piece at hand */
	__u64 copy_start; /* its frame offset */
	__u64 copy_done;  /* bytes copied */
	/* The direct map's bases, read at the first fragment of a frame (0
	 * until then): the same for each segment of its frag_list. */
	__u64 direct;
	__u64 vmemmap;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame_pieces);
} frame_pieces SEC(".maps");

/*
 * Per CPU (indexed by CPU id), where records are put together: the
 * metadata (and process) end where the frame starts; a part's header goes
 * where the metadata was. The frame room is twice one record's bytes, the
 * bound the verifier proves for a copy at a varying offset (userspace sizes
 * the entries: size_gather_scratch).
 */
struct gather_frame {
	__u8 head[XDPCAP_HEAD_ROOM];
	__u8 frame[2 * XDPCAP_MAX_SAMPLE_SIZE + XDPCAP_GATHER_FRAME_SLACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gather_frame);
} gather_scratch SEC(".maps");

/* The frame's first piece: `len` linear bytes at kernel address `data`. */
static __always_inline void start_pieces(struct frame_pieces *p, __u64 data, __u64 len)
{
	p->addr[0] = data;
	p->len[0] = (__u32)len;
	p->count = 1;
	p->total = (__u32)len;
	p->direct = 0;
}

/* Where the kernel placed its direct map and its struct pages, into `p`
 * once per frame; false when they cannot be read. */
static __always_inline int read_direct_map(struct frame_pieces *p)
{
	if (p->direct)
		return 1;
	__u64 direct = DIRECT_MAP_4LEVEL, vmemmap = VMEMMAP_4LEVEL;
	if (page_offset_base_at && bpf_probe_read_kernel(&direct, sizeof(direct), (const void *)page_offset_base_at))
		return 0;
	if (vmemmap_base_at && bpf_probe_read_kernel(&vmemmap, sizeof(vmemmap), (const void *)vmemmap_base_at))
		return 0;
	p->direct = direct;
	p->vmemmap = vmemmap;
	return 1;
}

/* One more piece (none for no bytes); false when there is no room for it. */
static __always_inline int add_piece(struct frame_pieces *p, __u64 addr, __u32 len)
{
	if (!len)
		return 1;
	const __u32 at = p->count;
	if (at >= MAX_PIECES)
		return 0;
	p->addr[at] = addr;
	p->len[at] = len;
	p->count = at + 1;
	p->total += len;
	return 1;
}

/* Then the page fragments listed in the skb_shared_info at `shinfo`;
 * true when every one of them was added (none to read included). */
static __always_inline int add_page_frags(struct frame_pieces *p, __u64 shinfo)
{
	const __u8 frags = BPF_CORE_READ((struct skb_shared_info *)shinfo, nr_frags);
	if (!frags)
		return 1;
	if (!read_pages || !read_direct_map(p))
		return 0;
	const __u64 direct = p->direct, vmemmap = p->vmemmap;
	const __u64 page_size = bpf_core_type_size(struct page);
	const __u64 frags_at = shinfo + bpf_core_field_offset(struct skb_shared_info, frags);
	if (!page_size)
		return 0;
	for (__u32 i = 0; i < MAX_FRAGS; i++) {
		if (i >= frags)
			return 1;
		struct xdpcap_frag frag;
		if (bpf_probe_read_kernel(&frag, sizeof(frag), (const void *)(frags_at + i * sizeof(frag))))
			return 0;
		/* Device memory (bit 0) or not a page of the map: the frame ends here. */
		if ((frag.page & 1) || frag.page < vmemmap)
			return 0;
		if (!add_piece(p, direct + ((frag.page - vmemmap) / page_size << PAGE_SHIFT) + frag.offset, frag.len))
			return 0;
	}
	return frags <= MAX_FRAGS;
}

/* bpf_loop's state: one piece per call; what changes from one call to the
 * next is in the pieces' map entry. */
struct copy_job {
	__u8 *to;
	struct frame_pieces *pieces;
	__u64 from; /* frame offset of the first byte wanted */
	__u64 n;    /* bytes wanted */
	long err;
};

static long copy_piece(__u64 index, void *ctx)
{
	struct copy_job *job = ctx;
	struct frame_pieces *p = job->pieces;
	const __u32 at = p->copy_at;
	const __u64 done = p->copy_done;
	if (at >= MAX_PIECES || at >= p->count || done >= job->n)
		return 1;
	const __u64 end = p->copy_start + p->len[at];
	const __u64 offset = job->from + done;
	if (offset < end) {
		__u64 take = end - offset;
		if (take > job->n - done)
			take = job->n - done;
		__u64 into = done;
		asm volatile("" : "+r"(take), "+r"(into));
		/* The destination has room for twice the snapshot length. */
		if (take > XDPCAP_MAX_SAMPLE_SIZE || take > snaplen || into > XDPCAP_MAX_SAMPLE_SIZE || into > snaplen ||
		    bpf_probe_read_kernel(job->to + into, take, (const void *)(p->addr[at] + (offset - p->copy_start)))) {
			job->err = -EFAULT;
			return 1;
		}
		p->copy_done = done + take;
	}
	p->copy_start = end;
	p->copy_at = at + 1;
	return 0;
}

/* `n` bytes of the frame from offset `from` into `to`, which has room for
 * two snapshot lengths; 0, or -EFAULT when the pieces do not hold them. */
static __always_inline long copy_pieces(__u8 *to, struct frame_pieces *p, __u64 from, __u64 n)
{
	if (!n)
		return 0;
	p->copy_at = 0;
	p->copy_start = 0;
	p->copy_done = 0;
	struct copy_job job = {.to = to, .pieces = p, .from = from, .n = n};
	bpf_loop(MAX_PIECES, copy_piece, &job, 0);
	return job.err ? job.err : p->copy_done == n ? 0 : -EFAULT;
}

/*
 * The parts of a frame longer than one record, from its pieces, each built
 * in `w` after the first record went out. `cap_len` is read back from a map
 * by the caller: 6.1's verifier bounds the last part's length only for a
 * value it did not compute itself. `shift`: bytes the record has in front of
 * the frame's own (a tag put back).
 */
static __always_inline long output_piece_parts(void *ctx, struct gather_frame *w, struct frame_pieces *pieces,
					       __u64 cap_len, __u64 tstamp_ns, __u32 shift)
{
	struct xdpcap_part *part = (struct xdpcap_part *)(w->head + XDPCAP_HEAD_ROOM - sizeof(struct xdpcap_part));
	part->tag = XDPCAP_PART_TAG;
	part->tstamp_ns = tstamp_ns;
#pragma unroll
	for (__u32 i = 1; i <= XDPCAP_MAX_PARTS; i++) {
		const __u64 offset = (__u64)i * XDPCAP_MAX_SAMPLE_SIZE;
		if (offset >= cap_len)
			break;
		__u64 len = cap_len - offset;
		asm volatile("" : "+r"(len));
		if (len > XDPCAP_MAX_SAMPLE_SIZE)
			len = XDPCAP_MAX_SAMPLE_SIZE;
		if (len < 1 || len > snaplen)
			break;
		part->offset = (__u32)offset;
		long err = copy_pieces(w->frame, pieces, offset - shift, len);
		if (err)
			return err;
		err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, part, sizeof(*part) + len);
		if (err)
			return err;
	}
	return 0;
}

#endif /* XDPCAP_FRAME_PIECES_H */
