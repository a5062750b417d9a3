// Userspace path alone: perf records in a ring -> decoded samples -> pcapng
// blocks in the output buffer (flushed to /dev/null), next to a plain memcpy
// of the same bytes; and the same from several rings merged by timestamp.
#include <benchmark/benchmark.h>
#include <linux/perf_event.h>

#include <bit>
#include <cstring>
#include <memory>
#include <vector>

#include "output/packet_output.hpp"
#include "ring/perf_ring.hpp"
#include "ring/record.hpp"
#include "ring/ring_merge.hpp"
#include "xdpcap_abi.h"

namespace {

constexpr size_t kRingBytes = 8u << 20;
constexpr size_t kDataOffset = 4096;

// A ring whose producer has published as many records of one size as fit,
// stamped first_ns, first_ns + step_ns, ...
struct FilledRing {
    size_t bytes;
    std::vector<uint8_t> memory;
    uint64_t published = 0;
    size_t records = 0;

    explicit FilledRing(uint32_t frame_len, size_t ring_bytes = kRingBytes, uint64_t first_ns = 1'000'000'000,
                        uint64_t step_ns = 1000)
        : bytes(ring_bytes), memory(kDataOffset + ring_bytes)
    {
        const size_t size = xdpcap::record_size_for(frame_len);
        xdpcap_meta meta{XDPCAP_META_TAG, 2, 0, frame_len, frame_len, 0, first_ns, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_XDP, 0, 0, 0, 0, 0, 0};
        perf_event_header header{PERF_RECORD_SAMPLE, 0, static_cast<uint16_t>(size)};
        const auto raw_size = static_cast<uint32_t>(size - 12);
        for (uint8_t* p = memory.data() + kDataOffset; published + size <= bytes; p += size) {
            std::memcpy(p, &header, sizeof header);
            std::memcpy(p + 8, &raw_size, 4);
            std::memcpy(p + 12, &meta, sizeof meta);
            std::memset(p + 12 + sizeof meta, 0x5a, frame_len);
            published += size;
            ++records;
            meta.tstamp_ns += step_ns;
        }
        header_page()->data_head = published;
    }
    // Batch records instead, as the capture programs emit them: as many
    // frames as fit `batch_bytes` of frame bytes per record.
    FilledRing(uint32_t frame_len, size_t batch_bytes, size_t ring_bytes, uint64_t first_ns, uint64_t step_ns)
        : bytes(ring_bytes), memory(kDataOffset + ring_bytes)
    {
        const size_t frame_bytes = (sizeof(xdpcap_meta) + frame_len + 7) & ~size_t{7};
        const size_t per_batch = batch_bytes / frame_bytes;
        const size_t batch = sizeof(xdpcap_batch) + per_batch * frame_bytes;
        const size_t size = (8 + 4 + batch + 7) & ~size_t{7};
        xdpcap_meta meta{XDPCAP_META_TAG, 2, 0, frame_len, frame_len, 0, first_ns, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_TC_INGRESS, 0, 0, 0, 0, 0, 0};
        perf_event_header header{PERF_RECORD_SAMPLE, 0, static_cast<uint16_t>(size)};
        const auto raw_size = static_cast<uint32_t>(size - 12);
        const xdpcap_batch head{XDPCAP_BATCH_TAG, static_cast<uint32_t>(per_batch),
                                static_cast<uint32_t>(per_batch * frame_bytes), 0};
        for (uint8_t* p = memory.data() + kDataOffset; published + size <= bytes; p += size) {
            std::memcpy(p, &header, sizeof header);
            std::memcpy(p + 8, &raw_size, 4);
            std::memcpy(p + 12, &head, sizeof head);
            uint8_t* frame = p + 12 + sizeof head;
            for (size_t i = 0; i < per_batch; ++i, frame += frame_bytes) {
                std::memcpy(frame, &meta, sizeof meta);
                std::memset(frame + sizeof meta, 0x5a, frame_len);
                meta.tstamp_ns += step_ns;
                ++records;
            }
            published += size;
        }
        header_page()->data_head = published;
    }
    perf_event_mmap_page* header_page() { return reinterpret_cast<perf_event_mmap_page*>(memory.data()); }
    // Unread again, as if just published.
    xdpcap::PerfRingReader fresh_reader()
    {
        header_page()->data_tail = 0;
        return xdpcap::PerfRingReader(memory.data(), kDataOffset, bytes);
    }
};

// range(1) = 1: samples stay in the ring until released, so the large ones
// are written by reference (as in a capture); 0: every sample is copied into
// the output buffer. /dev/null does not read referred bytes, so only the
// copying variant compares with memcpy at 1500 bytes.
void RingToPcapng(benchmark::State& state)
{
    const auto frame_len = static_cast<uint32_t>(state.range(0));
    const bool by_reference = state.range(1) != 0;
    FilledRing ring(frame_len);
    xdpcap::PacketOutput output(xdpcap::Sink::open_file("/dev/null"), xdpcap::PacketOutput::Format::Pcapng, false,
                                {"bench@cpu0"});
    std::vector<uint8_t> scratch(xdpcap::kMaxRecordSize);
    uint64_t corrupt = 0;
    for (auto _ : state) {
        xdpcap::PerfRingReader reader = ring.fresh_reader();
        reader.drain(
            [&](const uint8_t* record, size_t size) {
                const auto decoded = xdpcap::decode_record(record, size);
                output.write(0, decoded.sample, decoded.sample.tstamp_ns, by_reference && record != scratch.data());
                return true;
            },
            scratch.data(), corrupt);
        output.release_references();
        reader.release();
        output.flush();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ring.records));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * ring.published));
}

// Text lines (the decode of an IPv4 TCP frame, as without -w) into
// /dev/null: the per-packet cost of the text view, plain, with -X and with
// -vv (the IP header's fields and both checksums).
void TcpFrameToTextLine(benchmark::State& state)
{
    // 198.18.0.1.1234 > 198.18.0.2.8080 TCP PSH-ACK with 13 bytes of data.
    static const uint8_t frame[] = {
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0x00,
        0x00, 0x35, 0x00, 0x01, 0x00, 0x00, 0x40, 0x06, 0xee, 0x9a, 0xc6, 0x12, 0x00, 0x01, 0xc6, 0x12,
        0x00, 0x02, 0x04, 0xd2, 0x1f, 0x90, 0x00, 0x00, 0x03, 0xe8, 0x00, 0x00, 0x07, 0xd0, 0x50, 0x18,
        0x02, 0x00, 0x55, 0xa2, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x77, 0x6f, 0x72, 0x6c,
        0x64, 0x0d, 0x0a};
    xdpcap::text::TextOptions options;
    options.decode.hex_ascii = state.range(0) == 1 ? 1 : 0;
    options.decode.verbose = state.range(0) == 2 ? 2 : 0;
    xdpcap::PacketOutput output(xdpcap::Sink::open_file("/dev/null"), xdpcap::PacketOutput::Format::Text, false,
                                {"bench@cpu0"}, options);
    const xdpcap::Sample sample{1, 0, sizeof frame, sizeof frame, 0, 0, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_XDP, 0, 0,
                                frame};
    uint64_t t = 1'795'431'326'000'000'000ull;
    for (auto _ : state) {
        for (int i = 0; i < 1000; ++i)
            output.write(0, sample, t += 1000);
        output.end_batch();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * 1000));
}

void MemcpyBaseline(benchmark::State& state)
{
    const auto frame_len = static_cast<uint32_t>(state.range(0));
    FilledRing ring(frame_len);
    std::vector<uint8_t> out(kRingBytes);
    for (auto _ : state) {
        std::memcpy(out.data(), ring.memory.data() + kDataOffset, ring.published);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ring.records));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * ring.published));
}

// Each round: the filled rings merged into pcapng blocks written to
// /dev/null, as in a busy capture; `frames` must all be written each time.
void merge_rounds(benchmark::State& state, const std::vector<std::unique_ptr<FilledRing>>& rings, size_t frames,
                  size_t bytes, uint64_t first_ns)
{
    std::vector<std::string> names;
    for (size_t i = 0; i < rings.size(); ++i)
        names.push_back("bench@cpu" + std::to_string(i));
    xdpcap::PacketOutput output(xdpcap::Sink::open_file("/dev/null"), xdpcap::PacketOutput::Format::Pcapng, false,
                                names);
    std::vector<xdpcap::PerfRingReader> readers(rings.size());
    // Late enough that nothing is held back: the path of a busy capture.
    const uint64_t now_ns = first_ns + frames * rings.size() + xdpcap::kHoldBackNs;
    uint64_t written = 0;
    for (auto _ : state) {
        for (size_t i = 0; i < rings.size(); ++i)
            readers[i] = rings[i]->fresh_reader();
        // A new merger each round: the timestamps start over.
        xdpcap::RingMerger merger(readers, output, xdpcap::ClockOffset{}, {});
        merger.drain(now_ns);
        output.flush();
        for (const auto& tally : merger.tallies())
            written += tally.written;
    }
    if (written != state.iterations() * frames)
        state.SkipWithError("not every frame was written");
    state.counters["records_per_second"] = benchmark::Counter(static_cast<double>(written), benchmark::Counter::kIsRate);
    state.SetItemsProcessed(static_cast<int64_t>(written));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// range(0) rings sharing kRingBytes, their timestamps interleaved round-robin
// (the merge's worst case: every record comes from another ring than the
// last), merged into pcapng blocks written to /dev/null as in a capture.
void MergedRingsToPcapng(benchmark::State& state)
{
    const auto ring_count = static_cast<size_t>(state.range(0));
    const auto frame_len = static_cast<uint32_t>(state.range(1));
    const size_t ring_bytes = std::bit_floor(kRingBytes / ring_count);
    std::vector<std::unique_ptr<FilledRing>> rings;
    size_t records = 0, bytes = 0;
    for (size_t i = 0; i < ring_count; ++i) {
        rings.push_back(std::make_unique<FilledRing>(frame_len, ring_bytes, 1'000'000'000 + i, ring_count));
        records += rings.back()->records;
        bytes += rings.back()->published;
    }
    merge_rounds(state, rings, records, bytes, 1'000'000'000);
}

// Batch records (several frames each, as the capture programs stage them)
// from range(0) rings, merged into pcapng blocks written to /dev/null as in
// a capture. One ring: a busy CPU's batches taken whole; two: their frames'
// timestamps interleaved round-robin, so the merge changes rings each frame.
void BatchedRingsToPcapng(benchmark::State& state)
{
    const auto ring_count = static_cast<size_t>(state.range(0));
    const auto frame_len = static_cast<uint32_t>(state.range(1));
    const size_t ring_bytes = std::bit_floor(kRingBytes / ring_count);
    std::vector<std::unique_ptr<FilledRing>> rings;
    size_t frames = 0, bytes = 0;
    for (size_t i = 0; i < ring_count; ++i) {
        rings.push_back(std::make_unique<FilledRing>(frame_len, XDPCAP_BATCH_BYTES, ring_bytes, 1'000'000'000 + i,
                                                     ring_count));
        frames += rings.back()->records;
        bytes += rings.back()->published;
    }
    merge_rounds(state, rings, frames, bytes, 1'000'000'000);
}

} // namespace

BENCHMARK(RingToPcapng)
    ->ArgNames({"bytes", "by_reference"})
    ->Args({64, 1})
    ->Args({1500, 1})
    ->Args({1500, 0})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(MergedRingsToPcapng)
    ->ArgNames({"rings", "bytes"})
    ->Args({1, 64})
    ->Args({2, 64})
    ->Args({16, 64})
    ->Args({64, 64})
    ->Args({16, 1500})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BatchedRingsToPcapng)
    ->ArgNames({"rings", "bytes"})
    ->Args({1, 64})
    ->Args({2, 64})
    ->Args({1, 1500})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(TcpFrameToTextLine)->Arg(0)->Arg(1)->Arg(2); // 1: with -X, 2: with -vv
BENCHMARK(MemcpyBaseline)->Arg(64)->Arg(1500)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
