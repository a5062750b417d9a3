// The single-threaded event loop: epoll over every CPU's ring, a drain timer
// and a signalfd. The rings' records go to the output through a RingMerger,
// which keeps the accounting.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clock.hpp"
#include "interface_map.hpp"
#include "loader.hpp"
#include "packet_output.hpp"
#include "ring_merge.hpp"
#include "rings.hpp"
#include "stats.hpp"
#include "unique_fd.hpp"

namespace xdpcap {

// Blocks the signals we handle and returns a signalfd for them. Call before
// anything is attached so a early Ctrl-C still leads to a clean stop.
UniqueFd block_capture_signals();

enum class StopReason { Signal, CountReached, ReaderGone, InterfaceGone, OutputFailed };

class CaptureLoop {
public:
    struct Options {
        std::optional<uint64_t> count;
        bool verbose = false;
        bool filtering = false;
        bool both_directions = false;
        int drain_interval_ms = 50;
        InterfaceMap interfaces{};
    };

    CaptureLoop(CaptureProgram& program, PerfRings& rings, PacketOutput& output, UniqueFd signals,
                ClockOffset clock, Options options);

    StopReason run();
    // Detaches, drains every ring until the kernel side is quiet, then
    // writes what the merge still holds back.
    void detach_and_drain();
    std::vector<CpuStats> stats() const;
    // Why the loop stopped with OutputFailed.
    const std::string& failure() const noexcept { return failure_; }

private:
    void drain();
    bool handle_signals(); // true: stop
    void print_stats() const;
    // Per CPU and hook; without a filter every packet seen counts as matched.
    struct KernelCounters {
        std::vector<xdpcap_counters> ingress, egress;
        xdpcap_counters both(size_t cpu) const { return ingress[cpu] + egress[cpu]; }
    };
    KernelCounters kernel_counters() const;

    CaptureProgram& program_;
    PerfRings& rings_;
    PacketOutput& output_;
    UniqueFd signals_;
    UniqueFd timer_;
    UniqueFd epoll_;
    ClockOffset clock_;
    Options options_;
    RingMerger merger_;
    std::string failure_;
};

} // namespace xdpcap
