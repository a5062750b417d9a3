// File rotation (-C, -G, -W, -z): tcpdump's file names, case by case, and
// complete pcapng files with their own statistics across rotations.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "output/file_command.hpp"
#include "output/packet_output.hpp"
#include "output/rotation.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

constexpr uint64_t kSecond = 1'000'000'000;

// Local time is what strftime formats: the tests pin it to UTC.
class UtcTime {
public:
    UtcTime()
    {
        if (const char* tz = std::getenv("TZ"))
            saved_ = tz;
        ::setenv("TZ", "UTC", 1);
        ::tzset();
    }
    ~UtcTime()
    {
        if (saved_)
            ::setenv("TZ", saved_->c_str(), 1);
        else
            ::unsetenv("TZ");
        ::tzset();
    }

private:
    std::optional<std::string> saved_;
};

// 2026-11-23 12:00:00 UTC
constexpr time_t kNoon = 1795435200;

struct Step {
    uint64_t now_ns;
    uint64_t size;
};

// The names a plan goes through: its first, then one per step ("STOP" when
// -W's -G files are complete).
std::vector<std::string> names(const std::string& pattern, RotationSettings settings, time_t start,
                               const std::vector<Step>& steps)
{
    RotationPlan plan(pattern, settings, start);
    std::vector<std::string> out{plan.current()};
    for (const Step& step : steps)
        out.push_back(plan.advance(step.now_ns, step.size) == RotationPlan::Next::Stop ? "STOP" : plan.current());
    return out;
}

// Steps where only the size is over the limit.
std::vector<Step> full(size_t n, uint64_t start_ns = uint64_t{kNoon} * kSecond)
{
    return std::vector<Step>(n, Step{start_ns, 2'000'000});
}

} // namespace

TEST(RotationNames, PaddingWidthFollowsTheFileCount)
{
    EXPECT_EQ(file_number_width(1), 0);
    EXPECT_EQ(file_number_width(2), 1);
    EXPECT_EQ(file_number_width(10), 1);
    EXPECT_EQ(file_number_width(11), 2);
    EXPECT_EQ(file_number_width(100), 2);
    EXPECT_EQ(file_number_width(101), 3);
    EXPECT_EQ(file_number_width(0), 0);
}

// tcpdump -w foo -C 1: the first file has no number, then 1, 2, 3, ...
TEST(RotationNames, SizeAloneNumbersFromOneAfterAnUnnumberedFirstFile)
{
    EXPECT_EQ(names("foo", {1'000'000, {}, {}}, kNoon, full(3)),
              (std::vector<std::string>{"foo", "foo1", "foo2", "foo3"}));
}

// tcpdump -w foo -C 1 -W 3: foo0 foo1 foo2, then foo0 again.
TEST(RotationNames, SizeWithCountIsARingOfPaddedNames)
{
    EXPECT_EQ(names("foo", {1'000'000, {}, 3}, kNoon, full(5)),
              (std::vector<std::string>{"foo0", "foo1", "foo2", "foo0", "foo1", "foo2"}));
    EXPECT_EQ(names("cap.pcapng", {1'000'000, {}, 11}, kNoon, full(11)),
              (std::vector<std::string>{"cap.pcapng00", "cap.pcapng01", "cap.pcapng02", "cap.pcapng03",
                                        "cap.pcapng04", "cap.pcapng05", "cap.pcapng06", "cap.pcapng07",
                                        "cap.pcapng08", "cap.pcapng09", "cap.pcapng10", "cap.pcapng00"}));
    const auto hundred = names("f", {1'000'000, {}, 101}, kNoon, full(101));
    EXPECT_EQ(hundred.front(), "f000");
    EXPECT_EQ(hundred[100], "f100");
    EXPECT_EQ(hundred.back(), "f000");
}

// -W 1 leaves no digits and a single file, rewritten at every rotation.
TEST(RotationNames, OneFileRingReusesTheBareName)
{
    EXPECT_EQ(names("foo", {1'000'000, {}, 1}, kNoon, full(2)),
              (std::vector<std::string>{"foo", "foo", "foo"}));
}

TEST(RotationNames, SizeIsCheckedAsLargerThanTheLimit)
{
    RotationPlan plan("foo", {1000, {}, {}}, kNoon);
    EXPECT_EQ(plan.size_limit(), 1000u);
    EXPECT_EQ(plan.rotate_at_ns(), RotationPlan::kNever);
}

// tcpdump -G 60 -w %Y%m%d-%H%M%S.pcapng: strftime at the period's start,
// which is the time of the first packet after the period ran out.
TEST(RotationNames, TimeAloneFormatsThePatternAtEachPeriodStart)
{
    UtcTime utc;
    RotationPlan plan("%Y%m%d-%H%M%S.pcapng", {{}, 60, {}}, kNoon);
    EXPECT_EQ(plan.current(), "20261123-120000.pcapng");
    EXPECT_EQ(plan.size_limit(), RotationPlan::kNever);
    EXPECT_EQ(plan.rotate_at_ns(), (uint64_t{kNoon} + 60) * kSecond);
    EXPECT_EQ(plan.advance((uint64_t{kNoon} + 75) * kSecond + 500, 99'999'999), RotationPlan::Next::Open);
    EXPECT_EQ(plan.current(), "20261123-120115.pcapng");
    EXPECT_EQ(plan.rotate_at_ns(), (uint64_t{kNoon} + 135) * kSecond);
    EXPECT_EQ(plan.advance((uint64_t{kNoon} + 3600) * kSecond, 0), RotationPlan::Next::Open);
    EXPECT_EQ(plan.current(), "20261123-130000.pcapng");
    // Without a time format every file has the same name (and replaces the last).
    EXPECT_EQ(names("plain", {{}, 1, {}}, kNoon, {{(uint64_t{kNoon} + 1) * kSecond, 0}}),
              (std::vector<std::string>{"plain", "plain"}));
}

// tcpdump -G 1 -W 3: three files, and the capture ends when the third is due to close.
TEST(RotationNames, TimeWithCountStopsAfterThatManyFiles)
{
    UtcTime utc;
    const uint64_t t = uint64_t{kNoon} * kSecond;
    EXPECT_EQ(names("%H%M%S", {{}, 1, 3}, kNoon, {{t + kSecond, 0}, {t + 2 * kSecond, 0}, {t + 3 * kSecond, 0}}),
              (std::vector<std::string>{"120000", "120001", "120002", "STOP"}));
    EXPECT_EQ(names("%S", {{}, 1, 1}, kNoon, {{t + kSecond, 0}}), (std::vector<std::string>{"00", "STOP"}));
}

// tcpdump -G 60 -C 1 -w %H%M: numbered within each period (0 not shown
// without -W), numbering restarts with each period; -W only pads and wraps.
TEST(RotationNames, TimeAndSizeNumberWithinEachPeriod)
{
    UtcTime utc;
    const uint64_t t = uint64_t{kNoon} * kSecond;
    const std::vector<Step> steps = {{t + kSecond, 2'000'000}, {t + 2 * kSecond, 2'000'000},
                                     {t + 60 * kSecond, 0},    {t + 61 * kSecond, 2'000'000},
                                     {t + 62 * kSecond, 2'000'000}, {t + 63 * kSecond, 2'000'000}};
    EXPECT_EQ(names("%H%M", {1'000'000, 60, {}}, kNoon, steps),
              (std::vector<std::string>{"1200", "12001", "12002", "1201", "12011", "12012", "12013"}));
    EXPECT_EQ(names("%H%M", {1'000'000, 60, 3}, kNoon, steps),
              (std::vector<std::string>{"12000", "12001", "12002", "12010", "12011", "12012", "12010"}));
    // With both, -W never ends the capture.
    EXPECT_EQ(names("%H%M", {1'000'000, 60, 1}, kNoon, {{t + 60 * kSecond, 0}, {t + 120 * kSecond, 0}}),
              (std::vector<std::string>{"1200", "1201", "1202"}));
}

// A time boundary and a full file at once: one new file, named for the time.
TEST(RotationNames, TimeGoesBeforeSize)
{
    UtcTime utc;
    EXPECT_EQ(names("%M-", {1000, 60, 5}, kNoon, {{(uint64_t{kNoon} + 60) * kSecond, 5000}}),
              (std::vector<std::string>{"00-0", "01-0"}));
}

TEST(RotationNames, StrftimeOnlyWithTime)
{
    EXPECT_EQ(names("a%d", {1'000'000, {}, {}}, kNoon, full(1)), (std::vector<std::string>{"a%d", "a%d1"}));
}

TEST(RotationNames, EmptyOrOverlongNamesAreRefused)
{
    EXPECT_THROW(rotation_file_name("", false, kNoon, 0, 0), Error);
    EXPECT_THROW(rotation_file_name(std::string(5000, 'x'), true, kNoon, 0, 0), Error);
    EXPECT_THROW(rotation_file_name(std::string(5000, 'x'), false, kNoon, 1, 0), Error);
}

namespace {

struct Block {
    uint32_t type;
    Bytes body;
};

// Every block of a file; fails the test on a broken structure.
std::vector<Block> blocks_of(const Bytes& bytes)
{
    std::vector<Block> blocks;
    size_t offset = 0;
    while (offset < bytes.size()) {
        uint32_t type, length, trailer;
        EXPECT_LE(offset + 12, bytes.size());
        std::memcpy(&type, bytes.data() + offset, 4);
        std::memcpy(&length, bytes.data() + offset + 4, 4);
        EXPECT_TRUE(length >= 12 && length % 4 == 0 && offset + length <= bytes.size()) << offset;
        if (length < 12 || offset + length > bytes.size())
            break;
        std::memcpy(&trailer, bytes.data() + offset + length - 4, 4);
        EXPECT_EQ(trailer, length);
        blocks.push_back(Block{type, Bytes(bytes.begin() + offset + 8, bytes.begin() + offset + length - 4)});
        offset += length;
    }
    return blocks;
}

Sample sample_with(const Bytes& frame)
{
    return Sample{2, 0, static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(frame.size()),
                  0, 0, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_XDP, 0, 0, frame.data()};
}

Bytes numbered_frame(uint32_t seq)
{
    Bytes frame(600, static_cast<uint8_t>(seq));
    std::memcpy(frame.data(), &seq, 4);
    return frame;
}

// The statistics block each file gets: its packets, in isb_usrdeliv.
struct FileCounts {
    uint64_t delivered_total = 0;
    uint64_t delivered_at_open = 0;
    std::vector<pcapng::InterfaceStatistics> close()
    {
        pcapng::InterfaceStatistics isb;
        isb.user_delivered = delivered_total - delivered_at_open;
        delivered_at_open = delivered_total;
        return {isb};
    }
};

uint64_t usrdeliv(const Block& isb)
{
    // interface id, timestamp (12), then options: find code 8.
    for (size_t offset = 12; offset + 4 <= isb.body.size();) {
        uint16_t code, length;
        std::memcpy(&code, isb.body.data() + offset, 2);
        std::memcpy(&length, isb.body.data() + offset + 2, 2);
        if (code == 8) {
            uint64_t value;
            std::memcpy(&value, isb.body.data() + offset + 4, 8);
            return value;
        }
        if (code == 0)
            break;
        offset += 4 + pcapng::pad4(length);
    }
    ADD_FAILURE() << "no isb_usrdeliv";
    return 0;
}

struct FileSummary {
    std::vector<uint32_t> packets; // sequence numbers
    size_t shb = 0, idb = 0, isb = 0;
    uint64_t delivered = 0;
    bool header_first = false;
};

FileSummary summarize(const std::string& path)
{
    FileSummary s;
    const auto blocks = blocks_of(read_file(path));
    s.header_first = blocks.size() >= 3 && blocks[0].type == pcapng::kShbType && blocks[1].type == pcapng::kIdbType &&
        blocks[2].type == pcapng::kIdbType;
    for (const Block& b : blocks) {
        if (b.type == pcapng::kShbType)
            ++s.shb;
        else if (b.type == pcapng::kIdbType)
            ++s.idb;
        else if (b.type == pcapng::kIsbType) {
            ++s.isb;
            s.delivered = usrdeliv(b);
        } else if (b.type == pcapng::kEpbType) {
            uint32_t seq;
            std::memcpy(&seq, b.body.data() + 20, 4);
            s.packets.push_back(seq);
        }
    }
    return s;
}

std::vector<pcapng::InterfaceDescription> two_interfaces()
{
    pcapng::InterfaceDescription a, b;
    a.snaplen = b.snaplen = 1000;
    a.name = "x@cpu0";
    b.name = "x@cpu1";
    return {a, b};
}

} // namespace

// -C with -W 3: three complete files in a ring, each with the section
// header, both interfaces and its own statistics; the packets of the
// surviving files are the newest ones, none lost or doubled at a rotation.
TEST(Rotation, SizeRingKeepsCompleteFilesWithTheirOwnCounts)
{
    TempDir dir;
    RotationPlan plan(dir / "ring", {4000, {}, 3}, kNoon);
    FileCounts counts;
    PacketOutput output(Sink::open_file(plan.current()), PacketOutput::Format::Pcapng, false, {"x@cpu0", "x@cpu1"});
    output.rotate(std::move(plan), std::nullopt);
    output.on_file_end([&](uint32_t) { return counts.close(); });
    output.begin({}, two_interfaces());
    constexpr uint32_t kPackets = 40;
    for (uint32_t seq = 0; seq < kPackets; ++seq) {
        const Bytes frame = numbered_frame(seq);
        ASSERT_TRUE(output.write(seq % 2, sample_with(frame), uint64_t{kNoon} * kSecond + seq, seq % 3 == 0));
        output.release_references();
        ++counts.delivered_total;
    }
    output.finish(counts.close());
    EXPECT_FALSE(output.file_open());

    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
        files.push_back(entry.path().filename());
    std::sort(files.begin(), files.end());
    ASSERT_EQ(files, (std::vector<std::string>{"ring0", "ring1", "ring2"}));
    // Which file was written last: the one holding packet kPackets - 1.
    std::vector<FileSummary> summaries;
    for (const auto& name : files)
        summaries.push_back(summarize(dir / name));
    std::vector<uint32_t> all;
    size_t last = 0;
    for (size_t i = 0; i < 3; ++i) {
        const FileSummary& s = summaries[i];
        EXPECT_TRUE(s.header_first) << files[i];
        EXPECT_EQ(s.shb, 1u) << files[i];
        EXPECT_EQ(s.idb, 2u) << files[i];
        EXPECT_EQ(s.isb, 1u) << files[i];
        EXPECT_EQ(s.delivered, s.packets.size()) << files[i];
        EXPECT_FALSE(s.packets.empty()) << files[i];
        if (!s.packets.empty() && s.packets.back() == kPackets - 1)
            last = i;
    }
    // Oldest surviving file first: the one after the last written, in ring order.
    for (size_t k = 1; k <= 3; ++k) {
        const auto& p = summaries[(last + k) % 3].packets;
        all.insert(all.end(), p.begin(), p.end());
    }
    ASSERT_FALSE(all.empty());
    for (size_t i = 0; i < all.size(); ++i)
        EXPECT_EQ(all[i], kPackets - all.size() + i) << "a gapless tail of what was written";
    // A file is only closed once it is larger than the limit.
    for (size_t k = 1; k <= 2; ++k)
        EXPECT_GT(std::filesystem::file_size(dir / files[(last + k) % 3]), 4000u);
}

// -G with -W: the packet after the last file's time ran out is not written;
// the file is closed (with statistics) and no more are opened.
TEST(Rotation, TimeCountEndsWithTheLastFileClosed)
{
    UtcTime utc;
    TempDir dir;
    RotationPlan plan(dir / "t-%H%M%S", {{}, 1, 2}, kNoon);
    FileCounts counts;
    PacketOutput output(Sink::open_file(plan.current()), PacketOutput::Format::Pcapng, false, {"x@cpu0", "x@cpu1"});
    output.rotate(std::move(plan), std::nullopt);
    output.on_file_end([&](uint32_t) { return counts.close(); });
    output.begin({}, two_interfaces());
    const uint64_t t = uint64_t{kNoon} * kSecond;
    uint32_t seq = 0;
    for (uint64_t at : {t + 1, t + kSecond / 2, t + kSecond + 7, t + kSecond + 8}) {
        const Bytes frame = numbered_frame(seq++);
        ASSERT_TRUE(output.write(0, sample_with(frame), at));
        ++counts.delivered_total;
    }
    const Bytes late = numbered_frame(99);
    EXPECT_FALSE(output.write(0, sample_with(late), t + 2 * kSecond));
    EXPECT_TRUE(output.file_limit_reached());
    EXPECT_FALSE(output.file_open());
    EXPECT_FALSE(output.write(0, sample_with(late), t + 2 * kSecond + 1));
    output.finish(counts.close()); // nothing: the file is closed already
    const FileSummary first = summarize(dir / "t-120000"), second = summarize(dir / "t-120001");
    EXPECT_EQ(first.packets, (std::vector<uint32_t>{0, 1}));
    EXPECT_EQ(second.packets, (std::vector<uint32_t>{2, 3}));
    EXPECT_EQ(first.delivered, 2u);
    EXPECT_EQ(second.delivered, 2u);
    EXPECT_EQ(second.isb, 1u);
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 2);
}

// The next file cannot be created: an Error naming it, the closed file
// complete, nothing written any more.
TEST(Rotation, NextFileThatCannotBeCreatedStopsWithTheClosedOneIntact)
{
    TempDir dir;
    std::filesystem::create_directory(dir / "f1"); // the second file's name
    RotationPlan plan(dir / "f", {500, {}, {}}, kNoon);
    FileCounts counts;
    PacketOutput output(Sink::open_file(plan.current()), PacketOutput::Format::Pcapng, false, {"x@cpu0", "x@cpu1"});
    output.rotate(std::move(plan), std::nullopt);
    output.on_file_end([&](uint32_t) { return counts.close(); });
    output.begin({}, two_interfaces());
    const Bytes a = numbered_frame(0), b = numbered_frame(1);
    ASSERT_TRUE(output.write(0, sample_with(a), 1));
    ++counts.delivered_total;
    try {
        output.write(0, sample_with(b), 2);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(dir / "f1"), std::string::npos) << e.what();
        EXPECT_EQ(e.exit_status(), kExitRuntime);
    }
    EXPECT_EQ(output.accepted(), 1u);
    EXPECT_FALSE(output.file_open());
    const FileSummary first = summarize(dir / "f");
    EXPECT_EQ(first.packets, (std::vector<uint32_t>{0}));
    EXPECT_EQ(first.isb, 1u);
}

// A rotated file's statistics blocks: the counts since it was opened.
TEST(Rotation, FileStatisticsCountOnlyWhatCameAfterTheLastFile)
{
    pcapng::InterfaceStatistics a0, a1;
    a0.interface_id = 0;
    a0.if_received = 10;
    a0.filter_accepted = 8;
    a0.dropped = 2;
    a0.user_delivered = 6;
    a1.interface_id = 2;
    a1.if_received = 5;
    a1.filter_accepted = 5;
    a1.user_delivered = 5;
    pcapng::InterfaceStatistics b0 = a0, b1 = a1;
    b0.if_received = 25;
    b0.filter_accepted = 20;
    b0.dropped = 3;
    b0.user_delivered = 16;
    b0.end_ns = 77;
    const auto first = pcapng::statistics_since({a0, a1}, {});
    EXPECT_EQ(first[0].if_received, 10u);
    EXPECT_EQ(first[1].user_delivered, 5u);
    const auto second = pcapng::statistics_since({b0, b1}, {a0, a1});
    ASSERT_EQ(second.size(), 2u);
    EXPECT_EQ(second[0].interface_id, 0u);
    EXPECT_EQ(second[0].if_received, 15u);
    EXPECT_EQ(second[0].filter_accepted, 12u);
    EXPECT_EQ(second[0].dropped, 1u);
    EXPECT_EQ(second[0].user_delivered, 10u);
    EXPECT_EQ(second[0].end_ns, 77u);
    EXPECT_EQ(second[1].interface_id, 2u);
    EXPECT_EQ(second[1].if_received, 0u);
    EXPECT_EQ(second[1].user_delivered, 0u);
    // Consecutive files add up to the whole capture.
    EXPECT_EQ(first[0].user_delivered + second[0].user_delivered, b0.user_delivered);
    // A count taken back after a failed write never wraps around.
    pcapng::InterfaceStatistics c0 = b0;
    c0.user_delivered = 15;
    EXPECT_EQ(pcapng::statistics_since({c0, b1}, {b0, b1})[0].user_delivered, 0u);
}

namespace {

// Waits (a little) for the commands to finish and be collected.
bool reaped(FileCommand& command)
{
    for (int i = 0; i < 200 && command.running() > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        command.reap();
    }
    return command.running() == 0;
}

} // namespace

TEST(FileCommand, RunsTheCommandWithTheFileAndCollectsIt)
{
    TempDir dir;
    const std::string target = dir / "closed";
    FileCommand command("touch");
    command.run(target);
    EXPECT_TRUE(reaped(command));
    EXPECT_TRUE(std::filesystem::exists(target));
}

TEST(FileCommand, CommandThatCannotStartIsReportedAndForgotten)
{
    FileCommand command("/nonexistent/xdpcap-no-such-command");
    testing::internal::CaptureStderr();
    command.run("file");
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "xdpcap: cannot run /nonexistent/xdpcap-no-such-command on file: No such file or directory\n");
    EXPECT_EQ(command.running(), 0u);
}
