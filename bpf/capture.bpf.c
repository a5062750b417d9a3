// SPDX-License-Identifier: GPL-2.0-only
/*
 * The capture hooks: XDP or tc ingress for received frames, tc egress for
 * sent ones. Each samples every packet into the CPU's perf ring behind an
 * xdpcap_meta header and never changes the traffic.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "rx_meta.h"
#include "sample.h"

/* Slot 0: the capture program of the hook, for its filter's tail call. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} capture_next SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} egress_next SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} ingress_next SEC(".maps");

/*
 * Per CPU (indexed by CPU id; userspace sizes it), room to rebuild a sent
 * frame as it appears on the wire when its VLAN tag is held in skb metadata.
 * A plain array, because per-CPU values cannot be this large. Userspace sets
 * the value size to hold the metadata and `snaplen` bytes.
 */
struct wire_frame {
	struct xdpcap_meta meta;
	__u8 frame[XDPCAP_MAX_SAMPLE_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wire_frame);
} wire_scratch SEC(".maps");

#define ETH_ADDRS_LEN 12
#define VLAN_TAG_LEN 4

/*
 * The frame with a VLAN tag the NIC (received) or the stack (sent) holds in
 * metadata put back after the MAC addresses, as on the wire: copied into the
 * CPU's scratch entry and output from there. `frame_len` is without the tag.
 */
static __always_inline void output_tagged(void *ctx, const int from, __u64 frame_len, struct xdpcap_counters *c,
					  struct xdpcap_meta *meta, __u16 proto_be, __u16 tci)
{
	__u32 key = bpf_get_smp_processor_id();
	struct wire_frame *w = bpf_map_lookup_elem(&wire_scratch, &key);
	if (!w || frame_len < ETH_ADDRS_LEN) {
		account_output(c, -EFAULT);
		return;
	}
	w->meta = *meta;
	if (load_frame_bytes(ctx, from, 0, 0, w->frame, ETH_ADDRS_LEN)) {
		account_output(c, -EFAULT);
		return;
	}
	__u16 tci_be = bpf_htons(tci);
	__builtin_memcpy(w->frame + ETH_ADDRS_LEN, &proto_be, 2);
	__builtin_memcpy(w->frame + ETH_ADDRS_LEN + 2, &tci_be, 2);

	/* The first record's bytes; cap_len <= snaplen already. 64-bit arithmetic and the clamps between
	 * compiler barriers let the verifier see the bounds on the very
	 * registers it checks. */
	__u64 cap_len = first_record_length(meta->cap_len);
	__u64 limit = snaplen;
	if (limit > XDPCAP_MAX_SAMPLE_SIZE)
		limit = XDPCAP_MAX_SAMPLE_SIZE;
	asm volatile("" : "+r"(cap_len), "+r"(limit));
	if (cap_len > limit)
		cap_len = limit;
	/* limit first: a constant to the verifier, which then drops the branch
	 * where snaplen leaves no room after the tag. */
	if (limit > ETH_ADDRS_LEN + VLAN_TAG_LEN && cap_len > ETH_ADDRS_LEN + VLAN_TAG_LEN) {
		/* The bytes after the tag, less one, and the room for them, each
		 * compared as one register against the other: 6.1's verifier
		 * also walks this branch where snaplen rules it out, and bounds
		 * nothing it cannot see on the very register it checks. The mask
		 * and the -1 change nothing for the lengths that get here. */
		__u64 rest_less_one = ((cap_len - (ETH_ADDRS_LEN + VLAN_TAG_LEN)) & 0xffff) - 1;
		__u64 room = limit - (ETH_ADDRS_LEN + VLAN_TAG_LEN);
		asm volatile("" : "+r"(rest_less_one), "+r"(room));
		if (rest_less_one > XDPCAP_MAX_SAMPLE_SIZE - (ETH_ADDRS_LEN + VLAN_TAG_LEN) - 1)
			return account_output(c, -EFAULT);
		if (rest_less_one >= room)
			return account_output(c, -EFAULT);
		if (load_frame_bytes(ctx, from, 0, ETH_ADDRS_LEN, w->frame + ETH_ADDRS_LEN + VLAN_TAG_LEN,
				     rest_less_one + 1))
			return account_output(c, -EFAULT);
	}
	__u64 size = sizeof(w->meta) + cap_len;
	asm volatile("" : "+r"(size));
	if (size > sizeof(w->meta) + XDPCAP_MAX_SAMPLE_SIZE || size > sizeof(w->meta) + limit)
		return account_output(c, -EFAULT);
	long err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, w, size);
	if (!err)
		err = output_parts(ctx, from, 0, meta, VLAN_TAG_LEN);
	account_output(c, err);
}

static __always_inline int sample_xdp(struct xdp_md *ctx, __u64 frame_len)
{
	struct xdpcap_counters *c = count_packet(XDPCAP_COUNTERS_INGRESS);
	if (!c)
		return XDP_PASS;
	__u32 key = 0;
	const struct xdpcap_rx_meta *rx = bpf_map_lookup_elem(&rx_meta, &key);
	const __u16 rx_flags = rx ? rx->flags : 0;
	const int tagged = (rx_flags & XDPCAP_FLAG_VLAN_RESTORED) != 0;
	const __u64 wire_len = frame_len + (tagged ? VLAN_TAG_LEN : 0);
	struct xdpcap_meta meta;
	__u32 cap_len = sample_length(wire_len);
	if (cap_len > XDPCAP_XDP_MAX_CAPTURE)
		cap_len = XDPCAP_XDP_MAX_CAPTURE;
	fill_meta(&meta, c, ctx->rx_queue_index, wire_len, cap_len, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_XDP);
	if (rx && (rx_flags & XDPCAP_FLAG_HASH)) {
		meta.hash = rx->hash;
		meta.hash_type = rx->hash_type;
	}
	meta.flags = rx_flags;
	if (rx && tagged)
		output_tagged(ctx, XDPCAP_FROM_XDP, frame_len, c, &meta, rx->vlan_proto, rx->vlan_tci);
	else
		output_sample(ctx, XDPCAP_FROM_XDP, c, &meta);
	return XDP_PASS;
}

/* Multi-buffer aware: sees and copies every fragment of jumbo frames. */
SEC("xdp.frags")
int xdpcap_frags(struct xdp_md *ctx)
{
	return sample_xdp(ctx, bpf_xdp_get_buff_len(ctx));
}

/* For kernels that cannot load frags programs: linear data only. */
SEC("xdp")
int xdpcap_linear(struct xdp_md *ctx)
{
	return sample_xdp(ctx, ctx->data_end - ctx->data);
}

/*
 * Set before load from the kernel's BTF, where bpf_probe_read_kernel is there
 * to be had: where the sent skb's ip_summed bitfield lies in struct sk_buff.
 */
const volatile __u8 read_ip_summed = 0;
const volatile __u32 ip_summed_byte = 0;
const volatile __u8 ip_summed_shift = 0;

#define XDPCAP_CHECKSUM_PARTIAL 3 /* the NIC fills the checksum in */

static __always_inline int checksum_partial(struct __sk_buff *skb)
{
	/* A tc program's context is the kernel's sk_buff itself. */
	__u8 byte = 0;
	if (bpf_probe_read_kernel(&byte, 1, (void *)skb + ip_summed_byte))
		return 0;
	return ((byte >> ip_summed_shift) & 3) == XDPCAP_CHECKSUM_PARTIAL;
}

/*
 * An skb at a tc hook, from its Ethernet header, with a VLAN tag the device
 * or the stack holds in metadata put back as on the wire.
 */
static __always_inline int sample_skb(struct __sk_buff *skb, __u32 counters_key, __u32 queue, __u8 direction,
				      __u8 hook)
{
	struct xdpcap_counters *c = count_packet(counters_key);
	if (!c)
		return TC_ACT_UNSPEC;
	struct xdpcap_meta meta;
	const __u64 wire_len = (__u64)skb->len + (skb->vlan_present ? VLAN_TAG_LEN : 0);
	fill_meta(&meta, c, queue, wire_len, sample_length(wire_len), direction, hook);
	/* Read, never computed: asking for a hash would set one on the skb. */
	if (skb->hash) {
		meta.hash = skb->hash;
		meta.flags |= XDPCAP_FLAG_HASH;
	}
	if (direction == XDPCAP_DIR_EGRESS && skb->gso_size)
		meta.flags |= XDPCAP_FLAG_GSO;
	if (read_ip_summed && checksum_partial(skb))
		meta.flags |= XDPCAP_FLAG_CSUM_PARTIAL;
	if (skb->vlan_present) {
		meta.flags |= XDPCAP_FLAG_VLAN_RESTORED;
		output_tagged(skb, XDPCAP_FROM_SKB, skb->len, c, &meta, (__u16)skb->vlan_proto, (__u16)skb->vlan_tci);
	} else {
		output_sample(skb, XDPCAP_FROM_SKB, c, &meta);
	}
	/* Same value as TCX_NEXT: the next program, or the default, decides. */
	return TC_ACT_UNSPEC;
}

/* Every sent frame, as it leaves for the driver. */
SEC("tc")
int xdpcap_egress(struct __sk_buff *skb)
{
	return sample_skb(skb, XDPCAP_COUNTERS_EGRESS, skb->queue_mapping, XDPCAP_DIR_EGRESS, XDPCAP_HOOK_TC_EGRESS);
}

/*
 * Every received frame, where XDP would miss or change some (veth: frames tc
 * redirected into it, GRO super-frames whole, tags from the skb). Attached
 * first, so no tc program that redirects or drops hides a frame.
 */
SEC("tc")
int xdpcap_ingress(struct __sk_buff *skb)
{
	/* A recorded RX queue is kept as its index plus one. */
	const __u32 queue = skb->queue_mapping ? skb->queue_mapping - 1 : 0;
	return sample_skb(skb, XDPCAP_COUNTERS_INGRESS, queue, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_TC_INGRESS);
}

char LICENSE[] SEC("license") = "GPL";
