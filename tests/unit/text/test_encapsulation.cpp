// The encapsulations: golden lines (each checked against tcpdump 4.99.3 -n
// of the same bytes), and the bounds that keep a line of nested
// encapsulations within decode_length_bound().
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "decode_helpers.hpp"
#include "text/decode.hpp"
#include "text/layers.hpp"

namespace {

using xdpcap::test::decode;
using xdpcap::test::from_hex;
using xdpcap::text::DecodeOptions;
using xdpcap::text::detail::kMaxEncapsulationDepth;

const char* const kVxlan =
    "020000000002020000000001080045000052000140004011ae72c6120001c6120002b05d12b5003e0000080000000000640002"
    "0000000004020000000003080045000020000140004001aeb2c6130001c61300020800f7fe0001000170696e67";
const char* const kGreKey = "02000000000202000000000108004500003c00014000402fae6ac6120001c6120002200008001234abcd"
                            "45000020000140004001aeb2c6130001c61300020800f7fe0001000170696e67";
const char* const kMplsStack = "020000000002020000000001884700010a40000110400000014045000020000140004001aeb2c6130001"
                               "c61300020800f7fe0001000170696e67";

size_t count(const std::string& text, const std::string& what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

TEST(TextEncapsulation, VxlanStartsTheCarriedFrameOnItsOwnLine)
{
    const auto f = from_hex(kVxlan);
    EXPECT_EQ(decode(f, f.size()), "IP 198.18.0.1.45149 > 198.18.0.2.4789: VXLAN, flags [I] (0x08), vni 100\n"
                                   "IP 198.19.0.1 > 198.19.0.2: ICMP echo request, id 1, seq 1, length 12");
    DecodeOptions e;
    e.link_header = true;
    EXPECT_EQ(decode(f, f.size(), e),
              "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype IPv4 (0x0800), length 96: 198.18.0.1.45149 > "
              "198.18.0.2.4789: VXLAN, flags [I] (0x08), vni 100\n"
              "02:00:00:00:00:03 > 02:00:00:00:00:04, ethertype IPv4 (0x0800), length 46: 198.19.0.1 > 198.19.0.2: "
              "ICMP echo request, id 1, seq 1, length 12");
    // -q: tcpdump looks at no UDP port.
    DecodeOptions q;
    q.quick = true;
    EXPECT_EQ(decode(f, f.size(), q), "IP 198.18.0.1.45149 > 198.18.0.2.4789: UDP, length 54");
}

TEST(TextEncapsulation, GreWithKey)
{
    const auto f = from_hex(kGreKey);
    EXPECT_EQ(decode(f, f.size()), "IP 198.18.0.1 > 198.18.0.2: GREv0, key=0x1234abcd, length 40: IP 198.19.0.1 > "
                                   "198.19.0.2: ICMP echo request, id 1, seq 1, length 12");
    DecodeOptions e;
    e.link_header = true;
    EXPECT_EQ(decode(f, f.size(), e),
              "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype IPv4 (0x0800), length 74: 198.18.0.1 > 198.18.0.2: "
              "GREv0, key=0x1234abcd, proto IPv4 (0x0800), length 40: 198.19.0.1 > 198.19.0.2: ICMP echo request, id "
              "1, seq 1, length 12");
    // Cut inside the key: tcpdump's mark after what was printed.
    EXPECT_EQ(decode(f, 14 + 20 + 6), "IP 198.18.0.1 > 198.18.0.2: GREv0 [|gre]");
}

const char* const kPptpGre =
    "00112233445566778899aabb08004500004400000000402f00000a0000010a0000023081880b002012340000000500000007"
    "ff0300214500001c00000000400100000a0000010a0000020800000000010001";

const char* const kOtv =
    "00112233445566778899aabb08004500004e00000000401100000a0000010a00000203e82118003a00000800000500000700"
    "00112233445566778899aabb08004500001c00000000400100000a0000010a0000020800000000010001";

TEST(TextEncapsulation, PptpGreCarriesPpp)
{
    const auto f = from_hex(kPptpGre);
    EXPECT_EQ(decode(f, f.size()), "IP 10.0.0.1 > 10.0.0.2: GREv1, call 4660, seq 5, ack 7, length 48: IP 10.0.0.1 > "
                                   "10.0.0.2: ICMP echo request, id 1, seq 1, length 8");
    // Cut inside the sequence number: tcpdump's mark after the call.
    EXPECT_EQ(decode(f, 14 + 20 + 10), "IP 10.0.0.1 > 10.0.0.2: GREv1, call 4660 [|gre]");
}

TEST(TextEncapsulation, OtvStartsTheCarriedFrameOnItsOwnLine)
{
    const auto f = from_hex(kOtv);
    EXPECT_EQ(decode(f, f.size()), "IP 10.0.0.1.1000 > 10.0.0.2.8472: OTV, flags [I] (0x08), overlay 5, instance 7\n"
                                   "IP 10.0.0.1 > 10.0.0.2: ICMP echo request, id 1, seq 1, length 8");
}

TEST(TextEncapsulation, MplsLabelStack)
{
    const auto f = from_hex(kMplsStack);
    EXPECT_EQ(decode(f, f.size()), "MPLS (label 16, tc 5, ttl 64) (label 17, tc 0, ttl 64) (label 0, tc 0, [S], ttl "
                                   "64) IP 198.19.0.1 > 198.19.0.2: ICMP echo request, id 1, seq 1, length 12");
}

// IPv4 in IPv4 twelve times: eight levels below the outer header are
// decoded, then the line ends.
TEST(TextEncapsulation, NestingEndsAtItsBound)
{
    std::vector<uint8_t> packet = from_hex("0800f7fe00010001");
    uint8_t protocol = 1;
    for (int level = 0; level < 13; ++level) {
        const size_t total = 20 + packet.size();
        std::vector<uint8_t> ip = {0x45, 0, static_cast<uint8_t>(total >> 8), static_cast<uint8_t>(total), 0, 1, 0, 0, 64,
                                   protocol, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2};
        ip.insert(ip.end(), packet.begin(), packet.end());
        packet = ip;
        protocol = 4;
    }
    std::vector<uint8_t> f = from_hex("0200000000020200000000010800");
    f.insert(f.end(), packet.begin(), packet.end());
    const std::string line = decode(f, f.size());
    EXPECT_EQ(count(line, "IP 198.18.0.1 > 198.18.0.2: "), 1u + kMaxEncapsulationDepth) << line;
    EXPECT_EQ(line.find("ICMP"), std::string::npos) << line;
}

// Twenty labels without the bottom-of-stack bit: sixteen are printed.
TEST(TextEncapsulation, LabelStackEndsAtItsBound)
{
    std::vector<uint8_t> f = from_hex("0200000000020200000000018847");
    for (int i = 0; i < 20; ++i)
        f.insert(f.end(), {0, 0x01, 0x00, 0x40});
    const std::string line = decode(f, f.size());
    EXPECT_EQ(count(line, "(label 16, tc 0, ttl 64)"), 16u) << line;
}

// The longest line nesting can make: VXLAN in VXLAN beyond the depth bound,
// each carried frame with eight VLAN tags, with -e; within the bound.
TEST(TextEncapsulation, DeepestLineFitsTheBound)
{
    std::vector<uint8_t> frame = from_hex("ffffffffffffffffffffffff0800"
                                          "4500001c0001000040010000c6120001c61200020800f7fe00010001");
    for (int level = 0; level < 10; ++level) {
        std::vector<uint8_t> vxlan = from_hex("0800000000ffff00");
        vxlan.insert(vxlan.end(), frame.begin(), frame.end());
        const size_t udp_length = 8 + vxlan.size();
        std::vector<uint8_t> ip = {0x45, 0, static_cast<uint8_t>((20 + udp_length) >> 8),
                                   static_cast<uint8_t>(20 + udp_length), 0, 1, 0, 0, 64, 17, 0, 0,
                                   198, 18, 255, 255, 198, 18, 255, 254,
                                   0xff, 0xff, 0x12, 0xb5, static_cast<uint8_t>(udp_length >> 8),
                                   static_cast<uint8_t>(udp_length), 0, 0};
        ip.insert(ip.end(), vxlan.begin(), vxlan.end());
        frame = from_hex("ffffffffffffffffffffffff");
        for (int tag = 0; tag < 8; ++tag)
            frame.insert(frame.end(), {0x88, 0xa8, 0xff, 0xff});
        frame.insert(frame.end(), {0x08, 0x00});
        frame.insert(frame.end(), ip.begin(), ip.end());
    }
    DecodeOptions e;
    e.link_header = true;
    const std::string line = decode(frame, frame.size(), e);
    EXPECT_GT(line.size(), 4000u);
    EXPECT_LT(line.size(), xdpcap::text::kMaxDecodeLength);
    EXPECT_EQ(count(line, "VXLAN, flags [I] (0x08), vni 65535\n"), size_t{kMaxEncapsulationDepth}) << line.substr(0, 2000);
}

} // namespace
