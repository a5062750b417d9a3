// The single-threaded event loop: epoll over every CPU's ring, a drain timer
// and a signalfd. Drains records into the output and keeps the accounting.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "clock.hpp"
#include "loader.hpp"
#include "packet_output.hpp"
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
    };

    CaptureLoop(CaptureProgram& program, PerfRings& rings, PacketOutput& output, UniqueFd signals,
                ClockOffset clock, Options options);

    StopReason run();
    // Detaches, then drains every ring until the kernel side is quiet.
    void detach_and_drain();
    std::vector<CpuStats> stats() const;
    // Why the loop stopped with OutputFailed.
    const std::string& failure() const noexcept { return failure_; }

private:
    void drain_all();
    void drain_ring(size_t ring);
    bool handle_signals(); // true: stop
    void print_stats() const;
    // Per CPU and hook; without a filter every packet seen counts as matched.
    struct KernelCounters {
        std::vector<xdpcap_counters> ingress, egress;
        xdpcap_counters both(size_t cpu) const { return ingress[cpu] + egress[cpu]; }
    };
    KernelCounters kernel_counters() const;
    void count_unwritten();

    CaptureProgram& program_;
    PerfRings& rings_;
    PacketOutput& output_;
    UniqueFd signals_;
    UniqueFd timer_;
    UniqueFd epoll_;
    ClockOffset clock_;
    Options options_;
    std::vector<RingTally> tallies_;
    std::vector<uint8_t> scratch_;
    uint64_t written_ = 0;
    uint64_t corrupt_ = 0;
    bool count_reached_ = false;
    bool output_gone_ = false; // further samples are counted, not written
    std::string failure_;
};

} // namespace xdpcap
