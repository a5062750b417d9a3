// SPDX-License-Identifier: GPL-2.0-only
/*
 * Process attribution (-k, the process filters): programs that run in the
 * context of the process that creates, connects, accepts, sends or
 * receives on a socket. Each records that process as the socket's owner in
 * socket_owners, with its command name taken then, so that a process that
 * exits at once is still named. A socket a listener clones in softirq
 * inherits the listener's owner; a freed socket's entry goes.
 *
 * Two sets, one loaded (programs/owners.cpp chooses): kprobes on the socket
 * security hooks where the kernel has kprobe events; else hooks on the
 * cgroup v2 root (socket creation, connect, UDP sendmsg) and raw
 * tracepoints (TCP sendmsg, sock_send_length, sock_recv_length,
 * inet_sock_set_state). They only read and allow: no socket, task or
 * verdict changes.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ancestry.h"
#include "netns.h"
#include "process.h"

/* Just the members read here; CO-RE relocates them against the running
 * kernel's BTF. */
struct sock_common {
	unsigned short skc_family;
	__u16 skc_num; /* the local port, host order */
	struct {
		struct net *net;
	} skc_net;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	__u8 sk_kern_sock : 1;
} __attribute__((preserve_access_index));

struct socket {
	struct sock *sk;
} __attribute__((preserve_access_index));

/* The process filters, set by userspace before load; unset ones keep all. */
const volatile __u32 want_pid = 0;          /* --pid, -- COMMAND */
const volatile __u8 want_descendants = 0;   /* and the processes it starts */
const volatile __u8 match_comm = 0;         /* --comm */
const volatile char want_comm[16] = {};
const volatile __u64 want_cgroup = 0;       /* --cgroup, --container */
const volatile __u32 want_cgroup_level = 0; /* its depth below the root */

static __always_inline int wanted(const struct xdpcap_process *p)
{
	if (want_pid && p->pid != want_pid && !(want_descendants && descends_from(want_pid)))
		return 0;
	if (match_comm) {
#pragma unroll
		for (int i = 0; i < 16; i++) {
			if (p->comm[i] != want_comm[i])
				return 0;
			if (!p->comm[i])
				break;
		}
	}
	if (want_cgroup && bpf_get_current_ancestor_cgroup_id(want_cgroup_level) != want_cgroup)
		return 0;
	return 1;
}

static __always_inline int same_owner(const struct xdpcap_process *a, const struct xdpcap_process *b)
{
	const __u64 *x = (const __u64 *)a->comm;
	const __u64 *y = (const __u64 *)b->comm;
	return a->pid == b->pid && a->tid == b->tid && a->cgroup_id == b->cgroup_id && x[0] == y[0] && x[1] == y[1];
}

/* The process the program runs in the context of. */
static __always_inline void current_process(struct xdpcap_process *p)
{
	const __u64 id = bpf_get_current_pid_tgid();
	p->pid = (__u32)(id >> 32);
	p->tid = (__u32)id;
	p->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(p->comm, sizeof(p->comm));
}

/* The current process now owns the socket at `sock`. */
static __always_inline void record_owner_of(__u64 sock)
{
	struct socket_owner owner = {};
	current_process(&owner.process);
	const struct socket_owner *known = bpf_map_lookup_elem(&socket_owners, &sock);
	/* Every send and receive comes here: rewrite only what changed. */
	if (known && same_owner(&known->process, &owner.process))
		return;
	owner.wanted = wanted(&owner.process);
	bpf_map_update_elem(&socket_owners, &sock, &owner, BPF_ANY);
}

/* The same for a socket the kernel may have made for itself. */
static __always_inline void record_owner(struct sock *sk)
{
	if (!sk || BPF_CORE_READ_BITFIELD_PROBED(sk, sk_kern_sock))
		return;
	record_owner_of((__u64)sk);
}

/* --- Where the kernel has kprobe events --- */

SEC("kprobe/security_socket_post_create")
int BPF_KPROBE(xdpcap_socket_created, struct socket *sock)
{
	record_owner(BPF_CORE_READ(sock, sk));
	return 0;
}

SEC("kprobe/security_socket_connect")
int BPF_KPROBE(xdpcap_socket_connect, struct socket *sock)
{
	record_owner(BPF_CORE_READ(sock, sk));
	return 0;
}

SEC("kprobe/security_socket_sendmsg")
int BPF_KPROBE(xdpcap_socket_sendmsg, struct socket *sock)
{
	record_owner(BPF_CORE_READ(sock, sk));
	return 0;
}

SEC("kprobe/security_socket_recvmsg")
int BPF_KPROBE(xdpcap_socket_recvmsg, struct socket *sock)
{
	record_owner(BPF_CORE_READ(sock, sk));
	return 0;
}

/* accept(): the new socket joins the accepting process. */
SEC("kprobe/security_sock_graft")
int BPF_KPROBE(xdpcap_socket_accepted, struct sock *sk)
{
	record_owner(sk);
	return 0;
}

/* A listener's child, made in softirq when the handshake completes: the
 * listener's owner until a process accepts it. */
SEC("kprobe/security_sk_clone")
int BPF_KPROBE(xdpcap_socket_cloned, struct sock *parent, struct sock *child)
{
	__u64 parent_key = (__u64)parent;
	const struct socket_owner *owner = bpf_map_lookup_elem(&socket_owners, &parent_key);
	if (!owner)
		return 0;
	struct socket_owner copy = *owner;
	__u64 child_key = (__u64)child;
	bpf_map_update_elem(&socket_owners, &child_key, &copy, BPF_ANY);
	return 0;
}

/* The address may hold another socket next. */
SEC("kprobe/security_sk_free")
int BPF_KPROBE(xdpcap_socket_freed, struct sock *sk)
{
	__u64 key = (__u64)sk;
	bpf_map_delete_elem(&socket_owners, &key);
	return 0;
}

/* --- Elsewhere: the cgroup v2 root's socket hooks and raw tracepoints --- */

/* A user socket, made by the process now running (inet_create). */
SEC("cgroup/sock_create")
int xdpcap_cgroup_sock_create(struct bpf_sock *sk)
{
	record_owner_of((__u64)sk);
	return 1;
}

/* Only user sockets reach the cgroup hooks. */
static __always_inline int record_addr_user(struct bpf_sock_addr *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	if (sk)
		record_owner_of((__u64)sk);
	return 1;
}

SEC("cgroup/connect4")
int xdpcap_cgroup_connect4(struct bpf_sock_addr *ctx)
{
	return record_addr_user(ctx);
}

SEC("cgroup/connect6")
int xdpcap_cgroup_connect6(struct bpf_sock_addr *ctx)
{
	return record_addr_user(ctx);
}

/* UDP sends with an address, before the datagram leaves. */
SEC("cgroup/sendmsg4")
int xdpcap_cgroup_sendmsg4(struct bpf_sock_addr *ctx)
{
	return record_addr_user(ctx);
}

SEC("cgroup/sendmsg6")
int xdpcap_cgroup_sendmsg6(struct bpf_sock_addr *ctx)
{
	return record_addr_user(ctx);
}

/* TCP sends, before the data is queued (Linux 6.10 and later). */
SEC("raw_tp/tcp_sendmsg_locked")
int xdpcap_tcp_sendmsg(struct bpf_raw_tracepoint_args *ctx)
{
	record_owner((struct sock *)ctx->args[0]);
	return 0;
}

/* Any send or receive, once done (Linux 6.4 and later): the owner of the
 * packets that follow. */
SEC("raw_tp/sock_send_length")
int xdpcap_sock_sent(struct bpf_raw_tracepoint_args *ctx)
{
	record_owner((struct sock *)ctx->args[0]);
	return 0;
}

SEC("raw_tp/sock_recv_length")
int xdpcap_sock_received(struct bpf_raw_tracepoint_args *ctx)
{
	record_owner((struct sock *)ctx->args[0]);
	return 0;
}

#define TCP_SYN_RECV 3
#define TCP_CLOSE 7
#define TCP_LISTEN 10

/* A listening socket's owner, by namespace, family and port: a child the
 * listener makes in softirq names no listener, only its own local port. */
struct listener_key {
	__u32 netns;
	__u16 family;
	__u16 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct listener_key);
	__type(value, struct socket_owner);
} listener_owners SEC(".maps");

static __always_inline void listener_key_of(struct sock *sk, struct listener_key *key)
{
	key->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	key->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	key->port = BPF_CORE_READ(sk, __sk_common.skc_num);
}

/* TCP state changes: listen() (in the listening process), a listener's
 * child (softirq), a socket's close. */
SEC("raw_tp/inet_sock_set_state")
int xdpcap_tcp_state(struct bpf_raw_tracepoint_args *ctx)
{
	struct sock *sk = (struct sock *)ctx->args[0];
	const int old_state = (int)ctx->args[1];
	const int new_state = (int)ctx->args[2];
	struct listener_key key = {};
	__u64 sock = (__u64)sk;
	if (new_state == TCP_LISTEN) {
		record_owner(sk);
		const struct socket_owner *owner = bpf_map_lookup_elem(&socket_owners, &sock);
		if (owner) {
			struct socket_owner copy = *owner;
			listener_key_of(sk, &key);
			bpf_map_update_elem(&listener_owners, &key, &copy, BPF_ANY);
		}
	} else if (old_state == TCP_LISTEN && new_state == TCP_SYN_RECV) {
		listener_key_of(sk, &key);
		const struct socket_owner *owner = bpf_map_lookup_elem(&listener_owners, &key);
		if (owner) {
			struct socket_owner copy = *owner;
			bpf_map_update_elem(&socket_owners, &sock, &copy, BPF_ANY);
		} else {
			/* Without a hook on a socket's free (no kprobes), a freed
			 * socket's entry can outlive it: a connection a listener of
			 * unknown owner clones at that address is not that owner's. */
			bpf_map_delete_elem(&socket_owners, &sock);
		}
	} else if (new_state == TCP_CLOSE && old_state == TCP_LISTEN) {
		listener_key_of(sk, &key);
		bpf_map_delete_elem(&listener_owners, &key);
		bpf_map_delete_elem(&socket_owners, &sock);
	}
	return 0;
}

/* -- COMMAND, set by userspace: note the next hops its packets wait on. */
const volatile __u8 note_neighbours = 0;

struct neigh_table {
	int family;
} __attribute__((preserve_access_index));

struct neighbour {
	struct neigh_table *tbl;
	unsigned char primary_key[0];
} __attribute__((preserve_access_index));

#define AF_INET_ 2
#define AF_INET6_ 10

/* A packet waits for its next hop's link-layer address, in the context of
 * the process that sends it (its first packet to that hop): if that process
 * is wanted, the hop's ARP or NDP is its too. */
SEC("raw_tp/neigh_event_send_done")
int xdpcap_neighbour_wait(struct bpf_raw_tracepoint_args *ctx)
{
	if (!note_neighbours)
		return 0;
	const struct neighbour *n = (const struct neighbour *)ctx->args[0];
	struct socket_owner owner = {};
	current_process(&owner.process);
	if (!wanted(&owner.process))
		return 0;
	owner.wanted = 1;
	struct local_address key = {};
	const int family = BPF_CORE_READ(n, tbl, family);
	if (family == AF_INET_) {
		key.family = 4;
		if (bpf_core_read(key.addr, 4, &n->primary_key))
			return 0;
	} else if (family == AF_INET6_) {
		key.family = 6;
		if (bpf_core_read(key.addr, 16, &n->primary_key))
			return 0;
	} else {
		return 0;
	}
	bpf_map_update_elem(&neigh_owners, &key, &owner, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
