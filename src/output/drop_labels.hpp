// --drops: the running kernel's words for a drop, taken once at start (its
// reason names from BTF, its code addresses from /proc/kallsyms), and the
// count of drops written per reason. A label is built the first time a
// (reason, location) pair is seen; every later drop there reuses it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xdpcap {

// Function symbols by address, as /proc/kallsyms lists them.
class KernelSymbols {
public:
    KernelSymbols() = default;
    // Unreadable or hidden (kptr_restrict) addresses give an empty table.
    static KernelSymbols load(const std::string& path = "/proc/kallsyms");
    // `text`: /proc/kallsyms' format ("ffffffff81234560 T name [module]").
    static KernelSymbols parse(std::string_view text);
    // "udp_queue_rcv_one_skb+0x1e3"; "0xffffffff81234743" when unknown.
    std::string describe(uint64_t address) const;
    size_t size() const noexcept { return entries_.size(); }

private:
    struct Entry {
        uint64_t address;
        uint32_t name_offset; // in names_, NUL-terminated
    };
    std::vector<Entry> entries_;
    std::string names_;
};

class DropLabels {
public:
    // `reasons`: enum skb_drop_reason's values and names (kernel_btf()).
    DropLabels(const std::vector<std::pair<uint32_t, std::string>>& reasons, KernelSymbols symbols);

    // "NO_SOCKET"; "reason 77" for a value the kernel's BTF does not name.
    std::string_view reason(uint32_t value);
    // The pcapng comment of a drop: "drop reason NO_SOCKET at __udp4_lib_rcv+0x8b1".
    std::string_view comment(uint32_t reason, uint64_t location);

    void count(uint32_t reason) { ++counts_[reason]; }
    // -r: the value standing for a reason known by its name only (from a
    // file's comment); the same name always gets the same value, and
    // reason() gives the name escaped (it came from a file).
    uint32_t intern(std::string_view name);
    // Reasons of the drops counted, most frequent first (ties by name).
    std::vector<std::pair<std::string, uint64_t>> by_frequency();

private:
    void index_name(const std::string& name, uint32_t value);

    std::map<uint32_t, std::string> names_;
    // The values of names_ by the name as given (before any escaping): a
    // file of many distinct reasons is read in n log n.
    std::map<std::string, uint32_t, std::less<>> values_by_name_;
    KernelSymbols symbols_;
    std::map<std::pair<uint32_t, uint64_t>, std::string> comments_;
    std::map<uint32_t, uint64_t> counts_;
};

} // namespace xdpcap
