// -k: the words that name a packet's process, "proc curl:1234" (with
// ", tid 1240" when another thread than the main one used the socket, and
// ", container web" for a container's process), for the packet comment and
// the text line; both ends when both are on this host, sender first:
// "proc curl:1234 > nginx:987". Made once per pair of owners and kept in a
// small table, so a packet costs a lookup, not a format.
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

    // Empty for an unknown owner (pid 0). `peer`: the packet's other end on
    // this host, the receiver's, named after " > "; pid 0 for none.
    std::string_view label(const xdpcap_process& process, const xdpcap_process& peer = {})
    {
        if (process.pid == 0)
            return {};
        Slot& slot = slots_[slot_of(process, peer)];
        if (!slot.used || std::memcmp(&slot.key, &process, sizeof process) != 0 ||
            std::memcmp(&slot.peer, &peer, sizeof peer) != 0) {
            slot.key = process;
            slot.peer = peer;
            slot.used = true;
            format(process, slot.text);
            add_container(process, slot.text);
            if (peer.pid != 0) {
                std::string other;
                format(peer, other);
                slot.text += kPeer;
                slot.text.append(other, kStart.size());
                add_container(peer, slot.text);
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
        uint32_t pid = 0;
    };
    static std::optional<Named> parse(std::string_view label, uint32_t pid)
    {
        if (!label.starts_with(kStart))
            return std::nullopt;
        return parse_end(label.substr(kStart.size()), pid);
    }

    // The other end a label names after " > ", with its pid; nothing when it
    // names one end only. `pid`: the first end's.
    static std::optional<Named> parse_peer(std::string_view label, uint32_t pid)
    {
        if (!label.starts_with(kStart))
            return std::nullopt;
        const std::string_view words = label.substr(kStart.size());
        const auto first = parse_end(words, pid);
        if (!first || first->end == words.size())
            return std::nullopt;
        const std::string_view rest = words.substr(first->end + kPeer.size());
        // Its pid is the one a ":PID" at the end or before a ',' gives.
        for (size_t colon = rest.find(':'); colon != std::string_view::npos; colon = rest.find(':', colon + 1)) {
            size_t digits = colon + 1;
            uint32_t value = 0;
            while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9' && value < 0x40000000)
                value = value * 10 + static_cast<uint32_t>(rest[digits++] - '0');
            if (digits == colon + 1 || (digits != rest.size() && rest[digits] != ','))
                continue;
            if (auto named = parse_end(rest, value))
                return named;
        }
        return std::nullopt;
    }

private:
    static constexpr std::string_view kStart = "proc ";
    static constexpr std::string_view kPeer = " > ";
    static constexpr std::string_view kContainer = ", container ";

    void add_container(const xdpcap_process& process, std::string& text) const
    {
        if (!container_of_)
            return;
        if (const std::string container = container_of_(process.cgroup_id); !container.empty()) {
            text += kContainer;
            text += container;
        }
    }

    struct ParsedEnd : Named {
        size_t end = 0; // in the label parsed, where this end's words stop
    };
    // One end's words, "COMM:PID[, tid T][, container NAME]", up to " > "
    // or the end. The command name is at most 15 bytes and may hold ':',
    // ", " or " > ": its end is the first ":PID" that ends there or at a
    // ',' or ' '.
    static std::optional<ParsedEnd> parse_end(std::string_view words, uint32_t pid)
    {
        const std::string pid_text = std::string(":").append(std::to_string(pid));
        const size_t last = std::min(words.size(), sizeof(xdpcap_process{}.comm) - 1);
        for (size_t end = 0; end <= last; ++end) {
            if (words.substr(end, pid_text.size()) != pid_text)
                continue;
            const size_t after = end + pid_text.size();
            if (after != words.size() && words[after] != ',' && words.substr(after, kPeer.size()) != kPeer)
                continue;
            ParsedEnd named;
            named.comm = words.substr(0, end);
            named.pid = pid;
            const size_t stop = std::min(words.size(), words.find(kPeer, after));
            if (const size_t at = words.substr(0, stop).find(kContainer, after); at != std::string_view::npos)
                named.container = words.substr(at + kContainer.size(), stop - at - kContainer.size());
            named.end = stop;
            return named;
        }
        return std::nullopt;
    }

    static constexpr size_t kSlots = 256;
    static size_t slot_of(const xdpcap_process& process, const xdpcap_process& peer)
    {
        return (process.pid * 2654435761u ^ process.tid ^ peer.pid * 40503u ^ peer.tid) % kSlots;
    }
    struct Slot {
        xdpcap_process key{};
        xdpcap_process peer{};
        bool used = false;
        std::string text;
    };
    std::array<Slot, kSlots> slots_{};
    ContainerOf container_of_;
};

} // namespace xdpcap
