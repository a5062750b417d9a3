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
#include <bpf/bpf_endian.h>
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

/*
 * A TCP connection's owner by its addresses and ports, kept from the first
 * FIN that passes while the socket is still whole: its last packets are
 * handled by a time-wait socket, or the kernel's own, which no process owns.
 */
struct connection_key {
	__u8 family;
	__u8 reserved;
	__be16 local_port;
	__be16 remote_port;
	__u16 reserved2;
	__u8 local[16];
	__u8 remote[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct connection_key);
	__type(value, struct socket_owner);
} closing_owners SEC(".maps");

/*
 * The other network namespaces of this host that the capture namespace has
 * an id for (a veth's peer's, a container's), by that id plus one (0 ends
 * the list), filled by userspace at start: a packet's ends may be sockets
 * there, as when a host-side veth or bridge carries containers' packets.
 */
#define XDPCAP_PEER_NETNS 8

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPCAP_PEER_NETNS);
	__type(key, __u32);
	__type(value, __u32);
} peer_netns SEC(".maps");

/*
 * The addresses (and broadcast addresses) of the capture namespace (netns
 * 0) and of each peer_netns entry (netns: its index plus one), filled by
 * userspace at start: a socket bound to the wildcard address owns only
 * packets to (or, sent, from) one of its namespace's. A packet the host
 * forwards names nobody, even when a local listener has its port.
 */
struct local_address {
	__u8 family; /* 4 or 6 */
	__u8 netns;
	__u8 reserved[2];
	__u8 addr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct local_address);
	__type(value, __u8);
} local_addresses SEC(".maps");

/*
 * Sockets that existed before the capture started, as userspace learned
 * them from sock_diag and /proc: it cannot see a socket's address, so they
 * are keyed by what the socket itself reports. A connection by both ends;
 * a listener or an unconnected UDP socket by its local end with the remote
 * one zero (and its address zero when bound to the wildcard).
 */
struct existing_key {
	__u8 family; /* 4 or 6, as the socket's own: an IPv6 socket's IPv4 peers are v4-mapped */
	__u8 protocol;
	__be16 local_port;
	__be16 remote_port;
	__u16 reserved;
	__u8 local[16];
	__u8 remote[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct existing_key);
	__type(value, struct socket_owner);
} existing_owners SEC(".maps");

/*
 * -- COMMAND: the next hops its packets waited on while their link-layer
 * address was resolved, by address (struct local_address's layout), with
 * the command's owner. Their ARP and NDP explain its traffic and are kept.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct local_address);
	__type(value, struct socket_owner);
} neigh_owners SEC(".maps");

static __always_inline const struct socket_owner *owner_of(__u64 sock)
{
	if (!sock)
		return 0;
	return bpf_map_lookup_elem(&socket_owners, &sock);
}

/*
 * A socket's owner: recorded by the hooks since the start, else the one
 * userspace learned at start. A connection of a listener that existed then,
 * until a process accepts it, is the listener's: its local end with no
 * remote one, bound to that address or the wildcard.
 */
static __always_inline const struct socket_owner *sock_owner(struct bpf_sock *sk)
{
	const struct socket_owner *owner = owner_of((__u64)sk);
	if (owner)
		return owner;
	struct existing_key key = {};
	key.protocol = (__u8)sk->protocol;
	key.local_port = bpf_htons((__u16)sk->src_port);
	key.remote_port = (__be16)sk->dst_port;
	if (sk->family == 2 /* AF_INET */) {
		key.family = 4;
		__u32 local = sk->src_ip4;
		__u32 remote = sk->dst_ip4;
		__builtin_memcpy(key.local, &local, 4);
		__builtin_memcpy(key.remote, &remote, 4);
	} else {
		key.family = 6;
		__u32 *local = (__u32 *)key.local;
		__u32 *remote = (__u32 *)key.remote;
		local[0] = sk->src_ip6[0];
		local[1] = sk->src_ip6[1];
		local[2] = sk->src_ip6[2];
		local[3] = sk->src_ip6[3];
		remote[0] = sk->dst_ip6[0];
		remote[1] = sk->dst_ip6[1];
		remote[2] = sk->dst_ip6[2];
		remote[3] = sk->dst_ip6[3];
	}
	owner = bpf_map_lookup_elem(&existing_owners, &key);
	if (owner)
		return owner;
	if (key.remote_port) {
		key.remote_port = 0;
		__builtin_memset(key.remote, 0, sizeof(key.remote));
		owner = bpf_map_lookup_elem(&existing_owners, &key);
		if (owner)
			return owner;
	}
	__builtin_memset(key.local, 0, sizeof(key.local));
	return bpf_map_lookup_elem(&existing_owners, &key);
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
