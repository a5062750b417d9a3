#include "host/link_attributes.hpp"

#include <linux/ethtool.h>
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
    const auto read_u32 = [&](size_t offset, const rtattr& attr, uint32_t& value) {
        if (attr.rta_len >= RTA_LENGTH(sizeof(uint32_t)))
            std::memcpy(&value, reply.data() + offset + RTA_LENGTH(0), sizeof(uint32_t));
    };
    size_t offset = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifinfomsg));
    while (offset + sizeof(rtattr) <= header.nlmsg_len) {
        rtattr attr;
        std::memcpy(&attr, reply.data() + offset, sizeof attr);
        if (attr.rta_len < sizeof attr || offset + attr.rta_len > header.nlmsg_len)
            break;
        switch (attr.rta_type & NLA_TYPE_MASK) {
        case IFLA_LINK:
            read_u32(offset, attr, attributes.link);
            break;
        case IFLA_LINK_NETNSID:
            attributes.link_in_other_namespace = true;
            break;
        case IFLA_NUM_RX_QUEUES:
            read_u32(offset, attr, attributes.rx_queues);
            break;
        case IFLA_NUM_TX_QUEUES:
            read_u32(offset, attr, attributes.tx_queues);
            break;
        default:
            break;
        }
        offset += RTA_ALIGN(attr.rta_len);
    }
    return attributes;
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
