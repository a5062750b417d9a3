/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Process attribution: which process owns a packet's local socket. The
 * kprobes of owners.bpf.c record a socket's owner, keyed by the address of
 * its struct sock, whenever a process creates, connects, accepts, sends or
 * receives on it; the capture hooks find the socket and read the owner.
 * Nothing here reads `current`: at the hooks it is whatever task the softirq
 * interrupted.
 */
#ifndef XDPCAP_PROCESS_H
#define XDPCAP_PROCESS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xdpcap_abi.h"

struct socket_owner {
	struct xdpcap_process process;
	__u32 wanted; /* the process filters keep this owner */
	__u32 reserved;
};

/* Created by the owners object, shared with every capture object. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* the struct sock's address */
	__type(value, struct socket_owner);
} socket_owners SEC(".maps");

/*
 * ICMP echo has no socket the stack looks up for a reply: the owner of an
 * echo request that left, by (identifier, local and remote address), names
 * the reply.
 */
struct echo_key {
	__u8 family; /* 4 or 6 */
	__u8 reserved;
	__be16 id;
	__u32 reserved2;
	__u8 local[16];
	__u8 remote[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct echo_key);
	__type(value, struct socket_owner);
} echo_owners SEC(".maps");

static __always_inline const struct socket_owner *owner_of(__u64 sock)
{
	if (!sock)
		return 0;
	return bpf_map_lookup_elem(&socket_owners, &sock);
}

/* The record's process part: the owner, or all zero (unknown). */
static __always_inline void describe_owner(struct xdpcap_process *process, const struct socket_owner *owner)
{
	if (owner) {
		*process = owner->process;
	} else {
		process->pid = 0;
		process->tid = 0;
		process->cgroup_id = 0;
		__builtin_memset(process->comm, 0, sizeof(process->comm));
	}
}

static __always_inline int owner_wanted(const struct socket_owner *owner)
{
	return owner && owner->wanted;
}

#endif /* XDPCAP_PROCESS_H */
