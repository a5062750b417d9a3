// Builds perf records the way the kernel lays them out, for decoder and ring tests.
#pragma once

#include <linux/perf_event.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "xdpcap_abi.h"

namespace xdpcap::test {

// A PERF_RECORD_SAMPLE whose raw data is `header` then `bytes` of `length`.
// The kernel pads the raw data so the whole record is 8-byte aligned.
template <class Header>
std::vector<uint8_t> raw_sample_record(const Header& raw_header, const uint8_t* bytes, size_t length)
{
    const size_t raw_size = ((4 + sizeof raw_header + length + 7) & ~size_t{7}) - 4;
    perf_event_header header{PERF_RECORD_SAMPLE, 0, static_cast<uint16_t>(sizeof header + 4 + raw_size)};
    std::vector<uint8_t> record(header.size, 0);
    std::memcpy(record.data(), &header, sizeof header);
    const auto raw32 = static_cast<uint32_t>(raw_size);
    std::memcpy(record.data() + 8, &raw32, 4);
    std::memcpy(record.data() + 12, &raw_header, sizeof raw_header);
    if (length)
        std::memcpy(record.data() + 12 + sizeof raw_header, bytes, length);
    return record;
}

inline std::vector<uint8_t> sample_record(const std::vector<uint8_t>& frame, uint32_t orig_len,
                                          uint32_t tag = XDPCAP_META_TAG, uint32_t drops_before = 0,
                                          uint64_t tstamp_ns = 123456789, uint8_t direction = XDPCAP_DIR_INGRESS)
{
    const xdpcap_meta meta{tag,       7, 2, orig_len, static_cast<uint32_t>(frame.size()), drops_before,
                           tstamp_ns, direction, XDPCAP_HOOK_XDP, 0, 0, 0, 0, 0, 0};
    return raw_sample_record(meta, frame.data(), frame.size());
}

// A frame's records as the capture programs write them: the first record
// with xdpcap_meta and up to XDPCAP_MAX_SAMPLE_SIZE bytes (cap_len counts the
// whole frame), then a part per further XDPCAP_MAX_SAMPLE_SIZE bytes.
inline std::vector<std::vector<uint8_t>> frame_records(const std::vector<uint8_t>& frame, uint32_t orig_len,
                                                       uint64_t tstamp_ns = 123456789)
{
    const size_t first = std::min<size_t>(frame.size(), XDPCAP_MAX_SAMPLE_SIZE);
    std::vector<std::vector<uint8_t>> records{
        sample_record(std::vector<uint8_t>(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(first)),
                      orig_len, XDPCAP_META_TAG, 0, tstamp_ns)};
    const auto cap_len = static_cast<uint32_t>(frame.size());
    std::memcpy(records[0].data() + 12 + offsetof(xdpcap_meta, cap_len), &cap_len, 4);
    for (size_t offset = first; offset < frame.size(); offset += XDPCAP_MAX_SAMPLE_SIZE) {
        const size_t length = std::min<size_t>(frame.size() - offset, XDPCAP_MAX_SAMPLE_SIZE);
        const xdpcap_part part{XDPCAP_PART_TAG, static_cast<uint32_t>(offset), tstamp_ns};
        records.push_back(raw_sample_record(part, frame.data() + offset, length));
    }
    return records;
}

// One frame of a batch: its metadata and bytes, padded to 8 as the capture
// programs stage it.
struct BatchFrame {
    std::vector<uint8_t> frame;
    uint32_t orig_len;
    uint64_t tstamp_ns;
    uint32_t drops_before = 0;
    // -k: the owner, then with a second entry the other end (XDPCAP_FLAG_PEER).
    std::vector<xdpcap_process> processes = {};
    // The metadata as the hook wrote it (a drop's, a traced program's),
    // instead of a tc ingress frame's made from the fields above.
    std::optional<xdpcap_meta> meta = std::nullopt;
};

inline std::vector<uint8_t> batch_bytes(const std::vector<BatchFrame>& frames)
{
    std::vector<uint8_t> bytes;
    for (const BatchFrame& f : frames) {
        xdpcap_meta meta = f.meta.value_or(xdpcap_meta{XDPCAP_META_TAG, 7, 2, f.orig_len,
                                                       static_cast<uint32_t>(f.frame.size()), f.drops_before,
                                                       f.tstamp_ns, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_TC_INGRESS,
                                                       0, 0, 0, 0, 0, 0});
        if (!f.processes.empty())
            meta.flags |= XDPCAP_FLAG_PROCESS | (f.processes.size() > 1 ? XDPCAP_FLAG_PEER : 0);
        const size_t head = sizeof meta + f.processes.size() * sizeof(xdpcap_process);
        const size_t at = bytes.size();
        bytes.resize(at + ((head + f.frame.size() + 7) & ~size_t{7}), 0);
        std::memcpy(bytes.data() + at, &meta, sizeof meta);
        if (!f.processes.empty())
            std::memcpy(bytes.data() + at + sizeof meta, f.processes.data(),
                        f.processes.size() * sizeof(xdpcap_process));
        if (!f.frame.empty())
            std::memcpy(bytes.data() + at + head, f.frame.data(), f.frame.size());
    }
    return bytes;
}

// A batch record of `frames`; `claimed` frames in its header (default: as
// many as there are).
inline std::vector<uint8_t> batch_record(const std::vector<BatchFrame>& frames, int64_t claimed = -1)
{
    const std::vector<uint8_t> bytes = batch_bytes(frames);
    const xdpcap_batch header{XDPCAP_BATCH_TAG,
                              static_cast<uint32_t>(claimed < 0 ? static_cast<int64_t>(frames.size()) : claimed),
                              static_cast<uint32_t>(bytes.size()), 0};
    return raw_sample_record(header, bytes.data(), bytes.size());
}

inline std::vector<uint8_t> lost_record(uint64_t lost)
{
    perf_event_header header{PERF_RECORD_LOST, 0, sizeof(perf_event_header) + 16};
    std::vector<uint8_t> record(header.size, 0);
    std::memcpy(record.data(), &header, sizeof header);
    const uint64_t id = 1;
    std::memcpy(record.data() + 8, &id, 8);
    std::memcpy(record.data() + 16, &lost, 8);
    return record;
}

} // namespace xdpcap::test
