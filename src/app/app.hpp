#pragma once

#include "cli/config.hpp"

namespace xdpcap {

// Runs a capture as configured; returns the exit status. Raises Error for
// anything that prevents or ends the capture abnormally.
int run_capture(const Config& config);

} // namespace xdpcap
