// Kernel symbol addresses, as /proc/kallsyms lists them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xdpcap {

// The address of each of `names`; 0 where not found, or hidden
// (kptr_restrict shows every address as 0). Asks the kernel's own index
// where it can: formatting all of /proc/kallsyms costs about 30 ms of CPU.
std::vector<uint64_t> kernel_symbol_addresses(const std::vector<const char*>& names);

// The same through bpf_kallsyms_lookup_name (Linux 5.16) from a syscall
// program; nullopt where the kernel cannot run one. Names under 64 bytes.
std::optional<std::vector<uint64_t>> look_up_kernel_symbols(const std::vector<const char*>& names);

// The same from the text of /proc/kallsyms.
std::vector<uint64_t> scan_kallsyms(const std::vector<const char*>& names);

// Where the kernel's direct map and its struct page array are, for a
// tracing program to read page fragments (bpf/frame_pieces.h; x86-64): the
// addresses of the variables page_offset_base and vmemmap_base where the
// kernel places them at boot (CONFIG_DYNAMIC_MEMORY_LAYOUT), else 0 for the
// fixed 4-level layout. `unreadable` says why not, where they cannot be
// known: kptr_restrict hides every address, or another architecture.
struct DirectMap {
    std::optional<std::string> unreadable;
    uint64_t page_offset_base_at = 0;
    uint64_t vmemmap_base_at = 0;
};
DirectMap find_direct_map();

} // namespace xdpcap
