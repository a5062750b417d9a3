// Trace mode (bpf/trace.bpf.c): fentry/fexit programs on the XDP programs
// someone else attached, sampling into the capture object's rings.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/unique_fd.hpp"
#include "programs/xdp_inventory.hpp"

struct xdpcap_trace;
struct bpf_insn;

namespace xdpcap {

// Trace mode: fentry/fexit programs on XDP programs someone else attached,
// one skeleton instance per traced program, writing into the capture
// object's rings and counters. Their links die with the process.
class TracePrograms {
public:
    struct Deleter {
        void operator()(xdpcap_trace* skel) const noexcept; // detaches its links too
    };

    // `targets`: the programs to trace, in the order of their index in the
    // samples. Raises Error naming the program the kernel refuses to trace.
    // `filter`: the translated filter (FilterContext::Trace), empty for none.
    // With one, a program built here runs at each hook instead: it counts
    // every frame as seen, runs the filter and tail-calls the sampling
    // program for the frames it keeps.
    static TracePrograms load(const std::vector<XdpProgramInfo>& targets, bool entry, bool exit, uint32_t snaplen,
                              uint32_t ifindex, uint32_t sample_every, int events_fd, int counters_fd,
                              int sample_ticks_fd, int stage_fd, int wake_fd, int wakeups_fd,
                              std::span<const bpf_insn> filter);
    void attach();
    // Small traced frames join the capture hooks' batches, as
    // DropProgram::enable_batching().
    void enable_batching(uint32_t batch_bytes) noexcept;
    // Why traced frames are cut at one record here; nothing when their
    // fragments' pages are read.
    const std::optional<std::string>& limitation() const noexcept { return limitation_; }

private:
    struct Instance {
        UniqueFd target;
        std::unique_ptr<xdpcap_trace, Deleter> skel;
        std::string name;
        // With a filter, by hook (0 entry, 1 exit): a prog array holding the
        // sampling program (one each: the kernel wants all of an array's
        // programs of one attach type), the filter program in front of it,
        // and its link.
        UniqueFd samplers[2];
        UniqueFd filter[2];
        UniqueFd filter_link[2];
    };
    static void load_trace_filter(Instance& instance, uint32_t program, std::span<const bpf_insn> filter, bool entry,
                                  bool exit, int counters_fd);

    std::vector<Instance> instances_;
    bool entry_ = true;
    bool exit_ = true;
    std::optional<std::string> limitation_;
};

// Why fentry/fexit on a BPF program cannot be loaded here (the tracing
// program type missing, or loading one refused), from libbpf's probe
// result; nothing when they can.
std::optional<std::string> trace_unavailable(int probe_result);
std::optional<std::string> why_xdp_cannot_be_traced();

} // namespace xdpcap
