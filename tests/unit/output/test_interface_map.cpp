#include <gtest/gtest.h>

#include <set>

#include "output/interface_map.hpp"

using namespace xdpcap;

TEST(InterfaceMap, OwnProgramModeWritesRingAsInterface)
{
    const InterfaceMap map;
    EXPECT_FALSE(map.tracing());
    EXPECT_EQ(map.per_ring(), 1u);
    EXPECT_EQ(map.interface(3, XDPCAP_HOOK_XDP, 0), 3u);
    EXPECT_EQ(map.interface(3, XDPCAP_HOOK_TC_EGRESS, 0), 3u);
    EXPECT_EQ(map.ring_of(3), 3u);
}

TEST(InterfaceMap, TraceModeGivesEachHookPointItsInterface)
{
    // Two programs, entry and exit, egress captured: 5 interfaces per CPU.
    const InterfaceMap map(2, true, true, true);
    EXPECT_EQ(map.per_ring(), 5u);
    EXPECT_EQ(map.interface(1, XDPCAP_HOOK_TC_EGRESS, 0), 5u);
    EXPECT_EQ(map.interface(1, XDPCAP_HOOK_FENTRY, 0), 6u);
    EXPECT_EQ(map.interface(1, XDPCAP_HOOK_FEXIT, 0), 7u);
    EXPECT_EQ(map.interface(1, XDPCAP_HOOK_FENTRY, 1), 8u);
    EXPECT_EQ(map.interface(1, XDPCAP_HOOK_FEXIT, 1), 9u);
    EXPECT_EQ(map.ring_of(9), 1u);
    EXPECT_EQ(map.slot(0).kind, InterfaceSlot::Egress);
    EXPECT_EQ(map.slot(3).kind, InterfaceSlot::Entry);
    EXPECT_EQ(map.slot(3).program, 1u);
    EXPECT_EQ(map.slot(4).kind, InterfaceSlot::Exit);
    EXPECT_EQ(map.slot(4).program, 1u);
}

TEST(InterfaceMap, EverySlotIsReachedOnce)
{
    for (bool entry : {true, false}) {
        for (bool exit : {true, false}) {
            if (!entry && !exit)
                continue;
            for (bool egress : {true, false}) {
                const InterfaceMap map(3, entry, exit, egress);
                std::set<uint32_t> seen;
                if (egress)
                    seen.insert(map.interface(0, XDPCAP_HOOK_TC_EGRESS, 0));
                for (uint16_t p = 0; p < 3; ++p) {
                    if (entry)
                        seen.insert(map.interface(0, XDPCAP_HOOK_FENTRY, p));
                    if (exit)
                        seen.insert(map.interface(0, XDPCAP_HOOK_FEXIT, p));
                }
                EXPECT_EQ(seen.size(), map.per_ring());
                for (uint32_t i : seen) {
                    EXPECT_LT(i, map.per_ring());
                    const auto s = map.slot(i);
                    EXPECT_NE(s.kind, InterfaceSlot::Own);
                }
            }
        }
    }
}

TEST(InterfaceMap, ExitOnlyAndOutOfRangeProgramsStayInTheRingsBlock)
{
    const InterfaceMap map(1, false, true, false);
    EXPECT_EQ(map.per_ring(), 1u);
    EXPECT_EQ(map.interface(2, XDPCAP_HOOK_FEXIT, 0), 2u);
    EXPECT_EQ(map.slot(0).kind, InterfaceSlot::Exit);
    // A program index beyond the traced ones (never sent) cannot escape.
    EXPECT_EQ(map.interface(2, XDPCAP_HOOK_FEXIT, 7), 2u);
}

TEST(XdpActionName, NamesTheActions)
{
    EXPECT_STREQ(xdp_action_name(0), "XDP_ABORTED");
    EXPECT_STREQ(xdp_action_name(1), "XDP_DROP");
    EXPECT_STREQ(xdp_action_name(2), "XDP_PASS");
    EXPECT_STREQ(xdp_action_name(3), "XDP_TX");
    EXPECT_STREQ(xdp_action_name(4), "XDP_REDIRECT");
    EXPECT_EQ(xdp_action_name(5), nullptr);
}

TEST(InterfaceMap, SeveralInterfacesFollowEachOthersRings)
{
    // Two interfaces on three CPUs: the loop numbers interface s's ring k as
    // s * 3 + k, and that ring is the pcapng interface of the same number,
    // whichever hook the sample came from.
    const InterfaceMap map;
    constexpr uint32_t kCpus = 3;
    std::set<uint32_t> seen;
    for (uint32_t session = 0; session < 2; ++session) {
        for (uint32_t k = 0; k < kCpus; ++k) {
            const uint32_t ring = session * kCpus + k;
            for (uint8_t hook : {uint8_t{XDPCAP_HOOK_XDP}, uint8_t{XDPCAP_HOOK_TC_EGRESS}}) {
                EXPECT_EQ(map.interface(ring, hook, 0), ring);
                EXPECT_EQ(map.ring_of(map.interface(ring, hook, 0)), ring);
            }
            seen.insert(map.interface(ring, XDPCAP_HOOK_XDP, 0));
        }
    }
    EXPECT_EQ(seen.size(), 2 * kCpus);
    EXPECT_EQ(map.count(2 * kCpus), 2 * kCpus);
}

TEST(InterfaceMap, DropsGetTheLastSlotOfEachRing)
{
    const InterfaceMap own(true);
    EXPECT_TRUE(own.drops());
    EXPECT_FALSE(own.tracing());
    EXPECT_EQ(own.per_ring(), 2u);
    EXPECT_EQ(own.interface(3, XDPCAP_HOOK_XDP, 0), 6u);
    EXPECT_EQ(own.interface(3, XDPCAP_HOOK_TC_EGRESS, 0), 6u);
    EXPECT_EQ(own.interface(3, XDPCAP_HOOK_DROP, 0), 7u);
    EXPECT_EQ(own.slot(0).kind, InterfaceSlot::Own);
    EXPECT_EQ(own.slot(1).kind, InterfaceSlot::Drop);
    EXPECT_EQ(own.ring_of(7), 3u);

    // Trace mode: egress, entry and exit of one program, then drops.
    const InterfaceMap traced(1, true, true, true, true);
    EXPECT_EQ(traced.per_ring(), 4u);
    EXPECT_EQ(traced.interface(1, XDPCAP_HOOK_FEXIT, 0), 6u);
    EXPECT_EQ(traced.interface(1, XDPCAP_HOOK_DROP, 0), 7u);
    EXPECT_EQ(traced.slot(3).kind, InterfaceSlot::Drop);

    // Without --drops a drop record (which cannot happen) stays in range.
    EXPECT_EQ(InterfaceMap{}.interface(2, XDPCAP_HOOK_DROP, 0), 2u);
}
