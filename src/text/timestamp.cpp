#include "text/timestamp.hpp"

#include <string_view>

namespace xdpcap::text {

TimeFormat time_format_for(unsigned count) noexcept
{
    switch (count) {
    case 0:
        return TimeFormat::Clock;
    case 1:
        return TimeFormat::None;
    case 2:
        return TimeFormat::Epoch;
    case 3:
        return TimeFormat::Delta;
    case 4:
        return TimeFormat::DateClock;
    default:
        return TimeFormat::SinceFirst;
    }
}

void TimestampPrinter::put_fraction(Writer& out, uint64_t ns) const noexcept
{
    out.put('.');
    if (nano_)
        out.padded(ns % 1'000'000'000ull, 9);
    else
        out.padded(ns % 1'000'000'000ull / 1000, 6);
}

void TimestampPrinter::put_duration(Writer& out, uint64_t ns) const noexcept
{
    const uint64_t seconds = ns / 1'000'000'000ull;
    const uint64_t hours = seconds / 3600;
    if (hours < 100)
        out.padded(hours, 2);
    else
        out.dec(hours);
    out.put(':');
    out.padded(seconds / 60 % 60, 2);
    out.put(':');
    out.padded(seconds % 60, 2);
    put_fraction(out, ns);
}

void TimestampPrinter::put(Writer& out, uint64_t realtime_ns) noexcept
{
    if (!seen_) {
        seen_ = true;
        first_ns_ = previous_ns_ = realtime_ns;
    }
    switch (format_) {
    case TimeFormat::None:
        return;
    case TimeFormat::Epoch:
        out.dec(realtime_ns / 1'000'000'000ull);
        put_fraction(out, realtime_ns);
        break;
    case TimeFormat::Delta:
    case TimeFormat::SinceFirst: {
        // A sign column, as tcpdump's: ' ', or '-' for a packet older than
        // the reference (a clock step back, a file out of order).
        const uint64_t reference = format_ == TimeFormat::Delta ? previous_ns_ : first_ns_;
        out.put(realtime_ns < reference ? '-' : ' ');
        put_duration(out, realtime_ns < reference ? reference - realtime_ns : realtime_ns - reference);
        previous_ns_ = realtime_ns;
        break;
    }
    case TimeFormat::Clock:
    case TimeFormat::DateClock: {
        const auto second = static_cast<time_t>(realtime_ns / 1'000'000'000ull);
        if (second != cached_second_) {
            tm local{};
            localtime_r(&second, &local);
            Writer date(cached_date_, 10);
            date.padded(static_cast<uint64_t>(local.tm_year + 1900) % 10000, 4);
            date.put('-');
            date.padded(static_cast<uint64_t>(local.tm_mon + 1), 2);
            date.put('-');
            date.padded(static_cast<uint64_t>(local.tm_mday), 2);
            Writer time(cached_time_, 8);
            time.padded(static_cast<uint64_t>(local.tm_hour), 2);
            time.put(':');
            time.padded(static_cast<uint64_t>(local.tm_min), 2);
            time.put(':');
            time.padded(static_cast<uint64_t>(local.tm_sec), 2);
            cached_second_ = second;
        }
        if (format_ == TimeFormat::DateClock) {
            out.put(std::string_view(cached_date_, 10), ' ');
        }
        out.put(std::string_view(cached_time_, 8));
        put_fraction(out, realtime_ns);
        break;
    }
    }
    out.put(' ');
}

} // namespace xdpcap::text
