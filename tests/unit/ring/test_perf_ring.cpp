#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "fake_ring.hpp"
#include "ring/perf_ring.hpp"
#include "record_builder.hpp"

using namespace xdpcap;
using test::FakeRing;

namespace {

std::vector<uint8_t> frame_of(size_t len, uint8_t seed)
{
    std::vector<uint8_t> frame(len);
    for (size_t i = 0; i < len; ++i)
        frame[i] = static_cast<uint8_t>(seed + i);
    return frame;
}

} // namespace

TEST(PerfRingReader, ReadsRecordsInOrderAndReleasesThem)
{
    FakeRing ring;
    ring.push(test::sample_record(frame_of(20, 1), 20));
    ring.push(test::lost_record(5));
    ring.push(test::sample_record(frame_of(30, 2), 30));
    auto reader = ring.reader();
    std::vector<RecordKind> kinds;
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    const size_t n = reader.drain(
        [&](const uint8_t* rec, size_t size) {
            kinds.push_back(decode_record(rec, size).kind);
            return true;
        },
        scratch.data(), corrupt);
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(kinds, (std::vector<RecordKind>{RecordKind::Sample, RecordKind::Lost, RecordKind::Sample}));
    EXPECT_TRUE(reader.empty());
    EXPECT_EQ(corrupt, 0u);
    // Output may still refer to the records: the kernel gets them back only now.
    EXPECT_EQ(ring.header()->data_tail, 0u);
    reader.release();
    EXPECT_EQ(ring.header()->data_tail, ring.header()->data_head);
}

TEST(PerfRingReader, DrainsOnFromTheUnreleasedPosition)
{
    FakeRing ring;
    ring.push(test::sample_record(frame_of(8, 1), 8));
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_EQ(reader.drain([](const uint8_t*, size_t) { return true; }, scratch.data(), corrupt), 1u);
    ring.push(test::sample_record(frame_of(8, 2), 8));
    std::vector<uint8_t> firsts;
    EXPECT_EQ(reader.drain(
                  [&](const uint8_t* rec, size_t size) {
                      firsts.push_back(decode_record(rec, size).sample.data[0]);
                      return true;
                  },
                  scratch.data(), corrupt),
              1u);
    EXPECT_EQ(firsts, std::vector<uint8_t>{2});
    EXPECT_EQ(ring.header()->data_tail, 0u);
    reader.release();
    reader.release(); // nothing more to hand back
    EXPECT_EQ(ring.header()->data_tail, ring.header()->data_head);
}

TEST(PerfRingReader, ReassemblesRecordThatWrapsTheEnd)
{
    FakeRing ring;
    ring.start_at(FakeRing::kDataSize - 24); // the next record straddles the end
    const auto frame = frame_of(40, 9);
    ring.push(test::sample_record(frame, 40));
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    int samples = 0;
    reader.drain(
        [&](const uint8_t* rec, size_t size) {
            const auto decoded = decode_record(rec, size);
            EXPECT_EQ(decoded.kind, RecordKind::Sample);
            EXPECT_EQ(rec, scratch.data());
            EXPECT_EQ(std::memcmp(decoded.sample.data, frame.data(), frame.size()), 0);
            ++samples;
            return true;
        },
        scratch.data(), corrupt);
    EXPECT_EQ(samples, 1);
    EXPECT_TRUE(reader.empty());
}

TEST(PerfRingReader, StopsWhenHandlerSaysSo)
{
    FakeRing ring;
    ring.push(test::sample_record(frame_of(8, 1), 8));
    ring.push(test::sample_record(frame_of(8, 2), 8));
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_EQ(reader.drain([](const uint8_t*, size_t) { return false; }, scratch.data(), corrupt), 1u);
    EXPECT_FALSE(reader.empty());
    EXPECT_EQ(reader.drain([](const uint8_t*, size_t) { return true; }, scratch.data(), corrupt), 1u);
    EXPECT_TRUE(reader.empty());
}

TEST(PerfRingReader, ReleasesHandledRecordWhenHandlerThrows)
{
    FakeRing ring;
    ring.push(test::sample_record(frame_of(8, 1), 8));
    ring.push(test::sample_record(frame_of(8, 2), 8));
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_THROW(reader.drain([](const uint8_t*, size_t) -> bool { throw std::runtime_error("x"); }, scratch.data(),
                              corrupt),
                 std::runtime_error);
    EXPECT_EQ(reader.drain([](const uint8_t*, size_t) { return true; }, scratch.data(), corrupt), 1u);
}

TEST(PerfRingReader, CorruptSizeDiscardsTheRestOfTheRing)
{
    FakeRing ring;
    auto record = test::sample_record(frame_of(8, 1), 8);
    perf_event_header header{PERF_RECORD_SAMPLE, 0, 4}; // smaller than a header
    std::memcpy(record.data(), &header, sizeof header);
    ring.push(record);
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_EQ(reader.drain([](const uint8_t*, size_t) { return true; }, scratch.data(), corrupt), 0u);
    EXPECT_EQ(corrupt, 1u);
    EXPECT_TRUE(reader.empty());
}

TEST(PerfRingReader, RecordClaimingMoreThanPublishedIsCorrupt)
{
    FakeRing ring;
    auto record = test::sample_record(frame_of(64, 1), 64);
    ring.push(record);
    ring.header()->data_head -= 16; // the kernel has not published the whole record
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_EQ(reader.drain([](const uint8_t*, size_t) { return true; }, scratch.data(), corrupt), 0u);
    EXPECT_EQ(corrupt, 1u);
}

TEST(PerfRingReader, SizeNotMultipleOfEightIsCorrupt)
{
    // Found by fuzzing: an odd size would misalign the next header so that
    // it straddles the ring end.
    FakeRing ring;
    auto record = test::sample_record(frame_of(8, 1), 8);
    perf_event_header header{PERF_RECORD_SAMPLE, 0, static_cast<uint16_t>(record.size() - 3)};
    std::memcpy(record.data(), &header, sizeof header);
    ring.push(record);
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_EQ(reader.drain([](const uint8_t*, size_t) { return true; }, scratch.data(), corrupt), 0u);
    EXPECT_EQ(corrupt, 1u);
}

TEST(PerfRingReader, PeekLeavesTheRecordUntilAdvance)
{
    FakeRing ring;
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_EQ(reader.peek(scratch.data(), corrupt).data, nullptr);
    ring.push(test::sample_record(frame_of(8, 1), 8));
    ring.push(test::sample_record(frame_of(8, 2), 8));
    const auto first = reader.peek(scratch.data(), corrupt);
    ASSERT_NE(first.data, nullptr);
    EXPECT_EQ(reader.peek(scratch.data(), corrupt).data, first.data);
    EXPECT_EQ(decode_record(first.data, first.size).sample.data[0], 1);
    reader.advance(first);
    const auto second = reader.peek(scratch.data(), corrupt);
    ASSERT_NE(second.data, nullptr);
    EXPECT_EQ(decode_record(second.data, second.size).sample.data[0], 2);
    reader.advance(second);
    EXPECT_EQ(reader.peek(scratch.data(), corrupt).data, nullptr);
    EXPECT_TRUE(reader.empty());
    // Records peeked or consumed stay the kernel's to keep until release().
    EXPECT_EQ(ring.header()->data_tail, 0u);
    reader.release();
    EXPECT_EQ(ring.header()->data_tail, ring.header()->data_head);
    EXPECT_EQ(corrupt, 0u);
}

TEST(PerfRingReader, PeekSeesRecordsPublishedAfterItFoundNone)
{
    FakeRing ring;
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_EQ(reader.peek(scratch.data(), corrupt).data, nullptr);
    ring.push(test::sample_record(frame_of(8, 3), 8));
    const auto record = reader.peek(scratch.data(), corrupt);
    ASSERT_NE(record.data, nullptr);
    EXPECT_EQ(decode_record(record.data, record.size).sample.data[0], 3);
}

TEST(PerfRingReader, PeekReassemblesAWrappedRecordInTheGivenScratch)
{
    FakeRing ring;
    ring.start_at(FakeRing::kDataSize - 16);
    const auto frame = frame_of(40, 9);
    ring.push(test::sample_record(frame, 40));
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    const auto record = reader.peek(scratch.data(), corrupt);
    EXPECT_EQ(record.data, scratch.data());
    const auto decoded = decode_record(record.data, record.size);
    ASSERT_EQ(decoded.kind, RecordKind::Sample);
    EXPECT_EQ(std::memcmp(decoded.sample.data, frame.data(), frame.size()), 0);
}

TEST(PerfRingReader, PeekAtCorruptSizeSkipsWhatIsPublished)
{
    FakeRing ring;
    auto record = test::sample_record(frame_of(8, 1), 8);
    perf_event_header header{PERF_RECORD_SAMPLE, 0, 4};
    std::memcpy(record.data(), &header, sizeof header);
    ring.push(record);
    auto reader = ring.reader();
    std::vector<uint8_t> scratch(kMaxRecordSize);
    uint64_t corrupt = 0;
    EXPECT_EQ(reader.peek(scratch.data(), corrupt).data, nullptr);
    EXPECT_EQ(corrupt, 1u);
    EXPECT_TRUE(reader.empty());
}
