// What rtnetlink and ethtool say about one network interface that the
// capture needs beyond its name and index.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace xdpcap {

struct LinkAttributes {
    uint32_t link = 0;                 // IFLA_LINK: a veth's peer, a VLAN's lower device
    bool link_in_other_namespace = false; // IFLA_LINK_NETNSID: `link` means nothing here
    int32_t link_nsid = -1;            // that namespace's id here (peer_namespaces.hpp), when it has one
    uint32_t rx_queues = 0;            // IFLA_NUM_RX_QUEUES: allocated, not all in use
    uint32_t tx_queues = 0;            // IFLA_NUM_TX_QUEUES
};

// RTM_GETLINK for `ifindex`; nothing when rtnetlink does not answer.
std::optional<LinkAttributes> link_attributes(uint32_t ifindex);

// Whether the driver runs XDP programs natively (netdev's xdp-features,
// NETDEV_XDP_ACT_BASIC); nothing where the kernel does not say (before 6.3,
// no netdev generic netlink family) or the interface is gone.
std::optional<bool> native_xdp_support(uint32_t ifindex);

// How many RX or TX queues `ifname` uses (the larger): ethtool's current
// channels, else the queues the device was made with; 0 when unknown.
uint32_t queues_in_use(const std::string& ifname);

} // namespace xdpcap
