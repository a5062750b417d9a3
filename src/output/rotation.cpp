#include "output/rotation.hpp"

#include <climits>
#include <cstdio>
#include <vector>

#include "base/error.hpp"

namespace xdpcap {

int file_number_width(uint32_t files) noexcept
{
    int width = 0;
    for (uint32_t largest = files > 0 ? files - 1 : 0; largest > 0; largest /= 10)
        ++width;
    return width;
}

std::string rotation_file_name(const std::string& pattern, bool use_strftime, time_t when, uint32_t number,
                               int width)
{
    if (pattern.empty())
        throw Error("an empty string is not a valid file name");
    std::string base = pattern;
    if (use_strftime) {
        tm local{};
        if (!localtime_r(&when, &local))
            throw Error("cannot convert the time for the file name " + pattern);
        std::vector<char> buffer(PATH_MAX);
        const size_t n = std::strftime(buffer.data(), buffer.size(), pattern.c_str(), &local);
        // 0 is also the answer for a pattern that formats to nothing.
        if (n == 0)
            throw Error("the file name pattern " + pattern + " gives an empty or too long name");
        base.assign(buffer.data(), n);
    }
    if (number != 0 || width != 0) {
        char digits[16];
        const int n = std::snprintf(digits, sizeof digits, "%0*u", width, number);
        base.append(digits, static_cast<size_t>(n));
    }
    if (base.size() >= PATH_MAX)
        throw Error("too many output files or file name too long (" + std::to_string(base.size()) + " bytes)");
    return base;
}

RotationPlan::RotationPlan(std::string pattern, RotationSettings settings, time_t start)
    : pattern_(std::move(pattern)), settings_(settings), width_(file_number_width(settings.files.value_or(0))),
      period_start_(start)
{
    // As tcpdump: with -C the first file already carries the padded number
    // 0 (so without -W, no number at all); without -C, never a number.
    current_ = name(0, settings_.file_size ? width_ : 0);
}

std::string RotationPlan::name(uint32_t number, int width) const
{
    return rotation_file_name(pattern_, settings_.seconds.has_value(), period_start_, number, width);
}

uint64_t RotationPlan::rotate_at_ns() const noexcept
{
    if (!settings_.seconds || period_start_ < 0)
        return kNever;
    const uint64_t at = static_cast<uint64_t>(period_start_) + *settings_.seconds;
    return at > kNever / 1'000'000'000u ? kNever : at * 1'000'000'000u;
}

RotationPlan::Next RotationPlan::advance(uint64_t now_ns, uint64_t size)
{
    if (now_ns >= rotate_at_ns()) {
        period_start_ = static_cast<time_t>(now_ns / 1'000'000'000u);
        ++periods_;
        // -W with -G alone: that many files, then the capture ends.
        if (!settings_.file_size && settings_.files && periods_ >= *settings_.files)
            return Next::Stop;
        number_ = 0;
        current_ = name(0, settings_.file_size ? width_ : 0);
        return Next::Open;
    }
    if (size > size_limit()) {
        ++number_;
        // -W with -C: a ring of that many files (with -G too, within each period).
        if (settings_.files && number_ >= *settings_.files)
            number_ = 0;
        current_ = name(number_, width_);
    }
    return Next::Open;
}

} // namespace xdpcap
