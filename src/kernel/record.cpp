#include "kernel/record.hpp"

#include <linux/perf_event.h>

#include <cstring>

namespace xdpcap {

namespace {

DecodedRecord invalid(const char* reason) noexcept
{
    return DecodedRecord{RecordKind::Invalid, {}, 0, reason};
}

template <class T>
T load(const uint8_t* p) noexcept
{
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}

DecodedRecord decode_part(const uint8_t* raw, uint32_t raw_size) noexcept
{
    if (raw_size < sizeof(xdpcap_part) + 1)
        return invalid("part too short");
    const auto part = load<xdpcap_part>(raw);
    if (part.offset == 0 || part.offset % XDPCAP_MAX_SAMPLE_SIZE != 0 || part.offset >= XDPCAP_MAX_SNAPLEN)
        return invalid("part offset out of place");
    DecodedRecord decoded{RecordKind::Part, {}, 0, nullptr};
    decoded.part = FramePart{part.offset, static_cast<uint32_t>(raw_size - sizeof(xdpcap_part)), part.tstamp_ns,
                             raw + sizeof(xdpcap_part)};
    return decoded;
}

} // namespace

DecodedRecord decode_record(const uint8_t* record, size_t size) noexcept
{
    if (size < sizeof(perf_event_header))
        return invalid("record shorter than its header");
    const auto header = load<perf_event_header>(record);
    if (header.size < sizeof(perf_event_header) || header.size > size)
        return invalid("record size field out of bounds");

    switch (header.type) {
    case PERF_RECORD_SAMPLE: {
        if (header.size < kRecordPrefixSize + sizeof(xdpcap_part))
            return invalid("sample too short for metadata");
        const uint32_t raw_size = load<uint32_t>(record + sizeof(perf_event_header));
        if (raw_size > header.size - kRecordPrefixSize)
            return invalid("raw sample overruns its record");
        const uint8_t* raw = record + kRecordPrefixSize;
        if (load<uint32_t>(raw) == XDPCAP_PART_TAG)
            return decode_part(raw, raw_size);
        if (raw_size < sizeof(xdpcap_meta))
            return invalid("raw sample too short for metadata");
        const auto meta = load<xdpcap_meta>(raw);
        if (meta.tag != XDPCAP_META_TAG)
            return invalid("foreign or mangled metadata tag");
        if (first_record_length(meta.cap_len) > raw_size - sizeof(xdpcap_meta))
            return invalid("captured length overruns the sample");
        if (meta.cap_len > meta.orig_len || meta.cap_len > XDPCAP_MAX_SNAPLEN)
            return invalid("captured length exceeds the frame length");
        if (meta.direction != XDPCAP_DIR_INGRESS && meta.direction != XDPCAP_DIR_EGRESS)
            return invalid("unknown direction");
        DecodedRecord decoded{RecordKind::Sample, {}, 0, nullptr};
        decoded.sample = Sample{meta.ifindex,   meta.rx_queue, meta.orig_len, meta.cap_len, meta.drops_before,
                                meta.tstamp_ns, meta.direction, meta.hook,    meta.program, meta.verdict,
                                raw + sizeof(xdpcap_meta), meta.hash,      meta.hash_type, meta.flags, meta.location};
        return decoded;
    }
    case PERF_RECORD_LOST: {
        // struct { header; u64 id; u64 lost; }
        if (header.size < sizeof(perf_event_header) + 16)
            return invalid("lost record too short");
        DecodedRecord decoded{RecordKind::Lost, {}, 0, nullptr};
        decoded.lost = load<uint64_t>(record + sizeof(perf_event_header) + 8);
        return decoded;
    }
    default:
        return DecodedRecord{RecordKind::Other, {}, 0, nullptr};
    }
}

} // namespace xdpcap
