// What the capture needs to know from the running kernel's BTF, read once:
// one parse of /sys/kernel/btf/vmlinux (tens of milliseconds) serves every
// question.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xdpcap {

// Where a bitfield of a kernel struct lives: its byte, and its bits there.
struct BitfieldLocation {
    uint32_t byte_offset = 0;
    uint8_t shift = 0; // from the byte's least significant bit (little-endian)
    uint8_t bits = 0;
};

struct KernelBtf {
    bool loaded = false; // /sys/kernel/btf/vmlinux was read
    uint32_t rx_vlan_kfunc = 0; // bpf_xdp_metadata_rx_vlan_tag's BTF id, Linux 6.8 (0: none)
    uint32_t rx_hash_kfunc = 0; // bpf_xdp_metadata_rx_hash's, Linux 6.3
    uint32_t kern_ctx_kfunc = 0; // bpf_cast_to_kern_ctx's BTF id, Linux 6.2 (0: none)
    std::optional<BitfieldLocation> skb_ip_summed; // struct sk_buff's ip_summed
    // enum skb_drop_reason (Linux 5.17): value and name without its
    // SKB_DROP_REASON_ prefix ("NO_SOCKET"). Empty where the kernel has no
    // reasons, and so no reason argument in skb:kfree_skb.
    std::vector<std::pair<uint32_t, std::string>> drop_reasons;
};
const KernelBtf& kernel_btf();

} // namespace xdpcap
