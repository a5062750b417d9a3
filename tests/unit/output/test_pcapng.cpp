// Golden bytes written by hand from the pcapng draft, little-endian host.
#include <gtest/gtest.h>

#include <bit>
#include <string>

#include "output/pcapng.hpp"

using namespace xdpcap;
using namespace std::string_literals;
using Bytes = std::vector<uint8_t>;

static_assert(std::endian::native == std::endian::little, "golden bytes are little-endian");

TEST(Pcapng, SectionHeaderWithPaddedOptions)
{
    Bytes out;
    pcapng::append_section_header(out, {"hw", "os1", ""});
    const Bytes expected = {
        0x0a, 0x0d, 0x0d, 0x0a, 0x30, 0x00, 0x00, 0x00,             // type, length 48
        0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00, 0x00, 0x00,             // magic, version 1.0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,             // section length -1
        0x02, 0x00, 0x02, 0x00, 'h',  'w',  0x00, 0x00,             // shb_hardware, padded
        0x03, 0x00, 0x03, 0x00, 'o',  's',  '1',  0x00,             // shb_os, padded
        0x00, 0x00, 0x00, 0x00,                                     // opt_endofopt
        0x30, 0x00, 0x00, 0x00,                                     // length again
    };
    EXPECT_EQ(out, expected);
}

TEST(Pcapng, InterfaceDescription)
{
    Bytes out;
    // Moved from std::string temporaries ("..."s), not assigned from literals:
    // GCC 12 at -O3 reports a false overlap (-Wrestrict) in the latter.
    pcapng::InterfaceDescription idb;
    idb.snaplen = 96;
    idb.name = "e@cpu1"s;
    idb.os = "L"s;
    pcapng::append_interface_description(out, idb);
    const Bytes expected = {
        0x01, 0x00, 0x00, 0x00, 0x34, 0x00, 0x00, 0x00, // type, length 52
        0x01, 0x00, 0x00, 0x00,                         // EN10MB, reserved
        0x60, 0x00, 0x00, 0x00,                         // snaplen 96
        0x02, 0x00, 0x06, 0x00, 'e',  '@',  'c',  'p',  'u', '1', 0x00, 0x00, // if_name
        0x09, 0x00, 0x01, 0x00, 0x09, 0x00, 0x00, 0x00, // if_tsresol = 9 (ns)
        0x0c, 0x00, 0x01, 0x00, 'L',  0x00, 0x00, 0x00, // if_os
        0x00, 0x00, 0x00, 0x00,                         // opt_endofopt
        0x34, 0x00, 0x00, 0x00,
    };
    EXPECT_EQ(out, expected);
}

TEST(Pcapng, InterfaceDescriptionWithAllOptions)
{
    Bytes out;
    pcapng::InterfaceDescription idb;
    idb.snaplen = 65024;
    idb.name = "eth0@cpu0"s;
    idb.description = "d"s;
    idb.filter = "tcp"s;
    idb.os = "Linux"s;
    idb.hardware = "pci"s;
    pcapng::append_interface_description(out, idb);
    const Bytes expected = {
        0x01, 0x00, 0x00, 0x00, 0x54, 0x00, 0x00, 0x00, // type, length 84
        0x01, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x00, 0x00, // EN10MB, snaplen 65024
        0x02, 0x00, 0x09, 0x00, 'e', 't', 'h', '0', '@', 'c', 'p', 'u', '0', 0x00, 0x00, 0x00, // if_name
        0x03, 0x00, 0x01, 0x00, 'd', 0x00, 0x00, 0x00,             // if_description
        0x09, 0x00, 0x01, 0x00, 0x09, 0x00, 0x00, 0x00,            // if_tsresol
        0x0b, 0x00, 0x04, 0x00, 0x00, 't', 'c', 'p',               // if_filter, libpcap string
        0x0c, 0x00, 0x05, 0x00, 'L', 'i', 'n', 'u', 'x', 0x00, 0x00, 0x00, // if_os
        0x0f, 0x00, 0x03, 0x00, 'p', 'c', 'i', 0x00,               // if_hardware
        0x00, 0x00, 0x00, 0x00,
        0x54, 0x00, 0x00, 0x00,
    };
    EXPECT_EQ(out, expected);
}

TEST(Pcapng, EnhancedPacketPadsDataAndCarriesOptions)
{
    const uint8_t data[] = {1, 2, 3, 4, 5};
    const pcapng::EnhancedPacket packet{1, 0x0000000100000002ull, 5, 60, 3, 7, data};
    ASSERT_EQ(pcapng::enhanced_packet_size(packet), pcapng::enhanced_packet_size(5) + pcapng::kEpbDropCountSize);
    Bytes out(pcapng::enhanced_packet_size(packet), 0xee);
    const size_t written = pcapng::write_enhanced_packet(out.data(), packet);
    const Bytes expected = {
        0x06, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, // type, length 72
        0x01, 0x00, 0x00, 0x00,                         // interface id
        0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, // timestamp high, low
        0x05, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x00, // caplen 5, origlen 60
        0x01, 0x02, 0x03, 0x04, 0x05, 0x00, 0x00, 0x00, // data, padded with zeros
        0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, // epb_flags: inbound
        0x06, 0x00, 0x04, 0x00, 0x03, 0x00, 0x00, 0x00, // epb_queue 3
        0x04, 0x00, 0x08, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // epb_dropcount 7
        0x00, 0x00, 0x00, 0x00,                         // opt_endofopt
        0x48, 0x00, 0x00, 0x00,
    };
    EXPECT_EQ(written, expected.size());
    EXPECT_EQ(out, expected);
}

TEST(Pcapng, EnhancedPacketCarriesOutboundDirection)
{
    const uint8_t data[] = {1, 2, 3, 4};
    Bytes out(pcapng::enhanced_packet_size(4), 0xee);
    pcapng::write_enhanced_packet(out.data(), {0, 0, 4, 4, 0, 0, data, pcapng::kDirectionOutbound});
    const Bytes flags = {0x02, 0x00, 0x04, 0x00, 0x02, 0x00, 0x00, 0x00}; // epb_flags: outbound
    EXPECT_EQ(Bytes(out.begin() + 32, out.begin() + 40), flags);
}

TEST(Pcapng, EnhancedPacketWithoutQueue)
{
    const uint8_t data[] = {1, 2, 3, 4};
    pcapng::EnhancedPacket packet{0, 0, 4, 4, 0, 0, data, pcapng::kDirectionInbound};
    packet.has_queue = false;
    ASSERT_EQ(pcapng::enhanced_packet_size(packet), 48u);
    ASSERT_EQ(pcapng::enhanced_packet_size(4, false, false), 48u);
    Bytes out(48, 0xee);
    EXPECT_EQ(pcapng::write_enhanced_packet(out.data(), packet), 48u);
    const Bytes options = {
        0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, // epb_flags: inbound
        0x00, 0x00, 0x00, 0x00,                         // opt_endofopt
        0x30, 0x00, 0x00, 0x00,                         // block length 48
    };
    EXPECT_EQ(Bytes(out.begin() + 32, out.end()), options);
}

TEST(Pcapng, EnhancedPacketCarriesHashCommentAndOffloadFlags)
{
    const uint8_t data[] = {1, 2, 3, 4};
    pcapng::EnhancedPacket packet{0, 0, 4, 4, 0, 0, data, pcapng::kDirectionOutbound};
    packet.flags = pcapng::kFlagChecksumNotReady | pcapng::kFlagSegmentationOffload;
    packet.has_hash = true;
    packet.hash_algorithm = pcapng::kHashToeplitz;
    packet.hash = 0x11223344;
    packet.comment = "RSS hash type L4_ANY"; // 20 bytes, no padding
    ASSERT_EQ(pcapng::enhanced_packet_size(packet), 56u + 12u + 24u);
    Bytes out(pcapng::enhanced_packet_size(packet), 0xee);
    EXPECT_EQ(pcapng::write_enhanced_packet(out.data(), packet), out.size());
    const Bytes flags = {0x02, 0x00, 0x04, 0x00, 0x02, 0x0a, 0x00, 0x00}; // outbound, bits 9 and 11
    EXPECT_EQ(Bytes(out.begin() + 32, out.begin() + 40), flags);
    Bytes tail = {
        0x03, 0x00, 0x05, 0x00,             // epb_hash, length 5
        0x05, 0x44, 0x33, 0x22, 0x11,       // Toeplitz, the hash
        0x00, 0x00, 0x00,                   // padding to 8
        0x01, 0x00, 0x14, 0x00,             // opt_comment, length 20
    };
    const std::string comment = "RSS hash type L4_ANY";
    tail.insert(tail.end(), comment.begin(), comment.end());
    for (uint8_t b : {0x00, 0x00, 0x00, 0x00, 0x5c, 0x00, 0x00, 0x00}) // opt_endofopt, length 92
        tail.push_back(b);
    EXPECT_EQ(Bytes(out.begin() + 48, out.end()), tail) << "no epb_dropcount: nothing lost before it";
    EXPECT_EQ(out[4], 92);

    // A comment whose length is not a multiple of four is padded with zeros.
    packet.has_hash = false;
    packet.comment = "abcde";
    Bytes odd(pcapng::enhanced_packet_size(packet), 0xee);
    ASSERT_EQ(odd.size(), 56u + 12u);
    pcapng::write_enhanced_packet(odd.data(), packet);
    const Bytes comment_option = {0x01, 0x00, 0x05, 0x00, 'a', 'b', 'c', 'd', 'e', 0x00, 0x00, 0x00};
    EXPECT_EQ(Bytes(odd.begin() + 48, odd.begin() + 60), comment_option);
}

TEST(Pcapng, EnhancedPacketSizeIsAlwaysMultipleOfFour)
{
    for (uint32_t len = 0; len < 16; ++len)
        EXPECT_EQ(pcapng::enhanced_packet_size(len) % 4, 0u) << len;
    EXPECT_EQ(pcapng::enhanced_packet_size(4), 56u);
}

TEST(Pcapng, InterfaceStatistics)
{
    Bytes out;
    pcapng::InterfaceStatistics isb;
    isb.interface_id = 0;
    isb.timestamp_ns = 0x0000000200000003ull;
    isb.start_ns = 0x0000000100000004ull;
    isb.end_ns = 0x0000000200000003ull;
    isb.if_received = 10;
    isb.dropped = 2;
    isb.user_delivered = 8;
    pcapng::append_interface_statistics(out, isb);
    const Bytes expected = {
        0x05, 0x00, 0x00, 0x00, 0x64, 0x00, 0x00, 0x00, // type, length 100
        0x00, 0x00, 0x00, 0x00,                         // interface id
        0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, // timestamp
        0x02, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, // isb_starttime
        0x03, 0x00, 0x08, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, // isb_endtime
        0x04, 0x00, 0x08, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // isb_ifrecv 10
        0x05, 0x00, 0x08, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // isb_ifdrop 2
        0x07, 0x00, 0x08, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // isb_osdrop 2
        0x08, 0x00, 0x08, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // isb_usrdeliv 8
        0x00, 0x00, 0x00, 0x00,
        0x64, 0x00, 0x00, 0x00,
    };
    EXPECT_EQ(out, expected);
}

TEST(Pcapng, InterfaceStatisticsWithFilterAccept)
{
    Bytes out;
    pcapng::InterfaceStatistics isb;
    isb.filter_accepted = 5;
    pcapng::append_interface_statistics(out, isb);
    ASSERT_EQ(out.size(), 100u + 12u);
    const Bytes filter_accept = {0x06, 0x00, 0x08, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    EXPECT_EQ(Bytes(out.begin() + 68, out.begin() + 80), filter_accept);
}

TEST(Pcapng, InterfaceStatisticsWithComment)
{
    Bytes out;
    pcapng::InterfaceStatistics isb;
    isb.comment = "9 skipped"; // 9 bytes, padded to 12
    pcapng::append_interface_statistics(out, isb);
    ASSERT_EQ(out.size(), 100u + 16u);
    const Bytes comment = {0x01, 0x00, 0x09, 0x00, '9', ' ', 's', 'k', 'i', 'p', 'p', 'e', 'd', 0, 0, 0};
    EXPECT_EQ(Bytes(out.begin() + 20, out.begin() + 36), comment);
    EXPECT_EQ(out[4], 116);
}

TEST(Pcapng, ExitRecordCarriesXdpVerdict)
{
    const uint8_t data[] = {1, 2, 3, 4};
    pcapng::EnhancedPacket packet{0, 0, 4, 4, 0, 0, data};
    packet.has_verdict = true;
    packet.verdict = 1; // XDP_DROP
    Bytes out(pcapng::enhanced_packet_size(4, true), 0xee);
    const size_t written = pcapng::write_enhanced_packet(out.data(), packet);
    EXPECT_EQ(written, 56u + 16u);
    const Bytes verdict = {
        0x07, 0x00, 0x09, 0x00,                         // epb_verdict, length 9
        0x02,                                           // type: Linux eBPF XDP
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // the action, u64
        0x00, 0x00, 0x00,                               // padding to 12
        0x00, 0x00, 0x00, 0x00,                         // opt_endofopt
        0x48, 0x00, 0x00, 0x00,                         // length 72
    };
    EXPECT_EQ(Bytes(out.begin() + 48, out.end()), verdict);
    EXPECT_EQ(out[4], 72);
}

// -k: epb_processid_threadid (8: u32 pid, u32 tid) and the process's comment.
TEST(Pcapng, EnhancedPacketCarriesProcess)
{
    const uint8_t data[] = {1, 2, 3, 4};
    pcapng::EnhancedPacket packet{0, 0, 4, 4, 0, 0, data};
    packet.has_process = true;
    packet.pid = 0x1234;
    packet.tid = 0x1240;
    packet.process_comment = "proc curl:4660";
    ASSERT_EQ(pcapng::enhanced_packet_size(packet), pcapng::enhanced_packet_size(4) + 12 + 4 + 16);
    Bytes out(pcapng::enhanced_packet_size(packet), 0xee);
    const size_t written = pcapng::write_enhanced_packet(out.data(), packet);
    const Bytes expected = {
        0x06, 0x00, 0x00, 0x00, 0x58, 0x00, 0x00, 0x00, // type, length 88
        0x00, 0x00, 0x00, 0x00,                         // interface id
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // timestamp
        0x04, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, // caplen, origlen
        0x01, 0x02, 0x03, 0x04,                         // data
        0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00, // epb_flags: inbound
        0x06, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, // epb_queue 0
        0x08, 0x00, 0x08, 0x00, 0x34, 0x12, 0x00, 0x00, 0x40, 0x12, 0x00, 0x00, // pid, tid
        0x01, 0x00, 0x0e, 0x00, 'p', 'r', 'o', 'c', ' ', 'c', 'u', 'r', 'l', ':', '4', '6', '6', '0', 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, // opt_endofopt
        0x58, 0x00, 0x00, 0x00,
    };
    EXPECT_EQ(written, expected.size());
    EXPECT_EQ(out, expected);
}
