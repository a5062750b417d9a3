// Consumer side of one mmap'ed perf ring (struct perf_event_mmap_page + data).
// Our own reader instead of libbpf's callback so that records are handled in
// place, in batches, with one tail update per batch.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ring/record.hpp"

namespace xdpcap {

class PerfRingReader {
public:
    PerfRingReader() = default;
    // `base` is the start of the mapping; data follows at data_offset.
    PerfRingReader(void* base, size_t data_offset, size_t data_size) noexcept
        : header_(static_cast<perf_event_mmap_page*>(base)),
          data_(static_cast<uint8_t*>(base) + data_offset),
          size_(data_size), position_(header_->data_tail), released_(position_), head_(position_)
    {
    }

    bool empty() const noexcept { return __atomic_load_n(&header_->data_head, __ATOMIC_ACQUIRE) == position_; }

    struct Record {
        const uint8_t* data = nullptr; // nullptr: nothing published
        size_t size = 0;
    };

    // The record at the read position, left there: the merge holds one
    // record per ring while it compares their timestamps. A record that
    // wraps the ring end is reassembled in `scratch` (kMaxRecordSize bytes),
    // which must then stay untouched until the record is written. A corrupt
    // size field discards everything published and counts in `corrupt`.
    Record peek(uint8_t* scratch, uint64_t& corrupt) noexcept
    {
        if (position_ == head_) {
            // data_head is read only once the known records are used up: it
            // shares a cache line with what the producer CPU writes.
            head_ = __atomic_load_n(&header_->data_head, __ATOMIC_ACQUIRE);
            if (position_ == head_)
                return {};
        }
        const size_t offset = position_ & (size_ - 1);
        // Records are 8-byte aligned, so the header never straddles the end.
        perf_event_header header;
        std::memcpy(&header, data_ + offset, sizeof header);
        // The kernel keeps every record a multiple of 8 bytes long.
        if (header.size < sizeof header || header.size % 8 != 0 || header.size > head_ - position_ ||
            header.size > kMaxRecordSize) {
            ++corrupt;
            position_ = head_;
            return {};
        }
        if (offset + header.size <= size_)
            return Record{data_ + offset, header.size};
        const size_t first = size_ - offset;
        std::memcpy(scratch, data_ + offset, first);
        std::memcpy(scratch + first, data_, header.size - first);
        return Record{scratch, header.size};
    }

    // Consumes the record peek() returned. It stays in place, and the kernel
    // cannot overwrite it, until release(): output may refer to it until then.
    void advance(const Record& record) noexcept { position_ += record.size; }

    // Calls on_record(const uint8_t* record, size_t size) for every record
    // published when called, until it returns false. Returns the number of
    // records consumed; if on_record throws, the record it was given counts
    // as consumed. Wrapped records and corruption as in peek().
    template <class OnRecord>
    size_t drain(OnRecord&& on_record, uint8_t* scratch, uint64_t& corrupt)
    {
        // Only what is published now: a busy producer cannot keep us here.
        head_ = __atomic_load_n(&header_->data_head, __ATOMIC_ACQUIRE);
        const uint64_t end = head_;
        size_t consumed = 0;
        while (position_ < end) {
            const Record record = peek(scratch, corrupt);
            if (!record.data)
                break;
            advance(record);
            ++consumed;
            if (!on_record(record.data, record.size))
                break;
        }
        return consumed;
    }

    // Bytes the kernel cannot write to: published and not yet released.
    size_t occupied() const noexcept
    {
        return static_cast<size_t>(__atomic_load_n(&header_->data_head, __ATOMIC_ACQUIRE) - released_);
    }
    size_t capacity() const noexcept { return size_; }

    // Hands every consumed record's space back to the kernel.
    void release() noexcept
    {
        if (position_ != released_) {
            __atomic_store_n(&header_->data_tail, position_, __ATOMIC_RELEASE);
            released_ = position_;
        }
    }

private:
    perf_event_mmap_page* header_ = nullptr;
    uint8_t* data_ = nullptr;
    size_t size_ = 0; // power of two
    uint64_t position_ = 0; // consumed up to here
    uint64_t released_ = 0; // data_tail as we last set it
    uint64_t head_ = 0;     // data_head as last read
};

} // namespace xdpcap
