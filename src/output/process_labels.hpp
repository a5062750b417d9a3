// -k: the words that name a packet's process, "proc curl:1234" (with
// ", tid 1240" when another thread than the main one used the socket, and
// ", container web" for a container's process), for the packet comment and
// the text line. Made once per owner and kept in a small table, so a packet
// costs a lookup, not a format.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "xdpcap_abi.h"

namespace xdpcap {

class ProcessLabels {
public:
    // The container a cgroup belongs to, empty for none; asked once per owner.
    using ContainerOf = std::function<std::string(uint64_t cgroup_id)>;
    explicit ProcessLabels(ContainerOf container_of = {}) : container_of_(std::move(container_of)) {}

    // Empty for an unknown owner (pid 0).
    std::string_view label(const xdpcap_process& process)
    {
        if (process.pid == 0)
            return {};
        Slot& slot = slots_[slot_of(process)];
        if (!slot.used || std::memcmp(&slot.key, &process, sizeof process) != 0) {
            slot.key = process;
            slot.used = true;
            format(process, slot.text);
            if (container_of_) {
                if (const std::string container = container_of_(process.cgroup_id); !container.empty()) {
                    slot.text += ", container ";
                    slot.text += container;
                }
            }
        }
        return slot.text;
    }

    static void format(const xdpcap_process& process, std::string& text)
    {
        text = "proc ";
        for (size_t i = 0; i < sizeof process.comm && process.comm[i]; ++i) {
            const char c = process.comm[i];
            // The kernel keeps whatever bytes a process names itself with.
            text += c >= 0x20 && c < 0x7f ? c : '?';
        }
        text += ':';
        text += std::to_string(process.pid);
        if (process.tid != process.pid && process.tid != 0) {
            text += ", tid ";
            text += std::to_string(process.tid);
        }
    }

private:
    static constexpr size_t kSlots = 256;
    static size_t slot_of(const xdpcap_process& process)
    {
        return (process.pid * 2654435761u ^ process.tid) % kSlots;
    }
    struct Slot {
        xdpcap_process key{};
        bool used = false;
        std::string text;
    };
    std::array<Slot, kSlots> slots_{};
    ContainerOf container_of_;
};

} // namespace xdpcap
