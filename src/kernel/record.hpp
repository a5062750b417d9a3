// Decoding one perf record from a capture ring: a sample (metadata + frame
// bytes), a part of a frame longer than one record, a lost-records notice,
// or something we refuse to trust.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xdpcap_abi.h"

namespace xdpcap {

struct Sample {
    uint32_t ifindex;
    uint32_t rx_queue;
    uint32_t orig_len;
    uint32_t cap_len; // the whole capture; a first record carries first_record_length(cap_len) of it
    uint32_t drops_before;
    uint64_t tstamp_ns; // CLOCK_MONOTONIC
    uint8_t direction;  // XDPCAP_DIR_INGRESS or XDPCAP_DIR_EGRESS
    uint8_t hook;       // XDPCAP_HOOK_*
    uint16_t program;   // trace mode: index of the traced program
    uint32_t verdict; // trace mode exit: the XDP verdict; drops: the drop reason
    const uint8_t* data; // cap_len bytes, valid until the record is released
    uint32_t hash = 0;      // with XDPCAP_FLAG_HASH
    uint16_t hash_type = 0; // received: enum xdp_rss_hash_type bits
    uint16_t flags = 0;     // XDPCAP_FLAG_*
    uint64_t location = 0;  // drops: the kernel code address that dropped it
};

enum class RecordKind {
    Sample,  // a frame's first record: first_record_length(cap_len) bytes at data
    Part,    // one of the records that carry the rest of a longer frame
    Lost,    // PERF_RECORD_LOST: `lost` samples the ring could not take
    Other,   // a record type we do not use; harmless
    Invalid, // malformed or foreign; `invalid_reason` says why
};

// RecordKind::Part: bytes of the frame stamped `tstamp_ns`, from `offset`;
// `available` bytes follow (the frame's own, then up to 7 of padding).
struct FramePart {
    uint32_t offset;
    uint32_t available;
    uint64_t tstamp_ns;
    const uint8_t* data;
};

struct DecodedRecord {
    RecordKind kind;
    Sample sample;
    uint64_t lost;
    const char* invalid_reason;
    FramePart part = {};
};

// Bytes of a capture of cap_len bytes that its first record carries, and
// that the part at `offset` does.
constexpr uint32_t first_record_length(uint32_t cap_len)
{
    return cap_len < XDPCAP_MAX_SAMPLE_SIZE ? cap_len : XDPCAP_MAX_SAMPLE_SIZE;
}
constexpr uint32_t part_length(uint32_t cap_len, uint32_t offset)
{
    return first_record_length(cap_len - offset);
}

inline constexpr size_t kRecordPrefixSize = XDPCAP_PERF_HEADER_SIZE + XDPCAP_RAW_SIZE_FIELD;
// Largest record the capture program can produce.
inline constexpr size_t kMaxRecordSize = XDPCAP_PERF_HEADER_SIZE +
    ((XDPCAP_RAW_SIZE_FIELD + sizeof(xdpcap_meta) + XDPCAP_MAX_SAMPLE_SIZE + 7) & ~size_t{7});

// Size of the first record of a capture of cap_len bytes.
constexpr size_t record_size_for(size_t cap_len)
{
    return XDPCAP_PERF_HEADER_SIZE +
        ((XDPCAP_RAW_SIZE_FIELD + sizeof(xdpcap_meta) + first_record_length(static_cast<uint32_t>(cap_len)) + 7) &
         ~size_t{7});
}

// Ring bytes of every record of a capture of cap_len bytes.
constexpr size_t records_size_for(size_t cap_len)
{
    size_t size = record_size_for(cap_len);
    for (size_t offset = XDPCAP_MAX_SAMPLE_SIZE; offset < cap_len; offset += XDPCAP_MAX_SAMPLE_SIZE)
        size += XDPCAP_PERF_HEADER_SIZE +
            ((XDPCAP_RAW_SIZE_FIELD + sizeof(xdpcap_part) +
              part_length(static_cast<uint32_t>(cap_len), static_cast<uint32_t>(offset)) + 7) &
             ~size_t{7});
    return size;
}

// `record` points at a perf_event_header; `size` is the bytes available there.
DecodedRecord decode_record(const uint8_t* record, size_t size) noexcept;

} // namespace xdpcap
