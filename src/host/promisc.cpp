#include "host/promisc.hpp"

#include <linux/if_packet.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

#include "base/error.hpp"

namespace xdpcap {

std::optional<PromiscuousMode> PromiscuousMode::enable(uint32_t ifindex, const std::string& ifname)
{
    // Protocol 0: the socket is bound to no protocol, so it receives nothing.
    UniqueFd socket(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
    if (!socket && errno == EPERM) {
        // Capture itself does not need CAP_NET_RAW: go on without, and say so.
        std::fprintf(stderr,
                     "xdpcap: warning: %s stays in its current mode: promiscuous mode needs CAP_NET_RAW "
                     "(-p silences this)\n",
                     ifname.c_str());
        return std::nullopt;
    }
    if (!socket)
        throw Error("cannot put " + ifname + " into promiscuous mode: packet socket: " + errno_text(errno));
    packet_mreq request{};
    request.mr_ifindex = static_cast<int>(ifindex);
    request.mr_type = PACKET_MR_PROMISC;
    if (::setsockopt(socket.get(), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &request, sizeof request) != 0)
        throw Error("cannot put " + ifname + " into promiscuous mode: " + errno_text(errno));
    return PromiscuousMode(std::move(socket));
}

} // namespace xdpcap
