/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A network namespace as the tracing programs tell one from another: its
 * inode number (what /proc/PID/ns/net's stat says). Just these members;
 * CO-RE relocates them against the running kernel's BTF.
 */
#ifndef XDPCAP_NETNS_H
#define XDPCAP_NETNS_H

struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

#endif /* XDPCAP_NETNS_H */
