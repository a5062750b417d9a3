#include <gtest/gtest.h>

#include <string>

#include "error.hpp"
#include "host.hpp"

using namespace xdpcap;

namespace {

std::string lookup_error(const std::string& argument)
{
    try {
        lookup_interface(argument);
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error for " << argument;
    return {};
}

} // namespace

TEST(Host, OnlyAWholeNumberIsAnIndex)
{
    EXPECT_EQ(interface_index_argument("2"), 2u);
    EXPECT_EQ(interface_index_argument("0"), 0u);
    EXPECT_EQ(interface_index_argument("4294967295"), 4294967295u);
    for (const char* text : {"", "eth0", "2a", "a2", "+2", "-2", " 2", "4294967296", "0x2"})
        EXPECT_FALSE(interface_index_argument(text).has_value()) << text;
}

TEST(Host, NumberWithoutSuchNameIsAnIfindex)
{
    // Every network namespace has its loopback at ifindex 1.
    const InterfaceInfo lo = lookup_interface("1");
    EXPECT_EQ(lo.ifindex, 1u);
    EXPECT_EQ(lookup_interface(lo.name).ifindex, 1u);
    EXPECT_EQ(lookup_error("0"), "invalid interface index 0: indexes start at 1 (see xdpcap -D)");
    EXPECT_EQ(lookup_error("4000000000"), "no interface has index 4000000000 (see xdpcap -D)");
    EXPECT_EQ(lookup_error("no-such-if9"), "no such interface 'no-such-if9'");
}
