#include "host/link_events.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/error.hpp"
#include "host/netlink_attributes.hpp"

namespace xdpcap {

namespace {

// One notification is a few KiB; a message larger than this is reported
// as missed rather than misread.
constexpr size_t kBufferBytes = 64 * 1024;

// Whether the attributes of an RTM_DELLINK say the interface moved: the
// kernel adds the new namespace's id only then.
bool names_new_namespace(std::span<const uint8_t> attributes)
{
    bool named = false;
    for_each_attribute(attributes, [&](uint16_t type, std::span<const uint8_t>) {
        named = type == IFLA_NEW_NETNSID;
        return !named;
    });
    return named;
}

// The interface name among the attributes; empty when there is none.
std::string interface_name(std::span<const uint8_t> attributes)
{
    std::string name;
    for_each_attribute(attributes, [&](uint16_t type, std::span<const uint8_t> payload) {
        if (type != IFLA_IFNAME)
            return true;
        const auto* text = reinterpret_cast<const char*>(payload.data());
        name.assign(text, strnlen(text, payload.size()));
        return false;
    });
    return name;
}

} // namespace

namespace {

// Each RTM_NEWLINK or RTM_DELLINK (`type`) message of the generic family in
// `messages` whose interface is (`in_watched`) or is not among `watched`:
// visit(ifindex, its attributes). Copied out field by field: the buffer
// need not be aligned.
template <class Visit>
void for_each_link(std::span<const uint8_t> messages, uint16_t type, std::span<const uint32_t> watched,
                   bool in_watched, Visit visit)
{
    size_t offset = 0;
    while (offset + sizeof(nlmsghdr) <= messages.size()) {
        nlmsghdr header;
        std::memcpy(&header, messages.data() + offset, sizeof header);
        if (header.nlmsg_len < sizeof header || header.nlmsg_len > messages.size() - offset)
            return;
        const auto message = messages.subspan(offset, header.nlmsg_len);
        offset += NLMSG_ALIGN(header.nlmsg_len);
        constexpr size_t kAttributes = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifinfomsg));
        if (header.nlmsg_type != type || message.size() < NLMSG_HDRLEN + sizeof(ifinfomsg))
            continue;
        ifinfomsg info;
        std::memcpy(&info, message.data() + NLMSG_HDRLEN, sizeof info);
        const auto ifindex = static_cast<uint32_t>(info.ifi_index);
        if (info.ifi_family != AF_UNSPEC || ifindex == 0 ||
            (std::find(watched.begin(), watched.end(), ifindex) != watched.end()) != in_watched)
            continue;
        visit(ifindex, message.size() > kAttributes ? message.subspan(kAttributes) : std::span<const uint8_t>{});
    }
}

template <class Visit>
void for_each_watched_link(std::span<const uint8_t> messages, uint16_t type, std::span<const uint32_t> watched,
                           Visit visit)
{
    for_each_link(messages, type, watched, true, visit);
}

} // namespace

void find_new_links(std::span<const uint8_t> messages, std::span<const uint32_t> watched,
                    std::vector<NamedLink>& appeared)
{
    for_each_link(messages, RTM_NEWLINK, watched, false, [&](uint32_t ifindex, std::span<const uint8_t> attributes) {
        // One entry per interface however many notices it had.
        for (const NamedLink& earlier : appeared) {
            if (earlier.ifindex == ifindex)
                return;
        }
        appeared.push_back(NamedLink{ifindex, interface_name(attributes)});
    });
}

void find_link_names(std::span<const uint8_t> messages, std::span<const uint32_t> watched,
                     std::vector<NamedLink>& named)
{
    for_each_watched_link(messages, RTM_NEWLINK, watched, [&](uint32_t ifindex, std::span<const uint8_t> attributes) {
        std::string name = interface_name(attributes);
        if (!name.empty())
            named.push_back(NamedLink{ifindex, std::move(name)});
    });
}

std::optional<LostLink> find_lost_link(std::span<const uint8_t> messages, std::span<const uint32_t> watched)
{
    std::vector<LostLink> lost;
    find_lost_links(messages, watched, lost);
    if (lost.empty())
        return std::nullopt;
    return lost.front();
}

void find_lost_links(std::span<const uint8_t> messages, std::span<const uint32_t> watched,
                     std::vector<LostLink>& lost)
{
    for_each_watched_link(messages, RTM_DELLINK, watched, [&](uint32_t ifindex, std::span<const uint8_t> attributes) {
        lost.push_back(LostLink{ifindex, names_new_namespace(attributes)});
    });
}

LinkEvents::LinkEvents(UniqueFd fd) : fd_(std::move(fd)), buffer_(kBufferBytes) {}

LinkEvents LinkEvents::open()
{
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE));
    if (!fd)
        throw Error("cannot watch the interfaces for removal: netlink socket: " + errno_text(errno));
    sockaddr_nl address{};
    address.nl_family = AF_NETLINK;
    address.nl_groups = RTMGRP_LINK;
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
        throw Error("cannot watch the interfaces for removal: netlink bind: " + errno_text(errno));
    return LinkEvents(std::move(fd));
}

LinkEvents::Result LinkEvents::read(std::span<const uint32_t> watched)
{
    Result result;
    for (;;) {
        sockaddr_nl sender{};
        socklen_t sender_len = sizeof sender;
        // MSG_TRUNC: the length returned is the message's, so a cut one shows.
        const ssize_t n = ::recvfrom(fd_.get(), buffer_.data(), buffer_.size(), MSG_TRUNC,
                                     reinterpret_cast<sockaddr*>(&sender), &sender_len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return result;
            if (errno == ENOBUFS) {
                result.missed = true;
                continue;
            }
            throw Error("reading interface notifications: " + errno_text(errno), kExitRuntime);
        }
        if (static_cast<size_t>(n) > buffer_.size()) {
            result.missed = true;
            continue;
        }
        if (sender.nl_pid != 0)
            continue; // only the kernel's word counts
        const std::span<const uint8_t> messages(buffer_.data(), static_cast<size_t>(n));
        find_lost_links(messages, watched, result.all_lost);
        find_link_names(messages, watched, result.named);
        find_new_links(messages, watched, result.appeared);
        if (!result.lost && !result.all_lost.empty())
            result.lost = result.all_lost.front();
    }
}

std::optional<LostLink> LinkEvents::await_loss(std::span<const uint32_t> watched, int timeout_ms)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (const Result r = read(watched); r.lost)
            return r.lost;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            return std::nullopt;
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR)
            return std::nullopt;
    }
}

} // namespace xdpcap
