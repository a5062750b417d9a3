#include <gtest/gtest.h>

#include "ring/rings.hpp"

using namespace xdpcap;

TEST(Rings, ParsesCpuLists)
{
    EXPECT_EQ(parse_cpu_list("0-3,5\n"), (std::vector<int>{0, 1, 2, 3, 5}));
    EXPECT_EQ(parse_cpu_list("1"), (std::vector<int>{1}));
    EXPECT_EQ(parse_cpu_list("0,2-3"), (std::vector<int>{0, 2, 3}));
    EXPECT_THROW(parse_cpu_list("x"), Error);
}

TEST(Rings, DefaultSizeSharesTheBudgetWithinBounds)
{
    constexpr size_t kPage = 4096;
    EXPECT_EQ(default_ring_pages(1, kPage), 4096u);  // capped at 16 MiB
    EXPECT_EQ(default_ring_pages(2, kPage), 4096u);  // 16 MiB each
    EXPECT_EQ(default_ring_pages(3, kPage), 2048u);  // 10.7 MiB, rounded down to 8 MiB
    EXPECT_EQ(default_ring_pages(4, kPage), 2048u);
    EXPECT_EQ(default_ring_pages(32, kPage), 256u);  // 1 MiB
    EXPECT_EQ(default_ring_pages(256, kPage), 256u); // never below 1 MiB
    EXPECT_EQ(default_ring_pages(2, 65536), 256u);   // 64 KiB pages: still 16 MiB
}
