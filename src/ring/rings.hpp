// One perf ring per online CPU, created by libbpf with batched wakeups and
// read by our own PerfRingReader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/error.hpp"
#include "ring/perf_ring.hpp"

struct perf_buffer;

namespace xdpcap {

struct PerfBufferDeleter {
    void operator()(perf_buffer* pb) const noexcept;
};

// The rings could not be locked in memory (RLIMIT_MEMLOCK without
// CAP_IPC_LOCK): smaller ones may still fit.
class RingMemoryError : public Error {
public:
    using Error::Error;
};

struct RingSettings {
    uint32_t pages_per_cpu;
    uint32_t wakeup_bytes; // the kernel wakes us once this much is pending
};

class PerfRings {
public:
    PerfRings(int events_map_fd, const RingSettings& settings);

    size_t count() const noexcept { return readers_.size(); }
    int cpu(size_t ring) const noexcept { return cpus_[ring]; }
    int fd(size_t ring) const;
    PerfRingReader& reader(size_t ring) noexcept { return readers_[ring]; }
    std::span<PerfRingReader> readers() noexcept { return readers_; }
    size_t bytes_per_ring() const noexcept { return data_size_; }

private:
    std::unique_ptr<perf_buffer, PerfBufferDeleter> buffer_;
    std::vector<int> cpus_;
    std::vector<PerfRingReader> readers_;
    size_t data_size_ = 0;
};

size_t page_size();
inline size_t ring_bytes(uint32_t pages) { return page_size() * pages; }

// Default ring size: kRingBudgetBytes shared by the CPUs, each ring between
// kMinDefaultRingBytes and kMaxDefaultRingBytes, rounded down to a power of
// two pages. Traffic spread over many CPUs puts less on each ring.
inline constexpr size_t kRingBudgetBytes = size_t{32} << 20;
inline constexpr size_t kMinDefaultRingBytes = size_t{1} << 20;
inline constexpr size_t kMaxDefaultRingBytes = size_t{16} << 20;
uint32_t default_ring_pages(size_t cpus, size_t page_bytes);

// kernel.perf_event_paranoid (2, the upstream default, when unreadable).
int perf_event_paranoid();

// Online CPUs from /sys/devices/system/cpu/online ("0-3,5").
std::vector<int> online_cpus();
std::vector<int> parse_cpu_list(const std::string& text);

} // namespace xdpcap
