// libbpf's diagnostics (the verifier's log included) are kept, not printed:
// a failure becomes one line that quotes the most telling part.
#pragma once

#include <string>

namespace xdpcap {

// From now on libbpf's messages are collected here, starting empty.
void collect_libbpf_log();
void clear_libbpf_log();
// The last line libbpf said since the log was cleared.
std::string last_libbpf_log_line();

} // namespace xdpcap
