// The hash a NIC computes for receive-side scaling, as the capture records
// it: which function made it (the pcapng epb_hash algorithm byte) and the
// name of its type, the kernel's enum xdp_rss_hash_type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xdpcap {

// epb_hash's algorithm byte for the hashes received on `ifname`: the NIC's
// RSS function as ethtool reports it (Toeplitz, XOR, CRC32), else the value
// pcapng leaves unregistered: a driver without RSS, such as veth, hands out
// the kernel's own flow hash, skb_get_hash(), which has no code.
uint8_t rss_hash_algorithm(const std::string& ifname);

// The enum xdp_rss_hash_type value `type` named as the kernel names it
// (L4_IPV4_TCP, L3_IPV6_EX, L4_ANY, ...); empty for none (L2). Bits beyond
// the enum are ignored. No allocation: the names are made once.
std::string_view rss_hash_type_name(uint16_t type) noexcept;
// "RSS hash type NAME", the packet comment that carries it; empty for none.
std::string_view rss_hash_type_comment(uint16_t type) noexcept;

} // namespace xdpcap
