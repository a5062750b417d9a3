// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loaded device-bound in front of a filter on a native XDP hook (without a
 * filter the capture program itself is loaded bound, xdpcap_bound): reads
 * what the NIC kept in the RX descriptor (the VLAN tag it took out of the
 * frame, the RSS hash) through the XDP RX metadata kfuncs, leaves it in
 * rx_meta for this CPU and tail-calls the filter.
 * The frame itself is never touched.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "rx_meta.h"

/* rx_meta_hash.bpf.c builds this program without the VLAN kfunc: libbpf 1.1
 * refuses an object whose kfunc the kernel lacks, weak or not, and the hash
 * kfunc (6.3) came five releases before the VLAN one (6.8). */
#ifndef XDPCAP_RX_META_NO_VLAN
extern int bpf_xdp_metadata_rx_vlan_tag(const struct xdp_md *ctx, __be16 *vlan_proto, __u16 *vlan_tci) __ksym __weak;
#define RX_VLAN_READ read_vlan
#define RX_VLAN_KFUNC bpf_xdp_metadata_rx_vlan_tag
#else
#define RX_VLAN_READ 0
#define RX_VLAN_KFUNC 0
#endif
extern int bpf_xdp_metadata_rx_hash(const struct xdp_md *ctx, __u32 *hash, enum xdp_rss_hash_type *rss_type) __ksym __weak;

/* Set before load to what the kernel has: a kfunc the kernel lacks must be
 * dead code the verifier removes. */
const volatile __u8 read_vlan = 0;
const volatile __u8 read_hash = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} rx_next SEC(".maps");

SEC("xdp.frags")
int xdpcap_rx_meta(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct xdpcap_rx_meta *m = bpf_map_lookup_elem(&rx_meta, &key);
	if (m)
		read_rx_meta(ctx, m, RX_VLAN_READ, read_hash, RX_VLAN_KFUNC, bpf_xdp_metadata_rx_hash);
	bpf_tail_call(ctx, &rx_next, 0);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
