#include "ring/clock.hpp"

#include <limits>

namespace xdpcap {

uint64_t timespec_ns(const timespec& ts)
{
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t now_ns(clockid_t clock)
{
    timespec ts{};
    ::clock_gettime(clock, &ts);
    return timespec_ns(ts);
}

ClockOffset measure_clock_offset(ClockReader read_clock, int rounds)
{
    ClockOffset best{0, std::numeric_limits<int64_t>::max()};
    for (int i = 0; i < rounds; ++i) {
        timespec before{}, wall{}, after{};
        read_clock(CLOCK_MONOTONIC, &before);
        read_clock(CLOCK_REALTIME, &wall);
        read_clock(CLOCK_MONOTONIC, &after);
        const auto mono_before = static_cast<int64_t>(timespec_ns(before));
        const auto mono_after = static_cast<int64_t>(timespec_ns(after));
        const int64_t half_bracket = (mono_after - mono_before) / 2;
        if (half_bracket < 0 || half_bracket >= best.uncertainty_ns)
            continue;
        const int64_t mono_mid = mono_before + half_bracket;
        best = ClockOffset{static_cast<int64_t>(timespec_ns(wall)) - mono_mid, half_bracket};
    }
    if (best.uncertainty_ns == std::numeric_limits<int64_t>::max())
        best.uncertainty_ns = 0;
    return best;
}

} // namespace xdpcap
