#include "kernel/kallsyms.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <string_view>

#include "unique_fd.hpp"

namespace xdpcap {

// About 200 000 lines: read in large chunks, and only a line whose name
// matches has its address parsed.
std::vector<uint64_t> kernel_symbol_addresses(const std::vector<const char*>& names)
{
    std::vector<uint64_t> found(names.size(), 0);
    const UniqueFd fd(::open("/proc/kallsyms", O_RDONLY | O_CLOEXEC));
    if (!fd)
        return found;
    constexpr size_t kChunk = 1 << 16;
    const auto buffer = std::make_unique_for_overwrite<char[]>(kChunk);
    size_t held = 0; // bytes of an unfinished line kept at the start
    size_t left = names.size();
    while (left > 0) {
        const ssize_t n = ::read(fd.get(), buffer.get() + held, kChunk - held);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        const std::string_view text(buffer.get(), held + static_cast<size_t>(n));
        size_t start = 0;
        for (size_t end; left > 0 && (end = text.find('\n', start)) != std::string_view::npos; start = end + 1) {
            // "ffffffff81234560 T name" or "... t name\t[module]"
            const std::string_view line = text.substr(start, end - start);
            const size_t type_at = line.find(' ');
            if (type_at == std::string_view::npos || line.size() < type_at + 4)
                continue;
            const std::string_view name = line.substr(type_at + 3, line.find('\t', type_at + 3) - (type_at + 3));
            for (size_t i = 0; i < names.size(); ++i) {
                if (found[i] == 0 && name == names[i]) {
                    std::from_chars(line.data(), line.data() + type_at, found[i], 16);
                    --left;
                }
            }
        }
        held = text.size() - start;
        if (held == kChunk)
            held = 0; // a line longer than the buffer: no symbol of ours
        std::memmove(buffer.get(), buffer.get() + start, held);
    }
    return found;
}

DirectMap find_direct_map()
{
#if defined(__x86_64__)
    const std::vector<uint64_t> at = kernel_symbol_addresses({"_text", "page_offset_base", "vmemmap_base"});
    if (at[0] == 0)
        return {"/proc/kallsyms hides kernel addresses (kernel.kptr_restrict)"};
    if ((at[1] == 0) != (at[2] == 0))
        return {"this kernel's direct map is laid out in a way xdpcap does not know"};
    return {std::nullopt, at[1], at[2]};
#else
    return {"page fragments are read on x86-64 only"};
#endif
}

} // namespace xdpcap
