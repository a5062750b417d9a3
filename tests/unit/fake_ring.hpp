// A perf ring in plain memory: a perf_event_mmap_page followed by a data
// area, filled by hand as the kernel would.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ring/perf_ring.hpp"

namespace xdpcap::test {

class FakeRing {
public:
    static constexpr size_t kDataSize = 256;
    static constexpr size_t kDataOffset = (sizeof(perf_event_mmap_page) + 63) & ~size_t{63};

    explicit FakeRing(size_t data_size = kDataSize) : data_size_(data_size), memory_(kDataOffset + data_size, 0)
    {
        header()->data_head = header()->data_tail = 0;
    }

    perf_event_mmap_page* header() { return reinterpret_cast<perf_event_mmap_page*>(memory_.data()); }
    PerfRingReader reader() { return PerfRingReader(memory_.data(), kDataOffset, data_size_); }

    void start_at(uint64_t position) { header()->data_head = header()->data_tail = position; }

    void push(const std::vector<uint8_t>& record)
    {
        uint64_t head = header()->data_head;
        for (uint8_t byte : record)
            memory_[kDataOffset + (head++ % data_size_)] = byte;
        header()->data_head = head;
    }

private:
    size_t data_size_;
    alignas(8) std::vector<uint8_t> memory_;
};

} // namespace xdpcap::test
