// tcpdump's output file rotation (-C, -G, -W): when the current file is
// closed and what the next one is called. Pure bookkeeping: no I/O, so the
// naming rules can be checked against tcpdump's in unit tests.
#pragma once

#include <cstdint>
#include <ctime>
#include <limits>
#include <optional>
#include <string>

namespace xdpcap {

struct RotationSettings {
    std::optional<uint64_t> file_size; // -C, in bytes: a file larger than this is closed
    std::optional<uint32_t> seconds;   // -G: a file older than this is closed
    std::optional<uint32_t> files;     // -W
    bool rotates() const noexcept { return file_size || seconds; }
};

// Digits for the numbers 0 to files-1 (none for a single file), as tcpdump
// pads its file numbers.
int file_number_width(uint32_t files) noexcept;

// tcpdump's name for a file: `pattern` through strftime(3) at local time
// `when` (with -G only), then `number` zero-padded to `width` digits unless
// both are 0. An empty or overlong result is an Error.
std::string rotation_file_name(const std::string& pattern, bool use_strftime, time_t when, uint32_t number,
                               int width);

class RotationPlan {
public:
    static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

    // `start`: the capture's start, for -G's first name and first period.
    RotationPlan(std::string pattern, RotationSettings settings, time_t start);

    const std::string& current() const noexcept { return current_; }
    // The current file is closed before a packet when the file holds more
    // bytes than this ...
    uint64_t size_limit() const noexcept { return settings_.file_size.value_or(kNever); }
    // ... or the packet is stamped (wall clock, ns) at or after this.
    uint64_t rotate_at_ns() const noexcept;

    enum class Next { Open, Stop };
    // The current file holds `size` bytes and a packet stamped `now_ns` is
    // next: moves on to the next file (current() names it), or says that -W's
    // count of -G files is complete. Time goes first: a new period starts
    // with a new file, numbered from 0 again.
    Next advance(uint64_t now_ns, uint64_t size);

private:
    std::string name(uint32_t number, int width) const;

    std::string pattern_;
    RotationSettings settings_;
    int width_;
    time_t period_start_; // seconds; -G's periods
    uint64_t periods_ = 0; // -G files closed
    uint32_t number_ = 0;  // -C's file number within the period
    std::string current_;
};

} // namespace xdpcap
