// Command line in tcpdump's spelling. Bad input raises xdpcap::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "cli/config.hpp"

namespace xdpcap {

struct ShowText {
    std::string text; // --help or --version output, for stdout
};

// Either a validated Config to run, or text to print before exiting 0.
using CliOutcome = std::variant<Config, ShowText>;

CliOutcome parse_cli(int argc, const char* const* argv);

// -B: a ring size in KiB as pages per CPU, rounded down to a power of two
// pages (never more memory than asked for). Raises Error below one page or
// above kMaxRingPages pages.
uint32_t ring_pages_from_kib(const std::string& text, size_t page_bytes);

} // namespace xdpcap
