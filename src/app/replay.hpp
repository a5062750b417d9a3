// -r FILE: the packets of a capture file through the filter (libpcap's, in
// userspace) to text lines or, with -w, into a filtered pcapng copy that
// keeps the input's interfaces and every option of each packet kept.
#pragma once

#include <string>

#include "cli/config.hpp"

namespace xdpcap {

// Returns the exit status; raises Error for an unreadable or malformed file.
int read_capture_file(const Config& config, const std::string& filter);

} // namespace xdpcap
