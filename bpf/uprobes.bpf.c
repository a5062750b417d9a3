// SPDX-License-Identifier: GPL-2.0-only
/*
 * TLS keys of processes already running (-k and the process selections with
 * --tls-keylog): uprobes on OpenSSL 3's libssl.so.3. At the return of
 * SSL_do_handshake, SSL_connect and SSL_accept, and at the entry of the
 * calls every TLS program makes afterwards (SSL_read, SSL_write and their
 * _ex forms, SSL_shutdown, SSL_free), the SSL object is read: once its
 * handshake is done, its client random and secrets go to userspace, once
 * per handshake. Userspace derives the key log lines and checks TLS 1.3's
 * against each other.
 *
 * The offsets into struct ssl_st are rodata set by userspace for a library
 * build it knows (programs/uprobes.cpp); nothing is written to the process.
 *
 * A ring of its own rather than the capture's perf arrays: the records are
 * rare, bigger than a frame's metadata and no packets; they must not take a
 * frame's room in a CPU's ring nor enter the merge by time.
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ancestry.h"
#include "uprobes.h"

/* Offsets in the library's struct ssl_st and SSL_SESSION, set before load. */
const volatile __u32 version_offset = 0;
const volatile __u32 hand_state_offset = 0;
const volatile __u32 client_random_offset = 0;
const volatile __u32 session_offset = 0;
const volatile __u32 tls13_secrets_offset = 0;
const volatile __u32 master_key_length_offset = 0; /* in SSL_SESSION */
const volatile __u32 master_key_offset = 0;        /* in SSL_SESSION */

/* The capture's process selection, as owners.bpf.c applies it to sockets. */
const volatile __u32 want_pid = 0;
const volatile __u8 want_descendants = 0;
const volatile __u8 match_comm = 0;
const volatile char want_comm[16] = {};
const volatile __u64 want_cgroup = 0;
const volatile __u32 want_cgroup_level = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} handshakes SEC(".maps");

/* The SSL object of each thread's handshake call in progress, for its return. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* pid_tgid */
	__type(value, __u64);
} calls SEC(".maps");

/* The handshake each SSL object last reported, by the first bytes of its
 * client random: every read and write comes here. */
struct ssl_key {
	__u64 ssl;
	__u32 tgid;
	__u32 reserved;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct ssl_key);
	__type(value, __u64);
} reported SEC(".maps");

static __always_inline int wanted(__u32 tgid, const char *comm)
{
	if (want_pid && tgid != want_pid && !(want_descendants && descends_from(want_pid)))
		return 0;
	if (match_comm) {
#pragma unroll
		for (int i = 0; i < 16; i++) {
			if (comm[i] != want_comm[i])
				return 0;
			if (!comm[i])
				break;
		}
	}
	if (want_cgroup && bpf_get_current_ancestor_cgroup_id(want_cgroup_level) != want_cgroup)
		return 0;
	return 1;
}

static __always_inline void report(__u64 ssl)
{
	if (!ssl)
		return;
	int state = 0;
	if (bpf_probe_read_user(&state, sizeof(state), (void *)(ssl + hand_state_offset)) || state != XDPCAP_TLS_HANDSHAKE_DONE)
		return;
	__u64 random_head = 0;
	if (bpf_probe_read_user(&random_head, sizeof(random_head), (void *)(ssl + client_random_offset)) || !random_head)
		return;
	const __u64 id = bpf_get_current_pid_tgid();
	struct ssl_key key = {.ssl = ssl, .tgid = (__u32)(id >> 32)};
	const __u64 *known = bpf_map_lookup_elem(&reported, &key);
	if (known && *known == random_head)
		return;
	char comm[16];
	bpf_get_current_comm(comm, sizeof(comm));
	if (!wanted(key.tgid, comm))
		return;
	struct xdpcap_tls_handshake *r = bpf_ringbuf_reserve(&handshakes, sizeof(*r), 0);
	if (!r)
		return; /* tried again at the next call */
	r->pid = key.tgid;
	r->tid = (__u32)id;
	__builtin_memcpy(r->comm, comm, sizeof(comm));
	r->master_key_length = 0;
	__u64 session = 0;
	__u64 length = 0;
	if (bpf_probe_read_user(&r->version, sizeof(r->version), (void *)(ssl + version_offset)) ||
	    bpf_probe_read_user(r->client_random, sizeof(r->client_random), (void *)(ssl + client_random_offset)) ||
	    bpf_probe_read_user(r->tls13, sizeof(r->tls13), (void *)(ssl + tls13_secrets_offset)) ||
	    bpf_probe_read_user(&session, sizeof(session), (void *)(ssl + session_offset))) {
		bpf_ringbuf_discard(r, 0);
		return;
	}
	__builtin_memset(r->master_key, 0, sizeof(r->master_key));
	if (session && !bpf_probe_read_user(&length, sizeof(length), (void *)(session + master_key_length_offset)) &&
	    length == XDPCAP_TLS_MASTER_KEY_SIZE &&
	    !bpf_probe_read_user(r->master_key, sizeof(r->master_key), (void *)(session + master_key_offset)))
		r->master_key_length = (__u32)length;
	bpf_ringbuf_submit(r, 0);
	bpf_map_update_elem(&reported, &key, &random_head, BPF_ANY);
}

/* libbpf 1.1 has no BPF_UPROBE: the kprobe macros read the same registers. */

/* SSL_do_handshake, SSL_connect, SSL_accept: done at their return. */
SEC("uprobe")
int BPF_KPROBE(xdpcap_ssl_handshake, void *ssl)
{
	const __u64 id = bpf_get_current_pid_tgid();
	const __u64 value = (__u64)ssl;
	bpf_map_update_elem(&calls, &id, &value, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(xdpcap_ssl_handshake_done)
{
	const __u64 id = bpf_get_current_pid_tgid();
	const __u64 *ssl = bpf_map_lookup_elem(&calls, &id);
	if (!ssl)
		return 0;
	const __u64 value = *ssl;
	bpf_map_delete_elem(&calls, &id);
	report(value);
	return 0;
}

/*
 * SSL_read, SSL_write (and _ex), SSL_shutdown, SSL_free: at their entry
 * only, as a uretprobe costs a second trap on every call. A handshake these
 * make implicitly is reported at the connection's next call, at the latest
 * at SSL_free.
 */
SEC("uprobe")
int BPF_KPROBE(xdpcap_ssl_call, void *ssl)
{
	report((__u64)ssl);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
