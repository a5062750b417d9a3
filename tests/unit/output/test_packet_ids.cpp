#include <gtest/gtest.h>

#include <vector>

#include "output/packet_ids.hpp"

using namespace xdpcap;

TEST(PacketIds, ADropFindsTheCapturedPacketByItsHeaders)
{
    PacketIds ids;
    std::vector<uint8_t> syn(74, 0x11), other(74, 0x22);
    const uint64_t first = ids.captured(syn.data(), 74);
    const uint64_t second = ids.captured(other.data(), 74);
    EXPECT_NE(first, second);
    EXPECT_EQ(ids.dropped(syn.data(), 74), first);
    // Only the skb's linear part, past the headers the key covers.
    EXPECT_EQ(ids.dropped(other.data(), 70), second);
    // A packet never captured (filtered out, or dropped before the hook).
    std::vector<uint8_t> unseen(74, 0x33);
    const uint64_t fresh = ids.dropped(unseen.data(), 74);
    EXPECT_GT(fresh, second);
    // The same bytes captured again: the drop is of the latest.
    const uint64_t again = ids.captured(syn.data(), 74);
    EXPECT_EQ(ids.dropped(syn.data(), 74), again);
}
