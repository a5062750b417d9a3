/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The contract between uprobes.bpf.c and src/programs/uprobes.cpp: what the
 * uprobes on OpenSSL 3's libssl read of a connection once its handshake is
 * done, and where in the library's SSL object that lies.
 */
#ifndef XDPCAP_UPROBES_H
#define XDPCAP_UPROBES_H

#include <linux/types.h>

#define XDPCAP_TLS_RANDOM_SIZE 32u
#define XDPCAP_TLS_MASTER_KEY_SIZE 48u
/* OpenSSL's EVP_MAX_MD_SIZE: the room of each TLS 1.3 secret in struct ssl_st. */
#define XDPCAP_TLS_MD_ROOM 64u
/*
 * struct ssl_st keeps TLS 1.3's secrets as consecutive arrays of
 * XDPCAP_TLS_MD_ROOM bytes; the record copies them from handshake_secret to
 * exporter_master_secret, in this order.
 */
enum xdpcap_tls13_secret {
	XDPCAP_TLS13_HANDSHAKE_SECRET,
	XDPCAP_TLS13_MASTER_SECRET,
	XDPCAP_TLS13_RESUMPTION_MASTER_SECRET,
	XDPCAP_TLS13_CLIENT_FINISHED_SECRET,
	XDPCAP_TLS13_SERVER_FINISHED_SECRET,
	XDPCAP_TLS13_SERVER_FINISHED_HASH,
	XDPCAP_TLS13_HANDSHAKE_TRAFFIC_HASH,
	XDPCAP_TLS13_CLIENT_APP_TRAFFIC_SECRET,
	XDPCAP_TLS13_SERVER_APP_TRAFFIC_SECRET,
	XDPCAP_TLS13_EXPORTER_MASTER_SECRET,
	XDPCAP_TLS13_SECRETS,
};

/* One connection whose handshake is done, as its process's libssl holds it. */
struct xdpcap_tls_handshake {
	__u32 pid;
	__u32 tid;
	char comm[16];
	__s32 version;           /* SSL->version: 0x0303 TLS 1.2, 0x0304 TLS 1.3 */
	__u32 master_key_length; /* TLS 1.2 and earlier: SSL->session->master_key_length */
	__u8 client_random[XDPCAP_TLS_RANDOM_SIZE];
	__u8 master_key[XDPCAP_TLS_MASTER_KEY_SIZE];
	__u8 tls13[XDPCAP_TLS13_SECRETS][XDPCAP_TLS_MD_ROOM]; /* TLS 1.3 only */
};

/* OpenSSL's TLS_ST_OK: SSL->statem.hand_state once a handshake is done. */
#define XDPCAP_TLS_HANDSHAKE_DONE 1

#endif /* XDPCAP_UPROBES_H */
