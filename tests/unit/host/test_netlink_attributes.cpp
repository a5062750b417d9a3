#include "host/netlink_attributes.hpp"

#include <gtest/gtest.h>

#include <linux/rtnetlink.h>

#include <string>
#include <utility>
#include <vector>

namespace xdpcap {
namespace {

// One attribute's bytes: length, type, payload, padding to 4.
void append_attribute(std::vector<uint8_t>& bytes, uint16_t type, const std::vector<uint8_t>& payload)
{
    const auto length = static_cast<uint16_t>(NLA_HDRLEN + payload.size());
    bytes.push_back(static_cast<uint8_t>(length));
    bytes.push_back(static_cast<uint8_t>(length >> 8));
    bytes.push_back(static_cast<uint8_t>(type));
    bytes.push_back(static_cast<uint8_t>(type >> 8));
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    bytes.resize(NLA_ALIGN(bytes.size()), 0);
}

std::vector<std::pair<uint16_t, size_t>> visited(const std::vector<uint8_t>& bytes, bool* well_formed = nullptr)
{
    std::vector<std::pair<uint16_t, size_t>> seen;
    const bool ok = for_each_attribute(bytes, [&](uint16_t type, std::span<const uint8_t> payload) {
        seen.emplace_back(type, payload.size());
        return true;
    });
    if (well_formed)
        *well_formed = ok;
    return seen;
}

TEST(NetlinkAttributes, EachInTurnWithItsPayloadAndNoFlagBits)
{
    std::vector<uint8_t> bytes;
    append_attribute(bytes, IFLA_IFNAME, {'v', 'e', 't', 'h', '0', 0});
    append_attribute(bytes, IFLA_LINK | NLA_F_NESTED, {7, 0, 0, 0});
    append_attribute(bytes, IFLA_MTU, {});
    bool ok = false;
    const auto seen = visited(bytes, &ok);
    EXPECT_TRUE(ok);
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[0], (std::pair<uint16_t, size_t>{IFLA_IFNAME, 6}));
    EXPECT_EQ(seen[1], (std::pair<uint16_t, size_t>{IFLA_LINK, 4}));
    EXPECT_EQ(seen[2], (std::pair<uint16_t, size_t>{IFLA_MTU, 0}));
}

TEST(NetlinkAttributes, StopsAtOneThatRunsPastTheEndOrIsTooShort)
{
    std::vector<uint8_t> bytes;
    append_attribute(bytes, IFLA_LINK, {7, 0, 0, 0});
    std::vector<uint8_t> past = bytes;
    append_attribute(past, IFLA_MTU, {1, 2, 3, 4});
    past[past.size() - 8] = 200; // its length now runs past the end
    bool ok = true;
    EXPECT_EQ(visited(past, &ok).size(), 1u);
    EXPECT_FALSE(ok);
    std::vector<uint8_t> short_one = bytes;
    append_attribute(short_one, IFLA_MTU, {1, 2, 3, 4});
    short_one[short_one.size() - 8] = 2; // shorter than its own header
    EXPECT_EQ(visited(short_one, &ok).size(), 1u);
    EXPECT_FALSE(ok);
    // A tail shorter than a header is no attribute at all.
    std::vector<uint8_t> tail = bytes;
    tail.push_back(8);
    EXPECT_EQ(visited(tail, &ok).size(), 1u);
    EXPECT_TRUE(ok);
}

TEST(NetlinkAttributes, StopsWhenTheVisitSaysSoAndReadsOnlyWholeValues)
{
    std::vector<uint8_t> bytes;
    append_attribute(bytes, IFLA_LINK, {7, 0, 0, 0});
    append_attribute(bytes, IFLA_MTU, {0xdc, 0x05, 0, 0});
    append_attribute(bytes, IFLA_TXQLEN, {1, 0});
    uint32_t link = 0, mtu = 0, txqlen = 99;
    size_t visits = 0;
    for_each_attribute(bytes, [&](uint16_t type, std::span<const uint8_t> payload) {
        ++visits;
        if (type == IFLA_LINK)
            read_attribute(payload, link);
        if (type == IFLA_MTU)
            read_attribute(payload, mtu);
        return type != IFLA_MTU;
    });
    EXPECT_EQ(visits, 2u);
    EXPECT_EQ(link, 7u);
    EXPECT_EQ(mtu, 1500u);
    read_attribute(std::span<const uint8_t>(bytes).subspan(bytes.size() - 4, 2), txqlen);
    EXPECT_EQ(txqlen, 99u); // two bytes do not make a u32
}

} // namespace
} // namespace xdpcap
