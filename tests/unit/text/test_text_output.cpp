// PacketOutput's text lines: the prefix (number, time, interface,
// direction, verdict) before the decode, --print next to pcapng, and the
// accounting of packets whose text did not reach the output when a packet
// spans several lines (-X).
#include <gtest/gtest.h>

#include <linux/bpf.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "output/packet_output.hpp"
#include "output/sink.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

// 198.18.0.1.5000 > 198.18.0.2.7000 UDP with 8 bytes of data.
const Bytes kUdpFrame = [] {
    const char* hex = "0200000000020200000000010800450000240001000040110e0ec6120001c612000213881b580010"
                      "b3306162636465666768";
    Bytes bytes;
    for (const char* p = hex; p[0] && p[1]; p += 2)
        bytes.push_back(static_cast<uint8_t>(std::stoi(std::string(p, 2), nullptr, 16)));
    return bytes;
}();

Sample sample(uint8_t direction = XDPCAP_DIR_INGRESS, uint8_t hook = XDPCAP_HOOK_XDP, uint32_t verdict = 0)
{
    return Sample{2,         0,    static_cast<uint32_t>(kUdpFrame.size()), static_cast<uint32_t>(kUdpFrame.size()),
                  0,         0,    direction, hook, 0, verdict, kUdpFrame.data()};
}

std::string text_of(const Bytes& bytes)
{
    return std::string(bytes.begin(), bytes.end());
}

constexpr uint64_t kTime = 1'795'431'326'896'062'123ull; // 10:55:26.896062 UTC

class TextOutput : public ::testing::Test {
protected:
    void SetUp() override
    {
        ::setenv("TZ", "UTC", 1);
        ::tzset();
    }
};

// One interface: tcpdump's line, the decode after the time.
TEST_F(TextOutput, OneInterfaceHasNoPrefix)
{
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"eth0@cpu1", "eth0@cpu2"});
        output.write(0, sample(), kTime);
        output.write(1, sample(XDPCAP_DIR_EGRESS), kTime + 1000);
        output.write(1, sample(XDPCAP_DIR_INGRESS, XDPCAP_HOOK_FEXIT, XDP_DROP), kTime + 2000);
        output.flush();
    }
    EXPECT_EQ(text_of(file.contents()),
              "10:55:26.896062 IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n"
              "10:55:26.896063 IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n"
              "10:55:26.896064 XDP_DROP IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n");
}

// Several interfaces: tcpdump -i any's columns, the name in five, the
// direction in four.
TEST_F(TextOutput, SeveralInterfacesNameEachAsTcpdumpAny)
{
    MemFile file;
    {
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"lo@cpu0"});
        output.add_interface("veth-long-12@cpu0");
        output.write(0, sample(), kTime);
        output.write(1, sample(XDPCAP_DIR_EGRESS), kTime + 1000);
        output.write(1, sample(XDPCAP_DIR_INGRESS), kTime + 2000);
        output.flush();
    }
    EXPECT_EQ(text_of(file.contents()),
              "10:55:26.896062 lo    In  IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n"
              "10:55:26.896063 veth-long-12 Out IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n"
              "10:55:26.896064 veth-long-12 In  IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n");
}

// --print-cpu: the pcapng interface and the direction, then trace mode's
// verdict.
TEST_F(TextOutput, CpuPrefixThenDecode)
{
    MemFile file;
    {
        text::TextOptions options;
        options.cpu_prefix = true;
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false,
                            {"eth0@cpu1", "eth0@cpu1:exit"}, options);
        output.write(0, sample(), kTime);
        output.write(0, sample(XDPCAP_DIR_EGRESS), kTime + 1000);
        output.write(1, sample(XDPCAP_DIR_INGRESS, XDPCAP_HOOK_FEXIT, XDP_DROP), kTime + 2000);
        output.write(1, sample(XDPCAP_DIR_INGRESS, XDPCAP_HOOK_FEXIT, 77), kTime + 3000);
        output.flush();
    }
    EXPECT_EQ(text_of(file.contents()),
              "10:55:26.896062 eth0@cpu1 In IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n"
              "10:55:26.896063 eth0@cpu1 Out IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n"
              "10:55:26.896064 eth0@cpu1:exit In XDP_DROP IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n"
              "10:55:26.896065 eth0@cpu1:exit In verdict 77 IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n");
}

// --drops: "Drop REASON" after the direction, and the reason with the
// dropping code in the pcapng comment.
TEST_F(TextOutput, DropsShowTheKernelsReason)
{
    DropLabels labels({{3, "NO_SOCKET"}}, KernelSymbols::parse("ffffffff81a3c010 t __udp4_lib_rcv\n"));
    Sample drop = sample(XDPCAP_DIR_INGRESS, XDPCAP_HOOK_DROP, 3);
    drop.location = 0xffffffff81a3c4bc;
    MemFile text;
    {
        PacketOutput output(Sink::open_file(text.path()), PacketOutput::Format::Text, false, {"eth0@cpu1:drop"});
        output.set_drop_labels(&labels);
        output.write(0, drop, kTime);
        drop.verdict = 9;
        output.write(0, drop, kTime + 1000);
        output.flush();
    }
    EXPECT_EQ(text_of(text.contents()),
              "10:55:26.896062 Drop NO_SOCKET IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n"
              "10:55:26.896063 Drop reason 9 IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n");
    const auto counted = labels.by_frequency();
    ASSERT_EQ(counted.size(), 2u);
    EXPECT_EQ(counted[0].second + counted[1].second, 2u);

    MemFile blocks;
    {
        PacketOutput output(Sink::open_file(blocks.path()), PacketOutput::Format::Pcapng, false, {"eth0@cpu1:drop"});
        output.set_drop_labels(&labels);
        drop.verdict = 3;
        output.write(0, drop, kTime);
        output.flush();
    }
    const std::string bytes = text_of(blocks.contents());
    EXPECT_NE(bytes.find("drop reason NO_SOCKET at __udp4_lib_rcv+0x4ac"), std::string::npos);
}

// --print-cpu -e: the hash before the link-level header; -e alone is
// tcpdump's line.
TEST_F(TextOutput, LinkHeaderShowsTheHashWithCpuPrefix)
{
    for (const bool cpu_prefix : {false, true}) {
        MemFile file;
        {
            text::TextOptions options;
            options.decode.link_header = true;
            options.cpu_prefix = cpu_prefix;
            PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"eth0@cpu1"}, options);
            Sample received = sample();
            received.flags = XDPCAP_FLAG_HASH;
            received.hash = 0x5e2a9c31;
            received.hash_type = 0x19; // XDP_RSS_TYPE_L4_IPV4_TCP
            output.write(0, received, kTime);
            Sample sent = sample(XDPCAP_DIR_EGRESS);
            sent.flags = XDPCAP_FLAG_HASH;
            sent.hash = 0xa;
            output.write(0, sent, kTime);
            output.write(0, sample(), kTime); // no hash
            output.flush();
        }
        const std::string rest = "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype IPv4 (0x0800), length 50: "
                                 "198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n";
        if (cpu_prefix)
            EXPECT_EQ(text_of(file.contents()),
                      "10:55:26.896062 eth0@cpu1 In hash 0x5e2a9c31/L4_IPV4_TCP " + rest +
                          "10:55:26.896062 eth0@cpu1 Out hash 0x0000000a " + rest + "10:55:26.896062 eth0@cpu1 In " + rest);
        else
            EXPECT_EQ(text_of(file.contents()), "10:55:26.896062 " + rest + "10:55:26.896062 " + rest + "10:55:26.896062 " + rest);
    }
}

TEST_F(TextOutput, PcapngRecordsHashTypeAndOffloadFlags)
{
    for (const bool verbose : {false, true}) {
        MemFile file;
        {
            PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Pcapng, false, {"eth0@cpu0", "eth1@cpu0"});
            output.set_interface_traits({{pcapng::kHashToeplitz}, {pcapng::kHashUnregistered}});
            output.write_hash_types(verbose);
            Sample received = sample();
            received.flags = XDPCAP_FLAG_HASH;
            received.hash = 1;
            received.hash_type = 0x2a; // XDP_RSS_TYPE_L4_IPV6_UDP
            output.write(0, received, kTime);
            Sample sent = sample(XDPCAP_DIR_EGRESS);
            sent.flags = XDPCAP_FLAG_HASH | XDPCAP_FLAG_CSUM_PARTIAL | XDPCAP_FLAG_GSO;
            sent.hash = 2;
            output.write(0, sent, kTime);
            output.write(1, received, kTime);
            output.flush();
        }
        const Bytes bytes = file.contents();
        std::vector<std::pair<uint32_t, Bytes>> tails; // epb_flags, then the options after epb_queue
        for (size_t at = 0; at + 8 <= bytes.size();) {
            uint32_t type, length;
            std::memcpy(&type, &bytes[at], 4);
            std::memcpy(&length, &bytes[at + 4], 4);
            if (type == pcapng::kEpbType) {
                uint32_t caplen, flags;
                std::memcpy(&caplen, &bytes[at + 20], 4);
                const size_t options = at + 28 + pcapng::pad4(caplen);
                std::memcpy(&flags, &bytes[options + 4], 4);
                tails.emplace_back(flags, Bytes(bytes.begin() + static_cast<long>(options + 16),
                                                bytes.begin() + static_cast<long>(at + length - 8)));
            }
            at += length;
        }
        ASSERT_EQ(tails.size(), 3u);
        const auto hash_then_comment = [](uint8_t algorithm, uint8_t hash, const std::string& comment) {
            Bytes b = {0x03, 0x00, 0x05, 0x00, algorithm, hash, 0, 0, 0, 0, 0, 0};
            if (!comment.empty()) {
                std::string option = std::string("\x01\x00", 2) + static_cast<char>(comment.size()) + '\0' + comment;
                option.resize(pcapng::pad4(option.size()), '\0');
                for (char c : option)
                    b.push_back(static_cast<uint8_t>(c));
            }
            return b;
        };
        // -v: the received packets' RSS hash type in a comment; never on sent ones.
        const std::string type = verbose ? "RSS hash type L4_IPV6_UDP" : "";
        EXPECT_EQ(tails[0].first, 1u);
        EXPECT_EQ(tails[0].second, hash_then_comment(5, 1, type)) << verbose;
        EXPECT_EQ(tails[1].first, 2u | (1u << 9) | (1u << 11));
        EXPECT_EQ(tails[1].second, hash_then_comment(255, 2, "")) << "sent: the skb's hash, no NIC type";
        EXPECT_EQ(tails[2].second, hash_then_comment(255, 1, type))
            << "the algorithm of the interface the frame arrived on";
    }
}

TEST_F(TextOutput, NumbersTimestampsAndQuickOutput)
{
    MemFile file;
    {
        text::TextOptions options;
        options.number = true;
        options.time = text::TimeFormat::Epoch;
        options.nanoseconds = true;
        options.decode.quick = true;
        options.decode.link_header = true;
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"e@cpu0"}, options);
        for (int i = 0; i < 11; ++i)
            output.write(0, sample(), kTime);
        output.flush();
    }
    const std::string text = text_of(file.contents());
    const std::string line = " 1795431326.896062123 02:00:00:00:00:01 > 02:00:00:00:00:02, IPv4, length 50: "
                             "198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n";
    EXPECT_EQ(text.substr(0, line.size() + 6), "    1 " + line);
    EXPECT_NE(text.find("\n   10 " + line), std::string::npos) << text;
    EXPECT_NE(text.find("\n   11 " + line), std::string::npos) << text;
}

// With -X a packet is several lines: a packet is lost unless all of its
// text reached the output.
TEST_F(TextOutput, FailedWriteCountsPacketsNotLines)
{
    text::TextOptions options;
    options.decode.hex_ascii = 2;
    size_t packet_bytes = 0;
    {
        MemFile file;
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"a@cpu0"}, options);
        output.write(0, sample(), kTime);
        output.flush();
        const Bytes one = file.contents();
        packet_bytes = one.size();
        ASSERT_GT(std::count(one.begin(), one.end(), '\n'), 3);
    }
    for (size_t budget : {size_t{0}, size_t{10}, packet_bytes - 1, packet_bytes, packet_bytes + 40,
                          3 * packet_bytes - 1, 3 * packet_bytes, size_t{100000}}) {
        MemFile file;
        PacketOutput output(Sink::open_file(file.path()), PacketOutput::Format::Text, false, {"a@cpu0", "a@cpu1"},
                            options);
        FailAfter faults(budget, ENOSPC);
        output.sink().inject_faults(&faults);
        for (uint32_t i = 0; i < 4; ++i)
            output.write(i % 2, sample(), kTime);
        bool failed = false;
        try {
            output.flush();
        } catch (const Error&) {
            failed = true;
        }
        const size_t whole_packets = file.contents().size() / packet_bytes;
        std::vector<uint32_t> lost;
        if (failed)
            output.for_each_unwritten_packet([&](uint32_t interface_id) { lost.push_back(interface_id); });
        EXPECT_EQ(whole_packets + lost.size(), 4u) << budget;
        for (size_t i = 0; i < lost.size(); ++i)
            EXPECT_EQ(lost[i], (whole_packets + i) % 2) << budget;
        EXPECT_EQ(failed, whole_packets < 4) << budget;
    }
}

// --print: the pcapng output gets its blocks, the second sink the lines.
TEST_F(TextOutput, PrintNextToPcapng)
{
    MemFile pcapng_file, text_file;
    {
        PacketOutput output(Sink::open_file(pcapng_file.path()), PacketOutput::Format::Pcapng, false, {"a@cpu0"}, {},
                            Sink::open_file(text_file.path()));
        pcapng::SectionHeader shb{"hw", "os", "app"};
        pcapng::InterfaceDescription idb;
        idb.name = "a@cpu0";
        output.begin(shb, {idb});
        output.write(0, sample(), kTime);
        output.write(0, sample(), kTime);
        output.finish({});
    }
    const Bytes blocks = pcapng_file.contents();
    ASSERT_GE(blocks.size(), 4u);
    EXPECT_EQ(blocks[0], 0x0a); // a section header block first
    size_t packets = 0;
    for (size_t offset = 0; offset + 8 <= blocks.size();) {
        uint32_t type, length;
        std::memcpy(&type, &blocks[offset], 4);
        std::memcpy(&length, &blocks[offset + 4], 4);
        ASSERT_GE(length, 12u);
        packets += type == pcapng::kEpbType;
        offset += length;
    }
    EXPECT_EQ(packets, 2u);
    const std::string line = "10:55:26.896062 IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n";
    EXPECT_EQ(text_of(text_file.contents()), line + line);
}

// -l: each line reaches the output as write() returns; without it, lines
// wait for the batch. With --print, -l is for the lines, not the file.
TEST_F(TextOutput, LineBufferedWritesEachLineAtOnce)
{
    const std::string line = "10:55:26.896062 IP 198.18.0.1.5000 > 198.18.0.2.7000: UDP, length 8\n";
    for (bool line_buffered : {false, true}) {
        SmallPipe pipe;
        text::TextOptions options;
        options.line_buffered = line_buffered;
        PacketOutput output(Sink::open_file(pipe.writer_path()), PacketOutput::Format::Text, false, {"a@cpu0"},
                            options);
        output.write(0, sample(), kTime);
        EXPECT_EQ(text_of(pipe.contents()), line_buffered ? line : "") << line_buffered;
        output.write(0, sample(), kTime);
        output.end_batch();
        EXPECT_EQ(text_of(pipe.contents()), line_buffered ? line : line + line) << line_buffered;
    }
    MemFile pcapng_file;
    SmallPipe lines;
    text::TextOptions options;
    options.line_buffered = true;
    PacketOutput output(Sink::open_file(pcapng_file.path()), PacketOutput::Format::Pcapng, false, {"a@cpu0"}, options,
                        Sink::open_file(lines.writer_path()));
    output.write(0, sample(), kTime);
    EXPECT_EQ(text_of(lines.contents()), line);
    EXPECT_EQ(pcapng_file.contents().size(), 0u); // the file waits for its batch
}

size_t packet_blocks(const Bytes& blocks)
{
    size_t packets = 0;
    for (size_t offset = 0; offset + 8 <= blocks.size();) {
        uint32_t type, length;
        std::memcpy(&type, &blocks[offset], 4);
        std::memcpy(&length, &blocks[offset + 4], 4);
        if (length < 12)
            break;
        packets += type == pcapng::kEpbType;
        offset += length;
    }
    return packets;
}

// --print's lines failing (reader gone, disk full) stop the lines only: the
// file still gets every packet, and a failure other than a vanished reader
// is kept to be reported.
TEST_F(TextOutput, PrintFailureLeavesThePcapngAlone)
{
    struct sigaction ignore{}, old{};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old);
    for (bool reader_gone : {true, false}) {
        MemFile pcapng_file;
        SmallPipe pipe;
        pipe.close_reader();
        {
            PacketOutput output(Sink::open_file(pcapng_file.path()), PacketOutput::Format::Pcapng, true, {"a@cpu0"},
                                {}, reader_gone ? Sink::open_file(pipe.writer_path()) : Sink::open_file("/dev/full"));
            output.begin(pcapng::SectionHeader{"hw", "os", "app"}, {pcapng::InterfaceDescription{}});
            for (int i = 0; i < 3; ++i)
                EXPECT_NO_THROW(output.write(0, sample(), kTime)) << reader_gone;
            EXPECT_NO_THROW(output.end_batch());
            output.finish({});
            if (reader_gone)
                EXPECT_EQ(output.print_failure(), "");
            else
                EXPECT_NE(output.print_failure().find("No space left on device"), std::string::npos)
                    << output.print_failure();
        }
        EXPECT_EQ(packet_blocks(pcapng_file.contents()), 3u) << reader_gone;
    }
    ::sigaction(SIGPIPE, &old, nullptr);
}

} // namespace
