#include <gtest/gtest.h>

#include "ring/clock.hpp"

using namespace xdpcap;

namespace {

// Monotonic reads advance by a scripted step; realtime is monotonic + 1e18 ns.
struct ScriptedClock {
    static inline int64_t mono_ns = 0;
    static inline int call = 0;
    static inline std::vector<int64_t> steps;

    static int read(clockid_t id, timespec* ts)
    {
        const int64_t step = steps[static_cast<size_t>(call++) % steps.size()];
        mono_ns += step;
        const int64_t value = id == CLOCK_REALTIME ? mono_ns + 1'000'000'000'000'000'000 : mono_ns;
        ts->tv_sec = value / 1'000'000'000;
        ts->tv_nsec = value % 1'000'000'000;
        return 0;
    }
};

} // namespace

TEST(Clock, PicksTightestBracket)
{
    ScriptedClock::mono_ns = 5'000'000'000;
    ScriptedClock::call = 0;
    // Round 1 brackets the realtime read with 5000 + 5000 ns; round 2 with 10 + 10.
    ScriptedClock::steps = {1, 5000, 5000, 1, 10, 10};
    const ClockOffset offset = measure_clock_offset(ScriptedClock::read, 2);
    EXPECT_EQ(offset.uncertainty_ns, 10);
    // The realtime read sits exactly in the middle of its bracket, so the estimate is exact.
    EXPECT_EQ(offset.realtime_minus_monotonic_ns, 1'000'000'000'000'000'000);
}

TEST(Clock, ConvertsMonotonicToRealtime)
{
    const ClockOffset offset{1'700'000'000'000'000'000, 0};
    EXPECT_EQ(monotonic_to_realtime(123'456'789, offset), 1'700'000'000'123'456'789ull);
}

TEST(Clock, RealOffsetIsTight)
{
    const ClockOffset offset = measure_clock_offset();
    EXPECT_LT(offset.uncertainty_ns, 100'000); // well under a millisecond
    const uint64_t mono = now_ns(CLOCK_MONOTONIC);
    const uint64_t real = now_ns(CLOCK_REALTIME);
    const int64_t error = static_cast<int64_t>(monotonic_to_realtime(mono, offset)) - static_cast<int64_t>(real);
    EXPECT_LT(std::abs(error), 1'000'000);
}
