#include "host/link_attributes.hpp"

#include <linux/ethtool.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/unique_fd.hpp"
#include "host/netlink_attributes.hpp"

namespace xdpcap {

std::optional<LinkAttributes> link_attributes(uint32_t ifindex)
{
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (ifindex == 0 || !fd)
        return std::nullopt;
    struct {
        nlmsghdr header;
        ifinfomsg info;
    } request{};
    request.header.nlmsg_len = sizeof request;
    request.header.nlmsg_type = RTM_GETLINK;
    request.header.nlmsg_flags = NLM_F_REQUEST;
    request.header.nlmsg_seq = 1;
    request.info.ifi_family = AF_UNSPEC;
    request.info.ifi_index = static_cast<int>(ifindex);
    if (::send(fd.get(), &request, sizeof request, 0) != static_cast<ssize_t>(sizeof request))
        return std::nullopt;
    std::vector<uint8_t> reply(32 * 1024);
    const ssize_t got = ::recv(fd.get(), reply.data(), reply.size(), 0);
    if (got < static_cast<ssize_t>(NLMSG_HDRLEN + sizeof(ifinfomsg)))
        return std::nullopt;
    nlmsghdr header;
    std::memcpy(&header, reply.data(), sizeof header);
    if (header.nlmsg_type != RTM_NEWLINK || header.nlmsg_len > static_cast<size_t>(got))
        return std::nullopt;
    LinkAttributes attributes;
    const size_t begin = std::min<size_t>(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifinfomsg)), header.nlmsg_len);
    for_each_attribute(std::span<const uint8_t>(reply.data() + begin, header.nlmsg_len - begin),
                       [&](uint16_t type, std::span<const uint8_t> payload) {
                           switch (type) {
                           case IFLA_LINK:
                               read_attribute(payload, attributes.link);
                               break;
                           case IFLA_LINK_NETNSID:
                               attributes.link_in_other_namespace = true;
                               read_attribute(payload, attributes.link_nsid);
                               break;
                           case IFLA_NUM_RX_QUEUES:
                               read_attribute(payload, attributes.rx_queues);
                               break;
                           case IFLA_NUM_TX_QUEUES:
                               read_attribute(payload, attributes.tx_queues);
                               break;
                           default:
                               break;
                           }
                           return true;
                       });
    return attributes;
}

namespace {

// From linux/netdev.h, which older kernel headers lack.
constexpr uint8_t kNetdevCmdDevGet = 1;
constexpr uint16_t kNetdevAttrIfindex = 1;
constexpr uint16_t kNetdevAttrXdpFeatures = 3;
constexpr uint64_t kNetdevXdpActBasic = 1;

// One generic netlink request with one u32 attribute (or a string one, for
// the controller) and its reply's attributes, each handed to `attribute`.
template <typename OnAttribute>
bool genl_ask(int fd, uint16_t family, uint8_t command, uint16_t attr_type, const void* value, size_t value_len,
              OnAttribute&& attribute)
{
    std::vector<uint8_t> request(NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN + NLA_ALIGN(value_len));
    nlmsghdr header{};
    header.nlmsg_len = static_cast<uint32_t>(request.size());
    header.nlmsg_type = family;
    header.nlmsg_flags = NLM_F_REQUEST;
    header.nlmsg_seq = 1;
    genlmsghdr genl{};
    genl.cmd = command;
    genl.version = 1;
    nlattr attr{};
    attr.nla_len = static_cast<uint16_t>(NLA_HDRLEN + value_len);
    attr.nla_type = attr_type;
    std::memcpy(request.data(), &header, sizeof header);
    std::memcpy(request.data() + NLMSG_HDRLEN, &genl, sizeof genl);
    std::memcpy(request.data() + NLMSG_HDRLEN + GENL_HDRLEN, &attr, sizeof attr);
    std::memcpy(request.data() + NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN, value, value_len);
    if (::send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size()))
        return false;
    std::vector<uint8_t> reply(16 * 1024);
    const ssize_t got = ::recv(fd, reply.data(), reply.size(), 0);
    if (got < static_cast<ssize_t>(NLMSG_HDRLEN + GENL_HDRLEN))
        return false;
    std::memcpy(&header, reply.data(), sizeof header);
    if (header.nlmsg_type != family || header.nlmsg_len > static_cast<size_t>(got))
        return false;
    const size_t begin = std::min<size_t>(NLMSG_HDRLEN + GENL_HDRLEN, header.nlmsg_len);
    for_each_attribute(std::span<const uint8_t>(reply.data() + begin, header.nlmsg_len - begin),
                       [&](uint16_t type, std::span<const uint8_t> payload) {
                           attribute(type, payload.data(), payload.size());
                           return true;
                       });
    return true;
}

} // namespace

std::optional<bool> native_xdp_support(uint32_t ifindex)
{
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC));
    if (ifindex == 0 || !fd)
        return std::nullopt;
    static const char kFamilyName[] = "netdev";
    uint16_t family = 0;
    genl_ask(fd.get(), GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME, kFamilyName, sizeof kFamilyName,
             [&](uint16_t type, const uint8_t* value, size_t len) {
                 if (type == CTRL_ATTR_FAMILY_ID && len >= sizeof family)
                     std::memcpy(&family, value, sizeof family);
             });
    if (family == 0)
        return std::nullopt;
    std::optional<uint64_t> features;
    genl_ask(fd.get(), family, kNetdevCmdDevGet, kNetdevAttrIfindex, &ifindex, sizeof ifindex,
             [&](uint16_t type, const uint8_t* value, size_t len) {
                 if (type == kNetdevAttrXdpFeatures && len >= sizeof(uint64_t)) {
                     uint64_t bits = 0;
                     std::memcpy(&bits, value, sizeof bits);
                     features = bits;
                 }
             });
    if (!features)
        return std::nullopt;
    return (*features & kNetdevXdpActBasic) != 0;
}

uint32_t queues_in_use(const std::string& ifname)
{
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (sock) {
        ethtool_channels channels{};
        channels.cmd = ETHTOOL_GCHANNELS;
        ifreq ifr{};
        std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
        ifr.ifr_data = reinterpret_cast<char*>(&channels);
        if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) == 0)
            return std::max(channels.rx_count, channels.tx_count) + channels.combined_count;
    }
    // No channels to ask about (lo, bridges, tunnels): what it was made with.
    const auto attributes = link_attributes(::if_nametoindex(ifname.c_str()));
    return attributes ? std::max(attributes->rx_queues, attributes->tx_queues) : 0;
}

} // namespace xdpcap
