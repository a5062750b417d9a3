// Feeds arbitrary bytes through the ring reader and the record decoder, as if
// a buggy or hostile producer had written them into a perf ring. Every
// accepted sample must lie inside the bytes we were given.
#include <linux/perf_event.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ring/perf_ring.hpp"
#include "ring/record.hpp"

namespace {

void check_sample_bounds(const xdpcap::DecodedRecord& decoded, const uint8_t* record, size_t size)
{
    if (decoded.kind == xdpcap::RecordKind::Part) {
        // A part's bytes lie inside its record.
        const uint8_t* begin = decoded.part.data;
        if (begin < record || begin + decoded.part.available > record + size)
            std::abort();
        return;
    }
    if (decoded.kind != xdpcap::RecordKind::Sample)
        return;
    // A first record carries its share of the capture; parts bring the rest.
    const uint8_t* begin = decoded.sample.data;
    if (begin < record || begin + xdpcap::first_record_length(decoded.sample.cap_len) > record + size ||
        decoded.sample.cap_len > decoded.sample.orig_len || decoded.sample.cap_len > XDPCAP_MAX_SNAPLEN)
        std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    // 1. The decoder on its own.
    check_sample_bounds(xdpcap::decode_record(data, size), data, size);

    // 2. The same bytes as the data area of a 4 KiB ring whose producer has
    //    published all of it, starting at an offset taken from the input.
    constexpr size_t kRingSize = 4096;
    constexpr size_t kDataOffset = 1024 * 4;
    std::vector<uint8_t> memory(kDataOffset + kRingSize, 0);
    auto* header = reinterpret_cast<perf_event_mmap_page*>(memory.data());
    const size_t start = size >= 2 ? ((size_t{data[0]} << 8 | data[1]) & (kRingSize - 1) & ~size_t{7}) : 0;
    const size_t n = size < kRingSize ? size : kRingSize;
    for (size_t i = 0; i < n; ++i)
        memory[kDataOffset + (start + i) % kRingSize] = data[i];
    header->data_tail = start;
    header->data_head = start + n;

    xdpcap::PerfRingReader reader(memory.data(), kDataOffset, kRingSize);
    std::vector<uint8_t> scratch(xdpcap::kMaxRecordSize);
    uint64_t corrupt = 0;
    reader.drain(
        [&](const uint8_t* record, size_t record_size) {
            const bool in_scratch = record == scratch.data();
            const uint8_t* area = in_scratch ? scratch.data() : memory.data() + kDataOffset;
            const size_t area_size = in_scratch ? scratch.size() : kRingSize;
            if (record < area || record + record_size > area + area_size)
                std::abort();
            check_sample_bounds(xdpcap::decode_record(record, record_size), record, record_size);
            return true;
        },
        scratch.data(), corrupt);
    if (!reader.empty())
        std::abort(); // a drain that runs to completion leaves nothing behind
    return 0;
}
