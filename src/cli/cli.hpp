// Command line in tcpdump's spelling. Bad input raises xdpcap::Error.
#pragma once

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

} // namespace xdpcap
