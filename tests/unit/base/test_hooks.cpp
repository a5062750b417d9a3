// The table of hooks: one row per XDPCAP_HOOK_* value, and a lookup that
// takes any byte a record or file may hold.
#include <gtest/gtest.h>

#include "base/hooks.hpp"

using namespace xdpcap;

TEST(Hooks, RowsFollowTheAbiValues)
{
    EXPECT_EQ(hook_info(uint8_t{XDPCAP_HOOK_XDP}).hook, Hook::Xdp);
    EXPECT_EQ(hook_info(uint8_t{XDPCAP_HOOK_TC_EGRESS}).hook, Hook::TcEgress);
    EXPECT_EQ(hook_info(uint8_t{XDPCAP_HOOK_FENTRY}).hook, Hook::Fentry);
    EXPECT_EQ(hook_info(uint8_t{XDPCAP_HOOK_FEXIT}).hook, Hook::Fexit);
    EXPECT_EQ(hook_info(uint8_t{XDPCAP_HOOK_DROP}).hook, Hook::Drop);
    EXPECT_EQ(hook_info(uint8_t{XDPCAP_HOOK_TC_INGRESS}).hook, Hook::TcIngress);
    for (const HookInfo& row : kHooks)
        EXPECT_EQ(&hook_info(row.hook), &row);
}

TEST(Hooks, WhatEachRecordCarries)
{
    for (const HookInfo& row : kHooks) {
        EXPECT_EQ(row.verdict, row.hook == Hook::Fexit) << row.name;
        EXPECT_EQ(row.dropped, row.hook == Hook::Drop) << row.name;
    }
    EXPECT_EQ(hook_info(Hook::TcEgress).direction, XDPCAP_DIR_EGRESS);
    EXPECT_EQ(hook_info(Hook::TcIngress).direction, XDPCAP_DIR_INGRESS);
    EXPECT_EQ(hook_info(Hook::Fentry).filter, hook_info(Hook::Fexit).filter);
    EXPECT_EQ(hook_info(Hook::Xdp).counters, hook_info(Hook::TcIngress).counters);
    EXPECT_EQ(hook_info(Hook::Xdp).slot, hook_info(Hook::TcIngress).slot);
}

TEST(Hooks, AnUnknownValueIsWrittenAsOwnProgramModes)
{
    for (unsigned value = kHookCount; value <= 255; ++value) {
        const HookInfo& row = hook_info(static_cast<uint8_t>(value));
        EXPECT_EQ(row.slot, InterfaceSlot::Own);
        EXPECT_FALSE(row.verdict);
        EXPECT_FALSE(row.dropped);
    }
}
