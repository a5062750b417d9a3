// Userspace path alone: perf records in a ring -> decoded samples -> pcapng
// blocks in the output buffer (flushed to /dev/null), next to a plain memcpy
// of the same bytes.
#include <benchmark/benchmark.h>
#include <linux/perf_event.h>

#include <cstring>
#include <vector>

#include "packet_output.hpp"
#include "perf_ring.hpp"
#include "record.hpp"
#include "xdpcap_abi.h"

namespace {

constexpr size_t kRingBytes = 8u << 20;
constexpr size_t kDataOffset = 4096;

// A ring whose producer has published as many records of one size as fit.
struct FilledRing {
    std::vector<uint8_t> memory = std::vector<uint8_t>(kDataOffset + kRingBytes);
    uint64_t published = 0;
    size_t records = 0;

    explicit FilledRing(uint32_t frame_len)
    {
        const size_t size = xdpcap::record_size_for(frame_len);
        xdpcap_meta meta{XDPCAP_META_TAG, 2, 0, frame_len, frame_len, 0, 1'000'000'000, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_XDP, 0, 0};
        perf_event_header header{PERF_RECORD_SAMPLE, 0, static_cast<uint16_t>(size)};
        const auto raw_size = static_cast<uint32_t>(size - 12);
        for (uint8_t* p = memory.data() + kDataOffset; published + size <= kRingBytes; p += size) {
            std::memcpy(p, &header, sizeof header);
            std::memcpy(p + 8, &raw_size, 4);
            std::memcpy(p + 12, &meta, sizeof meta);
            std::memset(p + 12 + sizeof meta, 0x5a, frame_len);
            published += size;
            ++records;
            meta.tstamp_ns += 1000;
        }
        header_page()->data_head = published;
    }
    perf_event_mmap_page* header_page() { return reinterpret_cast<perf_event_mmap_page*>(memory.data()); }
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
        ring.header_page()->data_tail = 0;
        xdpcap::PerfRingReader reader(ring.memory.data(), kDataOffset, kRingBytes);
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

} // namespace

BENCHMARK(RingToPcapng)
    ->ArgNames({"bytes", "by_reference"})
    ->Args({64, 1})
    ->Args({1500, 1})
    ->Args({1500, 0})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(MemcpyBaseline)->Arg(64)->Arg(1500)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
