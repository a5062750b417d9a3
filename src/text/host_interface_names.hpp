// SLL2's interface indexes named as tcpdump names them: by if_indextoname()
// on this host, each index asked once (a system call per packet would cost
// more than the packet's decode).
#pragma once

#include <net/if.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "text/decode.hpp"

namespace xdpcap::text {

class HostInterfaceNames final : public InterfaceNames {
public:
    std::string_view name(uint32_t index) noexcept override;

private:
    struct Entry {
        uint32_t index = 0;
        char name[IF_NAMESIZE] = {}; // empty: no such interface
    };
    // Files name few interfaces; beyond these, indexes are looked up each time.
    std::array<Entry, 64> cache_{};
    size_t cached_ = 0;
    Entry uncached_{};
};

} // namespace xdpcap::text
