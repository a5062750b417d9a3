#include <gtest/gtest.h>

#include "app/interface_blocks.hpp"

using namespace xdpcap;

// A container's host-side veth is named after the container in its
// description; its if_name is left to the device.
TEST(InterfaceBlocks, IdentityNamesTheContainer)
{
    InterfaceInfo veth;
    veth.name = "veth1a2b";
    veth.ifindex = 7;
    EXPECT_EQ(live::interface_identity(veth, std::nullopt), "veth1a2b (ifindex 7)");
    EXPECT_EQ(live::interface_identity(veth, InterfaceContainer{"web", std::string(64, 'a'), "podman"}),
              "veth1a2b (ifindex 7, container web, podman)");
}
