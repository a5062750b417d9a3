#include "host/peer_namespaces.hpp"

#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <functional>

#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

// Sends one dump request and hands each answer's message to `each` (its
// type, its body after the fixed header of `fixed` bytes, as attributes).
using Attributes = std::function<void(uint16_t type, const rtattr& attr, const uint8_t* value)>;

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
                size_t offset = at + NLMSG_HDRLEN + NLMSG_ALIGN(fixed);
                const size_t end = at + header.nlmsg_len;
                while (offset + sizeof(rtattr) <= end) {
                    rtattr attr;
                    std::memcpy(&attr, buffer.data() + offset, sizeof attr);
                    if (attr.rta_len < sizeof attr || offset + attr.rta_len > end)
                        break;
                    each(header.nlmsg_type, attr, buffer.data() + offset + RTA_LENGTH(0));
                    offset += RTA_ALIGN(attr.rta_len);
                }
                each(0, rtattr{}, nullptr); // the message's end
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
         [&](uint16_t type, const rtattr& attr, const uint8_t* value) {
             if (type && attr.rta_type == NETNSA_NSID && attr.rta_len >= RTA_LENGTH(sizeof(int32_t))) {
                 int32_t id;
                 std::memcpy(&id, value, sizeof id);
                 if (id >= 0)
                     ids.push_back(id);
             }
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
         [&](uint16_t type, const rtattr& attr, const uint8_t* value) {
             if (!type) {
                 for (const NamespaceAddress* a : {local.family ? &local : &address, &broadcast}) {
                     if (a->family)
                         addresses.push_back(*a);
                 }
                 address = local = broadcast = NamespaceAddress{};
                 return;
             }
             NamespaceAddress* into = attr.rta_type == IFA_ADDRESS ? &address
                 : attr.rta_type == IFA_LOCAL                      ? &local
                 : attr.rta_type == IFA_BROADCAST                  ? &broadcast
                                                                   : nullptr;
             const size_t length = attr.rta_len - RTA_LENGTH(0);
             if (!into || (length != 4 && length != 16))
                 return;
             into->family = length == 4 ? 4 : 6;
             std::memcpy(into->bytes.data(), value, length);
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
    size_t offset = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(rtgenmsg));
    while (offset + sizeof(rtattr) <= header.nlmsg_len) {
        rtattr attr;
        std::memcpy(&attr, reply.data() + offset, sizeof attr);
        if (attr.rta_len < sizeof attr || offset + attr.rta_len > header.nlmsg_len)
            break;
        if (attr.rta_type == NETNSA_NSID && attr.rta_len >= RTA_LENGTH(sizeof(int32_t))) {
            int32_t id;
            std::memcpy(&id, reply.data() + offset + RTA_LENGTH(0), sizeof id);
            return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
        }
        offset += RTA_ALIGN(attr.rta_len);
    }
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
