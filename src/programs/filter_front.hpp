// The program that runs a translated filter in front of a hook's sampling
// program: shared by every hook's loader.
#pragma once

#include <bpf/bpf.h>

#include <cstdint>
#include <span>
#include <vector>

#include "programs/program_btf.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

// verdict = filter(ctx) as a subprogram; counts the frame as seen in
// `counters_key`; keep -> tail call into `slot` of the prog array `next_fd`;
// otherwise returns `go_on`.
std::vector<bpf_insn> filter_front(int counters_fd, int32_t counters_key, int next_fd, int32_t slot, int32_t go_on,
                                   std::span<const bpf_insn> filter_body);

// Loads a filter_front() program; raises Error with the verifier's reason.
// `traceable_as`: the BTF through which fentry can attach to it.
UniqueFd load_filter_front(bpf_prog_type type, const char* name, const std::vector<bpf_insn>& prog,
                           bpf_prog_load_opts opts, const std::optional<MainFunction>& traceable_as = std::nullopt);

} // namespace xdpcap
