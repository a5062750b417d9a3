#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "host/interfaces.hpp"

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

// As tcpdump: a number that names no interface is the Nth of tcpdump -D's
// list (libpcap's order), not an ifindex.
TEST(Host, NumberWithoutSuchNameIsTcpdumpsListNumber)
{
    const std::vector<ListedDevice> devices = tcpdump_devices();
    ASSERT_FALSE(devices.empty());
    for (size_t i = 0; i < devices.size(); ++i) {
        const std::string number = std::to_string(i + 1);
        if (devices[i].ifindex) {
            const InterfaceInfo info = lookup_interface(number);
            EXPECT_EQ(info.name, devices[i].name) << number;
            EXPECT_EQ(info.ifindex, devices[i].ifindex) << number;
        } else {
            EXPECT_EQ(lookup_error(number).find("interface " + number + " is " + devices[i].name), 0u) << number;
        }
    }
    EXPECT_EQ(lookup_error("0"), "invalid interface number 0: tcpdump -D's numbers start at 1 (see xdpcap -D)");
    EXPECT_EQ(lookup_error("4000000000"),
              "no interface has number 4000000000: there are " + std::to_string(devices.size()) + " (see xdpcap -D)");
    EXPECT_EQ(lookup_error("no-such-if9"), "no such interface 'no-such-if9'");
}
