// The link types -r reads and their names, as tcpdump's and libpcap's.
#include <gtest/gtest.h>

#include "input/link_type.hpp"

using namespace xdpcap;

TEST(LinkType, ReadableOnesAreEthernetAndLinuxCooked)
{
    EXPECT_TRUE(link_type_readable(1));
    EXPECT_TRUE(link_type_readable(113));
    EXPECT_TRUE(link_type_readable(276));
    EXPECT_FALSE(link_type_readable(0));
    EXPECT_FALSE(link_type_readable(101));
    EXPECT_FALSE(link_type_readable(127));
}

TEST(LinkType, NamesAreLibpcapsForTheFilesNumbers)
{
    EXPECT_EQ(link_type_name(1), "EN10MB (1)");
    EXPECT_EQ(link_type_name(113), "LINUX_SLL (113)");
    // A file's 101 is libpcap's DLT_RAW (12 on Linux): named, with the file's number.
    EXPECT_EQ(link_type_name(101), "RAW (101)");
    EXPECT_EQ(link_type_name(127), "IEEE802_11_RADIO (127)");
    EXPECT_EQ(link_type_name(65000), "65000");
}

TEST(LinkType, BannerIsTcpdumps)
{
    EXPECT_EQ(link_type_banner(1), "EN10MB (Ethernet)");
    EXPECT_EQ(link_type_banner(113), "LINUX_SLL (Linux cooked v1)");
    EXPECT_EQ(link_type_banner(276), "LINUX_SLL2 (Linux cooked v2)");
}
