// SPDX-License-Identifier: GPL-2.0-only
/*
 * The capture hooks: XDP or tc ingress for received frames, tc egress for
 * sent ones. Each samples every packet into the CPU's perf ring behind an
 * xdpcap_meta header and never changes the traffic.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "rx_meta.h"
#include "sample.h"
#include "process.h"

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
	__u8 head[XDPCAP_HEAD_ROOM]; /* the metadata (and process) end where the frame starts */
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
					  struct xdpcap_meta *meta, const struct xdpcap_process process[2], __u16 proto_be,
					  __u16 tci)
{
	if (stage_frame(ctx, from, c, meta, process, 1, proto_be, tci))
		return;
	__u32 key = bpf_get_smp_processor_id();
	struct wire_frame *w = bpf_map_lookup_elem(&wire_scratch, &key);
	if (!w || frame_len < ETH_ADDRS_LEN) {
		account_output(c, -EFAULT);
		return;
	}
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
	__u64 head_len;
	__u8 *record = place_head(w->head, meta, process, &head_len);
	__u64 size = head_len + cap_len;
	asm volatile("" : "+r"(size));
	if (size > head_len + XDPCAP_MAX_SAMPLE_SIZE || size > head_len + limit)
		return account_output(c, -EFAULT);
	long err = bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, record, size);
	if (!err)
		err = output_parts(ctx, from, 0, meta, VLAN_TAG_LEN);
	account_output(c, err);
}

#define VLAN_ETHERTYPE_8021Q 0x8100
#define VLAN_ETHERTYPE_8021AD 0x88a8
#define ICMP_ECHO_REQUEST 8
#define ICMP_ECHO_REPLY 0
#define ICMPV6_ECHO_REQUEST 128
#define ICMPV6_ECHO_REPLY 129

/* A frame's transport endpoints, as far as attribution needs them. */
struct flow {
	struct bpf_sock_tuple tuple; /* as the packet has them: source first */
	__u32 tuple_len;             /* of tuple.ipv4 or tuple.ipv6 */
	__u8 family;                 /* 4 or 6; 0: neither */
	__u8 protocol;               /* IPPROTO_TCP, _UDP, _ICMP, _ICMPV6 */
	__u8 icmp_type;
	__u8 tcp_flags;
	__be16 echo_id;
	__be16 eth_proto; /* after any VLAN tags */
	__u16 l3_offset;  /* from the frame's start */
	__u16 l4_offset;
};

#define TCP_FLAG_FIN 0x01

struct vlan_header {
	__be16 tci;
	__be16 proto;
};

#define ICMP_DEST_UNREACH 3
#define ICMP_SOURCE_QUENCH 4
#define ICMP_REDIRECT 5
#define ICMP_TIME_EXCEEDED 11
#define ICMP_PARAMETERPROB 12

/* An ICMP or ICMPv6 error, which quotes the packet it is about. */
static __always_inline int icmp_error(const struct flow *f)
{
	const __u8 t = f->icmp_type;
	if (f->family == 4)
		return f->protocol == IPPROTO_ICMP &&
		       (t == ICMP_DEST_UNREACH || t == ICMP_SOURCE_QUENCH || t == ICMP_REDIRECT ||
			t == ICMP_TIME_EXCEEDED || t == ICMP_PARAMETERPROB);
	return f->protocol == IPPROTO_ICMPV6 && t >= 1 && t <= 4;
}

/* An ICMP error about a TCP or UDP packet belongs to that packet's socket:
 * the quoted packet's ends, turned round, become the flow's, as if the
 * error were a packet of that connection coming in. Unchanged otherwise. */
static __always_inline void parse_quoted(struct flow *f, void *quoted, void *data_end)
{
	if (f->family == 4) {
		struct iphdr *ip = quoted;
		if ((void *)(ip + 1) > data_end || ip->ihl < 5 || (ip->frag_off & bpf_htons(0x1fff)))
			return;
		if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
			return;
		__be16 *ports = quoted + ip->ihl * 4;
		if ((void *)(ports + 2) > data_end)
			return;
		f->tuple.ipv4.saddr = ip->daddr;
		f->tuple.ipv4.daddr = ip->saddr;
		f->tuple.ipv4.sport = ports[1];
		f->tuple.ipv4.dport = ports[0];
		f->protocol = ip->protocol;
	} else {
		struct ipv6hdr *ip6 = quoted;
		if ((void *)(ip6 + 1) > data_end)
			return;
		if (ip6->nexthdr != IPPROTO_TCP && ip6->nexthdr != IPPROTO_UDP)
			return;
		__be16 *ports = (void *)(ip6 + 1);
		if ((void *)(ports + 2) > data_end)
			return;
		__builtin_memcpy(f->tuple.ipv6.saddr, &ip6->daddr, 16);
		__builtin_memcpy(f->tuple.ipv6.daddr, &ip6->saddr, 16);
		f->tuple.ipv6.sport = ports[1];
		f->tuple.ipv6.dport = ports[0];
		f->protocol = ip6->nexthdr;
	}
	f->tcp_flags = 0;
}

/* Reads the frame's addresses and ports (or echo identifier) from the
 * linear bytes; family 0 when they are not there. IPv6 extension headers
 * and later IPv4 fragments are not followed. */
static __always_inline void parse_flow(void *data, void *data_end, struct flow *f)
{
	f->family = 0;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return;
	__be16 proto = eth->h_proto;
	void *l3 = eth + 1;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (proto != bpf_htons(VLAN_ETHERTYPE_8021Q) && proto != bpf_htons(VLAN_ETHERTYPE_8021AD))
			break;
		struct vlan_header *vlan = l3;
		if ((void *)(vlan + 1) > data_end)
			return;
		proto = vlan->proto;
		l3 = vlan + 1;
	}
	f->eth_proto = proto;
	f->l3_offset = l3 - data;
	void *l4;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		if ((void *)(ip + 1) > data_end || ip->ihl < 5 || (ip->frag_off & bpf_htons(0x1fff)))
			return;
		f->tuple.ipv4.saddr = ip->saddr;
		f->tuple.ipv4.daddr = ip->daddr;
		f->tuple_len = sizeof(f->tuple.ipv4);
		f->protocol = ip->protocol;
		f->family = 4;
		l4 = l3 + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;
		if ((void *)(ip6 + 1) > data_end)
			return;
		__builtin_memcpy(f->tuple.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(f->tuple.ipv6.daddr, &ip6->daddr, 16);
		f->tuple_len = sizeof(f->tuple.ipv6);
		f->protocol = ip6->nexthdr;
		f->family = 6;
		l4 = ip6 + 1;
	} else {
		return;
	}
	__be16 *words = l4;
	if ((void *)(words + 4) > data_end) {
		f->family = 0;
		return;
	}
	f->l4_offset = l4 - data;
	if (f->protocol == IPPROTO_ICMP || f->protocol == IPPROTO_ICMPV6) {
		/* type, code, checksum, identifier */
		f->icmp_type = *(__u8 *)words;
		f->echo_id = words[2];
		if (icmp_error(f))
			parse_quoted(f, l4 + 8, data_end);
		return;
	}
	if (f->family == 4) {
		f->tuple.ipv4.sport = words[0];
		f->tuple.ipv4.dport = words[1];
	} else {
		f->tuple.ipv6.sport = words[0];
		f->tuple.ipv6.dport = words[1];
	}
	if (f->protocol == IPPROTO_TCP) {
		__u8 *flags = l4 + 13;
		if ((void *)(flags + 1) > data_end) {
			f->family = 0;
			return;
		}
		f->tcp_flags = *flags;
	}
}

/* A TCP packet's connection, local end first; zero family if not TCP. */
static __always_inline void connection_of(const struct flow *f, int sent, struct connection_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	if (f->protocol != IPPROTO_TCP || !f->family)
		return;
	key->family = f->family;
	if (f->family == 4) {
		key->local_port = sent ? f->tuple.ipv4.sport : f->tuple.ipv4.dport;
		key->remote_port = sent ? f->tuple.ipv4.dport : f->tuple.ipv4.sport;
		__builtin_memcpy(key->local, sent ? &f->tuple.ipv4.saddr : &f->tuple.ipv4.daddr, 4);
		__builtin_memcpy(key->remote, sent ? &f->tuple.ipv4.daddr : &f->tuple.ipv4.saddr, 4);
	} else {
		key->local_port = sent ? f->tuple.ipv6.sport : f->tuple.ipv6.dport;
		key->remote_port = sent ? f->tuple.ipv6.dport : f->tuple.ipv6.sport;
		__builtin_memcpy(key->local, sent ? f->tuple.ipv6.saddr : f->tuple.ipv6.daddr, 16);
		__builtin_memcpy(key->remote, sent ? f->tuple.ipv6.daddr : f->tuple.ipv6.saddr, 16);
	}
}

/* A whole socket's owner, kept for the connection's last packets once one
 * of them closes it; else, with no owner at hand, the one kept. */
static __always_inline const struct socket_owner *connection_owner(const struct flow *f, int sent,
								   const struct socket_owner *owner)
{
	if (f->protocol != IPPROTO_TCP || (owner && !(f->tcp_flags & TCP_FLAG_FIN)))
		return owner;
	struct connection_key key;
	connection_of(f, sent, &key);
	if (!key.family)
		return owner;
	if (owner) {
		bpf_map_update_elem(&closing_owners, &key, owner, BPF_ANY);
		return owner;
	}
	return bpf_map_lookup_elem(&closing_owners, &key);
}

/* The echo flow of an ICMP echo packet: `sent` an echo request that left,
 * else a reply that came in. Zero family when it is neither. */
static __always_inline void echo_key_of(const struct flow *f, int sent, struct echo_key *key)
{
	key->family = 0;
	const __u8 request = f->protocol == IPPROTO_ICMP ? ICMP_ECHO_REQUEST : ICMPV6_ECHO_REQUEST;
	const __u8 reply = f->protocol == IPPROTO_ICMP ? ICMP_ECHO_REPLY : ICMPV6_ECHO_REPLY;
	if ((f->family == 4 && f->protocol != IPPROTO_ICMP) || (f->family == 6 && f->protocol != IPPROTO_ICMPV6) ||
	    f->icmp_type != (sent ? request : reply))
		return;
	__builtin_memset(key, 0, sizeof(*key));
	key->family = f->family;
	key->id = f->echo_id;
	/* Sent: source is local. Received: destination is. */
	if (f->family == 4) {
		__builtin_memcpy(key->local, sent ? &f->tuple.ipv4.saddr : &f->tuple.ipv4.daddr, 4);
		__builtin_memcpy(key->remote, sent ? &f->tuple.ipv4.daddr : &f->tuple.ipv4.saddr, 4);
	} else {
		__builtin_memcpy(key->local, sent ? f->tuple.ipv6.saddr : f->tuple.ipv6.daddr, 16);
		__builtin_memcpy(key->remote, sent ? f->tuple.ipv6.daddr : f->tuple.ipv6.saddr, 16);
	}
}

/* Bound to no address of its own (0.0.0.0 or ::): a listener or an
 * unconnected datagram socket that takes any local address. */
static __always_inline int wildcard_bound(struct bpf_sock *sk)
{
	if (sk->family == 2 /* AF_INET */)
		return sk->src_ip4 == 0;
	return (sk->src_ip6[0] | sk->src_ip6[1] | sk->src_ip6[2] | sk->src_ip6[3]) == 0;
}

/* `addr` (of `family`) is one of the addresses of the namespace tagged
 * `netns` in local_addresses (0: the capture namespace). */
static __always_inline int address_of(__u8 family, const void *addr, __u8 netns)
{
	struct local_address key = {};
	key.family = family;
	key.netns = netns;
	if (family == 4)
		__builtin_memcpy(key.addr, addr, 4);
	else
		__builtin_memcpy(key.addr, addr, 16);
	return bpf_map_lookup_elem(&local_addresses, &key) != 0;
}

/* The destination is that namespace's: one of its addresses or broadcast
 * addresses, or multicast (IPv4 224/4 and 255.255.255.255, IPv6 ff00::/8). */
static __always_inline int to_namespace(const struct flow *f, __u8 netns)
{
	if (f->family == 4) {
		const __u32 dst = bpf_ntohl(f->tuple.ipv4.daddr);
		if ((dst >> 28) == 0xe || dst == 0xffffffffu)
			return 1;
		return address_of(4, &f->tuple.ipv4.daddr, netns);
	}
	if (((const __u8 *)f->tuple.ipv6.daddr)[0] == 0xff)
		return 1;
	return address_of(6, f->tuple.ipv6.daddr, netns);
}

#define ETH_P_ARP_ 0x0806
#define NDP_NEIGHBOUR_SOLICIT 135
#define NDP_NEIGHBOUR_ADVERT 136

/* -- COMMAND: an ARP or NDP packet about a next hop the command's packets
 * waited on is the command's. ARP for IPv4 over Ethernet: the sender's and
 * the target's protocol address; NDP: the target address. */
static __always_inline const struct socket_owner *neighbour_owner(const struct flow *f, void *data, void *data_end)
{
	struct local_address key = {};
	if (f->eth_proto == bpf_htons(ETH_P_ARP_)) {
		__u8 *arp = data + (f->l3_offset & 0xff);
		if ((void *)(arp + 28) > data_end || arp[4] != 6 || arp[5] != 4)
			return 0;
		key.family = 4;
		__builtin_memcpy(key.addr, arp + 24, 4);
		const struct socket_owner *owner = bpf_map_lookup_elem(&neigh_owners, &key);
		if (owner)
			return owner;
		__builtin_memcpy(key.addr, arp + 14, 4);
		return bpf_map_lookup_elem(&neigh_owners, &key);
	}
	if (f->family != 6 || f->protocol != IPPROTO_ICMPV6 ||
	    (f->icmp_type != NDP_NEIGHBOUR_SOLICIT && f->icmp_type != NDP_NEIGHBOUR_ADVERT))
		return 0;
	__u8 *icmp = data + (f->l4_offset & 0x1ff);
	if ((void *)(icmp + 24) > data_end)
		return 0;
	key.family = 6;
	__builtin_memcpy(key.addr, icmp + 8, 16);
	return bpf_map_lookup_elem(&neigh_owners, &key);
}

static __always_inline int from_namespace(const struct flow *f, __u8 netns)
{
	if (f->family == 4)
		return address_of(4, &f->tuple.ipv4.saddr, netns);
	return address_of(6, f->tuple.ipv6.saddr, netns);
}

/*
 * The TCP or UDP socket at one end of the flow in one namespace
 * (BPF_F_CURRENT_NETNS or an id; `tag` its local_addresses tag): the
 * receiving end found as the stack finds it for the packet, the sending end
 * (`sending`) with `tuple` reversed. 1 when there is one, its owner in
 * *owner (null: unknown).
 */
static __always_inline int end_in(void *ctx, const struct flow *f, struct bpf_sock_tuple *tuple, int sending,
				  __u64 netns, __u8 tag, const struct socket_owner **owner)
{
	struct bpf_sock *sk;
	if (f->protocol == IPPROTO_TCP)
		sk = bpf_sk_lookup_tcp(ctx, tuple, f->tuple_len, netns, 0);
	else
		sk = bpf_sk_lookup_udp(ctx, tuple, f->tuple_len, netns, 0);
	if (!sk)
		return 0;
	const int wildcard = wildcard_bound(sk);
	const struct socket_owner *found = sock_owner(sk);
	bpf_sk_release(sk);
	/* A wildcard socket has the port, not the address: the packet may be
	 * on its way through, or from elsewhere with that port. */
	if (wildcard && !(sending ? from_namespace(f, tag) : to_namespace(f, tag)))
		return 0;
	*owner = found;
	return 1;
}

/* The owner of the socket at one end of a TCP or UDP flow, in the capture
 * namespace or another of this host's: the sender's (`sending`) or the
 * receiver's; null when that end is elsewhere or its owner unknown. */
static __always_inline const struct socket_owner *end_owner(void *ctx, const struct flow *f, int sending)
{
	struct bpf_sock_tuple tuple = f->tuple;
	if (sending && f->family == 4) {
		tuple.ipv4.saddr = f->tuple.ipv4.daddr;
		tuple.ipv4.daddr = f->tuple.ipv4.saddr;
		tuple.ipv4.sport = f->tuple.ipv4.dport;
		tuple.ipv4.dport = f->tuple.ipv4.sport;
	} else if (sending) {
		__builtin_memcpy(tuple.ipv6.saddr, f->tuple.ipv6.daddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, f->tuple.ipv6.saddr, 16);
		tuple.ipv6.sport = f->tuple.ipv6.dport;
		tuple.ipv6.dport = f->tuple.ipv6.sport;
	}
	const struct socket_owner *owner = 0;
	if (end_in(ctx, f, &tuple, sending, BPF_F_CURRENT_NETNS, 0, &owner))
		return owner;
	/* Unrolled: the key is on the stack, where the verifier cannot
	 * follow a loop counter. */
#pragma unroll
	for (__u32 i = 0; i < XDPCAP_PEER_NETNS; i++) {
		const __u32 key = i;
		const __u32 *id = bpf_map_lookup_elem(&peer_netns, &key);
		if (!id || !*id)
			break;
		if (end_in(ctx, f, &tuple, sending, (__u64)(*id - 1), (__u8)(i + 1), &owner))
			return owner;
	}
	return 0;
}

/* A packet's ends on this host: the owners of the sending and the receiving
 * socket, each null when that end is elsewhere or unknown. */
struct ends {
	const struct socket_owner *sender;
	const struct socket_owner *receiver;
};

/* An ARP or NDP packet has no socket at either end: the command it explains
 * is its sender's when sent, its receiver's when received. */
static __always_inline void neighbour_ends(const struct flow *f, void *data, void *data_end, int sent,
					   struct ends *e)
{
	const struct socket_owner *owner = neighbour_owner(f, data, data_end);
	if (!owner)
		return;
	if (sent && !e->sender)
		e->sender = owner;
	else if (!sent)
		e->receiver = owner;
}

/*
 * Both ends of a frame, found as the stack finds them. `skb_sk`: a sent
 * skb's own socket, the sender's (a request socket, a SYN-ACK, is its
 * listener's; a time-wait socket nobody's). An echo request a known process
 * sends names its reply's receiver.
 */
static __always_inline void packet_ends(void *ctx, void *data, void *data_end, struct bpf_sock *skb_sk, int sent,
					struct ends *e)
{
	e->sender = 0;
	e->receiver = 0;
	struct flow f = {};
	parse_flow(data, data_end, &f);
	if (skb_sk) {
		struct bpf_sock *full = bpf_sk_fullsock(skb_sk);
		if (!full)
			full = bpf_get_listener_sock(skb_sk);
		if (full)
			e->sender = sock_owner(full);
	}
	if (!f.family) {
		neighbour_ends(&f, data, data_end, sent, e);
		return;
	}
	if (f.protocol == IPPROTO_TCP || f.protocol == IPPROTO_UDP) {
		/* A forwarded or bridged skb has lost its socket. */
		if (!e->sender)
			e->sender = end_owner(ctx, &f, 1);
		e->receiver = end_owner(ctx, &f, 0);
		e->sender = connection_owner(&f, 1, e->sender);
		e->receiver = connection_owner(&f, 0, e->receiver);
		return;
	}
	struct echo_key key;
	echo_key_of(&f, sent, &key);
	if (!key.family) {
		neighbour_ends(&f, data, data_end, sent, e);
		return;
	}
	if (sent && e->sender)
		bpf_map_update_elem(&echo_owners, &key, e->sender, BPF_ANY);
	else if (!sent)
		e->receiver = bpf_map_lookup_elem(&echo_owners, &key);
}

/* The record's two processes (XDPCAP_FLAG_PEER): the sender's when known,
 * else the receiver's, then the receiver's when both are. 1 when the
 * process filters keep either. */
static __always_inline int describe_ends(struct xdpcap_process process[2], const struct ends *e)
{
	const struct socket_owner *first = e->sender ? e->sender : e->receiver;
	const struct socket_owner *second = e->sender ? e->receiver : 0;
	describe_owner(&process[0], first);
	describe_owner(&process[1], second);
	return owner_wanted(first) || owner_wanted(second);
}

/* `rx`: the NIC's RX metadata for the frame, where read (null: none). */
static __always_inline int sample_xdp(struct xdp_md *ctx, __u64 frame_len, const struct xdpcap_rx_meta *rx)
{
	/* Without -k or a process filter the processes are never read: no
	 * stores for them on the path every frame takes. */
	struct xdpcap_process process[2];
	int wanted = 1;
	if (attribute || process_filter) {
		struct ends ends = {};
		packet_ends(ctx, (void *)(long)ctx->data, (void *)(long)ctx->data_end, 0, 0, &ends);
		wanted = describe_ends(process, &ends);
	}
	struct xdpcap_counters *c = count_packet_of(XDPCAP_COUNTERS_INGRESS, wanted);
	if (!c)
		return XDP_PASS;
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
		output_tagged(ctx, XDPCAP_FROM_XDP, frame_len, c, &meta, process, rx->vlan_proto, rx->vlan_tci);
	else
		output_sample(ctx, XDPCAP_FROM_XDP, c, &meta, process);
	return XDP_PASS;
}

/* What the device-bound program in front left for this frame. */
static __always_inline const struct xdpcap_rx_meta *rx_meta_from_front(void)
{
	__u32 key = 0;
	return bpf_map_lookup_elem(&rx_meta, &key);
}

/* Multi-buffer aware: sees and copies every fragment of jumbo frames. */
SEC("xdp.frags")
int xdpcap_frags(struct xdp_md *ctx)
{
	return sample_xdp(ctx, bpf_xdp_get_buff_len(ctx), rx_meta_from_front());
}

/* For kernels that cannot load frags programs: linear data only. */
SEC("xdp")
int xdpcap_linear(struct xdp_md *ctx)
{
	return sample_xdp(ctx, ctx->data_end - ctx->data, rx_meta_from_front());
}

/* The XDP RX metadata kfuncs, by the numbers userspace puts their calls in
 * place of (XDPCAP_RX_VLAN_CALL, XDPCAP_RX_HASH_CALL). */
static int (*const rx_vlan_tag_call)(const struct xdp_md *ctx, __be16 *vlan_proto,
				     __u16 *vlan_tci) = (void *)XDPCAP_RX_VLAN_CALL;
static int (*const rx_hash_call)(const struct xdp_md *ctx, __u32 *hash,
				 enum xdp_rss_hash_type *rss_type) = (void *)XDPCAP_RX_HASH_CALL;

/* Set before load: what xdpcap_bound asks the driver for. */
const volatile __u8 bound_reads_vlan = 0;
const volatile __u8 bound_reads_hash = 0;

/*
 * Natively with nothing in front (no filter): loaded bound to the device
 * (multi-buffer), it reads the NIC's RX metadata itself, which only a
 * device-bound program may, with no program in front and no tail call.
 * Section "xdp/xdpcap_bound": userspace prepares it for load.
 */
SEC("xdp/xdpcap_bound")
int xdpcap_bound(struct xdp_md *ctx)
{
	struct xdpcap_rx_meta rx = {};
	read_rx_meta(ctx, &rx, bound_reads_vlan, bound_reads_hash, rx_vlan_tag_call, rx_hash_call);
	return sample_xdp(ctx, bpf_xdp_get_buff_len(ctx), &rx);
}

/* bpf_cast_to_kern_ctx (Linux 6.2), by the number userspace puts the kfunc's
 * call in place of (XDPCAP_KERN_CTX_CALL). Never called where the kernel
 * lacks it: read_ip_summed says, and the verifier removes the dead call. */
static void *(*const kern_ctx_of)(void *ctx) = (void *)XDPCAP_KERN_CTX_CALL;

/*
 * Set before load from the kernel's BTF: how the skb's ip_summed bitfield is
 * read (XDPCAP_IP_SUMMED_*), and where it lies in struct sk_buff.
 */
const volatile __u8 read_ip_summed = XDPCAP_IP_SUMMED_UNREAD;
const volatile __u32 ip_summed_byte = 0;
const volatile __u8 ip_summed_shift = 0;

#define XDPCAP_CHECKSUM_PARTIAL 3 /* the NIC fills the checksum in */

static __always_inline int checksum_partial(struct __sk_buff *skb)
{
	/* A tc program's context is the kernel's sk_buff itself. */
	__u8 byte = 0;
	if (read_ip_summed == XDPCAP_IP_SUMMED_DIRECT) {
		/* A plain load instead of a helper call per frame. */
		const __u8 *kernel_skb = kern_ctx_of(skb);
		byte = kernel_skb[ip_summed_byte];
	} else if (bpf_probe_read_kernel(&byte, 1, (void *)skb + ip_summed_byte)) {
		return 0;
	}
	return ((byte >> ip_summed_shift) & 3) == XDPCAP_CHECKSUM_PARTIAL;
}

/*
 * An skb at a tc hook, from its Ethernet header, with a VLAN tag the device
 * or the stack holds in metadata put back as on the wire.
 */
static __always_inline int sample_skb(struct __sk_buff *skb, __u32 counters_key, __u32 queue, __u8 direction,
				      __u8 hook)
{
	struct xdpcap_process process[2];
	int wanted = 1;
	if (attribute || process_filter) {
		struct ends ends = {};
		const int sent = direction == XDPCAP_DIR_EGRESS;
		packet_ends(skb, (void *)(long)skb->data, (void *)(long)skb->data_end, sent ? skb->sk : 0, sent, &ends);
		wanted = describe_ends(process, &ends);
	}
	struct xdpcap_counters *c = count_packet_of(counters_key, wanted);
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
		output_tagged(skb, XDPCAP_FROM_SKB, skb->len, c, &meta, process, (__u16)skb->vlan_proto,
			      (__u16)skb->vlan_tci);
	} else {
		output_sample(skb, XDPCAP_FROM_SKB, c, &meta, process);
	}
	/* Same value as TCX_NEXT: the next program, or the default, decides. */
	return TC_ACT_UNSPEC;
}

/* Every sent frame, as it leaves for the driver. Section "tc/xdpcap": a
 * tc program that userspace prepares for load (XDPCAP_KERN_CTX_CALL). */
SEC("tc/xdpcap")
int xdpcap_egress(struct __sk_buff *skb)
{
	return sample_skb(skb, XDPCAP_COUNTERS_EGRESS, skb->queue_mapping, XDPCAP_DIR_EGRESS, XDPCAP_HOOK_TC_EGRESS);
}

/*
 * Every received frame, where XDP would miss or change some (veth: frames tc
 * redirected into it, GRO super-frames whole, tags from the skb). Attached
 * first, so no tc program that redirects or drops hides a frame.
 */
SEC("tc/xdpcap")
int xdpcap_ingress(struct __sk_buff *skb)
{
	/* A recorded RX queue is kept as its index plus one. */
	const __u32 queue = skb->queue_mapping ? skb->queue_mapping - 1 : 0;
	return sample_skb(skb, XDPCAP_COUNTERS_INGRESS, queue, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_TC_INGRESS);
}

/*
 * Emits this CPU's staged frames. Never attached: userspace runs it on a CPU
 * (BPF_PROG_TEST_RUN, BPF_F_TEST_RUN_ON_CPU) whose batch has waited, and on
 * every CPU when the capture stops. On another CPU than the caller's it runs
 * in an interrupt, and leaves the batch to a hook it interrupted.
 */
SEC("raw_tp")
int xdpcap_flush(void *ctx)
{
	flush_pending(ctx);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
