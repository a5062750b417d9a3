// Decoding one perf record from a capture ring: a sample (metadata + frame
// bytes), a part of a frame longer than one record, a lost-records notice,
// or something we refuse to trust.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <linux/perf_event.h>

#include "output/sample.hpp"
#include "xdpcap_abi.h"

namespace xdpcap {

enum class RecordKind {
    Sample,  // a frame's first record: first_record_length(cap_len) bytes at data
    Part,    // one of the records that carry the rest of a longer frame
    Batch,   // several small frames, each as its own first record would carry it
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

// RecordKind::Batch: `frames` frames in `bytes` bytes at `data`, checked
// whole: decode_batch_frame() reads each in turn. A refused batch
// (RecordKind::Invalid) keeps in `frames` the frames it claimed, at least 1.
struct FrameBatch {
    const uint8_t* data;
    uint32_t bytes;
    uint32_t frames;
};

struct DecodedRecord {
    RecordKind kind;
    Sample sample;
    uint64_t lost;
    const char* invalid_reason;
    FramePart part = {};
    FrameBatch batch = {};
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
    ((XDPCAP_RAW_SIZE_FIELD + sizeof(xdpcap_meta) + 2 * sizeof(xdpcap_process) + XDPCAP_MAX_SAMPLE_SIZE + 7) &
     ~size_t{7});

// Size of the first record of a capture of cap_len bytes; `process`: it
// carries the xdpcap_process of both ends (-k).
constexpr size_t record_size_for(size_t cap_len, bool process = false)
{
    return XDPCAP_PERF_HEADER_SIZE +
        ((XDPCAP_RAW_SIZE_FIELD + sizeof(xdpcap_meta) + (process ? 2 * sizeof(xdpcap_process) : 0) +
          first_record_length(static_cast<uint32_t>(cap_len)) + 7) &
         ~size_t{7});
}

// Ring bytes of every record of a capture of cap_len bytes.
constexpr size_t records_size_for(size_t cap_len, bool process = false)
{
    size_t size = record_size_for(cap_len, process);
    for (size_t offset = XDPCAP_MAX_SAMPLE_SIZE; offset < cap_len; offset += XDPCAP_MAX_SAMPLE_SIZE)
        size += XDPCAP_PERF_HEADER_SIZE +
            ((XDPCAP_RAW_SIZE_FIELD + sizeof(xdpcap_part) +
              part_length(static_cast<uint32_t>(cap_len), static_cast<uint32_t>(offset)) + 7) &
             ~size_t{7});
    return size;
}

namespace record_detail {

template <class T>
inline T load(const uint8_t* p) noexcept
{
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}

// Out of line: only -k's records take it.
// The xdpcap_process entries after a frame's metadata: -k's owner, and with
// XDPCAP_FLAG_PEER the other end's.
constexpr size_t process_count(uint16_t flags) noexcept
{
    return flags & XDPCAP_FLAG_PROCESS ? (flags & XDPCAP_FLAG_PEER ? 2 : 1) : 0;
}

[[gnu::noinline]] inline xdpcap_process load_process(const uint8_t* p) noexcept
{
    return load<xdpcap_process>(p);
}

inline void invalid(DecodedRecord& out, const char* reason) noexcept
{
    out.kind = RecordKind::Invalid;
    out.invalid_reason = reason;
}

inline void decode_part(const uint8_t* raw, uint32_t raw_size, DecodedRecord& out) noexcept
{
    if (raw_size < sizeof(xdpcap_part) + 1)
        return invalid(out, "part too short");
    const auto part = load<xdpcap_part>(raw);
    if (part.offset == 0 || part.offset % XDPCAP_MAX_SAMPLE_SIZE != 0 || part.offset >= XDPCAP_MAX_SNAPLEN)
        return invalid(out, "part offset out of place");
    out.kind = RecordKind::Part;
    out.part = FramePart{part.offset, static_cast<uint32_t>(raw_size - sizeof(xdpcap_part)), part.tstamp_ns,
                         raw + sizeof(xdpcap_part)};
}


// The metadata (and -k's process) at `raw`, checked already, into `sample`;
// returns the bytes the frame's record takes. Field by field from the ring,
// not the struct copied whole: that copy went through the stack in 16-byte
// stores, and the narrower loads of its fields then stalled on store
// forwarding.
[[gnu::always_inline]] inline size_t read_meta(const uint8_t* raw, Sample& sample) noexcept
{
#define XDPCAP_META_FIELD(name) load<decltype(xdpcap_meta::name)>(raw + offsetof(xdpcap_meta, name))
    const uint16_t flags = XDPCAP_META_FIELD(flags);
    const uint32_t cap_len = XDPCAP_META_FIELD(cap_len);
    const size_t processes = process_count(flags);
    const size_t head = sizeof(xdpcap_meta) + processes * sizeof(xdpcap_process);
    sample.ifindex = XDPCAP_META_FIELD(ifindex);
    sample.rx_queue = XDPCAP_META_FIELD(rx_queue);
    sample.orig_len = XDPCAP_META_FIELD(orig_len);
    sample.cap_len = cap_len;
    sample.drops_before = XDPCAP_META_FIELD(drops_before);
    sample.tstamp_ns = XDPCAP_META_FIELD(tstamp_ns);
    sample.direction = XDPCAP_META_FIELD(direction);
    sample.hook = XDPCAP_META_FIELD(hook);
    sample.program = XDPCAP_META_FIELD(program);
    sample.verdict = XDPCAP_META_FIELD(verdict);
    sample.data = raw + head;
    sample.hash = XDPCAP_META_FIELD(hash);
    sample.hash_type = XDPCAP_META_FIELD(hash_type);
    sample.flags = flags;
    sample.location = XDPCAP_META_FIELD(location);
#undef XDPCAP_META_FIELD
    if (flags & XDPCAP_FLAG_PROCESS) [[unlikely]] {
        sample.process = load_process(raw + sizeof(xdpcap_meta));
        sample.peer = processes == 2 ? load_process(raw + sizeof(xdpcap_meta) + sizeof(xdpcap_process))
                                     : xdpcap_process{};
    } else {
        sample.process = {};
        sample.peer = {};
    }
    return head + first_record_length(cap_len);
}

// The metadata (and -k's process) at `raw` and the frame bytes behind them,
// `raw_size` bytes in all; returns the bytes the frame's record takes.
[[gnu::always_inline]] inline size_t decode_meta(const uint8_t* raw, size_t raw_size, DecodedRecord& out) noexcept
{
    if (raw_size < sizeof(xdpcap_meta))
        return invalid(out, "raw sample too short for metadata"), size_t{0};
#define XDPCAP_META_FIELD(name) load<decltype(xdpcap_meta::name)>(raw + offsetof(xdpcap_meta, name))
    if (XDPCAP_META_FIELD(tag) != XDPCAP_META_TAG)
        return invalid(out, "foreign or mangled metadata tag"), size_t{0};
    const uint16_t flags = XDPCAP_META_FIELD(flags);
    const uint32_t cap_len = XDPCAP_META_FIELD(cap_len);
    const uint32_t orig_len = XDPCAP_META_FIELD(orig_len);
    const uint8_t direction = XDPCAP_META_FIELD(direction);
    const size_t processes = process_count(flags);
    const size_t head = sizeof(xdpcap_meta) + processes * sizeof(xdpcap_process);
    if (head > raw_size || first_record_length(cap_len) > raw_size - head)
        return invalid(out, "captured length overruns the sample"), size_t{0};
    if (cap_len > orig_len || cap_len > XDPCAP_MAX_SNAPLEN)
        return invalid(out, "captured length exceeds the frame length"), size_t{0};
    if (direction != XDPCAP_DIR_INGRESS && direction != XDPCAP_DIR_EGRESS)
        return invalid(out, "unknown direction"), size_t{0};
#undef XDPCAP_META_FIELD
    out.kind = RecordKind::Sample;
    return read_meta(raw, out.sample);
}

// A batch is checked whole before any of its frames is taken: a frame that
// overruns it, or a count that disagrees with its bytes, refuses all of them.
inline void decode_batch(const uint8_t* raw, size_t raw_size, DecodedRecord& out) noexcept
{
    if (raw_size < sizeof(xdpcap_batch)) {
        out.batch = FrameBatch{nullptr, 0, 1};
        return invalid(out, "batch too short for its header");
    }
    const auto header = load<xdpcap_batch>(raw);
    const uint8_t* data = raw + sizeof(xdpcap_batch);
    const size_t available = raw_size - sizeof(xdpcap_batch);
    // What a broken batch claimed, within what its bytes could hold.
    const uint32_t claimed = std::max<uint32_t>(
        1, std::min<uint32_t>(header.frames, static_cast<uint32_t>(XDPCAP_BATCH_BYTES / sizeof(xdpcap_meta))));
    out.batch = FrameBatch{data, header.bytes, claimed};
    if (header.bytes > available || header.bytes > XDPCAP_BATCH_BYTES)
        return invalid(out, "batch overruns its record");
    // Only what decode_meta() refuses a frame for is read here: the merge
    // decodes each frame once, when it takes it.
    size_t at = 0;
    uint32_t frames = 0;
    while (at < header.bytes) {
        const uint8_t* raw = data + at;
        const size_t left = header.bytes - at;
        if (left < sizeof(xdpcap_meta) || load<uint32_t>(raw + offsetof(xdpcap_meta, tag)) != XDPCAP_META_TAG) {
            out.batch.frames = claimed;
            return invalid(out, "batched frame without its metadata");
        }
        const uint32_t cap_len = load<uint32_t>(raw + offsetof(xdpcap_meta, cap_len));
        const uint8_t direction = load<uint8_t>(raw + offsetof(xdpcap_meta, direction));
        const size_t head =
            sizeof(xdpcap_meta) + process_count(load<uint16_t>(raw + offsetof(xdpcap_meta, flags))) * sizeof(xdpcap_process);
        if (cap_len > XDPCAP_BATCH_FRAME_MAX || head + cap_len > left ||
            cap_len > load<uint32_t>(raw + offsetof(xdpcap_meta, orig_len)) ||
            (direction != XDPCAP_DIR_INGRESS && direction != XDPCAP_DIR_EGRESS)) {
            out.batch.frames = claimed;
            return invalid(out, "batched frame overruns its batch or is malformed");
        }
        at += (head + cap_len + 7) & ~size_t{7};
        ++frames;
    }
    if (at != header.bytes || frames != header.frames) {
        out.batch.frames = claimed;
        return invalid(out, "batch frame count disagrees with its bytes");
    }
    out.kind = RecordKind::Batch;
    out.batch = FrameBatch{data, header.bytes, header.frames};
}

} // namespace record_detail

// The frame of a checked batch at `at` into `sample`; returns the bytes to
// the next frame. decode_batch() checked every frame on what decode_meta()
// refuses one for, so they are read without checks.
[[gnu::always_inline]] inline size_t decode_batch_frame(const uint8_t* at, Sample& sample) noexcept
{
    return (record_detail::read_meta(at, sample) + 7) & ~size_t{7};
}

// The timestamp of a checked batch's frame at `at`, read alone: whether the
// frame is to be taken now.
inline uint64_t batch_frame_tstamp(const uint8_t* at) noexcept
{
    return record_detail::load<uint64_t>(at + offsetof(xdpcap_meta, tstamp_ns));
}

// `record` points at a perf_event_header; `size` is the bytes available there.
// Writes `out.kind` and what that kind defines, field by field, into `out`:
// no temporary and no zeroing per packet (a DecodedRecord returned by value
// was built on the stack, zeroed with `rep stos` and copied, stalling on
// store forwarding; that was most of the merge's time at 64 bytes).
// Inline: once per packet, in the merge's loop.
[[gnu::always_inline]] inline void decode_record_into(const uint8_t* record, size_t size, DecodedRecord& out) noexcept
{
    out.batch.frames = 0; // set by a batch, refused or not
    if (size < sizeof(perf_event_header))
        return record_detail::invalid(out, "record shorter than its header");
    const auto header = record_detail::load<perf_event_header>(record);
    if (header.size < sizeof(perf_event_header) || header.size > size)
        return record_detail::invalid(out, "record size field out of bounds");

    switch (header.type) {
    case PERF_RECORD_SAMPLE: {
        if (header.size < kRecordPrefixSize + sizeof(xdpcap_part))
            return record_detail::invalid(out, "sample too short for metadata");
        const uint32_t raw_size = record_detail::load<uint32_t>(record + sizeof(perf_event_header));
        if (raw_size > header.size - kRecordPrefixSize)
            return record_detail::invalid(out, "raw sample overruns its record");
        const uint8_t* raw = record + kRecordPrefixSize;
        if (record_detail::load<uint32_t>(raw) == XDPCAP_PART_TAG)
            return record_detail::decode_part(raw, raw_size, out);
        if (record_detail::load<uint32_t>(raw) == XDPCAP_BATCH_TAG) [[likely]]
            return record_detail::decode_batch(raw, raw_size, out);
        record_detail::decode_meta(raw, raw_size, out);
        return;
    }
    case PERF_RECORD_LOST:
        // struct { header; u64 id; u64 lost; }
        if (header.size < sizeof(perf_event_header) + 16)
            return record_detail::invalid(out, "lost record too short");
        out.kind = RecordKind::Lost;
        out.lost = record_detail::load<uint64_t>(record + sizeof(perf_event_header) + 8);
        return;
    default:
        out.kind = RecordKind::Other;
        return;
    }
}

// The same, into a record of its own (tests, and anything off the hot path).
inline DecodedRecord decode_record(const uint8_t* record, size_t size) noexcept
{
    DecodedRecord decoded{RecordKind::Other, {}, 0, nullptr};
    decode_record_into(record, size, decoded);
    return decoded;
}

} // namespace xdpcap
