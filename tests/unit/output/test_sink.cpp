// Sink and PacketOutput: referred (gathered) bytes come out exactly as copied
// ones would, and a failed write accounts for every packet it held.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "output/packet_output.hpp"
#include "output/sink.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

Bytes frame_of(size_t len, uint8_t seed)
{
    Bytes frame(len);
    for (size_t i = 0; i < len; ++i)
        frame[i] = static_cast<uint8_t>(seed + i * 7);
    return frame;
}

Sample sample_of(const Bytes& frame, uint32_t orig_len)
{
    return Sample{2, 3, orig_len, static_cast<uint32_t>(frame.size()), 4, 0, XDPCAP_DIR_INGRESS, XDPCAP_HOOK_XDP, 0, 0, frame.data()};
}

void append_text(Sink& sink, const std::string& text)
{
    sink.append(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

} // namespace

TEST(Sink, ReferredBytesComeOutInOrderWithBufferedOnes)
{
    MemFile file;
    Sink sink = Sink::open_file(file.path());
    const std::string cdef = "CDEF", hi = "HI";
    append_text(sink, "AB");
    sink.reserve_around_reference(1);
    sink.refer(reinterpret_cast<const uint8_t*>(cdef.data()), cdef.size());
    append_text(sink, "G");
    sink.refer(reinterpret_cast<const uint8_t*>(hi.data()), hi.size());
    EXPECT_TRUE(sink.has_references());
    sink.flush();
    EXPECT_FALSE(sink.has_references());
    append_text(sink, "J");
    sink.flush();
    const Bytes expected = {'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J'};
    EXPECT_EQ(file.contents(), expected);
}

TEST(Sink, FlushesByItselfBeforeRunningOutOfSegments)
{
    MemFile file;
    Sink sink = Sink::open_file(file.path());
    const uint8_t referred = 'r';
    Bytes expected;
    for (size_t i = 0; i < 3 * Sink::kMaxSegments; ++i) {
        sink.reserve_around_reference(1);
        const uint8_t buffered = static_cast<uint8_t>('a' + i % 26);
        *sink.reserve(1) = buffered;
        sink.commit(1);
        sink.refer(&referred, 1);
        expected.push_back(buffered);
        expected.push_back(referred);
    }
    sink.flush();
    EXPECT_EQ(file.contents(), expected);
}

TEST(PacketOutput, BlockWrittenByReferenceEqualsCopiedBlock)
{
    for (size_t len : {size_t{512}, size_t{513}, size_t{1514}, size_t{9000}}) {
        const Bytes frame = frame_of(len, static_cast<uint8_t>(len));
        MemFile copied_file, referred_file;
        PacketOutput copied(Sink::open_file(copied_file.path()), PacketOutput::Format::Pcapng, false, {"a", "b"});
        PacketOutput referred(Sink::open_file(referred_file.path()), PacketOutput::Format::Pcapng, false, {"a", "b"});
        copied.write(1, sample_of(frame, 9999), 1'234'567'890'123, false);
        referred.write(1, sample_of(frame, 9999), 1'234'567'890'123, true);
        EXPECT_TRUE(referred.sink().has_references()) << len;
        EXPECT_FALSE(copied.sink().has_references()) << len;
        referred.release_references();
        copied.flush();
        EXPECT_EQ(referred_file.contents(), copied_file.contents()) << len;
        EXPECT_EQ(copied_file.contents().size(),
                  pcapng::enhanced_packet_size(static_cast<uint32_t>(len)) + pcapng::kEpbDropCountSize)
            << len << ": 4 lost before it";
    }
}

TEST(PacketOutput, ShortSamplesAreCopiedEvenWhenTheyStay)
{
    const Bytes frame = frame_of(PacketOutput::kReferMinLength - 1, 1);
    MemFile file;
    PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"a"});
    output.write(0, sample_of(frame, 60), 1, true);
    EXPECT_FALSE(output.sink().has_references());
}

// Each block is 28 + 1000 + 32 + 4 = 1064 bytes; an output that takes 4096
// bytes takes the first three whole and part of the fourth.
TEST(PacketOutput, FailedWriteCountsEveryPacketNotWrittenWhole)
{
    for (bool by_reference : {false, true}) {
        SmallPipe pipe;
        PacketOutput output(Sink::open_file(pipe.writer_path()), PacketOutput::Format::Pcapng, false, {"a", "b"});
        FailAfter faults(4096, ENOSPC);
        output.sink().inject_faults(&faults);
        const Bytes frame = frame_of(1000, 5);
        for (uint32_t i = 0; i < 10; ++i)
            output.write(i % 2, sample_of(frame, 1000), i, by_reference);
        EXPECT_THROW(output.flush(), Error);
        EXPECT_FALSE(output.sink().has_references());
        std::vector<uint32_t> lost;
        output.for_each_unwritten_packet([&](uint32_t interface_id) { lost.push_back(interface_id); });
        EXPECT_EQ(lost, (std::vector<uint32_t>{1, 0, 1, 0, 1, 0, 1})) << by_reference;
    }
}

TEST(PacketOutput, VanishedReaderLosesEveryPacketOfTheChunk)
{
    for (bool by_reference : {false, true}) {
        SmallPipe pipe;
        PacketOutput output(Sink::open_file(pipe.writer_path()), PacketOutput::Format::Pcapng, false, {"a"});
        pipe.close_reader();
        const Bytes frame = frame_of(700, 9);
        for (uint32_t i = 0; i < 5; ++i)
            output.write(0, sample_of(frame, 700), i, by_reference);
        // SIGPIPE is the default action for writes to a pipe without reader.
        struct sigaction ignore{}, old{};
        ignore.sa_handler = SIG_IGN;
        ::sigaction(SIGPIPE, &ignore, &old);
        EXPECT_THROW(output.flush(), OutputClosed);
        ::sigaction(SIGPIPE, &old, nullptr);
        size_t lost = 0;
        output.for_each_unwritten_packet([&](uint32_t) { ++lost; });
        EXPECT_EQ(lost, 5u) << by_reference;
    }
}

// Text lines: a line whose newline did not reach the output is lost, the
// others are not, whichever interface they came from.
TEST(PacketOutput, FailedTextWriteCountsEveryLineNotWrittenWhole)
{
    // An 802.3 frame with an LLC supervisory frame: one line each, nothing
    // dumped after it.
    Bytes frame = frame_of(60, 3);
    frame[12] = 0x05;
    frame[13] = 0xdc;
    frame[14] = frame[15] = 0x04;
    frame[16] = 0x01;
    frame[17] = 0x00;
    size_t line = 0;
    {
        MemFile file;
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"a@cpu0"});
        output.write(0, sample_of(frame, 60), 0);
        output.flush();
        const Bytes written = file.contents();
        ASSERT_EQ(std::count(written.begin(), written.end(), '\n'), 1);
        line = written.size();
    }
    for (size_t budget : {size_t{0}, size_t{10}, line - 1, line, size_t{200}, size_t{100000}}) {
        MemFile file;
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"a@cpu0", "b@cpu1"});
        FailAfter faults(budget, ENOSPC);
        output.sink().inject_faults(&faults);
        for (uint32_t i = 0; i < 6; ++i)
            output.write(i % 2, sample_of(frame, 60), 1'000'000'000ull * i);
        bool failed = false;
        try {
            output.flush();
        } catch (const Error&) {
            failed = true;
        }
        const Bytes written = file.contents();
        const auto whole_lines = static_cast<size_t>(std::count(written.begin(), written.end(), '\n'));
        std::vector<uint32_t> lost;
        if (failed)
            output.for_each_unwritten_packet([&](uint32_t interface_id) { lost.push_back(interface_id); });
        EXPECT_EQ(whole_lines + lost.size(), 6u) << budget;
        for (size_t i = 0; i < lost.size(); ++i)
            EXPECT_EQ(lost[i], (whole_lines + i) % 2) << budget;
        EXPECT_EQ(failed, whole_lines < 6) << budget;
    }
}

namespace {

std::string error_of_open(const std::string& path)
{
    try {
        (void)Sink::open_file(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "(opened)";
}

} // namespace

TEST(Sink, DoesNotFollowASymbolicLinkOthersCouldHavePlanted)
{
    TempDir dir;
    const std::string victim = dir / "victim";
    std::ofstream(victim) << "victim";
    const std::string link = dir / "out.pcapng";
    ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
    // A directory others may write: whoever made the link, it is not followed.
    ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
    EXPECT_EQ(error_of_open(link), "cannot write " + link + ": it is a symbolic link, which xdpcap does not follow");
    EXPECT_EQ(read_file(victim), Bytes({'v', 'i', 'c', 't', 'i', 'm'}));
    // One this process's user made in its own private directory is followed,
    // as /dev/stdout is.
    ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
    EXPECT_EQ(error_of_open(link), "(opened)");
    EXPECT_TRUE(trusted_symbolic_link(link));
}

TEST(Sink, RotationNeverFollowsASymbolicLink)
{
    TempDir dir;
    const std::string victim = dir / "victim";
    std::ofstream(victim) << "victim";
    const std::string next = dir / "out1";
    ASSERT_EQ(::symlink(victim.c_str(), next.c_str()), 0);
    Sink sink = Sink::open_file(dir / "out0");
    append_text(sink, "packets");
    sink.close();
    try {
        sink.reopen(next);
        ADD_FAILURE() << "the link was followed";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "cannot create " + next + ": it is a symbolic link, which xdpcap does not follow");
        EXPECT_EQ(e.exit_status(), kExitRuntime);
    }
    EXPECT_EQ(read_file(victim), Bytes({'v', 'i', 'c', 't', 'i', 'm'}));
}
