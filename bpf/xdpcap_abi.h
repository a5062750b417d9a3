/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The contract between the XDP capture program and userspace: the metadata
 * record in front of every sample, the per-CPU counters, and the limits.
 * Included by the BPF C program and by the C++ side; both check the layout.
 */
#ifndef XDPCAP_ABI_H
#define XDPCAP_ABI_H

#include <linux/types.h>
#ifdef __cplusplus
#include <cstddef>
#endif

/* 'XDPC' in the high 24 bits, ABI version in the low byte. */
#define XDPCAP_META_MAGIC 0x58445000u
#define XDPCAP_ABI_VERSION 9u
#define XDPCAP_META_TAG (XDPCAP_META_MAGIC | XDPCAP_ABI_VERSION)

/*
 * Largest number of packet bytes one perf record carries. A perf record's
 * size is a u16: perf header (8) + raw size (4) + metadata + sample, rounded
 * up to 8, must stay below 64 KiB.
 */
#define XDPCAP_MAX_SAMPLE_SIZE 65024u

/*
 * Largest frame kept whole: tcpdump's default snapshot length, and the largest
 * Wireshark reads for Ethernet. Segmentation-offload and GRO super-frames
 * exceed one record; such a frame travels as its first record (xdpcap_meta
 * and the first XDPCAP_MAX_SAMPLE_SIZE bytes) followed, in the same CPU's
 * ring, by parts: each an xdpcap_part and the next XDPCAP_MAX_SAMPLE_SIZE
 * bytes (fewer in the last). cap_len in the first record counts them all.
 */
#define XDPCAP_MAX_SNAPLEN 262144u
#define XDPCAP_MAX_PARTS ((XDPCAP_MAX_SNAPLEN + XDPCAP_MAX_SAMPLE_SIZE - 1u) / XDPCAP_MAX_SAMPLE_SIZE - 1u)

/*
 * --drops and trace mode build records in a per-CPU entry whose frame room is
 * twice one record's bytes (the bound the verifier proves for a copy at a varying
 * offset) plus this, for the MAC addresses and a tag put back in front.
 */
#define XDPCAP_GATHER_FRAME_SLACK 16u

/*
 * The most of a frame an XDP program reaches: bpf_xdp_load_bytes() takes no
 * offset above 0xffff, so one part at XDPCAP_MAX_SAMPLE_SIZE is the last.
 * Only generic XDP sees frames this long (GRO and GSO super-frames).
 */
#define XDPCAP_XDP_MAX_CAPTURE (2u * XDPCAP_MAX_SAMPLE_SIZE)

/* 'XDP' and 'b' (a batch of frames), ABI version in the low byte. */
#define XDPCAP_BATCH_MAGIC 0x58446200u
#define XDPCAP_BATCH_TAG (XDPCAP_BATCH_MAGIC | XDPCAP_ABI_VERSION)

/*
 * Several small frames per perf record: each CPU stages frames of at most
 * XDPCAP_BATCH_FRAME_MAX captured bytes in its xdpcap_stage entry and emits
 * them as one record, an xdpcap_batch followed by `bytes` bytes: each frame
 * as its own first record would carry it (xdpcap_meta, xdpcap_process with
 * XDPCAP_FLAG_PROCESS, cap_len bytes), padded to 8 bytes. A batch goes out
 * when the next frame does not fit, when it is full, before a frame that
 * goes out on its own, and when userspace runs the flush program on the CPU
 * (at each drain tick where frames wait, and when the capture stops).
 */
#define XDPCAP_BATCH_BYTES 16384u
#define XDPCAP_BATCH_FRAME_MAX 2048u
/*
 * Counter keys whose frames are staged: XDPCAP_COUNTERS_INGRESS, _EGRESS,
 * _DROPS, and trace mode's entry and exit of the first
 * XDPCAP_BATCH_TRACED traced programs (a libxdp dispatcher runs at most ten);
 * a further traced program's frames go out one per record.
 */
#define XDPCAP_BATCH_TRACED 10u
#define XDPCAP_BATCH_KEYS 23u /* XDPCAP_COUNTERS_TRACE(XDPCAP_BATCH_TRACED, 0) */

struct xdpcap_batch {
	__u32 tag;      /* XDPCAP_BATCH_TAG */
	__u32 frames;   /* frames that follow */
	__u32 bytes;    /* their bytes, each frame padded to 8 */
	__u32 reserved;
};

/* One counters key's frames in a CPU's batch, accounted for when it goes out. */
struct xdpcap_stage_key {
	__u32 frames;  /* staged frames of this key */
	__u32 carried; /* the drops_before handed to them */
};

/*
 * One CPU's staging entry (an mmap'able array indexed by CPU id): userspace
 * reads `batch.frames` and `oldest_ns` to know whether to run the flush
 * program on that CPU. The room behind `data`'s XDPCAP_BATCH_BYTES lets the
 * verifier prove a copy of up to one frame at any offset below them. The
 * keys come last: the first of them share a cache line, the rest are read
 * only at a flush.
 */
struct xdpcap_stage {
	__u64 oldest_ns;                        /* tstamp_ns of the first frame staged */
	__u32 busy;                             /* a program on this CPU is writing the entry */
	__u32 counters_base;                    /* the staged frames' interface: its counters_base */
	__u32 reserved[4];
	struct xdpcap_batch batch;              /* the record starts here */
	__u8 data[XDPCAP_BATCH_BYTES + XDPCAP_BATCH_FRAME_MAX + 144u];
	struct xdpcap_stage_key keys[XDPCAP_BATCH_KEYS]; /* by counters key */
	__u32 reserved_tail[2];
};

/*
 * The loop's sleep (an mmap'able array of one entry): userspace sets
 * `sleeping` before it waits in epoll with no timeout; the next frame
 * sampled clears it and puts a record in the `wakeups` ring buffer, whose
 * every record wakes the loop (a frame below a perf ring's watermark, or
 * staged, would not). One cache line of its own.
 */
struct xdpcap_wake {
	__u32 sleeping;
	__u32 reserved[15];
};

/* 'XDP' and 'r' (the rest of a frame), ABI version in the low byte. */
#define XDPCAP_PART_MAGIC 0x58447200u
#define XDPCAP_PART_TAG (XDPCAP_PART_MAGIC | XDPCAP_ABI_VERSION)

struct xdpcap_part {
	__u32 tag;       /* XDPCAP_PART_TAG */
	__u32 offset;    /* where this part's bytes start in the frame: a multiple of XDPCAP_MAX_SAMPLE_SIZE */
	__u64 tstamp_ns; /* the first record's tstamp_ns: whose part it is */
};

struct xdpcap_meta {
	__u32 tag;          /* XDPCAP_META_TAG */
	__u32 ifindex;      /* ingress interface */
	__u32 rx_queue;     /* RX queue index */
	__u32 orig_len;     /* full frame length, all fragments */
	__u32 cap_len;      /* bytes of frame captured: the first XDPCAP_MAX_SAMPLE_SIZE of them follow
	                     * this header, the rest follow in parts */
	__u32 drops_before; /* samples this CPU failed to output since its previous sample */
	__u64 tstamp_ns;    /* CLOCK_MONOTONIC */
	__u8 direction;     /* XDPCAP_DIR_*: the pcapng epb_flags direction value */
	__u8 hook;          /* XDPCAP_HOOK_*: which program took the sample */
	__u16 program;      /* trace mode: index of the traced program; else 0 */
	__u32 verdict;      /* trace mode: the traced program's verdict at exit; drops: the
	                     * kernel's enum skb_drop_reason; else 0 */
	__u32 hash;         /* with XDPCAP_FLAG_HASH: the NIC's RSS hash (received) or the skb's (sent) */
	__u16 hash_type;    /* received: the driver's enum xdp_rss_hash_type bits */
	__u16 flags;        /* XDPCAP_FLAG_* */
	__u64 location;     /* drops: the kernel code address that dropped it; else 0 */
};

/* Bits of xdpcap_meta.flags. */
#define XDPCAP_FLAG_HASH 0x1u          /* `hash` holds a hash */
#define XDPCAP_FLAG_VLAN_RESTORED 0x2u /* the tag the NIC took out is back in the sample */
#define XDPCAP_FLAG_GSO 0x4u           /* sent: a segmentation-offload super-frame */
#define XDPCAP_FLAG_CSUM_PARTIAL 0x8u  /* sent: the NIC fills the checksum in (CHECKSUM_PARTIAL) */
#define XDPCAP_FLAG_PROCESS 0x10u      /* an xdpcap_process follows the metadata, before the frame */
#define XDPCAP_FLAG_PEER 0x20u         /* with XDPCAP_FLAG_PROCESS: a second xdpcap_process follows the first */

/* How the tc programs read the skb's ip_summed (constant read_ip_summed). */
#define XDPCAP_IP_SUMMED_UNREAD 0u
#define XDPCAP_IP_SUMMED_PROBED 1u /* bpf_probe_read_kernel */
#define XDPCAP_IP_SUMMED_DIRECT 2u /* the kernel's sk_buff from bpf_cast_to_kern_ctx (6.2) */

/*
 * The helper number the tc programs call bpf_cast_to_kern_ctx by: no kernel
 * has such a helper. Userspace turns each such call into the kfunc's call
 * (its id from the kernel's BTF, which it reads anyway) before load, or
 * leaves it in code the verifier removes as dead. A kfunc named in the
 * object would make libbpf read and parse that BTF once more for every
 * interface's object.
 */
#define XDPCAP_KERN_CTX_CALL 0x7ffe
/* The same for the XDP RX metadata kfuncs in the capture program loaded
 * bound to the device (bpf_xdp_metadata_rx_vlan_tag, _rx_hash). */
#define XDPCAP_RX_VLAN_CALL 0x7ffd
#define XDPCAP_RX_HASH_CALL 0x7ffc

/*
 * Process attribution (-k and the process filters): the process that owns the
 * packet's local socket, as it was when that process created or last used the
 * socket. pid 0: no local socket, or none known to xdpcap (unknown).
 * With XDPCAP_FLAG_PEER two follow: the sender's when its socket is on this
 * host (else the receiver's), then the receiver's when both ends are.
 */
struct xdpcap_process {
	__u32 pid;       /* thread group id, in the initial pid namespace */
	__u32 tid;       /* the thread that last used the socket */
	__u64 cgroup_id; /* cgroup v2 id of that process; 0 when unknown */
	char comm[16];   /* its command name, NUL-padded */
};

/*
 * Received frames on a native device-bound XDP hook: what the NIC left in its
 * RX descriptor, read through the XDP RX metadata kfuncs by the capture
 * program bound to the device, or by the program in front of a filter and
 * handed on, per CPU, in map rx_meta.
 */
struct xdpcap_rx_meta {
	__u32 hash;       /* with XDPCAP_FLAG_HASH */
	__u16 hash_type;  /* enum xdp_rss_hash_type bits */
	__u16 flags;      /* XDPCAP_FLAG_HASH | XDPCAP_FLAG_VLAN_RESTORED */
	__u16 vlan_proto; /* with XDPCAP_FLAG_VLAN_RESTORED: network byte order */
	__u16 vlan_tci;   /* host byte order */
	__u32 reserved;
};

/* Values of xdpcap_meta.direction, equal to pcapng's epb_flags bits 0-1. */
#define XDPCAP_DIR_INGRESS 1u
#define XDPCAP_DIR_EGRESS 2u

/* Values of xdpcap_meta.hook. */
#define XDPCAP_HOOK_XDP 0u
#define XDPCAP_HOOK_TC_EGRESS 1u
#define XDPCAP_HOOK_FENTRY 2u /* trace mode: before the traced XDP program */
#define XDPCAP_HOOK_FEXIT 3u  /* trace mode: after it, with its verdict */
#define XDPCAP_HOOK_DROP 4u   /* skb:kfree_skb, with the drop reason and location */
#define XDPCAP_HOOK_TC_INGRESS 5u /* received frames at tc ingress (veth, and where XDP runs only generically) */

/* Keys of the per-CPU counters array: one entry per hook. */
#define XDPCAP_COUNTERS_INGRESS 0u /* XDP or tc ingress: one of them is attached */
#define XDPCAP_COUNTERS_EGRESS 1u
#define XDPCAP_COUNTERS_DROPS 2u /* --drops: drops on the interface */
#define XDPCAP_COUNTERS_ENTRY 3u /* trace mode, first traced program */
#define XDPCAP_COUNTERS_EXIT 4u
/* Entries of the array with at most one traced program; userspace grows it
 * to two more per further traced program. */
#define XDPCAP_COUNTERS_ENTRIES 5u
/* Trace mode: the key of traced program `program`'s entry (exit 0) or exit
 * (exit 1) hook point. */
#define XDPCAP_COUNTERS_TRACE(program, exit) (XDPCAP_COUNTERS_ENTRY + 2u * (program) + (exit))

/* One entry of the per-CPU counters array (key XDPCAP_COUNTERS_*). */
struct xdpcap_counters {
	__u64 seen;          /* packets the program ran on */
	__u64 matched;       /* of which the filter kept; counted only with a filter */
	__u64 sampled;       /* frames written into the ring, every record of them */
	__u64 output_failed; /* frames not written whole: bpf_perf_event_output errors, all causes */
	__u64 ring_full;     /* of which -ENOSPC: the CPU's ring was full */
	__u64 pending_drops; /* failures since the last frame written whole */
	__u64 sample_skipped; /* of `matched`, left out by --sample (one in N kept) */
	__u64 no_link_header; /* drops: frames dropped before they had an Ethernet header */
};

/*
 * --drops: the dropped skb as the drop programs and the filter in front of
 * them see it, per CPU. The filter reads `data` and `data_end` where trace
 * mode's reads an xdp_buff's, so both stay the first two members.
 */
struct xdpcap_drop_view {
	__u64 data;       /* kernel address of the Ethernet header */
	__u64 data_end;   /* end of the linear bytes */
	__u32 frame_len;  /* the whole frame, without a tag held in metadata */
	__u32 pkt_type;   /* PACKET_OUTGOING when sent, else PACKET_HOST */
	__u32 ifindex;
	__u16 flags;      /* XDPCAP_FLAG_VLAN_RESTORED: the tag below is the frame's */
	__u16 vlan_proto; /* network byte order */
	__u16 vlan_tci;
	__u8 direction;   /* XDPCAP_DIR_* */
	__u8 reserved;
	__u32 reason;
	__u64 location;
};

#define XDPCAP_PERF_HEADER_SIZE 8u  /* struct perf_event_header */
#define XDPCAP_RAW_SIZE_FIELD 4u    /* u32 in front of PERF_SAMPLE_RAW data */

#ifdef __cplusplus
static_assert(sizeof(struct xdpcap_meta) == 56, "xdpcap_meta ABI size");
static_assert(offsetof(struct xdpcap_meta, location) == 48, "xdpcap_meta ABI layout");
static_assert(sizeof(struct xdpcap_drop_view) == 48, "xdpcap_drop_view ABI size");
static_assert(offsetof(struct xdpcap_drop_view, data_end) == 8, "the filter reads data_end at 8");
static_assert(offsetof(struct xdpcap_drop_view, frame_len) == 16, "the filter reads frame_len at 16");
static_assert(offsetof(struct xdpcap_drop_view, pkt_type) == 20, "the filter reads pkt_type at 20");
static_assert(offsetof(struct xdpcap_drop_view, ifindex) == 24, "the filter reads ifindex at 24");
static_assert(offsetof(struct xdpcap_drop_view, flags) == 28, "the filter reads flags at 28");
static_assert(offsetof(struct xdpcap_drop_view, vlan_proto) == 30, "the filter reads the tag at 30");
static_assert(offsetof(struct xdpcap_drop_view, vlan_tci) == 32, "the filter reads the tag at 30");
static_assert(offsetof(struct xdpcap_meta, flags) == 46, "xdpcap_meta ABI layout");
static_assert(sizeof(struct xdpcap_rx_meta) == 16, "xdpcap_rx_meta ABI size");
static_assert(offsetof(struct xdpcap_rx_meta, vlan_tci) == 10, "xdpcap_rx_meta ABI layout");
static_assert(offsetof(struct xdpcap_meta, direction) == 32, "xdpcap_meta ABI layout");
static_assert(offsetof(struct xdpcap_meta, verdict) == 36, "xdpcap_meta ABI layout");
static_assert(offsetof(struct xdpcap_meta, program) == 34, "xdpcap_meta ABI layout");
static_assert(offsetof(struct xdpcap_meta, tstamp_ns) == 24, "xdpcap_meta ABI layout");
static_assert(sizeof(struct xdpcap_counters) == 64, "xdpcap_counters ABI size");
static_assert(offsetof(struct xdpcap_counters, seen) == 0, "the filter program increments seen at offset 0");
static_assert(offsetof(struct xdpcap_counters, sample_skipped) == 48, "xdpcap_counters ABI layout");
static_assert(sizeof(struct xdpcap_process) == 32, "xdpcap_process ABI size");
static_assert(offsetof(struct xdpcap_process, comm) == 16, "xdpcap_process ABI layout");
static_assert(XDPCAP_PERF_HEADER_SIZE + ((XDPCAP_RAW_SIZE_FIELD + 56u + 2u * 32u + XDPCAP_MAX_SAMPLE_SIZE + 7u) & ~7u) <= 0xffffu,
              "largest perf record must fit the u16 size field");
static_assert(sizeof(struct xdpcap_part) == 16, "xdpcap_part ABI size");
static_assert(sizeof(struct xdpcap_batch) == 16, "xdpcap_batch ABI size");
static_assert(offsetof(struct xdpcap_stage, batch) == 32, "xdpcap_stage ABI layout");
static_assert(sizeof(struct xdpcap_stage) % 64 == 0, "CPUs' staging entries share no cache line");
static_assert(sizeof(struct xdpcap_wake) == 64, "xdpcap_wake ABI size");
static_assert(XDPCAP_BATCH_KEYS == XDPCAP_COUNTERS_TRACE(XDPCAP_BATCH_TRACED, 0), "staged keys: the capture hooks', drops', traced programs'");
static_assert(XDPCAP_BATCH_BYTES + sizeof(struct xdpcap_batch) + 12u + 8u < 0xffffu, "a batch fits one perf record");
static_assert(offsetof(struct xdpcap_part, tstamp_ns) == 8, "xdpcap_part ABI layout");
static_assert(XDPCAP_MAX_PARTS == 4u, "a 262144-byte frame is its first record and four parts");
static_assert(XDPCAP_MAX_SAMPLE_SIZE % 8u == 0, "parts start 8-byte aligned in the frame");
static_assert(XDPCAP_XDP_MAX_CAPTURE - XDPCAP_MAX_SAMPLE_SIZE <= 0xffffu, "an XDP part starts below 64 KiB");
#else
_Static_assert(sizeof(struct xdpcap_meta) == 56, "xdpcap_meta ABI size");
_Static_assert(__builtin_offsetof(struct xdpcap_meta, location) == 48, "xdpcap_meta ABI layout");
_Static_assert(sizeof(struct xdpcap_drop_view) == 48, "xdpcap_drop_view ABI size");
_Static_assert(__builtin_offsetof(struct xdpcap_drop_view, data_end) == 8, "xdpcap_drop_view ABI layout");
_Static_assert(__builtin_offsetof(struct xdpcap_drop_view, frame_len) == 16, "xdpcap_drop_view ABI layout");
_Static_assert(__builtin_offsetof(struct xdpcap_drop_view, vlan_tci) == 32, "xdpcap_drop_view ABI layout");
_Static_assert(__builtin_offsetof(struct xdpcap_meta, flags) == 46, "xdpcap_meta ABI layout");
_Static_assert(sizeof(struct xdpcap_rx_meta) == 16, "xdpcap_rx_meta ABI size");
_Static_assert(__builtin_offsetof(struct xdpcap_rx_meta, vlan_tci) == 10, "xdpcap_rx_meta ABI layout");
_Static_assert(__builtin_offsetof(struct xdpcap_meta, direction) == 32, "xdpcap_meta ABI layout");
_Static_assert(__builtin_offsetof(struct xdpcap_meta, verdict) == 36, "xdpcap_meta ABI layout");
_Static_assert(__builtin_offsetof(struct xdpcap_meta, program) == 34, "xdpcap_meta ABI layout");
_Static_assert(__builtin_offsetof(struct xdpcap_meta, tstamp_ns) == 24, "xdpcap_meta ABI layout");
_Static_assert(sizeof(struct xdpcap_counters) == 64, "xdpcap_counters ABI size");
_Static_assert(__builtin_offsetof(struct xdpcap_counters, seen) == 0, "xdpcap_counters ABI layout");
_Static_assert(__builtin_offsetof(struct xdpcap_counters, sample_skipped) == 48, "xdpcap_counters ABI layout");
_Static_assert(sizeof(struct xdpcap_process) == 32, "xdpcap_process ABI size");
_Static_assert(__builtin_offsetof(struct xdpcap_process, comm) == 16, "xdpcap_process ABI layout");
_Static_assert(sizeof(struct xdpcap_part) == 16, "xdpcap_part ABI size");
_Static_assert(sizeof(struct xdpcap_batch) == 16, "xdpcap_batch ABI size");
_Static_assert(__builtin_offsetof(struct xdpcap_stage, batch) == 32, "xdpcap_stage ABI layout");
_Static_assert(sizeof(struct xdpcap_stage) % 64 == 0, "CPUs' staging entries share no cache line");
_Static_assert(sizeof(struct xdpcap_wake) == 64, "xdpcap_wake ABI size");
_Static_assert(XDPCAP_BATCH_KEYS == XDPCAP_COUNTERS_TRACE(XDPCAP_BATCH_TRACED, 0), "staged keys: the capture hooks', drops', traced programs'");
_Static_assert(__builtin_offsetof(struct xdpcap_part, tstamp_ns) == 8, "xdpcap_part ABI layout");
_Static_assert(XDPCAP_MAX_PARTS == 4u, "a 262144-byte frame is its first record and four parts");
#endif

#endif /* XDPCAP_ABI_H */
