// Promiscuous mode held through a packet socket membership: the kernel counts
// memberships per interface and drops ours when the socket closes, so the
// interface returns to its previous state even after SIGKILL. An interface
// deleted or moved to another namespace loses the membership at once (the
// kernel drops it on unregistering the device there), so the close at exit
// finds nothing left to undo and cannot fail.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/unique_fd.hpp"

namespace xdpcap {

class PromiscuousMode {
public:
    // Raises Error with one line naming the interface and the cause. Without
    // CAP_NET_RAW, warns on stderr and returns nothing.
    static std::optional<PromiscuousMode> enable(uint32_t ifindex, const std::string& ifname);

private:
    explicit PromiscuousMode(UniqueFd socket) : socket_(std::move(socket)) {}
    UniqueFd socket_;
};

} // namespace xdpcap
