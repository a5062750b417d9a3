// Consumer side of one mmap'ed perf ring (struct perf_event_mmap_page + data).
// Our own reader instead of libbpf's callback so that records are handled in
// place, in batches, with one tail update per batch.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "record.hpp"

namespace xdpcap {

class PerfRingReader {
public:
    PerfRingReader() = default;
    // `base` is the start of the mapping; data follows at data_offset.
    PerfRingReader(void* base, size_t data_offset, size_t data_size) noexcept
        : header_(static_cast<perf_event_mmap_page*>(base)),
          data_(static_cast<uint8_t*>(base) + data_offset),
          size_(data_size)
    {
    }

    bool empty() const noexcept { return __atomic_load_n(&header_->data_head, __ATOMIC_ACQUIRE) == read_position(); }

    // Calls on_record(const uint8_t* record, size_t size) for every record
    // present, until it returns false. A record that wraps the ring end is
    // reassembled in `scratch` (kMaxRecordSize bytes). Returns the number of
    // records consumed; a corrupt size field discards the rest of the ring and
    // counts in `corrupt`. If on_record throws, the record it was given counts
    // as consumed. Consumed records stay in place, and the kernel cannot
    // overwrite them, until release(): output may refer to them until then.
    template <class OnRecord>
    size_t drain(OnRecord&& on_record, uint8_t* scratch, uint64_t& corrupt)
    {
        const uint64_t head = __atomic_load_n(&header_->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = read_position();
        size_t consumed = 0;
        // Handled records are consumed even if on_record throws.
        struct RememberPosition {
            PerfRingReader& reader;
            const uint64_t& tail;
            ~RememberPosition()
            {
                reader.position_ = tail;
                reader.unreleased_ = true;
            }
        } remember{*this, tail};
        while (tail < head) {
            const size_t offset = tail & (size_ - 1);
            // Records are 8-byte aligned, so the header never straddles the end.
            perf_event_header header;
            std::memcpy(&header, data_ + offset, sizeof header);
            // The kernel keeps every record a multiple of 8 bytes long.
            if (header.size < sizeof header || header.size % 8 != 0 || header.size > head - tail ||
                header.size > kMaxRecordSize) {
                ++corrupt;
                tail = head;
                break;
            }
            const uint8_t* record = data_ + offset;
            if (offset + header.size > size_) {
                const size_t first = size_ - offset;
                std::memcpy(scratch, data_ + offset, first);
                std::memcpy(scratch + first, data_, header.size - first);
                record = scratch;
            }
            tail += header.size;
            ++consumed;
            if (!on_record(record, static_cast<size_t>(header.size)))
                break;
        }
        return consumed;
    }

    // Hands every consumed record's space back to the kernel.
    void release() noexcept
    {
        if (unreleased_) {
            __atomic_store_n(&header_->data_tail, position_, __ATOMIC_RELEASE);
            unreleased_ = false;
        }
    }

private:
    perf_event_mmap_page* header_ = nullptr;
    uint8_t* data_ = nullptr;
    size_t size_ = 0; // power of two
    uint64_t position_ = 0; // consumed up to here; meaningful while unreleased_
    bool unreleased_ = false;

    uint64_t read_position() const noexcept { return unreleased_ ? position_ : header_->data_tail; }
};

} // namespace xdpcap
