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
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "xdpcap_abi.h"

/* Set by userspace before load. */
const volatile __u32 snaplen = XDPCAP_MAX_SAMPLE_SIZE;
const volatile __u32 capture_ifindex = 0;
/* Where this interface's counters start in `counters` and `sample_ticks`:
 * 0, or with one set of per-CPU rings for many interfaces (-i any), its
 * slot times XDPCAP_COUNTERS_ENTRIES, those maps and the staging entries
 * then shared by every interface's programs. */
const volatile __u32 counters_base = 0;
/* With a filter, the translated filter program runs in front of each hook:
 * it counts every packet as seen and tail-calls the hook's program for the
 * packets it keeps. */
const volatile __u8 filter_enabled = 0;
/* --sample: keep one packet in `sample_every` of those the filter keeps. */
const volatile __u32 sample_every = 1;
/* -k: every record of the hooks that can attribute carries an
 * xdpcap_process (XDPCAP_FLAG_PROCESS). */
const volatile __u8 attribute = 0;
/* --pid, --comm, --cgroup, -- COMMAND: only packets of a wanted socket owner
 * are sampled; the rest count as seen, not as matched. */
const volatile __u8 process_filter = 0;

/* The most a record carries in front of its frame bytes: with -k both
 * ends' processes. */
#define XDPCAP_HEAD_ROOM (sizeof(struct xdpcap_meta) + 2 * sizeof(struct xdpcap_process))

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
 * Per CPU (indexed by CPU id; userspace sizes it), room for one part of a
 * frame longer than a record: parts are read with a load helper, never
 * appended by the output helper, which copies from the frame's start only.
 */
struct xdpcap_part_buffer {
	struct xdpcap_part part;
	__u8 bytes[XDPCAP_MAX_SAMPLE_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpcap_part_buffer);
} part_scratch SEC(".maps");

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
	__u32 key = hook_key + counters_base;
	__u64 *ticks = bpf_map_lookup_elem(&sample_ticks, &key);
	if (!ticks)
		return 0;
	if (__sync_fetch_and_add(ticks, 1) % sample_every == 0)
		return 0;
	c->sample_skipped++;
	return 1;
}

/* Counts the packet; null when there is nothing more to do with it (no
 * counters, the process filters or --sample leave it out). `wanted`: the
 * process filters keep the packet's socket owner. */
static __always_inline struct xdpcap_counters *count_packet_of(__u32 hook_key, int wanted)
{
	__u32 key = hook_key + counters_base;
	struct xdpcap_counters *c = bpf_map_lookup_elem(&counters, &key);
	if (!c)
		return 0;
	/* With a filter expression, the program in front counted it as seen. */
	if (!filter_enabled)
		c->seen++;
	if (process_filter && !wanted)
		return 0;
	if (filter_enabled || process_filter)
		c->matched++;
	if (sampled_out(c, hook_key))
		return 0;
	return c;
}

static __always_inline struct xdpcap_counters *count_packet(__u32 hook_key)
{
	return count_packet_of(hook_key, 1);
}

static __always_inline __u32 sample_length(__u64 frame_len)
{
	return frame_len < snaplen ? (__u32)frame_len : snaplen;
}

/* Bytes of a frame captured in `cap_len` bytes that its first record carries. */
static __always_inline __u32 first_record_length(__u32 cap_len)
{
	return cap_len < XDPCAP_MAX_SAMPLE_SIZE ? cap_len : XDPCAP_MAX_SAMPLE_SIZE;
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

/* The loop's sleep (xdpcap_abi.h): one entry userspace maps, and the ring
 * buffer whose records wake it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xdpcap_wake);
} wake SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} wakeups SEC(".maps");

/* After a frame's record or staging: a loop asleep with no timeout would
 * not see it (below the watermark, or staged). One load per frame while it
 * is awake; userspace's grace period before it sleeps (membarrier) makes
 * sure a frame that finds the flag clear is seen by its last look. */
static __always_inline void wake_loop(void)
{
	__u32 zero = 0;
	struct xdpcap_wake *w = bpf_map_lookup_elem(&wake, &zero);
	if (!w || !*(volatile __u32 *)&w->sleeping)
		return;
	w->sleeping = 0;
	__u64 frame = 1;
	bpf_ringbuf_output(&wakeups, &frame, sizeof frame, 0);
}

/* Once per frame, with the first error of its records (0: all written). */
static __always_inline void account_output(struct xdpcap_counters *c, long err)
{
	wake_loop();
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
 * Several frames per record (xdpcap_abi.h, docs/BATCHING.md): set by
 * userspace once loaded, where the kernel runs the flush program on a
 * chosen CPU; not for --immediate-mode, -c or the text view to a terminal.
 * A variable, not a constant: the flush program must load before the
 * kernel's support for it can be tried.
 */
__u8 batching = 0;
/* The most frame bytes one batch carries: XDPCAP_BATCH_BYTES, less where a
 * ring is small (a batch must fit one several times over). */
__u32 batch_bytes = XDPCAP_BATCH_BYTES;

/* Indexed by CPU id; userspace sizes it and maps it to see what is pending. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xdpcap_stage);
} stage SEC(".maps");

/* The staging entry of this CPU, marked busy; null when there is none or a
 * context this one interrupted is writing it (the caller then outputs its
 * frame on its own). Every hook runs with preemption off, so contexts on a
 * CPU nest strictly: an interrupting one finds `busy` set and leaves it
 * alone, and the one it interrupted sees nothing change. */
static __always_inline struct xdpcap_stage *claim_stage(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct xdpcap_stage *s = bpf_map_lookup_elem(&stage, &cpu);
	if (!s || s->busy)
		return 0;
	s->busy = 1;
	asm volatile("" ::: "memory");
	return s;
}

static __always_inline void release_stage(struct xdpcap_stage *s)
{
	asm volatile("" ::: "memory");
	s->busy = 0;
}

/*
 * Accounts for a batch's frames on each key's counters as frames of their
 * own would be, `err` the result of its output, and empties the keys. A
 * global function: the verifier checks its walk over every key once, not
 * again on each path of a hook that reaches a flush.
 */
__attribute__((noinline)) int xdpcap_account_batch(struct xdpcap_stage *s, long err)
{
	if (!s)
		return 0;
	/* The outcome taken apart once, before the walk, into factors the
	 * compiler cannot turn back into branches: a branch on it per key
	 * would multiply the states the verifier walks. */
	__u64 lost = err ? 1 : 0;
	__u64 full = err == -ENOSPC ? 1 : 0;
	asm volatile("" : "+r"(lost), "+r"(full));
	for (__u32 key = 0; key < XDPCAP_BATCH_KEYS; key++) {
		const __u64 frames = s->keys[key].frames;
		if (!frames)
			continue;
		__u32 k = key + s->counters_base;
		struct xdpcap_counters *c = bpf_map_lookup_elem(&counters, &k);
		if (c) {
			c->sampled += frames * (1 - lost);
			c->output_failed += frames * lost;
			/* The lost frames' own drops_before is lost with them. */
			c->pending_drops += (frames + s->keys[key].carried) * lost;
			c->ring_full += frames * full;
		}
		s->keys[key].frames = 0;
		s->keys[key].carried = 0;
	}
	return 0;
}

/* Emits the staged frames as one record, and accounts for each of them on
 * its hook's counters as a frame of its own would be. */
static __always_inline void flush_stage(void *ctx, struct xdpcap_stage *s)
{
	if (!s->batch.frames)
		return;
	__u64 size = sizeof(struct xdpcap_batch) + s->batch.bytes;
	asm volatile("" : "+r"(size));
	long err = -E2BIG;
	if (size <= sizeof(struct xdpcap_batch) + XDPCAP_BATCH_BYTES)
		err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &s->batch, size);
	xdpcap_account_batch(s, err);
	s->batch.frames = 0;
	s->batch.bytes = 0;
}

/* Before a record of its own: the staged frames are older, and go first. */
static __always_inline void flush_pending(void *ctx)
{
	struct xdpcap_stage *s = claim_stage();
	if (!s)
		return;
	flush_stage(ctx, s);
	release_stage(s);
}

/* Where a hook's frame bytes are read from. */
#define XDPCAP_FROM_XDP 0    /* ctx is an xdp_md: bpf_xdp_load_bytes */
#define XDPCAP_FROM_SKB 1    /* ctx is a __sk_buff: bpf_skb_load_bytes */
#define XDPCAP_FROM_KERNEL 2 /* linear bytes at a kernel address: bpf_probe_read_kernel */

static __always_inline long load_frame_bytes(void *ctx, const int from, __u64 kernel_data, __u32 offset, void *to,
					     __u32 len)
{
	if (from == XDPCAP_FROM_XDP)
		return bpf_xdp_load_bytes(ctx, offset, to, len);
	if (from == XDPCAP_FROM_SKB)
		return bpf_skb_load_bytes(ctx, offset, to, len);
	return bpf_probe_read_kernel(to, len, (const void *)(kernel_data + offset));
}

/*
 * The parts of a frame whose first record is out: wire bytes from
 * XDPCAP_MAX_SAMPLE_SIZE to meta->cap_len, one record each at most
 * XDPCAP_MAX_SAMPLE_SIZE long. `shift` is the bytes the wire has before the
 * frame's own (a tag put back: wire offset o is frame offset o - shift).
 * Returns 0, or the first error: a missing part loses the whole frame.
 */
static __always_inline long output_parts(void *ctx, const int from, __u64 kernel_data, const struct xdpcap_meta *meta,
					 __u32 shift)
{
	if (meta->cap_len <= XDPCAP_MAX_SAMPLE_SIZE)
		return 0;
	__u32 cpu = bpf_get_smp_processor_id();
	struct xdpcap_part_buffer *b = bpf_map_lookup_elem(&part_scratch, &cpu);
	if (!b)
		return -EFAULT;
	b->part.tag = XDPCAP_PART_TAG;
	b->part.tstamp_ns = meta->tstamp_ns;
	const __u64 cap_len = meta->cap_len;
#pragma unroll
	for (__u32 i = 1; i <= XDPCAP_MAX_PARTS; i++) {
		const __u64 offset = (__u64)i * XDPCAP_MAX_SAMPLE_SIZE;
		if (offset >= cap_len)
			break;
		__u64 len = cap_len - offset;
		/* The bound checked on the very register the helpers get. */
		asm volatile("" : "+r"(len));
		if (len > XDPCAP_MAX_SAMPLE_SIZE)
			len = XDPCAP_MAX_SAMPLE_SIZE;
		if (len < 1)
			break;
		b->part.offset = (__u32)offset;
		long err = load_frame_bytes(ctx, from, kernel_data, (__u32)(offset - shift), b->bytes, len);
		if (err)
			return err;
		err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, b, sizeof(b->part) + len);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A record's head at `at`: `meta`, and with -k both ends' processes after it
 * (XDPCAP_FLAG_PROCESS | XDPCAP_FLAG_PEER). Returns its length: the frame's
 * bytes follow. The one writer of the head of a staged frame and of a first
 * record built in a scratch entry.
 */
static __always_inline __u64 write_head(__u8 *at, const struct xdpcap_meta *meta,
					const struct xdpcap_process process[2])
{
	struct xdpcap_meta *m = (struct xdpcap_meta *)at;
	*m = *meta;
	if (!attribute)
		return sizeof(struct xdpcap_meta);
	m->flags |= XDPCAP_FLAG_PROCESS | XDPCAP_FLAG_PEER;
	struct xdpcap_process *ends = (struct xdpcap_process *)(at + sizeof(struct xdpcap_meta));
	ends[0] = process[0];
	ends[1] = process[1];
	return XDPCAP_HEAD_ROOM;
}

/* The counters key of a frame's hook: where its batch accounts for it. */
static __always_inline __u32 stage_key(const struct xdpcap_meta *meta)
{
	switch (meta->hook) {
	case XDPCAP_HOOK_TC_EGRESS:
		return XDPCAP_COUNTERS_EGRESS;
	case XDPCAP_HOOK_DROP:
		return XDPCAP_COUNTERS_DROPS;
	case XDPCAP_HOOK_FENTRY:
		return XDPCAP_COUNTERS_TRACE(meta->program, 0);
	case XDPCAP_HOOK_FEXIT:
		return XDPCAP_COUNTERS_TRACE(meta->program, 1);
	default:
		return XDPCAP_COUNTERS_INGRESS;
	}
}

/*
 * Stages a small frame in the CPU's batch: true when it is there (its
 * counters follow at the flush), false when it goes out on its own, after
 * whatever is staged. With XDPCAP_FROM_KERNEL the frame's bytes are read at
 * kernel address `kernel_data` (the tracing hooks: --drops, trace mode).
 */
static __always_inline int stage_frame_at(void *ctx, const int from, __u64 kernel_data, struct xdpcap_counters *c,
					  struct xdpcap_meta *meta, const struct xdpcap_process process[2],
					  const int tagged, __u16 proto_be, __u16 tci);

static __always_inline int stage_frame(void *ctx, const int from, struct xdpcap_counters *c,
				       struct xdpcap_meta *meta, const struct xdpcap_process process[2], const int tagged,
				       __u16 proto_be, __u16 tci)
{
	return stage_frame_at(ctx, from, 0, c, meta, process, tagged, proto_be, tci);
}

static __always_inline int stage_sample(void *ctx, const int from, struct xdpcap_counters *c,
					struct xdpcap_meta *meta, const struct xdpcap_process process[2])
{
	return stage_frame(ctx, from, c, meta, process, 0, 0, 0);
}

#define XDPCAP_ETH_ADDRS_LEN 12
#define XDPCAP_VLAN_TAG_LEN 4

/* Copies the frame's wire bytes, one more than `len_less_one`, to `to`:
 * with `tagged`, the tag the skb or the NIC holds put back after the MAC
 * addresses. Lengths less one, each checked on the register the helper
 * gets: 6.1's verifier loses a lower bound of 1 the compiler folds away. */
static __always_inline long stage_bytes(void *ctx, const int from, __u64 kernel_data, __u8 *to, __u64 len_less_one,
					const int tagged, __u16 proto_be, __u16 tci)
{
	if (!tagged)
		return load_frame_bytes(ctx, from, kernel_data, 0, to, len_less_one + 1);
	__u64 rest_less_one = len_less_one - (XDPCAP_ETH_ADDRS_LEN + XDPCAP_VLAN_TAG_LEN);
	asm volatile("" : "+r"(rest_less_one));
	if (rest_less_one > XDPCAP_BATCH_FRAME_MAX - 1)
		return -EFAULT;
	if (from == XDPCAP_FROM_KERNEL) {
		/* As in stage_frame_at(): bounded again past a spill. */
		asm volatile("" : "+r"(rest_less_one));
		rest_less_one &= XDPCAP_BATCH_FRAME_MAX - 1;
	}
	if (load_frame_bytes(ctx, from, kernel_data, 0, to, XDPCAP_ETH_ADDRS_LEN))
		return -EFAULT;
	const __u16 tci_be = bpf_htons(tci);
	__builtin_memcpy(to + XDPCAP_ETH_ADDRS_LEN, &proto_be, 2);
	__builtin_memcpy(to + XDPCAP_ETH_ADDRS_LEN + 2, &tci_be, 2);
	return load_frame_bytes(ctx, from, kernel_data, XDPCAP_ETH_ADDRS_LEN,
				to + XDPCAP_ETH_ADDRS_LEN + XDPCAP_VLAN_TAG_LEN, rest_less_one + 1);
}

static __always_inline int stage_frame_at(void *ctx, const int from, __u64 kernel_data, struct xdpcap_counters *c,
					  struct xdpcap_meta *meta, const struct xdpcap_process process[2],
					  const int tagged, __u16 proto_be, __u16 tci)
{
	if (!batching)
		return 0;
	struct xdpcap_stage *s = claim_stage();
	if (!s)
		return 0;
	__u64 cap_len = meta->cap_len;
	const __u32 key = stage_key(meta);
	if (cap_len > XDPCAP_BATCH_FRAME_MAX || cap_len < (tagged ? XDPCAP_ETH_ADDRS_LEN + XDPCAP_VLAN_TAG_LEN + 1 : 1) ||
	    key >= XDPCAP_BATCH_KEYS) {
		flush_stage(ctx, s);
		release_stage(s);
		return 0;
	}
	const __u64 head_len = attribute ? XDPCAP_HEAD_ROOM : sizeof(struct xdpcap_meta);
	const __u64 need = (head_len + cap_len + 7) & ~7ull;
	const __u32 limit = batch_bytes;
	if (need > limit) {
		flush_stage(ctx, s);
		release_stage(s);
		return 0;
	}
	/* Age is the loop's to bound (a flush per tick where frames wait): a
	 * batch cut short here by time could fit a full ring that refused a
	 * whole one, and write frames after a loss out of turn. A shared entry
	 * holds one interface's frames at a time: their keys are its counters'. */
	if (s->batch.frames && (s->batch.bytes + need > limit || s->counters_base != counters_base))
		flush_stage(ctx, s);
	__u64 used = s->batch.bytes;
	__u64 len_less_one = cap_len - 1;
	asm volatile("" : "+r"(used), "+r"(len_less_one));
	if (used >= XDPCAP_BATCH_BYTES || len_less_one > XDPCAP_BATCH_FRAME_MAX - 1) {
		release_stage(s);
		return 0;
	}
	if (from == XDPCAP_FROM_KERNEL) {
		/* The tracing hooks keep more registers busy: 6.1's verifier then
		 * sees copies spilled before the check, unbounded. Bounded again,
		 * masks that change nothing here, on the registers used. */
		asm volatile("" : "+r"(used), "+r"(len_less_one));
		used &= XDPCAP_BATCH_BYTES - 1;
		len_less_one &= XDPCAP_BATCH_FRAME_MAX - 1;
	}
	__u8 *at = s->data + used;
	const __u32 handed = meta->drops_before;
	if (stage_bytes(ctx, from, kernel_data, at + write_head(at, meta, process), len_less_one, tagged, proto_be,
			tci)) {
		release_stage(s);
		return 0;
	}
	if (!s->batch.frames) {
		s->batch.tag = XDPCAP_BATCH_TAG;
		s->oldest_ns = meta->tstamp_ns;
		s->counters_base = counters_base;
	}
	s->batch.frames++;
	s->batch.bytes = (__u32)(used + need);
	/* Checked above; again on the very register that indexes. */
	__u32 index = key;
	asm volatile("" : "+r"(index));
	if (index < XDPCAP_BATCH_KEYS) {
		s->keys[index].frames++;
		s->keys[index].carried += handed;
	}
	/* The drops before this frame travel with it now. */
	c->pending_drops = 0;
	/* Full: no frame of the smallest kind fits any more. */
	if (s->batch.bytes + sizeof(struct xdpcap_meta) + 64 > limit)
		flush_stage(ctx, s);
	release_stage(s);
	wake_loop();
	return 1;
}

/*
 * `ctx` is the hook's context (xdp_md or __sk_buff); the kernel's variant of
 * the helper for that program type appends the first record's packet bytes,
 * from every fragment, after `meta` (and with -k both ends' `process`); the parts follow.
 */
static __always_inline void output_sample(void *ctx, const int from, struct xdpcap_counters *c,
					  struct xdpcap_meta *meta, const struct xdpcap_process process[2])
{
	if (stage_sample(ctx, from, c, meta, process))
		return;
	__u64 flags = BPF_F_CURRENT_CPU | ((__u64)first_record_length(meta->cap_len) << 32);
	long err;
	if (attribute) {
		struct {
			struct xdpcap_meta meta;
			struct xdpcap_process process[2];
		} head;
		err = bpf_perf_event_output(ctx, &events, flags, &head, write_head((__u8 *)&head, meta, process));
	} else {
		err = bpf_perf_event_output(ctx, &events, flags, meta, sizeof(*meta));
	}
	if (!err)
		err = output_parts(ctx, from, 0, meta, 0);
	account_output(c, err);
}

/*
 * A first record built in a scratch entry whose XDPCAP_HEAD_ROOM bytes of
 * `room` end where its frame bytes start: `meta` (and with -k `process`)
 * placed right before them. Returns where the record starts; `*head_len` is
 * the bytes in front of the frame.
 */
static __always_inline __u8 *place_head(__u8 *room, const struct xdpcap_meta *meta,
					const struct xdpcap_process process[2], __u64 *head_len)
{
	/* Without -k the processes' room stays unused in front. */
	__u8 *start = attribute ? room : room + 2 * sizeof(struct xdpcap_process);
	*head_len = write_head(start, meta, process);
	return start;
}

#endif /* XDPCAP_SAMPLE_H */
