// Capture accounting: what the kernel counted per CPU and what userspace did
// with each ring's records, combined into tcpdump-style statistics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xdpcap_abi.h"

namespace xdpcap {

struct RingTally {
    uint64_t samples = 0;      // sample records taken from the ring
    uint64_t written = 0;      // packets handed to the output
    uint64_t discarded = 0;    // samples read after -c was reached
    uint64_t unwritten = 0;    // samples the output could not take (write failed, reader gone)
    uint64_t invalid = 0;      // records refused by the decoder
    uint64_t lost_records = 0; // sum of PERF_RECORD_LOST notices
    uint64_t out_of_order = 0; // of `written`: written after a newer packet from any ring
};

struct CpuStats {
    int cpu = 0;
    xdpcap_counters kernel{}; // both hooks together
    xdpcap_counters ingress{}; // in trace mode: entry and exit together
    xdpcap_counters egress{};
    // Trace mode only: the hook points on their own.
    xdpcap_counters entry{};
    xdpcap_counters exit{};
    RingTally ring;
    std::string interface; // the interface the ring belongs to
};

// Field by field, for totals over hooks.
xdpcap_counters operator+(const xdpcap_counters& a, const xdpcap_counters& b);

struct CaptureTotals {
    uint64_t captured = 0; // written to the output
    uint64_t seen = 0;     // seen by the XDP program
    uint64_t received = 0; // of which the filter kept (all, without a filter)
    uint64_t dropped = 0;  // output helper failures (ring full and other)
    uint64_t invalid = 0;
    uint64_t discarded = 0;
    uint64_t unwritten = 0;
    uint64_t out_of_order = 0;
};

CaptureTotals sum_stats(const std::vector<CpuStats>& cpus);

// The kernel's counts as of what was taken from the rings: samples still in
// a ring (or waiting in the merge), and `pending` (the index of a CPU whose
// sample, already taken, goes to the next file), are left to later. So the
// counts of consecutive rotated files add up and each matches its packets.
std::vector<CpuStats> as_taken(std::vector<CpuStats> cpus, std::optional<size_t> pending = std::nullopt);

// Trace mode's hook points, for format_stats().
inline constexpr unsigned kTraceEntry = 1, kTraceExit = 2;

// tcpdump's three lines; with several interfaces, a line of the same counts
// per interface; with `per_cpu`, one line per CPU (named IFACE@cpuN with
// several interfaces) after them, and with `both_directions` or
// `trace_points` (kTrace* bits) a line per CPU splitting the kernel's counts
// by hook: in (or entry and exit) and out.
std::string format_stats(const std::vector<CpuStats>& cpus, bool per_cpu, bool filtering = false,
                         bool both_directions = false, unsigned trace_points = 0);

} // namespace xdpcap
