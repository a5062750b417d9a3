// Classic BPF (as libpcap compiles tcpdump filters) to eBPF that runs as the
// body of `int xdpcap_filter(ctx)` in the capture program of one hook.
#pragma once

#include <linux/bpf.h>
#include <linux/filter.h>

#include <span>
#include <vector>

#include "base/hooks.hpp"

namespace xdpcap {

// The filter's ctx is its hook's FilterContext (base/hooks.hpp). Trace: bytes
// are read with bpf_probe_read_kernel() from the linear data only; the length
// is the whole frame's; there is no device to read `ifindex` from. Drop: the
// frame is the CPU's struct xdpcap_drop_view in map drop_view_map_fd, its
// bytes read as Trace's. TcEgress, TcIngress and Drop see a VLAN tag the skb
// carries in metadata at offset 12 as on the wire, and the length includes it.
struct FilterTarget {
    FilterContext context = FilterContext::Xdp;
    // Xdp only: loads past the linear data go through bpf_xdp_load_bytes()
    // and the length through bpf_xdp_get_buff_len() (kernel >= 5.18, program
    // loaded with BPF_F_XDP_HAS_FRAGS); without it they see the linear data
    // only. TcEgress and TcIngress always reach the whole skb with bpf_skb_load_bytes();
    // Trace always sees the linear data only.
    bool multi_buffer = true;
    // Xdp only: the per-CPU map of struct xdpcap_rx_meta that the program in
    // front of the capture program fills (-1: none). With it, a frame whose
    // VLAN tag the NIC took out is seen as on the wire: the tag at offset 12
    // and the length 4 bytes longer.
    int rx_meta_map_fd = -1;
    // Drop only: the per-CPU map of the dropped frame's xdpcap_drop_view.
    int drop_view_map_fd = -1;
};

// `protochain` walks a header chain in a loop, which runs as a bpf_loop()
// callback and follows the chain as far as the frame goes. A loop of another
// shape (libpcap emits none) is counted instead: it follows at most this many
// turns and then rejects the packet, as classic BPF rejects a packet a load
// runs off.
inline constexpr int kProtochainMaxHeaders = 16;

// Loops (backward jump targets) one filter may contain: each needs a counter.
inline constexpr int kMaxFilterLoops = 16;

// Stack bytes below r10 the translated program uses at most: scratch memory
// M[0..15], a 4-byte buffer for the load helpers, the wire view's map key
// and tag, one counter per counted loop and the state bpf_loop() passes.
inline constexpr int kFilterStackBytes = 80 + 8 * kMaxFilterLoops + 24;

// Returns the eBPF body: non-zero keeps the packet. Raises Error for what the
// translation cannot express at that hook, naming the tcpdump keyword or the
// SKF_AD_* field (an ancillary load never becomes a packet offset).
std::vector<bpf_insn> translate_filter(std::span<const sock_filter> classic, const FilterTarget& target);

} // namespace xdpcap
