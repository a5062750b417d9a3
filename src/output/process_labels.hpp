// -k: the words that name a packet's process, "proc curl:1234" (with
// ", tid 1240" when another thread than the main one used the socket, and
// ", container web" for a container's process), for the packet comment and
// the text line. Made once per owner and kept in a small table, so a packet
// costs a lookup, not a format.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
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

    // What a label names, read back from a file's comment: the command name
    // and the container's name (empty for none). Nothing when `label` is no
    // label of process `pid`.
    struct Named {
        std::string_view comm;
        std::string_view container;
    };
    static std::optional<Named> parse(std::string_view label, uint32_t pid)
    {
        constexpr std::string_view kStart = "proc ";
        constexpr std::string_view kContainer = ", container ";
        if (!label.starts_with(kStart))
            return std::nullopt;
        // The command name is at most 15 bytes and may hold ':' or ", ": its
        // end is the first ":PID" that ends there or at a ','.
        const std::string pid_text = ':' + std::to_string(pid);
        const size_t last = std::min(label.size(), kStart.size() + sizeof(xdpcap_process{}.comm) - 1);
        for (size_t end = kStart.size(); end <= last; ++end) {
            if (label.substr(end, pid_text.size()) != pid_text)
                continue;
            const size_t after = end + pid_text.size();
            if (after != label.size() && label[after] != ',')
                continue;
            Named named{label.substr(kStart.size(), end - kStart.size()), {}};
            if (const size_t at = label.find(kContainer, after); at != std::string_view::npos)
                named.container = label.substr(at + kContainer.size());
            return named;
        }
        return std::nullopt;
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
