// Decoding one perf record from a capture ring: a sample (metadata + frame
// bytes), a lost-records notice, or something we refuse to trust.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xdpcap_abi.h"

namespace xdpcap {

struct Sample {
    uint32_t ifindex;
    uint32_t rx_queue;
    uint32_t orig_len;
    uint32_t cap_len;
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
    Sample,
    Lost,    // PERF_RECORD_LOST: `lost` samples the ring could not take
    Other,   // a record type we do not use; harmless
    Invalid, // malformed or foreign; `invalid_reason` says why
};

struct DecodedRecord {
    RecordKind kind;
    Sample sample;
    uint64_t lost;
    const char* invalid_reason;
};

inline constexpr size_t kRecordPrefixSize = XDPCAP_PERF_HEADER_SIZE + XDPCAP_RAW_SIZE_FIELD;
// Largest record the capture program can produce.
inline constexpr size_t kMaxRecordSize = XDPCAP_PERF_HEADER_SIZE +
    ((XDPCAP_RAW_SIZE_FIELD + sizeof(xdpcap_meta) + XDPCAP_MAX_SAMPLE_SIZE + 7) & ~size_t{7});

// Size of the record carrying a sample of cap_len bytes.
constexpr size_t record_size_for(size_t cap_len)
{
    return XDPCAP_PERF_HEADER_SIZE + ((XDPCAP_RAW_SIZE_FIELD + sizeof(xdpcap_meta) + cap_len + 7) & ~size_t{7});
}

// `record` points at a perf_event_header; `size` is the bytes available there.
DecodedRecord decode_record(const uint8_t* record, size_t size) noexcept;

} // namespace xdpcap
