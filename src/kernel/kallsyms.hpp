// Kernel symbol addresses, as /proc/kallsyms lists them.
#pragma once

#include <cstdint>
#include <vector>

namespace xdpcap {

// The address of each of `names`; 0 where not found, or hidden
// (kptr_restrict shows every address as 0).
std::vector<uint64_t> kernel_symbol_addresses(const std::vector<const char*>& names);

} // namespace xdpcap
