#include "output/rss_hash.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <array>
#include <cstring>
#include <vector>

#include "output/pcapng.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

// enum xdp_rss_hash_type's bits (include/net/xdp.h).
enum : uint16_t {
    kRssL3Ipv4 = 1u << 0,
    kRssL3Ipv6 = 1u << 1,
    kRssL3DynamicHeader = 1u << 2, // IPv4 options, IPv6 extension headers
    kRssL4 = 1u << 3,
    kRssL4Tcp = 1u << 4,
    kRssL4Udp = 1u << 5,
    kRssL4Sctp = 1u << 6,
    kRssL4Ipsec = 1u << 7,
    kRssL4Icmp = 1u << 8,
};
constexpr size_t kRssTypes = 1u << 9;

// ethtool_rxfh.hfunc bits (the kernel's ETH_RSS_HASH_*, not in its uapi).
constexpr uint8_t kRssToeplitz = 1u << 0;
constexpr uint8_t kRssXor = 1u << 1;
constexpr uint8_t kRssCrc32 = 1u << 2;

std::string make_type_name(uint16_t type)
{
    if (type == 0)
        return {};
    std::string name = (type & kRssL4) ? "L4" : "L3";
    const bool ipv4 = type & kRssL3Ipv4;
    const bool ipv6 = type & kRssL3Ipv6;
    if (ipv4)
        name += "_IPV4";
    if (ipv6)
        name += "_IPV6";
    bool protocol = false;
    for (const auto& [bit, text] : {std::pair{kRssL4Tcp, "_TCP"}, std::pair{kRssL4Udp, "_UDP"},
                                    std::pair{kRssL4Sctp, "_SCTP"}, std::pair{kRssL4Ipsec, "_IPSEC"},
                                    std::pair{kRssL4Icmp, "_ICMP"}}) {
        if (type & bit) {
            name += text;
            protocol = true;
        }
    }
    if ((type & kRssL4) && !ipv4 && !ipv6 && !protocol)
        name += "_ANY";
    if (type & kRssL3DynamicHeader)
        name += ipv4 && !ipv6 ? "_OPT" : ipv6 && !ipv4 ? "_EX" : "_DYNHDR";
    return name;
}

} // namespace

uint8_t rss_hash_algorithm(const std::string& ifname)
{
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock)
        return pcapng::kHashUnregistered;
    const auto ask = [&](ethtool_rxfh* rxfh) {
        ifreq ifr{};
        std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
        ifr.ifr_data = reinterpret_cast<char*>(rxfh);
        return ::ioctl(sock.get(), SIOCETHTOOL, &ifr) == 0;
    };
    // First the table sizes, then the function, which comes only with room
    // for the table and the key.
    ethtool_rxfh sizes{};
    sizes.cmd = ETHTOOL_GRSSH;
    if (!ask(&sizes))
        return pcapng::kHashUnregistered;
    std::vector<uint8_t> buffer(sizeof(ethtool_rxfh) + sizes.indir_size * sizeof(uint32_t) + sizes.key_size);
    auto* rxfh = reinterpret_cast<ethtool_rxfh*>(buffer.data());
    rxfh->cmd = ETHTOOL_GRSSH;
    rxfh->indir_size = sizes.indir_size;
    rxfh->key_size = sizes.key_size;
    if ((sizes.indir_size == 0 && sizes.key_size == 0) || !ask(rxfh))
        return pcapng::kHashUnregistered;
    if (rxfh->hfunc & kRssToeplitz)
        return pcapng::kHashToeplitz;
    if (rxfh->hfunc & kRssXor)
        return pcapng::kHashXor;
    if (rxfh->hfunc & kRssCrc32)
        return pcapng::kHashCrc32;
    return pcapng::kHashUnregistered;
}

namespace {

constexpr std::string_view kCommentPrefix = "RSS hash type ";

// "RSS hash type NAME" for every type; the name is its tail.
const std::array<std::string, kRssTypes>& type_comments()
{
    static const std::array<std::string, kRssTypes> comments = [] {
        std::array<std::string, kRssTypes> all;
        for (size_t t = 1; t < kRssTypes; ++t)
            all[t] = std::string(kCommentPrefix) + make_type_name(static_cast<uint16_t>(t));
        return all;
    }();
    return comments;
}

} // namespace

std::string_view rss_hash_type_comment(uint16_t type) noexcept
{
    return type_comments()[type & (kRssTypes - 1)];
}

std::string_view rss_hash_type_name(uint16_t type) noexcept
{
    const std::string_view comment = rss_hash_type_comment(type);
    return comment.empty() ? comment : comment.substr(kCommentPrefix.size());
}

} // namespace xdpcap
