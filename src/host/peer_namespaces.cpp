#include "host/peer_namespaces.hpp"

#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "base/unique_fd.hpp"
#include "host/netlink_attributes.hpp"

namespace xdpcap {

namespace {

// Sends one dump request and hands each answer's message to `each`, an
// attribute at a time after its fixed header of `fixed` bytes (the
// message's type, the attribute's and its payload), then once with type 0
// at the message's end.
using Attributes = std::function<void(uint16_t message, uint16_t type, std::span<const uint8_t> payload)>;

bool dump(const void* request, size_t size, size_t fixed, uint16_t answer_type, const Attributes& each)
{
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    // Only a strictly checked dump heeds IFA_TARGET_NETNSID; any other would
    // answer with this namespace's addresses.
    const int on = 1;
    if (!fd || ::setsockopt(fd.get(), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &on, sizeof on) != 0 ||
        ::send(fd.get(), request, size, 0) != static_cast<ssize_t>(size))
        return false;
    std::vector<uint8_t> buffer(64 * 1024);
    for (;;) {
        const ssize_t got = ::recv(fd.get(), buffer.data(), buffer.size(), 0);
        if (got <= 0)
            return false;
        size_t at = 0;
        while (at + NLMSG_HDRLEN <= static_cast<size_t>(got)) {
            nlmsghdr header;
            std::memcpy(&header, buffer.data() + at, sizeof header);
            if (header.nlmsg_len < NLMSG_HDRLEN || at + header.nlmsg_len > static_cast<size_t>(got))
                return false;
            if (header.nlmsg_type == NLMSG_DONE)
                return true;
            if (header.nlmsg_type == NLMSG_ERROR)
                return false;
            if (header.nlmsg_type == answer_type) {
                const size_t begin = std::min<size_t>(at + NLMSG_HDRLEN + NLMSG_ALIGN(fixed), at + header.nlmsg_len);
                for_each_attribute(std::span<const uint8_t>(buffer.data() + begin, at + header.nlmsg_len - begin),
                                   [&](uint16_t type, std::span<const uint8_t> payload) {
                                       each(header.nlmsg_type, type, payload);
                                       return true;
                                   });
                each(0, 0, {}); // the message's end
            }
            at += NLMSG_ALIGN(header.nlmsg_len);
        }
    }
}

std::vector<int32_t> namespace_ids()
{
    struct {
        nlmsghdr header;
        rtgenmsg message;
    } request{};
    request.header.nlmsg_len = NLMSG_LENGTH(sizeof(rtgenmsg));
    request.header.nlmsg_type = RTM_GETNSID;
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.header.nlmsg_seq = 1;
    request.message.rtgen_family = AF_UNSPEC;
    std::vector<int32_t> ids;
    dump(&request, request.header.nlmsg_len, sizeof(rtgenmsg), RTM_NEWNSID,
         [&](uint16_t message, uint16_t type, std::span<const uint8_t> payload) {
             int32_t id = -1;
             if (message && type == NETNSA_NSID)
                 read_attribute(payload, id);
             if (id >= 0)
                 ids.push_back(id);
         });
    return ids;
}

std::vector<NamespaceAddress> addresses_of(int32_t nsid)
{
    struct {
        nlmsghdr header;
        ifaddrmsg message;
        rtattr target;
        int32_t nsid;
    } request{};
    static_assert(sizeof request == NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(ifaddrmsg)) + RTA_LENGTH(sizeof(int32_t)));
    request.header.nlmsg_len = sizeof request;
    request.header.nlmsg_type = RTM_GETADDR;
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.header.nlmsg_seq = 1;
    request.message.ifa_family = AF_UNSPEC;
    request.target.rta_type = IFA_TARGET_NETNSID;
    request.target.rta_len = RTA_LENGTH(sizeof(int32_t));
    request.nsid = nsid;
    std::vector<NamespaceAddress> addresses;
    // IFA_LOCAL is the interface's own address where IFA_ADDRESS is a
    // point-to-point peer's.
    NamespaceAddress address, local, broadcast;
    dump(&request, sizeof request, sizeof(ifaddrmsg), RTM_NEWADDR,
         [&](uint16_t message, uint16_t type, std::span<const uint8_t> payload) {
             if (!message) {
                 for (const NamespaceAddress* a : {local.family ? &local : &address, &broadcast}) {
                     if (a->family)
                         addresses.push_back(*a);
                 }
                 address = local = broadcast = NamespaceAddress{};
                 return;
             }
             NamespaceAddress* into = type == IFA_ADDRESS ? &address
                 : type == IFA_LOCAL                      ? &local
                 : type == IFA_BROADCAST                  ? &broadcast
                                                          : nullptr;
             if (!into || (payload.size() != 4 && payload.size() != 16))
                 return;
             into->family = payload.size() == 4 ? 4 : 6;
             std::memcpy(into->bytes.data(), payload.data(), payload.size());
         });
    return addresses;
}

} // namespace

ProcessNamespaceIds::ProcessNamespaceIds() : fd_(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) {}

std::optional<int32_t> ProcessNamespaceIds::of(pid_t pid)
{
    struct {
        nlmsghdr header;
        rtgenmsg message;
        uint8_t pad[NLMSG_ALIGN(sizeof(rtgenmsg)) - sizeof(rtgenmsg)];
        rtattr pid_attr;
        uint32_t pid;
    } request{};
    static_assert(sizeof request == NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(rtgenmsg)) + RTA_LENGTH(sizeof(uint32_t)));
    request.header.nlmsg_len = sizeof request;
    request.header.nlmsg_type = RTM_GETNSID;
    request.header.nlmsg_flags = NLM_F_REQUEST;
    request.header.nlmsg_seq = ++sequence_;
    request.message.rtgen_family = AF_UNSPEC;
    request.pid_attr.rta_type = NETNSA_PID;
    request.pid_attr.rta_len = RTA_LENGTH(sizeof(uint32_t));
    request.pid = static_cast<uint32_t>(pid);
    if (!fd_ || pid <= 0 || ::send(fd_.get(), &request, sizeof request, 0) != static_cast<ssize_t>(sizeof request))
        return std::nullopt;
    std::vector<uint8_t> reply(4096);
    // One reply per request: the answer, or an error (the process is gone).
    const ssize_t got = ::recv(fd_.get(), reply.data(), reply.size(), 0);
    if (got < static_cast<ssize_t>(NLMSG_HDRLEN))
        return std::nullopt;
    nlmsghdr header;
    std::memcpy(&header, reply.data(), sizeof header);
    if (header.nlmsg_type != RTM_NEWNSID || header.nlmsg_len > static_cast<size_t>(got) ||
        header.nlmsg_seq != sequence_)
        return std::nullopt;
    const size_t begin = std::min<size_t>(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(rtgenmsg)), header.nlmsg_len);
    std::optional<int32_t> found;
    for_each_attribute(std::span<const uint8_t>(reply.data() + begin, header.nlmsg_len - begin),
                       [&](uint16_t type, std::span<const uint8_t> payload) {
                           if (type != NETNSA_NSID || payload.size() < sizeof(int32_t))
                               return true;
                           int32_t id = -1;
                           read_attribute(payload, id);
                           if (id >= 0)
                               found = id;
                           return false;
                       });
    return found;
    return std::nullopt;
}

std::vector<PeerNamespace> peer_namespaces()
{
    std::vector<PeerNamespace> peers;
    for (const int32_t id : namespace_ids())
        peers.push_back(PeerNamespace{id, addresses_of(id)});
    return peers;
}

} // namespace xdpcap
