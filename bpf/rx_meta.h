/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The per-CPU hand-over of a received frame's RX descriptor metadata from the
 * device-bound program in front of a filter (rx_meta.bpf.c), which alone may
 * call the XDP RX metadata kfuncs, to the filter and the capture program it
 * tail-calls. They run on the same CPU for the same frame, one right after
 * the other. Without the front (generic mode, older kernels, or the capture
 * program bound to the device itself) the entry stays zero.
 */
#ifndef XDPCAP_RX_META_H
#define XDPCAP_RX_META_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xdpcap_abi.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpcap_rx_meta);
} rx_meta SEC(".maps");

/* The kernel's enum, named so that the hash kfunc's prototype matches its BTF. */
enum xdp_rss_hash_type { XDPCAP_RSS_TYPE_NONE = 0 };

typedef int (*xdpcap_rx_vlan_fn)(const struct xdp_md *ctx, __be16 *vlan_proto, __u16 *vlan_tci);
typedef int (*xdpcap_rx_hash_fn)(const struct xdp_md *ctx, __u32 *hash, enum xdp_rss_hash_type *rss_type);

/* Fills `m` with what the driver hands out, through the kfuncs given (their
 * externs, or the numbers userspace turns into their calls); `vlan` and
 * `hash` say which to call, constants at load so the other is dead code. */
static __always_inline void read_rx_meta(struct xdp_md *ctx, struct xdpcap_rx_meta *m, int vlan, int hash,
					 xdpcap_rx_vlan_fn vlan_tag, xdpcap_rx_hash_fn rx_hash)
{
	__u16 flags = 0;
	if (vlan) {
		__be16 proto = 0;
		__u16 tci = 0;
		if (vlan_tag(ctx, &proto, &tci) == 0) {
			m->vlan_proto = proto;
			m->vlan_tci = tci;
			flags |= XDPCAP_FLAG_VLAN_RESTORED;
		}
	}
	if (hash) {
		__u32 value = 0;
		enum xdp_rss_hash_type type = 0;
		/* Zero and no type: nothing was hashed (veth, an ARP frame). */
		if (rx_hash(ctx, &value, &type) == 0 && (value || type)) {
			m->hash = value;
			m->hash_type = (__u16)type;
			flags |= XDPCAP_FLAG_HASH;
		}
	}
	m->flags = flags;
}

#endif /* XDPCAP_RX_META_H */
