#include <gtest/gtest.h>

#include "host/interface_selection.hpp"

using namespace xdpcap;

namespace {

InterfaceInfo iface(const char* name, bool ethernet = true, bool loopback = false)
{
    InterfaceInfo info;
    info.name = name;
    info.ethernet = ethernet;
    info.loopback = loopback;
    return info;
}

} // namespace

TEST(InterfaceSelection, AnyTakesEveryEthernetInterface)
{
    const InterfaceSelection any;
    EXPECT_TRUE(any.any());
    EXPECT_TRUE(any.wanted(iface("eth0")));
    EXPECT_TRUE(any.wanted(iface("lo", true, true)));
    EXPECT_FALSE(any.wanted(iface("tun0", false)));
}

TEST(InterfaceSelection, PatternsMatchNamesAsTheShellDoes)
{
    const InterfaceSelection veths({"veth*", "br?", "eth[02]"});
    EXPECT_FALSE(veths.any());
    EXPECT_TRUE(veths.names("veth1a2b"));
    EXPECT_TRUE(veths.names("veth"));
    EXPECT_TRUE(veths.names("br0"));
    EXPECT_FALSE(veths.names("br10"));
    EXPECT_TRUE(veths.names("eth2"));
    EXPECT_FALSE(veths.names("eth1"));
    EXPECT_FALSE(veths.names("xveth0"));
    EXPECT_TRUE(veths.wanted(iface("veth9")));
    EXPECT_FALSE(veths.wanted(iface("wg0")));
    EXPECT_FALSE(veths.wanted(iface("vethtun", false)));
}

TEST(InterfaceSelection, PlainNameMatchesOnlyItself)
{
    const InterfaceSelection plain({"eth0"});
    EXPECT_TRUE(plain.names("eth0"));
    EXPECT_FALSE(plain.names("eth01"));
}

TEST(InterfaceSelection, QOutLeavesLoopbackOut)
{
    InterfaceSelection any;
    any.without_loopback(true);
    EXPECT_FALSE(any.wanted(iface("lo", true, true)));
    EXPECT_TRUE(any.wanted(iface("eth0")));
}

TEST(InterfaceSelection, PatternsAreArgumentsWithWildcardsNamingNoInterface)
{
    EXPECT_TRUE(is_interface_pattern("veth*"));
    EXPECT_TRUE(is_interface_pattern("eth[01]"));
    EXPECT_TRUE(is_interface_pattern("wlan?"));
    EXPECT_FALSE(is_interface_pattern("eth0"));
    EXPECT_FALSE(is_interface_pattern("any"));
}
