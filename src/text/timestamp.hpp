// tcpdump's timestamp formats (-t to -ttttt), in microseconds or, with
// --time-stamp-precision=nano, nanoseconds. The local date and time are
// recomputed only when the second changes.
#pragma once

#include <cstdint>
#include <ctime>

#include "text/writer.hpp"

namespace xdpcap::text {

enum class TimeFormat {
    Clock,       // default: 12:04:51.123456, local time
    None,        // -t
    Epoch,       // -tt: 1795431326.123456
    Delta,       // -ttt: since the previous packet, 00:00:00.000378
    DateClock,   // -tttt: 2026-11-23 12:04:51.123456
    SinceFirst,  // -ttttt: since the first packet
};

// -t repeated `count` times (0: the default).
TimeFormat time_format_for(unsigned count) noexcept;

class TimestampPrinter {
public:
    TimestampPrinter(TimeFormat format, bool nanoseconds) noexcept : format_(format), nano_(nanoseconds) {}

    // The timestamp and the space after it (nothing for -t).
    void put(Writer& out, uint64_t realtime_ns) noexcept;

private:
    void put_fraction(Writer& out, uint64_t ns) const noexcept;
    void put_duration(Writer& out, uint64_t ns) const noexcept;

    TimeFormat format_;
    bool nano_;
    bool seen_ = false;
    uint64_t first_ns_ = 0;
    uint64_t previous_ns_ = 0;
    time_t cached_second_ = -1;
    char cached_date_[11] = "1970-01-01";
    char cached_time_[9] = "00:00:00";
};

} // namespace xdpcap::text
