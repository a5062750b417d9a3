/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The per-CPU hand-over of a received frame's RX descriptor metadata from the
 * device-bound program in front (rx_meta.bpf.c), which alone may call the
 * XDP RX metadata kfuncs, to the capture program and the filter it tail-calls.
 * Both run on the same CPU for the same frame, one right after the other.
 * Without the front (generic mode, older kernels) the entry stays zero.
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

#endif /* XDPCAP_RX_META_H */
