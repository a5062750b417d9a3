// SPDX-License-Identifier: GPL-2.0-only
/*
 * --drops: on the skb:kfree_skb tracepoint (which fires for drops only, not
 * for packets consumed), every frame the kernel drops on the captured
 * interface, from its Ethernet header, with the kernel's reason and the
 * address of the code that dropped it, into the capture object's perf event
 * array and counters (userspace hands their fds over before load).
 * It only reads. With a filter, the entry program leaves the frame's view in
 * drop_view and tail-calls a filter program built at run time (programs/capture.cpp),
 * which tail-calls xdpcap_drop_sample for the frames it keeps.
 */
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sample.h"
#include "frame_pieces.h"
#include "netns.h"
#include "process.h"

/* Just the members read here; CO-RE relocates them against the running
 * kernel's BTF (6.1 and 6.18 lay sk_buff out differently). */
struct net_device {
	int ifindex;
	struct {
		struct net *net;
	} nd_net;
} __attribute__((preserve_access_index));

struct sock;

struct sk_buff {
	struct sk_buff *next; /* on a frag_list: the next segment */
	struct net_device *dev;
	struct sock *sk;
	unsigned int len;
	unsigned int data_len; /* the bytes not in the linear part */
	unsigned char *head;
	unsigned char *data;
	unsigned int tail; /* an offset from head on 64-bit kernels */
	unsigned int end;  /* likewise: where skb_shared_info starts */
	__u16 mac_header;
	int skb_iif;
	__u32 vlan_all;
	__be16 vlan_proto;
	__u16 vlan_tci;
} __attribute__((preserve_access_index));

/* Before 6.2 a bit says whether vlan_tci holds a tag; from 6.2 a tag is
 * there when vlan_all is not zero. */
struct sk_buff___vlan_bit {
	__u8 vlan_present : 1;
} __attribute__((preserve_access_index));

#define MAC_HEADER_UNSET 0xffff
#define ETH_ADDRS_LEN 12
#define VLAN_TAG_LEN 4

/* Set by userspace before load: 0 for both directions, else XDPCAP_DIR_*. */
const volatile __u8 drop_direction = 0;
/* The inode of the interface's network namespace: an ifindex is unique
 * within one namespace only. */
const volatile __u32 capture_netns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpcap_drop_view);
} drop_view SEC(".maps");

/* Slot 0: the filter program (with a filter). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} drop_filter SEC(".maps");

/* Slot 0: xdpcap_drop_sample, for the filter's tail call. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} drop_sampler SEC(".maps");

static __always_inline int vlan_tag_held(struct sk_buff *skb)
{
	struct sk_buff___vlan_bit *old = (void *)skb;
	if (bpf_core_field_exists(old->vlan_present))
		return BPF_CORE_READ_BITFIELD_PROBED(old, vlan_present);
	return BPF_CORE_READ(skb, vlan_all) != 0;
}

/* bpf_loop's state for a GRO frame's frag_list: a segment per call. */
struct frag_list_walk {
	struct frame_pieces *pieces;
	struct sk_buff *skb; /* the segment at hand; 0 at the end */
};

static long add_listed_segment(__u64 index, void *ctx)
{
	struct frag_list_walk *walk = ctx;
	struct sk_buff *skb = walk->skb;
	if (!skb)
		return 1;
	const __u32 headlen = BPF_CORE_READ(skb, len) - BPF_CORE_READ(skb, data_len);
	if (!add_piece(walk->pieces, (__u64)BPF_CORE_READ(skb, data), headlen) ||
	    !add_page_frags(walk->pieces, (__u64)BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end)))
		return 1;
	walk->skb = BPF_CORE_READ(skb, next);
	return 0;
}

/* Where a dropped skb's bytes are: from its Ethernet header to the end of
 * its linear part, its page fragments, then each segment a GRO frame keeps
 * on its frag_list, in order, as far as each is read whole. */
static __always_inline void find_pieces(struct frame_pieces *p, struct sk_buff *skb, __u64 data, __u64 data_end)
{
	start_pieces(p, data, data_end > data ? data_end - data : 0);
	const __u64 shinfo = (__u64)BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end);
	if (!add_page_frags(p, shinfo))
		return;
	struct frag_list_walk walk = {.pieces = p, .skb = BPF_CORE_READ((struct skb_shared_info *)shinfo, frag_list)};
	if (walk.skb)
		bpf_loop(MAX_PIECES, add_listed_segment, &walk, 0);
}

/* Per CPU: the dropped skb's socket, for attribution. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drop_socket SEC(".maps");

static __always_inline void sample_drop(void *ctx, const struct xdpcap_drop_view *v)
{
	const struct socket_owner *owner = 0;
	if (attribute || process_filter) {
		__u32 key = 0;
		const __u64 *sock = bpf_map_lookup_elem(&drop_socket, &key);
		if (sock)
			owner = owner_of(*sock);
	}
	struct xdpcap_counters *c = count_packet_of(XDPCAP_COUNTERS_DROPS, owner_wanted(owner));
	if (!c)
		return;
	/* A drop names its socket's owner alone. */
	struct xdpcap_process process[2];
	describe_owner(&process[0], owner);
	describe_owner(&process[1], 0);
	__u32 cpu = bpf_get_smp_processor_id();
	struct gather_frame *w = bpf_map_lookup_elem(&gather_scratch, &cpu);
	if (!w)
		return account_output(c, -EFAULT);
	const int tagged = (v->flags & XDPCAP_FLAG_VLAN_RESTORED) != 0;
	const __u64 wire_len = (__u64)v->frame_len + (tagged ? VLAN_TAG_LEN : 0);
	struct xdpcap_meta meta;
	fill_meta(&meta, c, 0, wire_len, sample_length(wire_len), v->direction, XDPCAP_HOOK_DROP);
	meta.verdict = v->reason;
	meta.location = v->location;
	meta.flags = v->flags;

	__u32 key = 0;
	struct frame_pieces *pieces = bpf_map_lookup_elem(&frame_pieces, &key);
	if (!pieces)
		return account_output(c, -EFAULT);
	/* What the pieces hold; a rest they do not reach (device memory,
	 * more than MAX_PIECES pieces, pages where they cannot be read) is
	 * counted in the original length, as a snapshot length cut would be. */
	const int restore = tagged && meta.cap_len >= ETH_ADDRS_LEN + VLAN_TAG_LEN && pieces->total >= ETH_ADDRS_LEN;
	const __u64 shift = restore ? VLAN_TAG_LEN : 0;
	const __u64 want = meta.cap_len < pieces->total + shift ? meta.cap_len : pieces->total + shift;
	const __u64 first = want < XDPCAP_MAX_SAMPLE_SIZE ? want : XDPCAP_MAX_SAMPLE_SIZE;
	if (tagged && !restore)
		meta.flags &= ~XDPCAP_FLAG_VLAN_RESTORED;
	/* A small frame whose bytes are all in its linear part joins the CPU's
	 * batch straight from there, its tag put back on the way; the rest are
	 * gathered first. */
	const int linear = pieces->len[0] + shift >= want;
	if (want <= XDPCAP_BATCH_FRAME_MAX && linear) {
		meta.cap_len = (__u32)want;
		if (stage_frame_at(ctx, XDPCAP_FROM_KERNEL, v->data, c, &meta, process, restore, v->vlan_proto,
				   v->vlan_tci))
			return;
	}
	if (restore) {
		if (copy_pieces(w->frame, pieces, 0, ETH_ADDRS_LEN))
			return account_output(c, -EFAULT);
		__be16 tci_be = bpf_htons(v->vlan_tci);
		__builtin_memcpy(w->frame + ETH_ADDRS_LEN, &v->vlan_proto, 2);
		__builtin_memcpy(w->frame + ETH_ADDRS_LEN + 2, &tci_be, 2);
		if (copy_pieces(w->frame + ETH_ADDRS_LEN + VLAN_TAG_LEN, pieces, ETH_ADDRS_LEN,
				first - (ETH_ADDRS_LEN + VLAN_TAG_LEN)))
			return account_output(c, -EFAULT);
	} else {
		if (copy_pieces(w->frame, pieces, 0, first))
			return account_output(c, -EFAULT);
	}
	meta.cap_len = (__u32)want;
	if (want <= XDPCAP_BATCH_FRAME_MAX && !linear &&
	    stage_frame_at(ctx, XDPCAP_FROM_KERNEL, (__u64)w->frame, c, &meta, process, 0, 0, 0))
		return;
	__u64 head_len;
	__u8 *record = place_head(w->head, &meta, process, &head_len);
	__u64 size = head_len + first;
	asm volatile("" : "+r"(size));
	if (size > head_len + XDPCAP_MAX_SAMPLE_SIZE || size > head_len + snaplen)
		return account_output(c, -EFAULT);
	/* Frames this CPU staged before (the dropped one's own capture among
	 * them) go first. */
	flush_pending(ctx);
	long err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, record, size);
	/* The parts read cap_len back from the map: 6.1's verifier bounds the
	 * last part's length only for a value it did not compute itself. */
	if (!err)
		err = output_piece_parts(ctx, w, pieces, ((const struct xdpcap_meta *)record)->cap_len, meta.tstamp_ns,
					 (__u32)shift);
	account_output(c, err);
}

/* The tracepoint's arguments: skb, location, reason (and more on newer
 * kernels, after these three). */
SEC("raw_tracepoint/kfree_skb")
int xdpcap_drop(struct bpf_raw_tracepoint_args *ctx)
{
	struct sk_buff *skb = (struct sk_buff *)ctx->args[0];
	struct net_device *dev = BPF_CORE_READ(skb, dev);
	if (!dev || BPF_CORE_READ(dev, ifindex) != (int)capture_ifindex ||
	    BPF_CORE_READ(dev, nd_net.net, ns.inum) != capture_netns)
		return 0;
	/* Received frames carry the interface they came in on; sent and
	 * forwarded ones another one, or none. */
	const __u8 direction =
		BPF_CORE_READ(skb, skb_iif) == (int)capture_ifindex ? XDPCAP_DIR_INGRESS : XDPCAP_DIR_EGRESS;
	if (drop_direction && direction != drop_direction)
		return 0;
	__u32 key = 0;
	struct xdpcap_drop_view *v = bpf_map_lookup_elem(&drop_view, &key);
	if (!v)
		return 0;
	const __u16 mac = BPF_CORE_READ(skb, mac_header);
	const __u64 head = (__u64)BPF_CORE_READ(skb, head);
	const __u64 data = (__u64)BPF_CORE_READ(skb, data);
	if (mac == MAC_HEADER_UNSET || head + mac > data) {
		/* Dropped on its way out before its Ethernet header was built:
		 * nothing of the wire to show, but counted. */
		__u32 drops_key = XDPCAP_COUNTERS_DROPS + counters_base;
		struct xdpcap_counters *c = bpf_map_lookup_elem(&counters, &drops_key);
		if (c)
			c->no_link_header++;
		return 0;
	}
	v->data = head + mac;
	v->data_end = head + BPF_CORE_READ(skb, tail);
	struct frame_pieces *pieces = bpf_map_lookup_elem(&frame_pieces, &key);
	if (!pieces)
		return 0;
	find_pieces(pieces, skb, v->data, v->data_end);
	v->frame_len = BPF_CORE_READ(skb, len) + (__u32)(data - v->data);
	v->pkt_type = direction == XDPCAP_DIR_EGRESS ? PACKET_OUTGOING : PACKET_HOST;
	v->ifindex = capture_ifindex;
	v->direction = direction;
	v->reason = (__u32)ctx->args[2];
	v->location = ctx->args[1];
	v->flags = 0;
	if (vlan_tag_held(skb)) {
		v->flags = XDPCAP_FLAG_VLAN_RESTORED;
		v->vlan_proto = BPF_CORE_READ(skb, vlan_proto);
		v->vlan_tci = BPF_CORE_READ(skb, vlan_tci);
	}
	if (attribute || process_filter) {
		__u64 *sock = bpf_map_lookup_elem(&drop_socket, &key);
		if (sock)
			*sock = (__u64)BPF_CORE_READ(skb, sk);
	}
	if (filter_enabled) {
		bpf_tail_call(ctx, &drop_filter, 0);
		return 0;
	}
	sample_drop(ctx, v);
	return 0;
}

/* With a filter: the drops it keeps, their view left by xdpcap_drop. */
SEC("raw_tracepoint/kfree_skb")
int xdpcap_drop_sample(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 key = 0;
	const struct xdpcap_drop_view *v = bpf_map_lookup_elem(&drop_view, &key);
	if (v)
		sample_drop(ctx, v);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
