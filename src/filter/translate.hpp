// Classic BPF (as libpcap compiles tcpdump filters) to eBPF that runs as the
// body of `int xdpcap_filter(struct xdp_md *ctx)` in the XDP capture program.
#pragma once

#include <linux/bpf.h>
#include <linux/filter.h>

#include <span>
#include <vector>

namespace xdpcap {

// Stack bytes below r10 the translated program uses: scratch memory M[0..15]
// and a 4-byte buffer for bpf_xdp_load_bytes.
inline constexpr int kFilterStackBytes = 72;

// Returns non-zero to keep the packet. With multi_buffer, loads past the
// linear data go through bpf_xdp_load_bytes() and the length through
// bpf_xdp_get_buff_len() (kernel >= 5.18, program loaded with
// BPF_F_XDP_HAS_FRAGS); without it they see the linear data only.
// Raises Error for instructions the translation cannot express (protochain).
std::vector<bpf_insn> translate_filter(std::span<const sock_filter> classic, bool multi_buffer);

} // namespace xdpcap
