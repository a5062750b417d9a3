// RingMerger: per-CPU rings come out as one stream in timestamp order, a
// sample waits at most the hold-back for an empty ring, and the accounting
// stays exact with -c, late samples and failing output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fake_ring.hpp"
#include "output/packet_output.hpp"
#include "output/pcapng.hpp"
#include "record_builder.hpp"
#include "ring/ring_merge.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

constexpr uint64_t kMs = 1'000'000;

// The frame says where it came from, so the output can be checked byte for byte.
Bytes frame_for(uint32_t ring, uint32_t seq, size_t len)
{
    Bytes frame(len);
    for (size_t i = 0; i < len; ++i)
        frame[i] = static_cast<uint8_t>(ring * 31 + seq * 7 + i);
    std::memcpy(frame.data(), &ring, 4);
    std::memcpy(frame.data() + 4, &seq, 4);
    return frame;
}

struct Packet {
    uint32_t interface_id;
    uint64_t tstamp_ns;
    Bytes data;
    bool operator==(const Packet&) const = default;
};

// The enhanced packet blocks in `bytes`, complete ones only.
std::vector<Packet> read_packets(const Bytes& bytes)
{
    std::vector<Packet> packets;
    for (size_t offset = 0; offset + 12 <= bytes.size();) {
        uint32_t type, length;
        std::memcpy(&type, bytes.data() + offset, 4);
        std::memcpy(&length, bytes.data() + offset + 4, 4);
        if (length < 12 || offset + length > bytes.size())
            break;
        if (type == pcapng::kEpbType) {
            const uint8_t* block = bytes.data() + offset;
            uint32_t interface_id, high, low, cap_len;
            std::memcpy(&interface_id, block + 8, 4);
            std::memcpy(&high, block + 12, 4);
            std::memcpy(&low, block + 16, 4);
            std::memcpy(&cap_len, block + 20, 4);
            packets.push_back(Packet{interface_id, uint64_t{high} << 32 | low, Bytes(block + 28, block + 28 + cap_len)});
        }
        offset += length;
    }
    return packets;
}

std::vector<std::string> names_for(size_t rings)
{
    std::vector<std::string> names;
    for (size_t i = 0; i < rings; ++i)
        names.push_back("test@cpu" + std::to_string(i));
    return names;
}

// Hand-filled rings plus everything that reads and writes them.
class MergeBench {
public:
    // Writes to an in-memory file, or to `path` when one is given.
    explicit MergeBench(size_t rings, size_t ring_bytes = 4096, RingMerger::Options options = {},
                        const std::string& path = {}, size_t buffer_size = Sink::kDefaultBufferSize,
                        bool packet_buffered = false)
        : sent_(rings)
    {
        for (size_t i = 0; i < rings; ++i)
            fakes_.push_back(std::make_unique<FakeRing>(ring_bytes));
        for (auto& fake : fakes_)
            readers_.push_back(fake->reader());
        output_ = std::make_unique<PacketOutput>(Sink::open_file(path.empty() ? file_.path() : path, buffer_size),
                                                 PacketOutput::Format::Pcapng, packet_buffered, names_for(rings));
        merger_ = std::make_unique<RingMerger>(readers_, *output_, ClockOffset{}, options);
    }

    FakeRing& ring(size_t i) { return *fakes_[i]; }
    // A ring that joins after the start (an interface created during the
    // capture): the readers may move as their vector grows.
    void add_ring(size_t ring_bytes = 4096)
    {
        fakes_.push_back(std::make_unique<FakeRing>(ring_bytes));
        readers_.push_back(fakes_.back()->reader());
        sent_.push_back(0);
        merger_->add_rings(readers_);
    }
    // Before anything is read: the rings start (empty) at `position`.
    void start_rings_at(uint64_t position)
    {
        for (size_t i = 0; i < fakes_.size(); ++i) {
            fakes_[i]->start_at(position);
            readers_[i] = fakes_[i]->reader();
        }
    }
    // Publishes a sample on ring `ring`; returns the packet it must become.
    Packet send(uint32_t ring, uint64_t tstamp_ns, size_t len = 24)
    {
        const auto seq = static_cast<uint32_t>(sent_[ring]++);
        Bytes frame = frame_for(ring, seq, len);
        fakes_[ring]->push(sample_record(frame, static_cast<uint32_t>(len), XDPCAP_META_TAG, 0, tstamp_ns));
        return Packet{ring, tstamp_ns, std::move(frame)};
    }
    // The records of a frame of `len` bytes (longer than one record: its
    // first record and parts); `publish` of them are put in the ring, the
    // rest are returned for push_rest().
    Packet send_long(uint32_t ring, uint64_t tstamp_ns, size_t len, size_t publish = SIZE_MAX,
                     uint32_t orig_len = 0)
    {
        const auto seq = static_cast<uint32_t>(sent_[ring]++);
        Bytes frame = frame_for(ring, seq, len);
        auto records = frame_records(frame, orig_len ? orig_len : static_cast<uint32_t>(len), tstamp_ns);
        rest_.clear();
        for (size_t i = 0; i < records.size(); ++i) {
            if (i < publish)
                fakes_[ring]->push(records[i]);
            else
                rest_.push_back(records[i]);
        }
        return Packet{ring, tstamp_ns, std::move(frame)};
    }
    // Publishes the records send_long() held back.
    void push_rest(uint32_t ring)
    {
        for (const auto& record : rest_)
            fakes_[ring]->push(record);
        rest_.clear();
    }
    // Publishes one batch record of frames stamped `stamps` on `ring`;
    // returns the packets they must become.
    std::vector<Packet> send_batch(uint32_t ring, const std::vector<uint64_t>& stamps, size_t len = 24)
    {
        std::vector<test::BatchFrame> frames;
        std::vector<Packet> packets;
        for (uint64_t tstamp_ns : stamps) {
            const auto seq = static_cast<uint32_t>(sent_[ring]++);
            Bytes frame = frame_for(ring, seq, len);
            frames.push_back(test::BatchFrame{frame, static_cast<uint32_t>(len), tstamp_ns});
            packets.push_back(Packet{ring, tstamp_ns, std::move(frame)});
        }
        fakes_[ring]->push(test::batch_record(frames));
        return packets;
    }
    // The same with a length per frame.
    std::vector<Packet> send_batch(uint32_t ring, const std::vector<uint64_t>& stamps,
                                   const std::vector<size_t>& lengths)
    {
        std::vector<test::BatchFrame> frames;
        std::vector<Packet> packets;
        for (size_t i = 0; i < stamps.size(); ++i) {
            const auto seq = static_cast<uint32_t>(sent_[ring]++);
            Bytes frame = frame_for(ring, seq, lengths[i]);
            frames.push_back(test::BatchFrame{frame, static_cast<uint32_t>(lengths[i]), stamps[i]});
            packets.push_back(Packet{ring, stamps[i], std::move(frame)});
        }
        fakes_[ring]->push(test::batch_record(frames));
        return packets;
    }
    RingMerger& merger() { return *merger_; }
    PacketOutput& output() { return *output_; }
    std::vector<Packet> written()
    {
        output_->flush();
        return read_packets(file_.contents());
    }
    // What reached the in-memory file, unflushed bytes left where they are.
    Bytes file_bytes() const { return file_.contents(); }

private:
    MemFile file_;
    std::vector<size_t> sent_;
    std::vector<Bytes> rest_;
    std::vector<std::unique_ptr<FakeRing>> fakes_;
    std::vector<PerfRingReader> readers_;
    std::unique_ptr<PacketOutput> output_;
    std::unique_ptr<RingMerger> merger_;
};

std::vector<Packet> sorted_by_time(std::vector<Packet> packets)
{
    std::stable_sort(packets.begin(), packets.end(), [](const Packet& a, const Packet& b) {
        return a.tstamp_ns < b.tstamp_ns || (a.tstamp_ns == b.tstamp_ns && a.interface_id < b.interface_id);
    });
    return packets;
}

RingTally sum(const std::vector<RingTally>& tallies)
{
    RingTally total;
    for (const auto& t : tallies) {
        total.samples += t.samples;
        total.written += t.written;
        total.discarded += t.discarded;
        total.unwritten += t.unwritten;
        total.out_of_order += t.out_of_order;
    }
    return total;
}

void expect_every_sample_accounted(const std::vector<RingTally>& tallies)
{
    for (size_t i = 0; i < tallies.size(); ++i) {
        const auto& t = tallies[i];
        EXPECT_EQ(t.samples, t.written + t.discarded + t.unwritten) << "ring " << i;
    }
}

} // namespace

TEST(RingMerger, InterleavedRingsComeOutSorted)
{
    for (size_t rings : {2, 3, 7, 16, 64}) {
        MergeBench bench(rings);
        std::vector<Packet> sent;
        // Ring i holds every rings-th timestamp: a round-robin interleaving.
        for (uint32_t seq = 0; seq < 12; ++seq)
            for (uint32_t ring = 0; ring < rings; ++ring)
                sent.push_back(bench.send(ring, 100 * kMs + (seq * rings + ring) * 1000));
        // Every ring holds a newer sample than the oldest: no hold-back is
        // needed until the rings run dry.
        bench.merger().drain(sent.back().tstamp_ns + kHoldBackNs);
        EXPECT_EQ(bench.written(), sorted_by_time(sent)) << rings << " rings";
        EXPECT_EQ(bench.merger().held(), 0u);
        const RingTally total = sum(bench.merger().tallies());
        EXPECT_EQ(total.written, sent.size());
        EXPECT_EQ(total.out_of_order, 0u);
        expect_every_sample_accounted(bench.merger().tallies());
    }
}

TEST(RingMerger, BurstsAndEqualTimestampsComeOutSorted)
{
    MergeBench bench(3);
    std::vector<Packet> sent;
    for (uint32_t i = 0; i < 10; ++i)
        sent.push_back(bench.send(0, 10 * kMs + i)); // a burst on one CPU
    sent.push_back(bench.send(1, 10 * kMs + 3));
    sent.push_back(bench.send(2, 10 * kMs + 3)); // ties: the lower ring first
    sent.push_back(bench.send(1, 10 * kMs + 3));
    sent.push_back(bench.send(2, 10 * kMs + 20));
    bench.merger().drain_everything();
    const auto written = bench.written();
    EXPECT_EQ(written, sorted_by_time(sent));
    EXPECT_EQ(written[3].interface_id, 0u);
    EXPECT_EQ(written[4].interface_id, 1u);
    EXPECT_EQ(written[5].interface_id, 1u);
    EXPECT_EQ(written[6].interface_id, 2u);
}

TEST(RingMerger, YoungSampleWaitsForAnEmptyRingOldOneDoesNot)
{
    MergeBench bench(2);
    const Packet young = bench.send(0, 100 * kMs);
    bench.merger().drain(100 * kMs + kHoldBackNs - 1);
    EXPECT_TRUE(bench.written().empty());
    EXPECT_EQ(bench.merger().held(), 1u);
    EXPECT_EQ(bench.merger().tallies()[0].samples, 0u);
    // Held samples stay in the ring: the kernel must not reuse their space.
    EXPECT_EQ(bench.ring(0).header()->data_tail, 0u);

    bench.merger().drain(100 * kMs + kHoldBackNs);
    EXPECT_EQ(bench.written(), std::vector<Packet>{young});
    EXPECT_EQ(bench.merger().held(), 0u);
    EXPECT_EQ(bench.ring(0).header()->data_tail, bench.ring(0).header()->data_head);
}

TEST(RingMerger, RingMoreThanHalfFullIsNotHeldBack)
{
    MergeBench bench(2, 4096);
    std::vector<Packet> sent;
    // Young samples filling up to half of the ring wait for ring 1.
    const auto up_to_half = static_cast<uint32_t>(2048 / record_size_for(24));
    for (uint32_t i = 0; i < up_to_half; ++i)
        sent.push_back(bench.send(0, 100 * kMs + i));
    bench.merger().drain(100 * kMs + 100);
    EXPECT_TRUE(bench.written().empty());
    sent.push_back(bench.send(0, 100 * kMs + up_to_half));
    ASSERT_GT(bench.ring(0).header()->data_head, 2048u);
    bench.merger().drain(100 * kMs + 100);
    EXPECT_EQ(bench.written(), sent);
    EXPECT_EQ(bench.ring(0).header()->data_tail, bench.ring(0).header()->data_head);
}

TEST(RingMerger, SampleOlderThanEveryOtherRingsHeadIsWrittenAtOnce)
{
    MergeBench bench(2);
    const Packet first = bench.send(0, 100 * kMs);
    const Packet second = bench.send(1, 100 * kMs + 5);
    bench.merger().drain(100 * kMs + 10);
    // Ring 1 was read past the first; the second then waits for ring 0.
    EXPECT_EQ(bench.written(), std::vector<Packet>{first});
    EXPECT_EQ(bench.merger().held(), 1u);
    const Packet third = bench.send(0, 100 * kMs + 7);
    bench.merger().drain(100 * kMs + 11);
    EXPECT_EQ(bench.written(), (std::vector<Packet>{first, second}));
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written(), (std::vector<Packet>{first, second, third}));
}

TEST(RingMerger, DrainEverythingWritesHeldSamplesInOrder)
{
    MergeBench bench(4);
    std::vector<Packet> sent;
    sent.push_back(bench.send(2, 50 * kMs + 30));
    sent.push_back(bench.send(0, 50 * kMs + 20));
    sent.push_back(bench.send(0, 50 * kMs + 40));
    sent.push_back(bench.send(1, 50 * kMs + 10));
    bench.merger().drain(50 * kMs); // ring 3 is empty and all are young
    EXPECT_TRUE(bench.written().empty());
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written(), sorted_by_time(sent));
    EXPECT_EQ(bench.merger().held(), 0u);
    for (size_t i = 0; i < 4; ++i)
        EXPECT_EQ(bench.ring(i).header()->data_tail, bench.ring(i).header()->data_head) << i;
}

TEST(RingMerger, LateSampleIsWrittenAndCounted)
{
    MergeBench bench(2);
    const Packet newer = bench.send(0, 200 * kMs);
    bench.merger().drain(300 * kMs);
    // Stamped before what was written, committed later than the hold-back allows.
    const Packet late = bench.send(1, 150 * kMs);
    const Packet after = bench.send(0, 250 * kMs);
    bench.merger().drain(300 * kMs);
    EXPECT_EQ(bench.written(), (std::vector<Packet>{newer, late, after}));
    const auto& tallies = bench.merger().tallies();
    EXPECT_EQ(tallies[1].out_of_order, 1u);
    EXPECT_EQ(tallies[1].written, 1u);
    EXPECT_EQ(tallies[0].out_of_order, 0u);
    EXPECT_EQ(tallies[0].written, 2u);
}

TEST(RingMerger, WrappedHeadsOfSeveralRingsAreHeldAtOnce)
{
    MergeBench bench(3, FakeRing::kDataSize);
    bench.start_rings_at(FakeRing::kDataSize - 24); // each first record wraps the end
    std::vector<Packet> sent;
    sent.push_back(bench.send(0, 30, 40));
    sent.push_back(bench.send(1, 10, 40));
    sent.push_back(bench.send(2, 20, 40));
    sent.push_back(bench.send(0, 60, 40));
    sent.push_back(bench.send(1, 40, 40));
    sent.push_back(bench.send(2, 50, 40));
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written(), sorted_by_time(sent));
}

TEST(RingMerger, RingsAddedBetweenDrainsMergeWithTheHeldOnes)
{
    MergeBench bench(2, FakeRing::kDataSize);
    bench.start_rings_at(FakeRing::kDataSize - 24); // the first records wrap the end: held in scratch
    std::vector<Packet> sent;
    sent.push_back(bench.send(0, 100 * kMs, 40));
    bench.merger().drain(100 * kMs); // young, and ring 1 is empty: held
    ASSERT_EQ(bench.merger().held(), 1u);
    for (int i = 0; i < 5; ++i)
        bench.add_ring();
    sent.push_back(bench.send(6, 100 * kMs - 5, 40)); // older than the held head
    sent.push_back(bench.send(1, 100 * kMs + 5, 40));
    sent.push_back(bench.send(2, 100 * kMs + 7, 3000)); // the new rings' own buffers
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written(), sorted_by_time(sent));
    EXPECT_EQ(bench.merger().tallies().size(), 7u);
    EXPECT_EQ(bench.merger().tallies()[6].written, 1u);
    EXPECT_EQ(bench.merger().written_by_interface().size(), 7u);
    expect_every_sample_accounted(bench.merger().tallies());
}

TEST(RingMerger, LargeSamplesWrittenFromTheRingBeforeItIsReleased)
{
    MergeBench bench(2, 16384);
    std::vector<Packet> sent;
    for (uint32_t i = 0; i < 6; ++i)
        sent.push_back(bench.send(i % 2, 1000 + i, PacketOutput::kReferMinLength + 100));
    bench.merger().drain_everything();
    EXPECT_FALSE(bench.output().sink().has_references());
    EXPECT_EQ(bench.written(), sent);
}

TEST(RingMerger, NonSampleRecordsAreCountedWhenMet)
{
    MergeBench bench(2);
    bench.ring(1).push(lost_record(7));
    const Packet only = bench.send(1, 100);
    bench.ring(1).push(lost_record(2));
    Bytes foreign = sample_record(frame_for(1, 99, 24), 24, 0xdeadbeef, 0, 50);
    bench.ring(0).push(foreign);
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written(), std::vector<Packet>{only});
    EXPECT_EQ(bench.merger().tallies()[1].lost_records, 9u);
    EXPECT_EQ(bench.merger().tallies()[0].invalid, 1u);
    EXPECT_EQ(bench.merger().tallies()[0].samples, 0u);
}

TEST(RingMerger, CountReachedMidMergeKeepsTheOldestAndCountsTheRest)
{
    RingMerger::Options options;
    options.count = 17;
    MergeBench bench(4, 4096, options);
    std::vector<Packet> sent;
    for (uint32_t seq = 0; seq < 10; ++seq)
        for (uint32_t ring = 0; ring < 4; ++ring)
            sent.push_back(bench.send(ring, 1000 + seq * 4 + (3 - ring)));
    bench.merger().drain(10 * kMs);
    EXPECT_TRUE(bench.merger().count_reached());
    auto oldest = sorted_by_time(sent);
    oldest.resize(17);
    EXPECT_EQ(bench.written(), oldest);
    bench.send(2, 5000);
    bench.merger().drain_everything();
    const RingTally total = sum(bench.merger().tallies());
    EXPECT_EQ(total.written, 17u);
    EXPECT_EQ(total.discarded, 41u - 17u);
    EXPECT_EQ(total.samples, 41u);
    expect_every_sample_accounted(bench.merger().tallies());
    EXPECT_EQ(bench.written().size(), 17u);
}

// The output takes 4096 bytes, then fails: every sample is written whole,
// counted as not written, or both at once never.
TEST(RingMerger, OutputFailureMidMergeAccountsForEverySample)
{
    for (const size_t frame_len : {size_t{100}, size_t{PacketOutput::kReferMinLength + 88}}) {
        for (const bool packet_buffered : {false, true}) {
            SmallPipe pipe;
            MergeBench bench(5, 32768, {}, pipe.writer_path(), 1024, packet_buffered);
            FailAfter faults(4096, ENOSPC);
            bench.output().sink().inject_faults(&faults);
            size_t sent = 0;
            for (uint32_t seq = 0; seq < 12; ++seq)
                for (uint32_t ring = 0; ring < 5; ++ring, ++sent)
                    bench.send(ring, 1000 + seq * 5 + ring, frame_len);
            EXPECT_THROW(bench.merger().drain_everything(), Error);
            bench.merger().output_failed();
            bench.send(3, 9000, frame_len); // after the failure: counted, not written
            ++sent;
            bench.merger().drain_everything();

            const auto& tallies = bench.merger().tallies();
            const std::string where = "frame " + std::to_string(frame_len) + (packet_buffered ? " -U" : "");
            expect_every_sample_accounted(tallies);
            const RingTally total = sum(tallies);
            EXPECT_EQ(total.samples, sent) << where;
            EXPECT_GT(total.unwritten, 0u) << where;
            const auto packets = read_packets(pipe.contents());
            EXPECT_EQ(packets.size(), total.written) << where;
            EXPECT_GT(packets.size(), 0u) << where;
            for (uint32_t ring = 0; ring < 5; ++ring) {
                const auto here = std::count_if(packets.begin(), packets.end(),
                                                [&](const Packet& p) { return p.interface_id == ring; });
                EXPECT_EQ(static_cast<uint64_t>(here), tallies[ring].written) << where << " ring " << ring;
            }
            EXPECT_TRUE(std::is_sorted(packets.begin(), packets.end(), [](const Packet& a, const Packet& b) {
                return a.tstamp_ns < b.tstamp_ns;
            })) << where;
            for (size_t i = 0; i < 5; ++i)
                EXPECT_EQ(bench.ring(i).header()->data_tail, bench.ring(i).header()->data_head) << where;
        }
    }
}

TEST(RingMerger, OutputGoneCountsLaterSamplesAsNotWritten)
{
    MergeBench bench(2);
    bench.send(0, 10);
    bench.merger().output_gone();
    bench.send(1, 5);
    bench.merger().drain(0); // no hold-back once nothing is written
    EXPECT_EQ(bench.merger().tallies()[0].unwritten, 1u);
    EXPECT_EQ(bench.merger().tallies()[1].unwritten, 1u);
    EXPECT_TRUE(bench.written().empty());
}

// A simulated capture: CPUs stamp samples at most `in_flight` before they
// publish them, the loop drains at random moments, and the written stream is
// compared with what was sent.
TEST(RingMerger, RandomInterleavingsComeOutSortedAndComplete)
{
    std::mt19937_64 random(13);
    for (int round = 0; round < 300; ++round) {
        const size_t rings = 1 + random() % 64;
        // Most rounds respect the hold-back; some publish later than it allows.
        const bool some_late = round % 4 == 3;
        const uint64_t in_flight = some_late ? 3 * kHoldBackNs : kHoldBackNs / 2;
        MergeBench bench(rings, 8192);
        std::vector<Packet> sent;
        std::vector<uint64_t> last_stamp(rings, 0);
        std::vector<size_t> per_ring(rings, 0);
        uint64_t now = 1000 * kMs;
        const int steps = static_cast<int>(random() % 400);
        for (int step = 0; step < steps; ++step) {
            now += random() % (kHoldBackNs / 4);
            const auto ring = static_cast<uint32_t>(random() % rings);
            const uint64_t delay = random() % (in_flight + 1);
            // A CPU's samples are stamped in order; ties across CPUs happen.
            const uint64_t stamp = std::max(last_stamp[ring], (now - delay) / 1000 * 1000);
            last_stamp[ring] = stamp;
            if (++per_ring[ring] <= 60) // stay within the ring's room
                sent.push_back(bench.send(ring, stamp, 16 + random() % 64));
            if (random() % 8 == 0)
                bench.merger().drain(now);
        }
        bench.merger().drain_everything();

        const auto written = bench.written();
        const RingTally total = sum(bench.merger().tallies());
        ASSERT_EQ(written.size(), sent.size()) << "round " << round;
        EXPECT_EQ(sorted_by_time(written), sorted_by_time(sent)) << "round " << round;
        uint64_t newest = 0, late = 0;
        for (const Packet& p : written) {
            if (p.tstamp_ns < newest)
                ++late;
            newest = std::max(newest, p.tstamp_ns);
        }
        EXPECT_EQ(total.out_of_order, late) << "round " << round;
        if (!some_late) {
            EXPECT_EQ(written, sorted_by_time(sent)) << "round " << round << ", " << rings << " rings";
            EXPECT_EQ(late, 0u) << "round " << round;
        }
        expect_every_sample_accounted(bench.merger().tallies());
    }
}

namespace {

// Every block complete and consistent, except at most one cut short at the
// end; returns the number of complete packet blocks per interface.
std::vector<uint64_t> check_blocks(const Bytes& bytes, size_t interfaces, const std::string& where)
{
    std::vector<uint64_t> per_interface(interfaces);
    size_t offset = 0;
    while (offset < bytes.size()) {
        if (bytes.size() - offset < 12)
            break; // a cut block: must be the last thing
        uint32_t type, length, trailer, interface_id;
        std::memcpy(&type, bytes.data() + offset, 4);
        std::memcpy(&length, bytes.data() + offset + 4, 4);
        EXPECT_EQ(type, pcapng::kEpbType) << where << " at " << offset;
        EXPECT_TRUE(length >= 32 && length % 4 == 0) << where << " at " << offset;
        if (offset + length > bytes.size())
            break;
        std::memcpy(&trailer, bytes.data() + offset + length - 4, 4);
        std::memcpy(&interface_id, bytes.data() + offset + 8, 4);
        EXPECT_EQ(trailer, length) << where << " at " << offset;
        EXPECT_LT(interface_id, interfaces) << where;
        if (interface_id < interfaces)
            ++per_interface[interface_id];
        offset += length;
    }
    return per_interface;
}

// One fixed stream of records through a merger whose output fails in the
// given way; then what is left is drained as after a failure.
// `batched`: each ring's frames come as two batch records, stamped so that
// the merge takes four frames of a ring in a row, then another ring's; the
// buffer then fills in the middle of such a run.
void run_with_faults(WriteFaults& faults, bool packet_buffered, size_t frame_len, const std::string& where,
                     bool batched = false)
{
    MergeBench bench(3, 65536, {}, {}, batched ? 800 : 1024, packet_buffered);
    bench.output().sink().inject_faults(&faults);
    uint64_t sent = 0;
    if (batched) {
        for (uint32_t half = 0; half < 2; ++half) {
            for (uint32_t ring = 0; ring < 3; ++ring, sent += 4) {
                const uint64_t first = 1000 + half * 30 + ring * 10;
                bench.send_batch(ring, {first, first + 1, first + 2, first + 3}, frame_len + ring * 3);
            }
        }
    } else {
        for (uint32_t seq = 0; seq < 8; ++seq)
            for (uint32_t ring = 0; ring < 3; ++ring, ++sent)
                bench.send(ring, 1000 + seq * 3 + ring, frame_len + ring * 3);
    }
    bool failed = false;
    try {
        bench.merger().drain_everything();
        bench.output().flush();
    } catch (const Error&) {
        failed = true;
        bench.merger().output_failed();
    }
    // More samples after the failure, and a last flush: nothing may change
    // the accounting of what was already decided.
    for (uint32_t ring = 0; ring < 3; ++ring, ++sent)
        bench.send(ring, 9000 + ring, frame_len);
    try {
        bench.merger().drain_everything();
        bench.output().flush();
    } catch (const Error&) {
        failed = true;
        bench.merger().output_failed();
    }
    // As the capture loop does after a failure: the rings drained to empty.
    EXPECT_NO_THROW(bench.merger().drain_everything()) << where;
    const auto& tallies = bench.merger().tallies();
    expect_every_sample_accounted(tallies);
    EXPECT_EQ(sum(tallies).samples, sent) << where;
    const auto blocks = check_blocks(bench.file_bytes(), 3, where);
    for (size_t ring = 0; ring < 3; ++ring)
        EXPECT_EQ(blocks[ring], tallies[ring].written) << where << " ring " << ring;
    if (!failed) {
        EXPECT_EQ(sum(tallies).written, sent) << where;
    }
}

// Fails write number `nth` (0-based) with `err`; the ones before go through.
class FailNth : public WriteFaults {
public:
    FailNth(unsigned nth, int err) : nth_(nth), err_(err) {}
    ssize_t before_write(size_t n) override
    {
        if (calls_++ == nth_) {
            errno = err_;
            return -1;
        }
        return static_cast<ssize_t>(n);
    }
    unsigned calls() const { return calls_; }

private:
    unsigned nth_;
    int err_;
    unsigned calls_ = 0;
};

} // namespace

// Every byte at which the output can stop taking data, every way it can
// fail, written from the buffer and from the ring, with and without -U:
// each sample lands in exactly one column, "written" is exactly the whole
// packet blocks in the output, and only the last block may be cut.
TEST(OutputFaults, EveryFailurePointAndKindKeepsTheAccountingExact)
{
    for (const int err : {ENOSPC, EFBIG, EIO, EPIPE}) {
        for (const size_t frame_len : {size_t{60}, size_t{PacketOutput::kReferMinLength + 40}}) {
            for (const bool packet_buffered : {false, true}) {
                // Budget large enough for everything: the last one passes.
                for (size_t budget = 0; budget <= 26 * (frame_len + 80); budget += 4) {
                    FailAfter faults(budget, err);
                    run_with_faults(faults, packet_buffered, frame_len,
                                    "errno " + std::to_string(err) + " after " + std::to_string(budget) +
                                        " bytes, frame " + std::to_string(frame_len) +
                                        (packet_buffered ? " -U" : ""));
                }
                for (unsigned nth = 0; nth < 40; ++nth) {
                    FailNth faults(nth, err);
                    run_with_faults(faults, packet_buffered, frame_len,
                                    "errno " + std::to_string(err) + " on write " + std::to_string(nth) + ", frame " +
                                        std::to_string(frame_len) + (packet_buffered ? " -U" : ""));
                }
            }
        }
    }
}

// The same for frames that come in batches, which the merge writes several
// in a row without a flush between them: a failure at any byte still puts
// each frame in exactly one column.
TEST(OutputFaults, BatchedFramesKeepTheAccountingExact)
{
    for (const int err : {ENOSPC, EPIPE}) {
        for (const size_t frame_len : {size_t{60}, size_t{PacketOutput::kReferMinLength + 40}}) {
            for (size_t budget = 0; budget <= 26 * (frame_len + 80); budget += 8) {
                FailAfter faults(budget, err);
                run_with_faults(faults, false, frame_len,
                                "batched, errno " + std::to_string(err) + " after " + std::to_string(budget) +
                                    " bytes, frame " + std::to_string(frame_len),
                                true);
            }
            for (unsigned nth = 0; nth < 40; ++nth) {
                FailNth faults(nth, err);
                run_with_faults(faults, false, frame_len,
                                "batched, errno " + std::to_string(err) + " on write " + std::to_string(nth) +
                                    ", frame " + std::to_string(frame_len),
                                true);
            }
        }
    }
}

// EAGAIN (a non-blocking output that is full for a moment) is waited out,
// not reported: everything arrives.
TEST(OutputFaults, EagainIsWaitedFor)
{
    for (const bool packet_buffered : {false, true}) {
        EagainEveryOther faults;
        MergeBench bench(3, 65536, {}, {}, 1024, packet_buffered);
        bench.output().sink().inject_faults(&faults);
        std::vector<Packet> sent;
        for (uint32_t seq = 0; seq < 8; ++seq)
            for (uint32_t ring = 0; ring < 3; ++ring)
                sent.push_back(bench.send(ring, 1000 + seq * 3 + ring, 700));
        EXPECT_NO_THROW(bench.merger().drain_everything());
        EXPECT_EQ(bench.written(), sorted_by_time(sent));
        expect_every_sample_accounted(bench.merger().tallies());
    }
}

// Frames longer than one record: put together from their records, in
// their place in time; never written in part.

namespace {

constexpr size_t kLongRing = size_t{1} << 20;

} // namespace

TEST(LongFrames, WrittenWholeInTimeOrder)
{
    for (size_t len : {size_t{XDPCAP_MAX_SAMPLE_SIZE} + 1, size_t{130048}, size_t{200000}, size_t{XDPCAP_MAX_SNAPLEN}}) {
        MergeBench bench(2, kLongRing);
        std::vector<Packet> sent;
        sent.push_back(bench.send(1, 10 * kMs));
        sent.push_back(bench.send_long(0, 10 * kMs + 5, len));
        sent.push_back(bench.send(1, 10 * kMs + 7));
        sent.push_back(bench.send(0, 10 * kMs + 9));
        sent.push_back(bench.send_long(1, 10 * kMs + 11, len));
        bench.merger().drain_everything();
        const auto written = bench.written();
        ASSERT_EQ(written.size(), sent.size()) << len;
        EXPECT_TRUE(written == sorted_by_time(sent)) << len;
        const RingTally total = sum(bench.merger().tallies());
        EXPECT_EQ(total.written, 5u);
        for (const auto& t : bench.merger().tallies()) {
            EXPECT_EQ(t.samples, t.written);
            EXPECT_EQ(t.incomplete, 0u);
            EXPECT_EQ(t.stray_parts, 0u);
        }
    }
}

TEST(LongFrames, WaitForTheirLastPart)
{
    MergeBench bench(1, kLongRing);
    const Packet frame = bench.send_long(0, 10 * kMs, 200000, 2);
    bench.merger().drain(50 * kMs);
    EXPECT_TRUE(bench.written().empty()) << "a frame written before its last part";
    EXPECT_EQ(bench.merger().tallies()[0].samples, 0u);
    bench.push_rest(0);
    bench.merger().drain(50 * kMs);
    const auto written = bench.written();
    ASSERT_EQ(written.size(), 1u);
    EXPECT_TRUE(written[0] == frame);
    EXPECT_EQ(bench.merger().tallies()[0].incomplete, 0u);
}

TEST(LongFrames, AFrameMissingAPartIsDroppedNotWrittenInPart)
{
    MergeBench bench(1, kLongRing);
    // The kernel could not write the third record (ring full): the next
    // record is the next frame's.
    bench.send_long(0, 10 * kMs, 200000, 2);
    const Packet next = bench.send(0, 10 * kMs + 100);
    const Packet after = bench.send_long(0, 10 * kMs + 200, 70000);
    bench.merger().drain_everything();
    const auto written = bench.written();
    ASSERT_EQ(written.size(), 2u);
    EXPECT_TRUE(written[0] == next);
    EXPECT_TRUE(written[1] == after);
    const RingTally& t = bench.merger().tallies()[0];
    EXPECT_EQ(t.incomplete, 1u);
    EXPECT_EQ(t.samples, 2u); // what the kernel counts as sampled
    EXPECT_EQ(t.invalid, 0u);
}

TEST(LongFrames, AFrameFollowedByAnotherLongOneBeforeItsPartsIsDropped)
{
    MergeBench bench(1, kLongRing);
    bench.send_long(0, 10 * kMs, 200000, 1);
    const Packet second = bench.send_long(0, 10 * kMs + 100, 140000);
    bench.merger().drain_everything();
    const auto written = bench.written();
    ASSERT_EQ(written.size(), 1u);
    EXPECT_TRUE(written[0] == second);
    EXPECT_EQ(bench.merger().tallies()[0].incomplete, 1u);
}

TEST(LongFrames, PartsWithoutTheirFirstRecordAreDropped)
{
    MergeBench bench(1, kLongRing);
    // A frame's parts after a lost notice: their first record never came.
    const auto records = frame_records(frame_for(0, 9, 200000), 200000, 10 * kMs);
    bench.ring(0).push(lost_record(1));
    for (size_t i = 1; i < records.size(); ++i)
        bench.ring(0).push(records[i]);
    const Packet next = bench.send(0, 10 * kMs + 100);
    bench.merger().drain_everything();
    const auto written = bench.written();
    ASSERT_EQ(written.size(), 1u);
    EXPECT_TRUE(written[0] == next);
    EXPECT_EQ(bench.merger().tallies()[0].stray_parts, 3u);
    EXPECT_EQ(bench.merger().tallies()[0].lost_records, 1u);
}

TEST(LongFrames, APartOfAnotherFrameEndsTheOneInProgress)
{
    MergeBench bench(1, kLongRing);
    bench.send_long(0, 10 * kMs, 200000, 1);
    // A part stamped for another frame.
    bench.send_long(0, 10 * kMs + 50, 200000, 0);
    auto stray = frame_records(frame_for(0, 9, 200000), 200000, 10 * kMs + 50)[1];
    bench.ring(0).push(stray);
    const Packet next = bench.send(0, 10 * kMs + 100);
    bench.merger().drain_everything();
    const auto written = bench.written();
    ASSERT_EQ(written.size(), 1u);
    EXPECT_TRUE(written[0] == next);
    EXPECT_EQ(bench.merger().tallies()[0].incomplete, 1u);
    EXPECT_EQ(bench.merger().tallies()[0].stray_parts, 1u);
}

TEST(LongFrames, StillMissingPartsAtTheEndAreCountedAsNotWhole)
{
    MergeBench bench(2, kLongRing);
    bench.send_long(0, 10 * kMs, 200000, 3);
    const Packet other = bench.send(1, 10 * kMs + 1);
    bench.merger().drain_everything();
    const auto written = bench.written();
    ASSERT_EQ(written.size(), 1u);
    EXPECT_TRUE(written[0] == other);
    EXPECT_EQ(bench.merger().tallies()[0].incomplete, 1u);
    EXPECT_EQ(bench.merger().tallies()[0].samples, 0u);
}

TEST(LongFrames, RecordsThatWrapTheRingEnd)
{
    // Every record boundary of the frames lands somewhere else in the ring,
    // the ring end inside a part included.
    for (uint64_t start : {uint64_t{0}, uint64_t{kLongRing - 24}, uint64_t{kLongRing - 65024}, uint64_t{kLongRing - 130000},
                           uint64_t{kLongRing - 200000}}) {
        MergeBench bench(1, kLongRing);
        bench.start_rings_at(start);
        std::vector<Packet> sent;
        sent.push_back(bench.send_long(0, 10 * kMs, 262144));
        sent.push_back(bench.send(0, 10 * kMs + 1, 1500));
        sent.push_back(bench.send_long(0, 10 * kMs + 2, 100000));
        bench.merger().drain_everything();
        EXPECT_TRUE(bench.written() == sent) << start;
        EXPECT_EQ(bench.merger().tallies()[0].incomplete, 0u);
    }
}

TEST(LongFrames, LongerThanTheSnapshotLengthAreCounted)
{
    MergeBench bench(1, kLongRing); // the snapshot length is the largest by default
    bench.send_long(0, 10 * kMs, XDPCAP_MAX_SNAPLEN, SIZE_MAX, 400000);
    bench.send_long(0, 10 * kMs + 1, XDPCAP_MAX_SNAPLEN);
    bench.send(0, 10 * kMs + 2, 1500);
    bench.merger().drain_everything();
    const auto written = bench.written();
    ASSERT_EQ(written.size(), 3u);
    EXPECT_EQ(written[0].data.size(), XDPCAP_MAX_SNAPLEN);
    EXPECT_EQ(bench.merger().tallies()[0].cut, 1u);
}

TEST(RingMerger, BatchedFramesAreMergedAsFramesOfTheirOwn)
{
    MergeBench bench(2);
    std::vector<Packet> sent = bench.send_batch(0, {10 * kMs, 30 * kMs, 50 * kMs});
    sent.push_back(bench.send(1, 20 * kMs));
    sent.push_back(bench.send(1, 40 * kMs));
    const auto more = bench.send_batch(1, {45 * kMs, 60 * kMs});
    sent.insert(sent.end(), more.begin(), more.end());
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written(), sorted_by_time(sent));
    const RingTally total = sum(bench.merger().tallies());
    EXPECT_EQ(total.written, sent.size());
    EXPECT_EQ(total.samples, sent.size());
    EXPECT_EQ(total.out_of_order, 0u);
    expect_every_sample_accounted(bench.merger().tallies());
}

TEST(RingMerger, BatchHeldPartlyStaysInTheRingUntilItsLastFrame)
{
    MergeBench bench(2);
    const auto batch = bench.send_batch(0, {10 * kMs, 30 * kMs});
    const Packet between = bench.send(1, 20 * kMs);
    // Ring 1 then runs dry: the batch's second frame waits for the hold-back.
    bench.merger().drain(25 * kMs);
    EXPECT_EQ(bench.written(), (std::vector<Packet>{batch[0], between}));
    EXPECT_EQ(bench.merger().held(), 1u);
    const Packet later = bench.send(1, 40 * kMs);
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written(), (std::vector<Packet>{batch[0], between, batch[1], later}));
    expect_every_sample_accounted(bench.merger().tallies());
}

// The frames the merge writes in a row from a batch are byte for byte what
// the same frames give as records of their own: lengths around the copy's
// steps and the padding, a frame long enough to be referred to, and a batch
// that wraps the ring's end (taken from scratch, so copied).
TEST(RingMerger, BatchWrittenInARowIsItsFramesAsRecordsOfTheirOwn)
{
    const std::vector<size_t> lengths = {60, 9, 8, 17, 31, 32, 33, 64, 100, 600, 1500, 14, 2048, 15, 12};
    for (const uint64_t start : {uint64_t{0}, uint64_t{65536 - 1024}}) {
        MergeBench batched(1, 65536);
        MergeBench single(1, 65536);
        batched.start_rings_at(start);
        single.start_rings_at(start);
        std::vector<uint64_t> stamps;
        for (size_t i = 0; i < lengths.size(); ++i)
            stamps.push_back(10 * kMs + i * 1000);
        const std::vector<Packet> sent = batched.send_batch(0, stamps, lengths);
        for (size_t i = 0; i < lengths.size(); ++i)
            single.send(0, stamps[i], lengths[i]);
        batched.merger().drain_everything();
        single.merger().drain_everything();
        batched.output().flush();
        single.output().flush();
        EXPECT_EQ(batched.file_bytes(), single.file_bytes()) << "ring starting at " << start;
        EXPECT_EQ(batched.written(), sent);
        const RingTally& tally = batched.merger().tallies()[0];
        EXPECT_EQ(tally.samples, lengths.size());
        EXPECT_EQ(tally.written, lengths.size());
        EXPECT_EQ(batched.merger().written_by_interface()[0], lengths.size());
        EXPECT_EQ(batched.merger().held(), 0u);
    }
}

// A run of a batch's frames stops where the merge must take another ring's
// first, where the hold-back keeps the rest, and at -c's count.
TEST(RingMerger, BatchRunStopsForTheOtherRingsTheHoldBackAndTheCount)
{
    MergeBench bench(2);
    const auto first = bench.send_batch(0, {10 * kMs, 11 * kMs, 12 * kMs, 30 * kMs, 31 * kMs, 50 * kMs});
    const Packet between = bench.send(1, 20 * kMs);
    bench.merger().drain(40 * kMs); // ring 1 then runs dry: up to 39 ms may be written
    EXPECT_EQ(bench.written(), (std::vector<Packet>{first[0], first[1], first[2], between, first[3], first[4]}));
    EXPECT_EQ(bench.merger().held(), 1u);
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written().size(), 7u);
    expect_every_sample_accounted(bench.merger().tallies());

    RingMerger::Options count;
    count.count = 3;
    MergeBench counted(1, 4096, count);
    counted.send_batch(0, {10 * kMs, 11 * kMs, 12 * kMs, 13 * kMs, 14 * kMs});
    counted.merger().drain_everything();
    EXPECT_TRUE(counted.merger().count_reached());
    EXPECT_EQ(counted.written().size(), 3u);
    EXPECT_EQ(counted.merger().tallies()[0].written, 3u);
    EXPECT_EQ(counted.merger().tallies()[0].discarded, 2u);
    expect_every_sample_accounted(counted.merger().tallies());
}

TEST(RingMerger, RefusedBatchCountsEveryFrameItClaimed)
{
    MergeBench bench(1);
    auto record = test::batch_record({test::BatchFrame{frame_for(0, 0, 24), 24, 10}}, 3);
    bench.ring(0).push(record);
    const Packet after = bench.send(0, 20 * kMs);
    bench.merger().drain_everything();
    EXPECT_EQ(bench.written(), std::vector<Packet>{after});
    EXPECT_EQ(bench.merger().tallies()[0].invalid, 3u);
    EXPECT_EQ(bench.merger().tallies()[0].samples, 4u);
}

// -i any: every interface's frames in the same per-CPU rings, each written
// as, and counted on, its interface's place (interface k on ring r: k * 2 + r
// with two rings), also for an interface added between drains.
TEST(RingMerger, SharedRingsWriteAndCountEachFrameAtItsInterfacesPlace)
{
    MemFile file;
    std::vector<std::unique_ptr<FakeRing>> fakes;
    std::vector<PerfRingReader> readers;
    for (int i = 0; i < 2; ++i) {
        fakes.push_back(std::make_unique<FakeRing>(4096));
        readers.push_back(fakes.back()->reader());
    }
    PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, names_for(6));
    RingMerger merger(readers, output, ClockOffset{}, {});
    merger.add_sharing_interface(11);
    merger.add_sharing_interface(12);
    auto meta = [](uint32_t ifindex, uint64_t tstamp_ns) {
        return xdpcap_meta{XDPCAP_META_TAG, ifindex, 0, 24, 24, 0, tstamp_ns, XDPCAP_DIR_INGRESS,
                           XDPCAP_HOOK_TC_INGRESS, 0, 0, 0, 0, 0, 0};
    };
    auto frame = [&](uint32_t ifindex, uint64_t tstamp_ns, uint8_t fill) {
        return test::BatchFrame{Bytes(24, fill), 24, tstamp_ns, 0, {}, meta(ifindex, tstamp_ns)};
    };
    fakes[0]->push(test::batch_record({frame(11, 10 * kMs, 1), frame(12, 20 * kMs, 2)}));
    fakes[1]->push(test::batch_record({frame(12, 15 * kMs, 3)}));
    merger.drain_everything();
    merger.add_sharing_interface(13);
    fakes[1]->push(test::batch_record({frame(13, 30 * kMs, 4)}));
    const Bytes single(24, 5);
    fakes[0]->push(raw_sample_record(meta(11, 40 * kMs), single.data(), single.size()));
    merger.drain_everything();
    output.flush();

    const std::vector<Packet> written = read_packets(file.contents());
    std::vector<std::pair<uint32_t, uint8_t>> seen;
    for (const Packet& p : written)
        seen.emplace_back(p.interface_id, p.data.at(0));
    const std::vector<std::pair<uint32_t, uint8_t>> expected = {{0, 1}, {3, 3}, {2, 2}, {5, 4}, {0, 5}};
    EXPECT_EQ(seen, expected);
    const auto& tallies = merger.tallies();
    ASSERT_EQ(tallies.size(), 6u);
    const std::vector<uint64_t> per_place = {tallies[0].written, tallies[1].written, tallies[2].written,
                                             tallies[3].written, tallies[4].written, tallies[5].written};
    EXPECT_EQ(per_place, (std::vector<uint64_t>{2, 0, 1, 1, 0, 1}));
    EXPECT_EQ(merger.written_by_interface(), (std::vector<uint64_t>{2, 0, 1, 1, 0, 1}));
    expect_every_sample_accounted(tallies);
}
