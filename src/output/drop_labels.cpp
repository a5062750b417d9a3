#include "output/drop_labels.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "base/unique_fd.hpp"
#include "text/decode.hpp"

namespace xdpcap {

namespace {

std::string hex(uint64_t value)
{
    char digits[16];
    char* const end = std::to_chars(digits, digits + sizeof digits, value, 16).ptr;
    return "0x" + std::string(digits, static_cast<size_t>(end - digits));
}

} // namespace

KernelSymbols KernelSymbols::load(const std::string& path)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        return {};
    std::string text;
    char chunk[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        text.append(chunk, static_cast<size_t>(n));
    }
    return parse(text);
}

KernelSymbols KernelSymbols::parse(std::string_view text)
{
    KernelSymbols symbols;
    while (!text.empty()) {
        const size_t end = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, end);
        text.remove_prefix(std::min(end + 1, text.size()));
        uint64_t address = 0;
        const auto [after, error] = std::from_chars(line.data(), line.data() + line.size(), address, 16);
        if (error != std::errc() || address == 0)
            continue;
        line.remove_prefix(static_cast<size_t>(after - line.data()));
        // " T name" or " t name\t[module]": code only.
        if (line.size() < 4 || line[0] != ' ' || (line[1] != 't' && line[1] != 'T') || line[2] != ' ')
            continue;
        line.remove_prefix(3);
        const std::string_view name = line.substr(0, line.find_first_of(" \t"));
        if (name.empty())
            continue;
        symbols.entries_.push_back(Entry{address, static_cast<uint32_t>(symbols.names_.size())});
        symbols.names_.append(name);
        symbols.names_.push_back('\0');
    }
    std::stable_sort(symbols.entries_.begin(), symbols.entries_.end(),
                     [](const Entry& a, const Entry& b) { return a.address < b.address; });
    return symbols;
}

std::string KernelSymbols::describe(uint64_t address) const
{
    auto after = std::upper_bound(entries_.begin(), entries_.end(), address,
                                  [](uint64_t a, const Entry& e) { return a < e.address; });
    if (after == entries_.begin())
        return hex(address);
    const Entry& e = *(after - 1);
    return std::string(names_.c_str() + e.name_offset) + "+" + hex(address - e.address);
}

DropLabels::DropLabels(const std::vector<std::pair<uint32_t, std::string>>& reasons, KernelSymbols symbols)
    : symbols_(std::move(symbols))
{
    for (const auto& [value, name] : reasons)
        names_.emplace(value, name);
    for (const auto& [value, name] : names_)
        index_name(name, value);
}

// A name given to several values stands for the lowest of them.
void DropLabels::index_name(const std::string& name, uint32_t value)
{
    const auto [it, added] = values_by_name_.emplace(name, value);
    if (!added && value < it->second)
        it->second = value;
}

std::string_view DropLabels::reason(uint32_t value)
{
    auto it = names_.find(value);
    if (it == names_.end()) {
        it = names_.emplace(value, "reason " + std::to_string(value)).first;
        index_name(it->second, value);
    }
    return it->second;
}

uint32_t DropLabels::intern(std::string_view name)
{
    if (const auto known = values_by_name_.find(name); known != values_by_name_.end())
        return known->second;
    // Above any value a kernel uses.
    const uint32_t value = names_.empty() || names_.rbegin()->first < (1u << 30) ? (1u << 30) + static_cast<uint32_t>(names_.size())
                                                                                 : names_.rbegin()->first + 1;
    names_.emplace(value, text::escaped(name));
    values_by_name_.emplace(std::string(name), value);
    return value;
}

std::string_view DropLabels::comment(uint32_t reason_value, uint64_t location)
{
    const auto key = std::make_pair(reason_value, location);
    auto it = comments_.find(key);
    if (it == comments_.end())
        it = comments_
                 .emplace(key, "drop reason " + std::string(reason(reason_value)) + " at " +
                                   symbols_.describe(location))
                 .first;
    return it->second;
}

std::vector<std::pair<std::string, uint64_t>> DropLabels::by_frequency()
{
    std::vector<std::pair<std::string, uint64_t>> list;
    for (const auto& [value, n] : counts_)
        list.emplace_back(std::string(reason(value)), n);
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    return list;
}

} // namespace xdpcap
