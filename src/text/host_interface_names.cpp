#include "text/host_interface_names.hpp"

#include <cstring>

namespace xdpcap::text {

std::string_view HostInterfaceNames::name(uint32_t index) noexcept
{
    for (size_t i = 0; i < cached_; ++i) {
        if (cache_[i].index == index)
            return {cache_[i].name, strnlen(cache_[i].name, IF_NAMESIZE)};
    }
    Entry& entry = cached_ < cache_.size() ? cache_[cached_++] : uncached_;
    entry.index = index;
    if (!if_indextoname(index, entry.name))
        entry.name[0] = '\0';
    return {entry.name, strnlen(entry.name, IF_NAMESIZE)};
}

} // namespace xdpcap::text
