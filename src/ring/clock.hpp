// Kernel sample timestamps are CLOCK_MONOTONIC; pcapng wants wall-clock time.
#pragma once

#include <cstdint>
#include <ctime>

namespace xdpcap {

using ClockReader = int (*)(clockid_t, timespec*);

struct ClockOffset {
    int64_t realtime_minus_monotonic_ns = 0;
    int64_t uncertainty_ns = 0; // half the tightest monotonic bracket around the realtime read
};

// Reads REALTIME between two MONOTONIC reads, several times, and keeps the
// tightest bracket: the offset is then exact to within that bracket.
ClockOffset measure_clock_offset(ClockReader read_clock = ::clock_gettime, int rounds = 16);

inline uint64_t monotonic_to_realtime(uint64_t monotonic_ns, const ClockOffset& offset)
{
    return static_cast<uint64_t>(static_cast<int64_t>(monotonic_ns) + offset.realtime_minus_monotonic_ns);
}

uint64_t timespec_ns(const timespec& ts);
uint64_t now_ns(clockid_t clock);

} // namespace xdpcap
