// A live capture, as steps: choose the hooks, claim the output, load,
// attach, open the output, run, report.
#pragma once

#include <string>

#include "cli/config.hpp"

namespace xdpcap {

// Returns the exit status. Raises Error for anything that prevents or ends
// the capture abnormally.
int run_live_capture(const Config& config, std::string filter);

} // namespace xdpcap
