// Linux cooked headers (SLL, SLL2) against hand-built bytes: each expected
// line is what tcpdump 4.99.3 -n -r prints for the same record (checked on
// files written with these bytes), plain and with -e, -q, -x and -xx, for
// every packet type, hardware types without a MAC, 802.1Q tags, LLC,
// protocols not decoded and headers cut short.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "decode_helpers.hpp"
#include "text/decode.hpp"

namespace {

using xdpcap::test::decode;
using xdpcap::test::from_hex;
using xdpcap::text::DecodeOptions;
using xdpcap::text::LinkType;

using Bytes = std::vector<uint8_t>;

// IPv4 UDP 198.18.0.1.1234 > 198.18.0.2.5678 with "hello".
const Bytes kUdp = from_hex("45000021000100004011eea3c6120001c612000204d2162e000d14da68656c6c6f");
const Bytes kMac = from_hex("021122334455");

Bytes operator+(const Bytes& a, const Bytes& b)
{
    Bytes r = a;
    r.insert(r.end(), b.begin(), b.end());
    return r;
}

void put16(Bytes& b, uint16_t v)
{
    b.push_back(static_cast<uint8_t>(v >> 8));
    b.push_back(static_cast<uint8_t>(v));
}

Bytes sll(uint16_t packet_type, uint16_t protocol, const Bytes& payload, uint16_t hardware = 1,
          const Bytes& address = kMac)
{
    Bytes b;
    put16(b, packet_type);
    put16(b, hardware);
    put16(b, static_cast<uint16_t>(address.size()));
    Bytes field = address;
    field.resize(8);
    b.insert(b.end(), field.begin(), field.end());
    put16(b, protocol);
    b.insert(b.end(), payload.begin(), payload.end());
    return b;
}

Bytes sll2(uint8_t packet_type, uint16_t protocol, const Bytes& payload, uint32_t ifindex, uint16_t hardware = 1,
           const Bytes& address = kMac)
{
    Bytes b;
    put16(b, protocol);
    put16(b, 0);
    put16(b, static_cast<uint16_t>(ifindex >> 16));
    put16(b, static_cast<uint16_t>(ifindex));
    put16(b, hardware);
    b.push_back(packet_type);
    b.push_back(static_cast<uint8_t>(address.size()));
    Bytes field = address;
    field.resize(8);
    b.insert(b.end(), field.begin(), field.end());
    b.insert(b.end(), payload.begin(), payload.end());
    return b;
}

// Index 7 is "veth0" here, 8 has a name of 15 characters; no other exists.
class FakeNames final : public xdpcap::text::InterfaceNames {
public:
    std::string_view name(uint32_t index) noexcept override
    {
        return index == 7 ? "veth0" : index == 8 ? "a-long-name-015" : "";
    }
};

struct Options {
    bool link = false;
    bool quick = false;
    uint8_t hex = 0;
};

std::string line(LinkType type, const Bytes& frame, Options opt = {}, size_t caplen = SIZE_MAX)
{
    static FakeNames names;
    DecodeOptions o;
    o.link_type = type;
    o.interface_names = &names;
    o.link_header = opt.link;
    o.quick = opt.quick;
    o.hex = opt.hex;
    return decode(frame, caplen == SIZE_MAX ? frame.size() : caplen, o);
}

const std::string kUdpLine = "IP 198.18.0.1.1234 > 198.18.0.2.5678: UDP, length 5";
const std::string kUdpLineE = "198.18.0.1.1234 > 198.18.0.2.5678: UDP, length 5";

TEST(Cooked, SllPlainShowsThePayloadOnly)
{
    EXPECT_EQ(line(LinkType::LinuxSll, sll(4, 0x0800, kUdp)), kUdpLine);
}

TEST(Cooked, SllLinkHeaderNamesEachPacketType)
{
    const char* const expected[] = {" In", "  B", "  M", "  P", "Out", "  ?"};
    const uint16_t types[] = {0, 1, 2, 3, 4, 7};
    for (size_t i = 0; i < std::size(types); ++i)
        EXPECT_EQ(line(LinkType::LinuxSll, sll(types[i], 0x0800, kUdp), {.link = true}),
                  std::string(expected[i]) + " 02:11:22:33:44:55 ethertype IPv4 (0x0800), length 49: " + kUdpLineE)
            << types[i];
}

TEST(Cooked, SllQuickLinkHeaderLeavesOutTheProtocol)
{
    EXPECT_EQ(line(LinkType::LinuxSll, sll(0, 0x0800, kUdp), {.link = true, .quick = true}),
              " In 02:11:22:33:44:55 198.18.0.1.1234 > 198.18.0.2.5678: UDP, length 5");
}

TEST(Cooked, OnlySixByteAddressesAreShown)
{
    // Loopback: six zero bytes; a tunnel's four-byte address; none at all.
    EXPECT_EQ(line(LinkType::LinuxSll, sll(0, 0x0800, kUdp, 772, Bytes(6, 0)), {.link = true}),
              " In 00:00:00:00:00:00 ethertype IPv4 (0x0800), length 49: " + kUdpLineE);
    EXPECT_EQ(line(LinkType::LinuxSll, sll(0, 0x0800, kUdp, 768, from_hex("c6120009")), {.link = true}),
              " In ethertype IPv4 (0x0800), length 49: " + kUdpLineE);
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(4, 0x0800, kUdp, 7, 65534, {}), {.link = true}),
              "veth0 Out ifindex 7 ethertype IPv4 (0x0800), length 53: " + kUdpLineE);
}

TEST(Cooked, Sll2NamesTheInterfaceAndPacketTypeAlways)
{
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(4, 0x0800, kUdp, 7)), "veth0 Out " + kUdpLine);
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(0, 0x0800, kUdp, 7)), "veth0 In  " + kUdpLine);
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(2, 0x0800, kUdp, 8)), "a-long-name-015 M   " + kUdpLine);
    // An index no interface here has.
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(9, 0x0800, kUdp, 999)), "?     ?   " + kUdpLine);
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(1, 0x0800, kUdp, 999), {.link = true}),
              "?     B   ifindex 999 02:11:22:33:44:55 ethertype IPv4 (0x0800), length 53: " + kUdpLineE);
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(3, 0x0800, kUdp, 7), {.link = true, .quick = true}),
              "veth0 P   ifindex 7 02:11:22:33:44:55 " + kUdpLineE);
}

TEST(Cooked, WithoutInterfaceNamesEveryIndexIsUnknown)
{
    DecodeOptions o;
    o.link_type = LinkType::LinuxSll2;
    const Bytes frame = sll2(4, 0x0800, kUdp, 7);
    EXPECT_EQ(decode(frame, frame.size(), o), "?     Out " + kUdpLine);
}

TEST(Cooked, HeadersCutShort)
{
    const Bytes v1 = sll(0, 0x0800, kUdp);
    for (size_t caplen = 1; caplen < 16; ++caplen)
        EXPECT_EQ(line(LinkType::LinuxSll, v1, {.link = true}, caplen), " [|sll]") << caplen;
    const Bytes v2 = sll2(0, 0x0800, kUdp, 7);
    for (size_t caplen = 1; caplen < 20; ++caplen)
        EXPECT_EQ(line(LinkType::LinuxSll2, v2, {}, caplen), " [|sll2]") << caplen;
    // The whole header and no more, and a payload cut.
    EXPECT_EQ(line(LinkType::LinuxSll, v1, {}, 16), " [|ip]");
    EXPECT_EQ(line(LinkType::LinuxSll2, v2, {}, 21), "veth0 In  IP  [|ip]");
    // A header cut short is dumped whole even with -x (tcpdump gave up on it).
    EXPECT_EQ(line(LinkType::LinuxSll, v1, {.hex = 1}, 4), " [|sll]\n\t0x0000:  0000 0001");
}

TEST(Cooked, HexDumpsStartAfterTheHeaderOrAtIt)
{
    const Bytes frame = sll(0, 0x0800, from_hex("4500"));
    EXPECT_EQ(line(LinkType::LinuxSll, frame, {.hex = 1}), "IP  [|ip]\n\t0x0000:  4500");
    EXPECT_EQ(line(LinkType::LinuxSll, frame, {.hex = 2}),
              "IP  [|ip]\n\t0x0000:  0000 0001 0006 0211 2233 4455 0000 0800\n\t0x0010:  4500");
}

TEST(Cooked, VlanTagsAfterTheHeader)
{
    const Bytes tagged = sll(0, 0x8100, from_hex("30050800") + kUdp);
    EXPECT_EQ(line(LinkType::LinuxSll, tagged), "ethertype IPv4, " + kUdpLine);
    EXPECT_EQ(line(LinkType::LinuxSll, tagged, {.link = true}),
              " In 02:11:22:33:44:55 ethertype 802.1Q (0x8100), length 53: vlan 5, p 1, DEI, ethertype IPv4, " +
                  kUdpLineE);
    EXPECT_EQ(line(LinkType::LinuxSll, tagged, {.link = true, .quick = true}),
              " In 02:11:22:33:44:55 vlan 5, p 1, DEI, " + kUdpLineE);
    // -x starts after the tag.
    const Bytes cut = sll(0, 0x8100, from_hex("300508004500"));
    EXPECT_EQ(line(LinkType::LinuxSll, cut, {.hex = 1}), "ethertype IPv4, IP  [|ip]\n\t0x0000:  4500");
    // A tag cut short.
    EXPECT_EQ(line(LinkType::LinuxSll, sll(0, 0x8100, from_hex("0005"))), " [|vlan]");
    // An unknown type inside: the header's fields, then the data.
    EXPECT_EQ(line(LinkType::LinuxSll, sll(0, 0x8100, from_hex("000788b57a7a7a7a"))),
              "ethertype Unknown,  In 02:11:22:33:44:55 ethertype 802.1Q (0x8100), length 20: "
              "\n\t0x0000:  7a7a 7a7a                                zzzz");
}

TEST(Cooked, LlcAndProtocolsNotDecoded)
{
    // 802.2: an STP configuration BPDU.
    const Bytes stp = from_hex("4242030000000000000000000000000000000000000000000000000000000000000000000000");
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(0, 0x0004, stp, 7)),
              "veth0 In  STP 802.1d, Config, Flags [none], bridge-id 0000.00:00:00:00:00:00.0000, length 35");
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(0, 0x0004, stp, 7), {.link = true}),
              "veth0 In  ifindex 7 02:11:22:33:44:55 802.2, length 58: LLC, dsap STP (0x42) Individual, ssap STP "
              "(0x42) Command, ctrl 0x03: STP 802.1d, Config, Flags [none], bridge-id 0000.00:00:00:00:00:00.0000, "
              "length 35");
    // Other SAPs: named without MAC addresses, the data dumped from the LLC header on.
    EXPECT_EQ(line(LinkType::LinuxSll, sll(0, 0x0004, from_hex("424403616263"))),
              "Unknown SSAP 0x44 > STP Unnumbered, ui, Flags [Command], length 6\n\t0x0000:  4244 0361 6263  "
              "                         BD.abc");
    // An ethertype not decoded, and a protocol below 1536 that is none.
    EXPECT_EQ(line(LinkType::LinuxSll, sll(4, 0x88b5, from_hex("61626364"))),
              "Out 02:11:22:33:44:55 ethertype Unknown (0x88b5), length 20: \n\t0x0000:  6162 6364            "
              "                    abcd");
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(4, 0x0100, from_hex("61626364"), 7)),
              "veth0 Out \n\t0x0000:  6162 6364                                abcd");
    EXPECT_EQ(line(LinkType::LinuxSll2, sll2(4, 0x0100, from_hex("61626364"), 7), {.link = true}),
              "veth0 Out ifindex 7 02:11:22:33:44:55 ethertype Unknown (0x0100), length 24: \n\t0x0000:  6162 6364  "
              "                              abcd");
    // -q leaves the data out.
    EXPECT_EQ(line(LinkType::LinuxSll, sll(4, 0x88b5, from_hex("61626364")), {.quick = true}),
              "Out 02:11:22:33:44:55 ");
}

} // namespace
