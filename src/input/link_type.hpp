// The link types -r reads (libpcap's DLT numbers, as pcap and pcapng files
// give them) and their names as libpcap and tcpdump write them.
#pragma once

#include <cstdint>
#include <string>

namespace xdpcap {

inline constexpr uint16_t kLinkTypeEthernet = 1;    // DLT_EN10MB
inline constexpr uint16_t kLinkTypeLinuxSll = 113;  // DLT_LINUX_SLL: tcpdump -y LINUX_SLL -i any
inline constexpr uint16_t kLinkTypeLinuxSll2 = 276; // DLT_LINUX_SLL2: tcpdump -i any

// Ethernet and the two Linux cooked headers: what the text decode and the
// filters of -r handle.
constexpr bool link_type_readable(uint16_t link_type) noexcept
{
    return link_type == kLinkTypeEthernet || link_type == kLinkTypeLinuxSll || link_type == kLinkTypeLinuxSll2;
}

// "RAW (101)"; the number alone where libpcap knows no name.
std::string link_type_name(uint16_t link_type);

// What tcpdump's "reading from file" line says: "LINUX_SLL (Linux cooked
// v1)"; the number alone where libpcap knows no name.
std::string link_type_banner(uint16_t link_type);

} // namespace xdpcap
