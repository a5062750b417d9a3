// Link notifications of this network namespace (rtnetlink, RTMGRP_LINK): a
// captured interface that is deleted or moved to another namespace stops the
// capture as soon as the kernel says so. A move leaves the XDP link alive on
// the interface in its new namespace, so polling the link cannot see it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/unique_fd.hpp"

namespace xdpcap {

struct LostLink {
    uint32_t ifindex = 0;
    bool moved = false; // to another network namespace; else deleted
};

// The first of `watched` that the netlink messages in `messages` (what one
// recv(2) returned) report gone: an RTM_DELLINK of the generic (AF_UNSPEC)
// family, which the kernel sends both when an interface is deleted and,
// with IFLA_NEW_NETNSID, when it is moved. A bridge's RTM_DELLINK (a port
// leaving it) is not one. A truncated or malformed tail is ignored.
std::optional<LostLink> find_lost_link(std::span<const uint8_t> messages, std::span<const uint32_t> watched);
// Every such loss in `messages`, in order, appended to `lost` (-i any: several
// interfaces may go at once).
void find_lost_links(std::span<const uint8_t> messages, std::span<const uint32_t> watched,
                     std::vector<LostLink>& lost);

// A watched interface's name as an RTM_NEWLINK (of the generic family) gives
// it: a rename shows as a new name.
struct NamedLink {
    uint32_t ifindex = 0;
    std::string name;
};
// Every such name in `messages`, in order, appended to `named`.
void find_link_names(std::span<const uint8_t> messages, std::span<const uint32_t> watched,
                     std::vector<NamedLink>& named);

// Every interface an RTM_NEWLINK (of the generic family) announces that is
// not among `watched`, once each, appended to `appeared`: one created
// (or moved here) during the capture, or one the capture leaves alone.
void find_new_links(std::span<const uint8_t> messages, std::span<const uint32_t> watched,
                    std::vector<NamedLink>& appeared);

class LinkEvents {
public:
    // Subscribes; raises Error with one line. Open it before attaching, so
    // that nothing that happens to the interface afterwards goes unseen.
    static LinkEvents open();

    int fd() const noexcept { return fd_.get(); }

    struct Result {
        std::optional<LostLink> lost; // the first
        std::vector<LostLink> all_lost; // every one, the first included
        std::vector<NamedLink> named;   // the watched interfaces' names, as announced
        std::vector<NamedLink> appeared; // interfaces announced that are not watched
        // The kernel dropped notifications (a full socket buffer) or one did
        // not fit: whether a watched interface went away is unknown.
        bool missed = false;
    };
    // Takes every pending notification without blocking.
    Result read(std::span<const uint32_t> watched);
    // After a watched interface was found gone by other means: its
    // notification, which may trail by a moment, waited for at most
    // `timeout_ms`; nothing when none came.
    std::optional<LostLink> await_loss(std::span<const uint32_t> watched, int timeout_ms);

private:
    explicit LinkEvents(UniqueFd fd);

    UniqueFd fd_;
    std::vector<uint8_t> buffer_; // one recv(2); allocated once
};

} // namespace xdpcap
