// SPDX-License-Identifier: GPL-2.0-only
/*
 * The device-bound front program for kernels with the RSS hash kfunc but
 * not the VLAN one (Linux 6.3 to 6.7): rx_meta.bpf.c without the VLAN call.
 */
#define XDPCAP_RX_META_NO_VLAN
#include "rx_meta.bpf.c"
