// -v, -vv and -vvv: golden lines (each checked against tcpdump 4.99.3 -n of
// the same bytes), the Internet checksum, and what a packet sent with
// checksum offload shows instead of tcpdump's false error.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "decode_helpers.hpp"
#include "text/decode.hpp"
#include "text/layers.hpp"

namespace {

using xdpcap::test::decode;
using xdpcap::test::from_hex;
using xdpcap::text::DecodeOptions;
using xdpcap::text::detail::checksum_should_be;
using xdpcap::text::detail::InternetChecksum;

const char* const kRecordRoute = "02000000710202000000710108004800002c4242400040119b2dc6124901c6124902070b08c6124903c612"
                                 "490400a02815b3000c670b61626364";
const char* const kTimestamps = "02000000710202000000710108004a000034424240004011658fc6124901c612490244140d31c6124903"
                                "0000004dc612490400000000a02815b3000c670b61626364";
// A SYN whose checksum field holds only the pseudo-header's sum, as a NIC
// with checksum offload receives it.
const char* const kPartialSyn = "02000000710202000000710108004500003c424240004006da51c6124901c6124902a0280050000003e8"
                                "00000000a002faf01c460000020405b40402080a7422c7ce0000000001030307";
const char* const kUdp = "020000007102020000007101080045000020424240004011da62c6124901c6124902a02815b3000c670b61626364";
const char* const kPortUnreachable = "020000007102020000007101080045000040424240004001da52c6124901c612490203031b49000000"
                                     "0045000024424240004011da5cc6124902c6124903a02800350010afb06162636465666768";
const char* const kNeighborSolicitation =
    "02000000710202000000710186dd6000000000203a4020010db800730000000000000000000120010db800730000000000000000000287"
    "0078180000000020010db80073000000000000000000030101020000007301";
const char* const kLldp = "0180c200000e02000000740188cc02070402000000740104050565746830060200780a076c6561662d3037"
                          "0000";
const char* const kReset = "020000007102020000007101080045000030424240004006da5dc6124901c6124902a0280050000003e900001389"
                           "5014faf06c0800006e6f20726f757465";

DecodeOptions verbose(uint8_t level)
{
    DecodeOptions o;
    o.verbose = level;
    return o;
}

std::string decode_hex(const char* hex, const DecodeOptions& o)
{
    const auto f = from_hex(hex);
    return decode(f, f.size(), o);
}

TEST(TextVerbose, IpOptions)
{
    EXPECT_EQ(decode_hex(kRecordRoute, verbose(1)),
              "IP (tos 0x0, ttl 64, id 16962, offset 0, flags [DF], proto UDP (17), length 44, options (RR "
              "198.18.73.3, 198.18.73.4,EOL))\n    198.18.73.1.41000 > 198.18.73.2.5555: UDP, length 4");
    EXPECT_EQ(decode_hex(kTimestamps, verbose(1)),
              "IP (tos 0x0, ttl 64, id 16962, offset 0, flags [DF], proto UDP (17), length 52, options (timestamp "
              "TS{TS+ADDR 77@198.18.73.3 ^ 0@198.18.73.4 [3 hops not recorded]} ))\n"
              "    198.18.73.1.41000 > 198.18.73.2.5555: UDP, length 4");
}

TEST(TextVerbose, UdpOverIpv4IsCheckedFromVv)
{
    EXPECT_EQ(decode_hex(kUdp, verbose(1)), "IP (tos 0x0, ttl 64, id 16962, offset 0, flags [DF], proto UDP (17), "
                                            "length 32)\n    198.18.73.1.41000 > 198.18.73.2.5555: UDP, length 4");
    EXPECT_EQ(decode_hex(kUdp, verbose(2)),
              "IP (tos 0x0, ttl 64, id 16962, offset 0, flags [DF], proto UDP (17), length 32)\n"
              "    198.18.73.1.41000 > 198.18.73.2.5555: [udp sum ok] UDP, length 4");
    // Without -v nothing of it.
    EXPECT_EQ(decode_hex(kUdp, verbose(0)), "IP 198.18.73.1.41000 > 198.18.73.2.5555: UDP, length 4");
}

TEST(TextVerbose, OffloadedChecksumIsNoError)
{
    const std::string wrong = decode_hex(kPartialSyn, verbose(1));
    EXPECT_EQ(wrong, "IP (tos 0x0, ttl 64, id 16962, offset 0, flags [DF], proto TCP (6), length 60)\n"
                     "    198.18.73.1.41000 > 198.18.73.2.80: Flags [S], cksum 0x1c46 (incorrect -> 0x4e95), seq "
                     "1000, win 64240, options [mss 1460,sackOK,TS val 1948436430 ecr 0,nop,wscale 7], length 0");
    DecodeOptions sent = verbose(1);
    sent.checksum_not_ready = true;
    std::string offloaded = wrong;
    offloaded.replace(offloaded.find("(incorrect -> 0x4e95)"), 21, "(offloaded)");
    EXPECT_EQ(decode_hex(kPartialSyn, sent), offloaded);
    // A right sum stays right, flag or not.
    EXPECT_NE(decode_hex(kReset, sent).find("cksum 0x6c08 (correct)"), std::string::npos);
}

TEST(TextVerbose, IcmpErrorQuotesItsPacket)
{
    EXPECT_EQ(decode_hex(kPortUnreachable, verbose(2)),
              "IP (tos 0x0, ttl 64, id 16962, offset 0, flags [DF], proto ICMP (1), length 64)\n"
              "    198.18.73.1 > 198.18.73.2: ICMP 198.18.73.3 udp port 53 unreachable, length 44\n"
              "\tIP (tos 0x0, ttl 64, id 16962, offset 0, flags [DF], proto UDP (17), length 36)\n"
              "    198.18.73.2.41000 > 198.18.73.3.53: [udp sum ok] domain [length 8 < 12] (invalid)");
}

TEST(TextVerbose, NeighborDiscoveryOptions)
{
    const std::string v = "IP6 (hlim 64, next-header ICMPv6 (58) payload length: 32) 2001:db8:73::1 > "
                          "2001:db8:73::2: [icmp6 sum ok] ICMP6, neighbor solicitation, length 32, who has "
                          "2001:db8:73::3\n\t  source link-address option (1), length 8 (1): 02:00:00:00:73:01";
    EXPECT_EQ(decode_hex(kNeighborSolicitation, verbose(1)), v);
    EXPECT_EQ(decode_hex(kNeighborSolicitation, verbose(2)), v + "\n\t    0x0000:  0200 0000 7301");
}

TEST(TextVerbose, ResetData)
{
    EXPECT_EQ(decode_hex(kReset, verbose(1)),
              "IP (tos 0x0, ttl 64, id 16962, offset 0, flags [DF], proto TCP (6), length 48)\n"
              "    198.18.73.1.41000 > 198.18.73.2.80: Flags [R.], cksum 0x6c08 (correct), seq 1001:1009, ack 5001, "
              "win 64240, length 8 [RST no route]");
}

// LLDP: the system name on the plain line, every TLV with -v.
TEST(TextVerbose, Lldp)
{
    EXPECT_EQ(decode_hex(kLldp, verbose(0)), "LLDP, length 31: leaf-07");
    EXPECT_EQ(decode_hex(kLldp, verbose(1)),
              "LLDP, length 31\n\tChassis ID TLV (1), length 7\n\t  Subtype MAC address (4): 02:00:00:00:74:01\n"
              "\tPort ID TLV (2), length 5\n\t  Subtype Interface Name (5): eth0\n\tTime to Live TLV (3), length 2: "
              "TTL 120s\n\tSystem Name TLV (5), length 7: leaf-07\n\tEnd TLV (0), length 0");
}

// Every cut of every frame, at every level: the line fits its bound and
// nothing past the capture is read (the sanitizers watch).
TEST(TextVerbose, EveryCutIsSafe)
{
    for (const char* hex : {kRecordRoute, kTimestamps, kPartialSyn, kUdp, kPortUnreachable, kNeighborSolicitation,
                            kReset, kLldp}) {
        const auto f = from_hex(hex);
        for (uint8_t level = 1; level <= 3; ++level) {
            for (size_t caplen = 0; caplen <= f.size(); ++caplen)
                EXPECT_LT(decode(f, caplen, verbose(level)).size(), xdpcap::text::kMaxDecodeLength);
        }
    }
}

// RFC 1071's example, its bytes summed whole and in odd pieces.
TEST(TextVerbose, InternetChecksum)
{
    const uint8_t bytes[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    InternetChecksum whole;
    whole.add(bytes, sizeof bytes);
    EXPECT_EQ(whole.value(), 0x220d);
    InternetChecksum pieces;
    pieces.add(bytes, 3);
    pieces.add(bytes + 3, 1);
    pieces.add(bytes + 4, 4);
    EXPECT_EQ(pieces.value(), 0x220d);
    // With the checksum in its field the sum comes to zero.
    InternetChecksum checked = whole;
    checked.add16(0x220d);
    EXPECT_EQ(checked.value(), 0);
    EXPECT_EQ(checksum_should_be(0x0000, 0x220d), 0x220d);
}

} // namespace
