// DNS: golden lines (each checked against tcpdump 4.99.3 -n of the same
// bytes), TCP's length prefix, -q, and the bound on a message's text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "decode_helpers.hpp"
#include "text/decode.hpp"

namespace {

using xdpcap::test::decode;
using xdpcap::test::from_hex;
using xdpcap::text::DecodeOptions;

const char* const kAnswer =
    "020000007102020000007101080045000069000140004011ae5bc6120001c6120002a05d00350055000012348180000100020000000003"
    "777777076578616d706c6503636f6d0000010001c00c000100010000012c0004c6336407c00c001c00010000012c001020010db8000000"
    "000000000000000007";
const char* const kCnameChain =
    "02000000710202000000710108004500007c000140004011ae48c6120001c6120002a05d00350068000012418180000100030000000003"
    "777777076578616d706c6503636f6d0000050001c00c000500010000012c001103776562076578616d706c65036e657400c02d00050001"
    "0000012c00060363646ec031c03f000100010000012c0004c6336409";
const char* const kRecordZoo =
    "02000000710202000000710108004500009a000140004011ae2ac6120001c6120002a05d00350086000012428180000100040000000003"
    "777777076578616d706c6503636f6d00000f0001c00c000f00010000012c0012000a026d78076578616d706c6503636f6d00c00c001000"
    "010000012c000e0568656c6c6f0006776f720164ffc00c002100010000012c000b0001000213c40373697000c00c000200010000012c00"
    "02c00c";
const char* const kMdnsQuery = "020000007102020000007101080045000038000140004011ae8cc6120001c612000214e914e900240000"
                               "00000000000100000000000004686f7374056c6f63616c0000018001";
const char* const kBadPointer = "020000007102020000007101080045000032000140004011ae92c6120001c6120002a05d0035001e0000"
                                "124f0100000100000000000003616263c02000010001";

TEST(TextDns, ResponsesQueriesAndMalformedNames)
{
    const auto answer = from_hex(kAnswer);
    EXPECT_EQ(decode(answer, answer.size()),
              "IP 198.18.0.1.41053 > 198.18.0.2.53: 4660 2/0/0 A 198.51.100.7, AAAA 2001:db8::7 (77)");
    const auto chain = from_hex(kCnameChain);
    EXPECT_EQ(decode(chain, chain.size()), "IP 198.18.0.1.41053 > 198.18.0.2.53: 4673 3/0/0 CNAME web.example.net., "
                                           "CNAME cdn.example.net., A 198.51.100.9 (96)");
    const auto zoo = from_hex(kRecordZoo);
    EXPECT_EQ(decode(zoo, zoo.size()),
              "IP 198.18.0.1.41053 > 198.18.0.2.53: 4674 4/0/0 MX mx.example.com. 10, TXT \"hello\" \"\" \"wor^AdM-^?\", "
              "SRV sip.:5060 1 2, NS www.example.com. (126)");
    const auto mdns = from_hex(kMdnsQuery);
    EXPECT_EQ(decode(mdns, mdns.size()), "IP 198.18.0.1.5353 > 198.18.0.2.5353: 0 A (QU)? host.local. (28)");
    const auto bad = from_hex(kBadPointer);
    EXPECT_EQ(decode(bad, bad.size()), "IP 198.18.0.1.41053 > 198.18.0.2.53: 4687+ A? abc.<BAD PTR> [|domain]");
}

TEST(TextDns, CutInsideARecord)
{
    const auto answer = from_hex(kAnswer);
    // The AAAA record's fixed part is captured, its address is not.
    EXPECT_EQ(decode(answer, answer.size() - 4),
              "IP 198.18.0.1.41053 > 198.18.0.2.53: 4660 2/0/0 A 198.51.100.7, AAAA [|domain]");
    // The header alone.
    EXPECT_EQ(decode(answer, 14 + 20 + 8 + 12), "IP 198.18.0.1.41053 > 198.18.0.2.53: 4660 [|domain]");
}

TEST(TextDns, QuickLooksAtNoPort)
{
    const auto answer = from_hex(kAnswer);
    DecodeOptions q;
    q.quick = true;
    EXPECT_EQ(decode(answer, answer.size(), q), "IP 198.18.0.1.41053 > 198.18.0.2.53: UDP, length 77");
}

// A response of 600 pointer-named CNAME answers, each printing a 255-byte
// name from two bytes: the line ends, cut, instead of growing past its
// bound.
TEST(TextDns, ManyLongNamesEndTheLine)
{
    std::vector<uint8_t> dns = from_hex("abcd81800001025800000000");
    std::vector<uint8_t> name;
    for (int i = 0; i < 4; ++i) {
        name.push_back(63);
        name.insert(name.end(), 63, 'n');
    }
    name.push_back(0);
    dns.insert(dns.end(), name.begin(), name.end());
    dns.insert(dns.end(), {0, 5, 0, 1});
    for (int i = 0; i < 600; ++i)
        dns.insert(dns.end(), {0xc0, 0x0c, 0, 5, 0, 1, 0, 0, 0, 0, 0, 2, 0xc0, 0x0c});
    const size_t udp_length = 8 + dns.size();
    std::vector<uint8_t> f = from_hex("02000000000202000000000108004500");
    f.insert(f.end(), {static_cast<uint8_t>((20 + udp_length) >> 8), static_cast<uint8_t>(20 + udp_length), 0, 1, 0,
                       0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2, 0x9c, 0x40, 0, 53,
                       static_cast<uint8_t>(udp_length >> 8), static_cast<uint8_t>(udp_length), 0, 0});
    f.insert(f.end(), dns.begin(), dns.end());
    const std::string line = decode(f, f.size());
    EXPECT_LT(line.size(), 8000u);
    EXPECT_TRUE(line.ends_with(" [|domain]")) << line.substr(line.size() - 100);
    EXPECT_NE(line.find("43981 600/0/0 CNAME nnn"), std::string::npos) << line.substr(0, 200);
}

} // namespace
