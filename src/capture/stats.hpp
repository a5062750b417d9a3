// Capture accounting: what the kernel counted per CPU and what userspace did
// with each ring's records, combined into tcpdump-style statistics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/counters.hpp"
#include "base/hooks.hpp"
#include "ring/tally.hpp"
#include "xdpcap_abi.h"

namespace xdpcap {

struct CpuStats {
    int cpu = 0;
    xdpcap_counters kernel{}; // both hooks together
    xdpcap_counters ingress{}; // in trace mode: entry and exit together
    xdpcap_counters egress{};
    // Trace mode only: the hook points on their own.
    xdpcap_counters entry{};
    xdpcap_counters exit{};
    xdpcap_counters drops{}; // --drops: the kernel's drops (also in `kernel`)
    RingTally ring;
    std::string interface; // the interface the ring belongs to
    // Frames the CPU has staged in a batch: seen, not yet in its ring.
    uint64_t staged = 0;
};

struct CaptureTotals {
    uint64_t captured = 0; // written to the output
    uint64_t seen = 0;     // seen by the XDP program
    uint64_t received = 0; // of which the filter kept (all, without a filter)
    uint64_t dropped = 0;  // output helper failures (ring full and other)
    uint64_t invalid = 0;
    uint64_t discarded = 0;
    uint64_t unwritten = 0;
    uint64_t out_of_order = 0;
    uint64_t sample_skipped = 0; // of `received`, left out by --sample
    uint64_t stack_drops = 0;    // --drops: of `received`, drops the filter kept
    uint64_t no_link_header = 0; // --drops: drops before an Ethernet header existed
    uint64_t cut = 0;            // written, longer than the snapshot length
    uint64_t partial = 0;        // written, short of the snapshot length where the hook reaches no further
};

CaptureTotals sum_stats(const std::vector<CpuStats>& cpus);

// The kernel's counts as of what was taken from the rings: samples still in
// a ring (or waiting in the merge, or staged in a batch), and `pending` (the index of a CPU whose
// sample, already taken, goes to the next file), are left to later. So the
// counts of consecutive rotated files add up and each matches its packets.
std::vector<CpuStats> as_taken(std::vector<CpuStats> cpus, std::optional<size_t> pending = std::nullopt);


struct StatsFormat {
    bool per_cpu = false;         // -v: one line per CPU after the totals
    bool filtering = false;
    // With per_cpu, a line per CPU splitting the kernel's counts by hook: in
    // (or, with trace_points' kTrace* bits, entry and exit) and out.
    bool both_directions = false;
    unsigned trace_points = 0;
    uint32_t sample_every = 1;    // --sample N: N > 1 adds the packets sampling left out
    bool drops = false;           // --drops: the kernel's drops on a line of their own
    // With drops and per_cpu: written drops by reason, most frequent first.
    std::vector<std::pair<std::string, uint64_t>> drop_reasons = {};
    uint64_t drop_misses = 0; // drops the kernel did not run the drop program for
    // The snapshot length is the largest there is (no -s below it): the
    // packets longer than it get a line (with -v, always).
    bool largest_snaplen = false;
    // The capture ended because -W's last -G file was complete, not at -c:
    // what the rings still held is not written for that reason.
    bool file_limit_reached = false;
    // SIGUSR1 while capturing: the totals on one line that starts with
    // kInterimPrefix (tcpdump prints one line then too), so that they cannot
    // be taken for the final statistics; per-CPU lines as usual.
    bool interim = false;
};

inline constexpr const char* kInterimPrefix = "interim statistics: ";

// tcpdump's three lines, then whatever else happened; with several
// interfaces, a line of the same counts per interface; per-CPU lines are
// named IFACE@cpuN with several interfaces.
std::string format_stats(const std::vector<CpuStats>& cpus, const StatsFormat& format);

inline std::string format_stats(const std::vector<CpuStats>& cpus, bool per_cpu, bool filtering = false,
                                bool both_directions = false, unsigned trace_points = 0)
{
    return format_stats(cpus, StatsFormat{.per_cpu = per_cpu,
                                          .filtering = filtering,
                                          .both_directions = both_directions,
                                          .trace_points = trace_points});
}

} // namespace xdpcap
