#include <gtest/gtest.h>

#include <cstring>

#include "ring/record.hpp"
#include "record_builder.hpp"

using namespace xdpcap;
using test::lost_record;
using test::frame_records;
using test::sample_record;

TEST(DecodeRecord, NormalSample)
{
    const std::vector<uint8_t> frame = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const auto record = sample_record(frame, 60, XDPCAP_META_TAG, 3, 42);
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Sample) << decoded.invalid_reason;
    EXPECT_EQ(decoded.sample.ifindex, 7u);
    EXPECT_EQ(decoded.sample.rx_queue, 2u);
    EXPECT_EQ(decoded.sample.orig_len, 60u);
    EXPECT_EQ(decoded.sample.cap_len, 9u);
    EXPECT_EQ(decoded.sample.drops_before, 3u);
    EXPECT_EQ(decoded.sample.tstamp_ns, 42u);
    EXPECT_EQ(std::memcmp(decoded.sample.data, frame.data(), frame.size()), 0);
}

TEST(DecodeRecord, HashAndFlagsCarriedOver)
{
    auto record = sample_record({1, 2, 3}, 3);
    xdpcap_meta meta;
    std::memcpy(&meta, record.data() + 12, sizeof meta);
    meta.hash = 0xdeadbeef;
    meta.hash_type = 0x19; // L4_IPV4_TCP
    meta.flags = XDPCAP_FLAG_HASH | XDPCAP_FLAG_CSUM_PARTIAL;
    std::memcpy(record.data() + 12, &meta, sizeof meta);
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Sample) << decoded.invalid_reason;
    EXPECT_EQ(decoded.sample.hash, 0xdeadbeefu);
    EXPECT_EQ(decoded.sample.hash_type, 0x19u);
    EXPECT_EQ(decoded.sample.flags, XDPCAP_FLAG_HASH | XDPCAP_FLAG_CSUM_PARTIAL);
}

TEST(DecodeRecord, EmptySampleIsValid)
{
    const auto record = sample_record({}, 0);
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Sample);
}

TEST(DecodeRecord, LostRecord)
{
    const auto record = lost_record(17);
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Lost);
    EXPECT_EQ(decoded.lost, 17u);
}

TEST(DecodeRecord, ForeignMagicIsRefused)
{
    const auto record = sample_record({1, 2, 3}, 3, 0xdeadbeef);
    const auto decoded = decode_record(record.data(), record.size());
    EXPECT_EQ(decoded.kind, RecordKind::Invalid);
    EXPECT_STREQ(decoded.invalid_reason, "foreign or mangled metadata tag");
}

TEST(DecodeRecord, OtherAbiVersionIsRefused)
{
    const auto record = sample_record({1, 2, 3}, 3, XDPCAP_META_MAGIC | (XDPCAP_ABI_VERSION + 1));
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Invalid);
}

TEST(DecodeRecord, TruncatedBufferIsRefused)
{
    const auto record = sample_record(std::vector<uint8_t>(100, 0xab), 100);
    // The header claims more bytes than the caller has.
    EXPECT_EQ(decode_record(record.data(), record.size() - 8).kind, RecordKind::Invalid);
    EXPECT_EQ(decode_record(record.data(), 4).kind, RecordKind::Invalid);
}

TEST(DecodeRecord, CapLenBeyondRawDataIsRefused)
{
    auto record = sample_record(std::vector<uint8_t>(16, 0xab), 16);
    xdpcap_meta meta;
    std::memcpy(&meta, record.data() + 12, sizeof meta);
    meta.cap_len = 200;
    meta.orig_len = 200;
    std::memcpy(record.data() + 12, &meta, sizeof meta);
    const auto decoded = decode_record(record.data(), record.size());
    EXPECT_EQ(decoded.kind, RecordKind::Invalid);
    EXPECT_STREQ(decoded.invalid_reason, "captured length overruns the sample");
}

TEST(DecodeRecord, CapLenAboveOrigLenIsRefused)
{
    const auto record = sample_record(std::vector<uint8_t>(16, 0xab), 8);
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Invalid);
}

TEST(DecodeRecord, RawSizeBeyondRecordIsRefused)
{
    auto record = sample_record(std::vector<uint8_t>(16, 0xab), 16);
    const uint32_t raw_size = 4096;
    std::memcpy(record.data() + 8, &raw_size, 4);
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Invalid);
}

TEST(DecodeRecord, SampleTooShortForMetadataIsRefused)
{
    auto record = sample_record({}, 0);
    perf_event_header header{PERF_RECORD_SAMPLE, 0, 24};
    std::memcpy(record.data(), &header, sizeof header);
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Invalid);
}

TEST(DecodeRecord, UnknownTypeIsIgnored)
{
    auto record = lost_record(1);
    perf_event_header header{PERF_RECORD_THROTTLE, 0, static_cast<uint16_t>(record.size())};
    std::memcpy(record.data(), &header, sizeof header);
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Other);
}

TEST(DecodeRecord, RecordSizeForMatchesBuilder)
{
    for (size_t len : {0u, 1u, 4u, 7u, 8u, 60u, 1514u, 9014u}) {
        const auto record = sample_record(std::vector<uint8_t>(len, 1), static_cast<uint32_t>(len));
        EXPECT_EQ(record_size_for(len), record.size()) << len;
    }
    EXPECT_LE(kMaxRecordSize, 0xffffu);
}

TEST(DecodeRecord, DirectionIsCarried)
{
    const auto record = sample_record({1, 2, 3, 4}, 4, XDPCAP_META_TAG, 0, 7, XDPCAP_DIR_EGRESS);
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Sample);
    EXPECT_EQ(decoded.sample.direction, XDPCAP_DIR_EGRESS);
}

TEST(DecodeRecord, UnknownDirectionIsRefused)
{
    for (uint8_t direction : {0, 3, 255}) {
        const auto record = sample_record({1, 2, 3, 4}, 4, XDPCAP_META_TAG, 0, 7, direction);
        const auto decoded = decode_record(record.data(), record.size());
        EXPECT_EQ(decoded.kind, RecordKind::Invalid) << int(direction);
        EXPECT_STREQ(decoded.invalid_reason, "unknown direction");
    }
}

// Frames longer than one record: the first record, then parts.

namespace {

std::vector<uint8_t> pattern(size_t length)
{
    std::vector<uint8_t> frame(length);
    for (size_t i = 0; i < length; ++i)
        frame[i] = static_cast<uint8_t>(i * 13 + i / 251);
    return frame;
}

} // namespace

TEST(DecodeRecord, FirstRecordOfALongFrameCarriesTheWholeCaptureLength)
{
    const auto frame = pattern(200000);
    const auto records = frame_records(frame, 200000, 77);
    ASSERT_EQ(records.size(), 4u); // 65024 * 3 < 200000 <= 65024 * 4
    const auto decoded = decode_record(records[0].data(), records[0].size());
    ASSERT_EQ(decoded.kind, RecordKind::Sample) << decoded.invalid_reason;
    EXPECT_EQ(decoded.sample.cap_len, 200000u);
    EXPECT_EQ(decoded.sample.orig_len, 200000u);
    EXPECT_EQ(std::memcmp(decoded.sample.data, frame.data(), XDPCAP_MAX_SAMPLE_SIZE), 0);
}

TEST(DecodeRecord, PartsSayWhereTheirBytesGo)
{
    const auto frame = pattern(200000);
    const auto records = frame_records(frame, 200000, 77);
    for (size_t i = 1; i < records.size(); ++i) {
        const auto decoded = decode_record(records[i].data(), records[i].size());
        ASSERT_EQ(decoded.kind, RecordKind::Part) << decoded.invalid_reason;
        const uint32_t offset = static_cast<uint32_t>(i) * XDPCAP_MAX_SAMPLE_SIZE;
        EXPECT_EQ(decoded.part.offset, offset);
        EXPECT_EQ(decoded.part.tstamp_ns, 77u);
        EXPECT_GE(decoded.part.available, part_length(200000, offset));
        EXPECT_LT(decoded.part.available, part_length(200000, offset) + 8);
        EXPECT_EQ(std::memcmp(decoded.part.data, frame.data() + offset, part_length(200000, offset)), 0);
    }
}

TEST(DecodeRecord, RecordsSizeForMatchesBuilder)
{
    for (size_t len : {60u, 65024u, 65025u, 130048u, 200000u, 262144u}) {
        size_t total = 0;
        for (const auto& record : frame_records(pattern(len), static_cast<uint32_t>(len)))
            total += record.size();
        EXPECT_EQ(records_size_for(len), total) << len;
    }
}

TEST(DecodeRecord, FirstRecordShortOfItsShareIsRefused)
{
    // cap_len says parts follow, so the first record must be full.
    auto record = sample_record(pattern(65000), 100000);
    const uint32_t cap_len = 100000;
    std::memcpy(record.data() + 12 + offsetof(xdpcap_meta, cap_len), &cap_len, 4);
    const auto decoded = decode_record(record.data(), record.size());
    EXPECT_EQ(decoded.kind, RecordKind::Invalid);
    EXPECT_STREQ(decoded.invalid_reason, "captured length overruns the sample");
}

TEST(DecodeRecord, CaptureLongerThanTheLargestSnapshotIsRefused)
{
    auto record = sample_record(pattern(XDPCAP_MAX_SAMPLE_SIZE), 300000);
    const uint32_t cap_len = XDPCAP_MAX_SNAPLEN + 8;
    std::memcpy(record.data() + 12 + offsetof(xdpcap_meta, cap_len), &cap_len, 4);
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Invalid);
}

TEST(DecodeRecord, PartOutOfPlaceIsRefused)
{
    const auto records = frame_records(pattern(140000), 140000, 5);
    for (uint32_t offset : {0u, 100u, XDPCAP_MAX_SAMPLE_SIZE + 8, XDPCAP_MAX_SNAPLEN + XDPCAP_MAX_SAMPLE_SIZE}) {
        auto record = records[1];
        std::memcpy(record.data() + 12 + offsetof(xdpcap_part, offset), &offset, 4);
        const auto decoded = decode_record(record.data(), record.size());
        EXPECT_EQ(decoded.kind, RecordKind::Invalid) << offset;
        EXPECT_STREQ(decoded.invalid_reason, "part offset out of place");
    }
}

TEST(DecodeRecord, PartOfAnotherAbiVersionIsNotAPart)
{
    auto record = frame_records(pattern(70000), 70000)[1];
    const uint32_t tag = XDPCAP_PART_MAGIC | (XDPCAP_ABI_VERSION + 1);
    std::memcpy(record.data() + 12, &tag, 4);
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Invalid);
}

// -k: the process follows the metadata, then the frame.
TEST(DecodeRecord, ProcessBetweenMetadataAndFrame)
{
    const std::vector<uint8_t> frame = {0xaa, 0xbb, 0xcc};
    struct {
        xdpcap_meta meta;
        xdpcap_process process;
    } head{};
    head.meta = xdpcap_meta{XDPCAP_META_TAG, 7, 2, 60, 3, 0, 42, XDPCAP_DIR_EGRESS, XDPCAP_HOOK_TC_EGRESS,
                            0, 0, 0, 0, XDPCAP_FLAG_PROCESS, 0};
    head.process.pid = 1234;
    head.process.tid = 1240;
    head.process.cgroup_id = 77;
    std::memcpy(head.process.comm, "curl", 4);
    const auto record = test::raw_sample_record(head, frame.data(), frame.size());
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Sample) << decoded.invalid_reason;
    EXPECT_EQ(decoded.sample.process.pid, 1234u);
    EXPECT_EQ(decoded.sample.process.tid, 1240u);
    EXPECT_EQ(decoded.sample.process.cgroup_id, 77u);
    EXPECT_STREQ(decoded.sample.process.comm, "curl");
    EXPECT_EQ(decoded.sample.peer.pid, 0u);
    EXPECT_EQ(std::memcmp(decoded.sample.data, frame.data(), frame.size()), 0);
}

// Both ends on this host: the sender's process, the receiver's, the frame;
// the size the rings are planned with.
TEST(DecodeRecord, BothEndsBetweenMetadataAndFrame)
{
    const std::vector<uint8_t> frame = {0xaa, 0xbb, 0xcc};
    struct {
        xdpcap_meta meta;
        xdpcap_process process[2];
    } head{};
    head.meta = xdpcap_meta{XDPCAP_META_TAG, 1, 0, 60, 3, 0, 42, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_TC_INGRESS,
                            0, 0, 0, 0, XDPCAP_FLAG_PROCESS | XDPCAP_FLAG_PEER, 0};
    head.process[0].pid = 1234;
    std::memcpy(head.process[0].comm, "curl", 4);
    head.process[1].pid = 987;
    head.process[1].tid = 988;
    std::memcpy(head.process[1].comm, "python3", 7);
    const auto record = test::raw_sample_record(head, frame.data(), frame.size());
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Sample) << decoded.invalid_reason;
    EXPECT_EQ(decoded.sample.process.pid, 1234u);
    EXPECT_STREQ(decoded.sample.process.comm, "curl");
    EXPECT_EQ(decoded.sample.peer.pid, 987u);
    EXPECT_EQ(decoded.sample.peer.tid, 988u);
    EXPECT_STREQ(decoded.sample.peer.comm, "python3");
    EXPECT_EQ(std::memcmp(decoded.sample.data, frame.data(), frame.size()), 0);
    EXPECT_EQ(record.size(), record_size_for(frame.size(), true));

    // Flagged so, but with room for one process only.
    struct {
        xdpcap_meta meta;
        xdpcap_process process;
    } one{};
    one.meta = head.meta;
    one.meta.cap_len = 0;
    one.meta.orig_len = 0;
    const auto short_record = test::raw_sample_record(one, nullptr, 0);
    EXPECT_EQ(decode_record(short_record.data(), short_record.size()).kind, RecordKind::Invalid);
}

TEST(DecodeRecord, ProcessFlagWithoutRoomIsRefused)
{
    // Flagged, but only the metadata and 3 frame bytes are there.
    auto record = sample_record({1, 2, 3}, 3);
    xdpcap_meta meta;
    std::memcpy(&meta, record.data() + 12, sizeof meta);
    meta.flags = XDPCAP_FLAG_PROCESS;
    std::memcpy(record.data() + 12, &meta, sizeof meta);
    EXPECT_EQ(decode_record(record.data(), record.size()).kind, RecordKind::Invalid);
}

TEST(DecodeRecord, NoProcessWithoutTheFlag)
{
    const auto record = sample_record({1, 2, 3}, 3);
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Sample);
    EXPECT_EQ(decoded.sample.process.pid, 0u);
    EXPECT_EQ(record_size_for(3, true) - record_size_for(3), 2 * sizeof(xdpcap_process));
}

// The merge decodes each ring's records into the same place: nothing of a
// -k sample may stay behind in the plain sample decoded after it.
TEST(DecodeRecord, DecodingIntoAUsedRecordKeepsNothingOfTheLastSample)
{
    struct {
        xdpcap_meta meta;
        xdpcap_process process;
    } head{};
    head.meta = xdpcap_meta{XDPCAP_META_TAG, 7, 2, 60, 3, 0, 42, XDPCAP_DIR_EGRESS, XDPCAP_HOOK_TC_EGRESS,
                            0, 0, 0x55, 0, XDPCAP_FLAG_PROCESS | XDPCAP_FLAG_HASH, 0};
    head.process.pid = 1234;
    const std::vector<uint8_t> frame = {0xaa, 0xbb, 0xcc};
    const auto with_process = test::raw_sample_record(head, frame.data(), frame.size());
    DecodedRecord decoded{RecordKind::Other, {}, 0, nullptr};
    decode_record_into(with_process.data(), with_process.size(), decoded);
    ASSERT_EQ(decoded.sample.process.pid, 1234u);

    const auto plain = sample_record({1, 2, 3, 4}, 4);
    decode_record_into(plain.data(), plain.size(), decoded);
    ASSERT_EQ(decoded.kind, RecordKind::Sample) << decoded.invalid_reason;
    EXPECT_EQ(decoded.sample.process.pid, 0u);
    EXPECT_EQ(decoded.sample.flags, 0u);
    EXPECT_EQ(decoded.sample.hash, 0u);
    EXPECT_EQ(decoded.sample.cap_len, 4u);

    const auto lost = lost_record(9);
    decode_record_into(lost.data(), lost.size(), decoded);
    EXPECT_EQ(decoded.kind, RecordKind::Lost);
    EXPECT_EQ(decoded.lost, 9u);
}

namespace {

using test::batch_record;
using test::BatchFrame;

uint64_t frame_tstamp_of(const uint8_t* at)
{
    xdpcap_meta meta;
    std::memcpy(&meta, at, sizeof meta);
    return meta.tstamp_ns;
}

// Every frame of a checked batch, as the merge reads them.
std::vector<Sample> unpack(const DecodedRecord& batch)
{
    std::vector<Sample> samples;
    const uint8_t* at = batch.batch.data;
    const uint8_t* end = at + batch.batch.bytes;
    for (uint32_t i = 0; i < batch.batch.frames; ++i) {
        Sample frame{};
        EXPECT_EQ(batch_frame_tstamp(at), (frame_tstamp_of(at)));
        at += decode_batch_frame(at, frame);
        samples.push_back(frame);
    }
    EXPECT_EQ(at, end);
    return samples;
}

} // namespace

TEST(DecodeBatch, NoFrames)
{
    const auto record = batch_record({});
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Batch) << decoded.invalid_reason;
    EXPECT_EQ(decoded.batch.frames, 0u);
    EXPECT_EQ(decoded.batch.bytes, 0u);
}

TEST(DecodeBatch, OneFrameAsItsOwnRecordWouldCarryIt)
{
    const std::vector<uint8_t> frame = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const auto record = batch_record({BatchFrame{frame, 60, 42, 3}});
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Batch) << decoded.invalid_reason;
    const auto samples = unpack(decoded);
    ASSERT_EQ(samples.size(), 1u);
    const auto single = sample_record(frame, 60, XDPCAP_META_TAG, 3, 42);
    const auto alone = decode_record(single.data(), single.size());
    EXPECT_EQ(samples[0].orig_len, alone.sample.orig_len);
    EXPECT_EQ(samples[0].cap_len, 9u);
    EXPECT_EQ(samples[0].drops_before, 3u);
    EXPECT_EQ(samples[0].tstamp_ns, 42u);
    EXPECT_EQ(samples[0].ifindex, 7u);
    EXPECT_EQ(samples[0].rx_queue, 2u);
    EXPECT_EQ(samples[0].hook, XDPCAP_HOOK_TC_INGRESS);
    EXPECT_EQ(std::memcmp(samples[0].data, frame.data(), frame.size()), 0);
}

TEST(DecodeBatch, ManyFramesInOrderWithTheirOwnBytes)
{
    std::vector<BatchFrame> frames;
    for (uint32_t i = 0; i < 100; ++i)
        frames.push_back(BatchFrame{std::vector<uint8_t>(1 + i % 70, static_cast<uint8_t>(i)), 1500, 1000 + i});
    const auto record = batch_record(frames);
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Batch) << decoded.invalid_reason;
    const auto samples = unpack(decoded);
    ASSERT_EQ(samples.size(), frames.size());
    for (size_t i = 0; i < frames.size(); ++i) {
        EXPECT_EQ(samples[i].tstamp_ns, frames[i].tstamp_ns);
        ASSERT_EQ(samples[i].cap_len, frames[i].frame.size());
        EXPECT_EQ(std::memcmp(samples[i].data, frames[i].frame.data(), frames[i].frame.size()), 0);
    }
}

TEST(DecodeBatch, FramesWithOneOrBothEndsProcesses)
{
    const xdpcap_process sender{1234, 1235, 77, "curl"};
    const xdpcap_process receiver{987, 987, 78, "http.server"};
    const std::vector<uint8_t> frame = {1, 2, 3, 4, 5};
    const auto record = batch_record({BatchFrame{frame, 5, 1, 0, {sender, receiver}},
                                      BatchFrame{frame, 5, 2, 0, {sender}}, BatchFrame{frame, 5, 3}});
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Batch) << decoded.invalid_reason;
    const auto samples = unpack(decoded);
    ASSERT_EQ(samples.size(), 3u);
    EXPECT_EQ(samples[0].process.pid, 1234u);
    EXPECT_EQ(samples[0].peer.pid, 987u);
    EXPECT_STREQ(samples[0].peer.comm, "http.server");
    EXPECT_EQ(samples[1].process.pid, 1234u);
    EXPECT_EQ(samples[1].peer.pid, 0u);
    EXPECT_EQ(samples[2].process.pid, 0u);
    for (const Sample& s : samples)
        EXPECT_EQ(std::memcmp(s.data, frame.data(), frame.size()), 0);
}

namespace {

// The same frame as a record of its own, as the hook writes it when it does
// not stage: its metadata, -k's processes, its bytes.
std::vector<uint8_t> own_record(const BatchFrame& f)
{
    std::vector<uint8_t> behind(f.processes.size() * sizeof(xdpcap_process));
    if (!f.processes.empty())
        std::memcpy(behind.data(), f.processes.data(), behind.size());
    behind.insert(behind.end(), f.frame.begin(), f.frame.end());
    return test::raw_sample_record(*f.meta, behind.data(), behind.size());
}

void expect_same_sample(const Sample& batched, const Sample& alone)
{
    EXPECT_EQ(batched.ifindex, alone.ifindex);
    EXPECT_EQ(batched.rx_queue, alone.rx_queue);
    EXPECT_EQ(batched.orig_len, alone.orig_len);
    EXPECT_EQ(batched.cap_len, alone.cap_len);
    EXPECT_EQ(batched.drops_before, alone.drops_before);
    EXPECT_EQ(batched.tstamp_ns, alone.tstamp_ns);
    EXPECT_EQ(batched.direction, alone.direction);
    EXPECT_EQ(batched.hook, alone.hook);
    EXPECT_EQ(batched.program, alone.program);
    EXPECT_EQ(batched.verdict, alone.verdict);
    EXPECT_EQ(batched.hash, alone.hash);
    EXPECT_EQ(batched.hash_type, alone.hash_type);
    EXPECT_EQ(batched.flags, alone.flags);
    EXPECT_EQ(batched.location, alone.location);
    EXPECT_EQ(std::memcmp(&batched.process, &alone.process, sizeof(xdpcap_process)), 0);
    EXPECT_EQ(std::memcmp(&batched.peer, &alone.peer, sizeof(xdpcap_process)), 0);
    EXPECT_EQ(std::memcmp(batched.data, alone.data, alone.cap_len), 0);
}

constexpr uint64_t kDropLocation = 0xffffffff8123abcdull;

// --drops' frame as bpf/drops.bpf.c stages it: a sent frame its qdisc
// dropped, its tag put back, with -k its socket's owner and no other end.
BatchFrame dropped_frame()
{
    BatchFrame f{std::vector<uint8_t>(20, 0xd0), 68, 101, 4, {xdpcap_process{4321, 4322, 99, "nc"}, xdpcap_process{}}};
    f.meta = xdpcap_meta{XDPCAP_META_TAG, 7, 0, 68, 20, 4, 101, XDPCAP_DIR_EGRESS, XDPCAP_HOOK_DROP, 0,
                         77 /* the kernel's drop reason */, 0, 0,
                         XDPCAP_FLAG_VLAN_RESTORED | XDPCAP_FLAG_PROCESS | XDPCAP_FLAG_PEER, kDropLocation};
    return f;
}

// Trace mode's frames as bpf/trace.bpf.c stages them: traced program 1 at
// its entry, and at its exit with its verdict.
BatchFrame traced_frame(bool at_exit)
{
    BatchFrame f{std::vector<uint8_t>(30, at_exit ? 0xe1 : 0xe0), 1500, at_exit ? 103u : 102u, at_exit ? 1u : 0u};
    f.meta = xdpcap_meta{XDPCAP_META_TAG, 7, 3, 1500, 30, f.drops_before, f.tstamp_ns, XDPCAP_DIR_INGRESS,
                         static_cast<uint8_t>(at_exit ? XDPCAP_HOOK_FEXIT : XDPCAP_HOOK_FENTRY), 1,
                         at_exit ? 3u /* XDP_TX */ : 0u, 0, 0, 0, 0};
    return f;
}

} // namespace

TEST(DecodeBatch, DropAndTraceFramesUnpackAsTheirOwnRecordsDo)
{
    const std::vector<BatchFrame> frames = {BatchFrame{std::vector<uint8_t>(12, 0x11), 60, 100}, dropped_frame(),
                                            traced_frame(false), traced_frame(true)};
    const auto record = batch_record(frames);
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Batch) << decoded.invalid_reason;
    const auto samples = unpack(decoded);
    ASSERT_EQ(samples.size(), 4u);
    for (size_t i = 1; i < frames.size(); ++i) {
        SCOPED_TRACE(i);
        const auto single = own_record(frames[i]);
        const auto alone = decode_record(single.data(), single.size());
        ASSERT_EQ(alone.kind, RecordKind::Sample) << alone.invalid_reason;
        expect_same_sample(samples[i], alone.sample);
    }
    // Golden: what the output reads of each.
    const Sample& drop = samples[1];
    EXPECT_EQ(drop.hook, XDPCAP_HOOK_DROP);
    EXPECT_EQ(drop.direction, XDPCAP_DIR_EGRESS);
    EXPECT_EQ(drop.verdict, 77u);
    EXPECT_EQ(drop.location, kDropLocation);
    EXPECT_EQ(drop.drops_before, 4u);
    EXPECT_EQ(drop.orig_len, 68u);
    EXPECT_EQ(drop.cap_len, 20u);
    EXPECT_EQ(drop.tstamp_ns, 101u);
    EXPECT_EQ(drop.flags, XDPCAP_FLAG_VLAN_RESTORED | XDPCAP_FLAG_PROCESS | XDPCAP_FLAG_PEER);
    EXPECT_EQ(drop.process.pid, 4321u);
    EXPECT_STREQ(drop.process.comm, "nc");
    EXPECT_EQ(drop.peer.pid, 0u);
    EXPECT_EQ(drop.data[19], 0xd0);
    const Sample& entry = samples[2];
    EXPECT_EQ(entry.hook, XDPCAP_HOOK_FENTRY);
    EXPECT_EQ(entry.program, 1u);
    EXPECT_EQ(entry.verdict, 0u);
    EXPECT_EQ(entry.rx_queue, 3u);
    EXPECT_EQ(entry.location, 0u);
    EXPECT_EQ(entry.process.pid, 0u);
    const Sample& leaving = samples[3];
    EXPECT_EQ(leaving.hook, XDPCAP_HOOK_FEXIT);
    EXPECT_EQ(leaving.program, 1u);
    EXPECT_EQ(leaving.verdict, 3u);
    EXPECT_EQ(leaving.drops_before, 1u);
    EXPECT_EQ(leaving.tstamp_ns, 103u);
    EXPECT_EQ(leaving.data[0], 0xe1);
    // The capture hook's frame before them is untouched by their fields.
    EXPECT_EQ(samples[0].hook, XDPCAP_HOOK_TC_INGRESS);
    EXPECT_EQ(samples[0].verdict, 0u);
    EXPECT_EQ(samples[0].location, 0u);
}

TEST(DecodeBatch, GoldenBytesOfABatchedDrop)
{
    const auto record = batch_record({dropped_frame()});
    // perf header, raw size, batch header: 1 frame of 56 + 2 * 32 + 20 bytes, padded to 144.
    const std::vector<uint8_t> golden = {
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0xb0, 0x00, // PERF_RECORD_SAMPLE, 176 bytes
        0xa4, 0x00, 0x00, 0x00,                         // 164 raw bytes
        0x09, 0x62, 0x44, 0x58, 0x01, 0x00, 0x00, 0x00, // 'XDb' v9, 1 frame
        0x90, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 144 bytes
        0x09, 0x50, 0x44, 0x58, 0x07, 0x00, 0x00, 0x00, // 'XDP' v9, ifindex 7
        0x00, 0x00, 0x00, 0x00, 0x44, 0x00, 0x00, 0x00, // queue 0, orig_len 68
        0x14, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, // cap_len 20, drops_before 4
        0x65, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // tstamp_ns 101
        0x02, 0x04, 0x00, 0x00, 0x4d, 0x00, 0x00, 0x00, // egress, hook DROP, program 0, reason 77
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x32, 0x00, // hash, hash_type, flags (tag, process, peer)
        0xcd, 0xab, 0x23, 0x81, 0xff, 0xff, 0xff, 0xff, // location
        0xe1, 0x10, 0x00, 0x00, 0xe2, 0x10, 0x00, 0x00, // owner pid 4321, tid 4322
    };
    ASSERT_EQ(record.size(), 176u);
    EXPECT_TRUE(std::equal(golden.begin(), golden.end(), record.begin()));
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Batch) << decoded.invalid_reason;
    const auto samples = unpack(decoded);
    ASSERT_EQ(samples.size(), 1u);
    EXPECT_EQ(samples[0].data, record.data() + 12 + 16 + 56 + 64);
    EXPECT_EQ(samples[0].location, kDropLocation);
}

TEST(DecodeBatch, FrameEndingExactlyAtTheBatchEnd)
{
    // 56 bytes of metadata and 8 of frame: no padding after the last frame.
    const auto record = batch_record({BatchFrame{{1, 2, 3, 4, 5, 6, 7, 8}, 8, 1}, BatchFrame{{9, 9, 9, 9, 9, 9, 9, 9}, 8, 2}});
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Batch) << decoded.invalid_reason;
    EXPECT_EQ(decoded.batch.bytes, 2u * 64u);
    const auto samples = unpack(decoded);
    ASSERT_EQ(samples.size(), 2u);
    EXPECT_EQ(samples[1].data[7], 9);
}

TEST(DecodeBatch, GoldenBytesOfTheUnpackedSample)
{
    const auto record = batch_record({BatchFrame{{0xde, 0xad, 0xbe, 0xef}, 4, 0x0102030405060708ull}});
    // perf header, raw size, batch header, then the frame's metadata.
    const std::vector<uint8_t> golden = {
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x60, 0x00, // PERF_RECORD_SAMPLE, 96 bytes
        0x54, 0x00, 0x00, 0x00,                         // 84 raw bytes
        0x09, 0x62, 0x44, 0x58, 0x01, 0x00, 0x00, 0x00, // 'XDb' v9, 1 frame
        0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 64 bytes
    };
    ASSERT_EQ(record.size(), 96u);
    EXPECT_TRUE(std::equal(golden.begin(), golden.end(), record.begin()));
    const auto decoded = decode_record(record.data(), record.size());
    ASSERT_EQ(decoded.kind, RecordKind::Batch) << decoded.invalid_reason;
    const auto samples = unpack(decoded);
    ASSERT_EQ(samples.size(), 1u);
    EXPECT_EQ(samples[0].tstamp_ns, 0x0102030405060708ull);
    EXPECT_EQ(samples[0].data, record.data() + 12 + 16 + 56);
    EXPECT_EQ(std::vector<uint8_t>(samples[0].data, samples[0].data + 4), (std::vector<uint8_t>{0xde, 0xad, 0xbe, 0xef}));
}

TEST(DecodeBatch, TruncatedBatchIsRefusedAndCountsItsFrames)
{
    auto record = batch_record({BatchFrame{{1, 2, 3}, 3, 1}, BatchFrame{{4, 5, 6}, 3, 2}, BatchFrame{{7}, 1, 3}});
    // The last frame's bytes claimed, not there.
    const uint32_t bytes = 3 * 64 + 8;
    std::memcpy(record.data() + 12 + offsetof(xdpcap_batch, bytes), &bytes, 4);
    const auto decoded = decode_record(record.data(), record.size());
    EXPECT_EQ(decoded.kind, RecordKind::Invalid);
    EXPECT_EQ(decoded.batch.frames, 3u);
}

TEST(DecodeBatch, FrameOverrunningTheBatchIsRefused)
{
    auto record = batch_record({BatchFrame{{1, 2, 3}, 3, 1}, BatchFrame{{4, 5, 6}, 3, 2}});
    const uint32_t cap_len = 20; // runs past the batch's bytes
    std::memcpy(record.data() + 12 + 16 + 64 + offsetof(xdpcap_meta, cap_len), &cap_len, 4);
    const auto decoded = decode_record(record.data(), record.size());
    EXPECT_EQ(decoded.kind, RecordKind::Invalid);
    EXPECT_EQ(decoded.batch.frames, 2u);
}

TEST(DecodeBatch, CountDisagreeingWithTheBytesIsRefused)
{
    const auto record = batch_record({BatchFrame{{1, 2, 3}, 3, 1}, BatchFrame{{4, 5, 6}, 3, 2}}, 5);
    const auto decoded = decode_record(record.data(), record.size());
    EXPECT_EQ(decoded.kind, RecordKind::Invalid);
    EXPECT_EQ(decoded.batch.frames, 5u);
}

TEST(DecodeBatch, SingleInvalidRecordClaimsNoBatch)
{
    const auto batch = batch_record({BatchFrame{{1, 2, 3}, 3, 1}}, 4);
    DecodedRecord decoded{RecordKind::Other, {}, 0, nullptr};
    decode_record_into(batch.data(), batch.size(), decoded);
    ASSERT_EQ(decoded.kind, RecordKind::Invalid);
    const auto foreign = sample_record({1, 2, 3}, 3, 0xdeadbeef);
    decode_record_into(foreign.data(), foreign.size(), decoded);
    ASSERT_EQ(decoded.kind, RecordKind::Invalid);
    EXPECT_EQ(decoded.batch.frames, 0u);
}
