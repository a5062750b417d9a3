#include <gtest/gtest.h>

#include "stats.hpp"

using namespace xdpcap;

namespace {

CpuStats cpu(int id, uint64_t seen, uint64_t sampled, uint64_t failed, uint64_t written)
{
    CpuStats s;
    s.cpu = id;
    s.kernel.seen = seen;
    s.kernel.matched = seen; // no filter
    s.kernel.sampled = sampled;
    s.kernel.output_failed = failed;
    s.kernel.ring_full = failed;
    s.ring.samples = sampled;
    s.ring.written = written;
    return s;
}

} // namespace

TEST(Stats, TcpdumpLines)
{
    const std::vector<CpuStats> cpus = {cpu(0, 10, 8, 2, 8), cpu(1, 5, 5, 0, 5)};
    EXPECT_EQ(format_stats(cpus, false),
              "13 packets captured\n15 packets received by filter\n2 packets dropped by kernel\n");
}

TEST(Stats, SingularAsTcpdump)
{
    EXPECT_EQ(format_stats({cpu(0, 1, 1, 0, 1)}, false),
              "1 packet captured\n1 packet received by filter\n0 packets dropped by kernel\n");
}

TEST(Stats, PerCpuBreakdown)
{
    const std::string text = format_stats({cpu(0, 10, 8, 2, 8), cpu(3, 5, 5, 0, 5)}, true);
    EXPECT_NE(text.find("  cpu0: 10 seen, 8 sampled, 8 written, 2 ring full"), std::string::npos) << text;
    EXPECT_NE(text.find("  cpu3: 5 seen"), std::string::npos) << text;
}

TEST(Stats, TotalsAddUp)
{
    const auto totals = sum_stats({cpu(0, 10, 8, 2, 8), cpu(1, 5, 5, 0, 5)});
    EXPECT_EQ(totals.received, totals.captured + totals.dropped + totals.discarded + totals.unwritten + totals.invalid);
}

TEST(Stats, WithFilterReceivedMeansKept)
{
    CpuStats s = cpu(0, 10, 3, 0, 3);
    s.kernel.matched = 3; // the filter kept 3 of the 10 seen
    EXPECT_EQ(format_stats({s}, false, true),
              "3 packets captured\n3 packets received by filter\n0 packets dropped by kernel\n");
    const std::string verbose = format_stats({s}, true, true);
    EXPECT_NE(verbose.find("10 packets seen on the interface"), std::string::npos) << verbose;
    EXPECT_NE(verbose.find(", 3 kept by filter"), std::string::npos) << verbose;
}

TEST(Stats, VerboseShowsPacketsWrittenOutOfOrder)
{
    CpuStats late = cpu(0, 10, 10, 0, 10);
    late.ring.out_of_order = 3;
    const std::string text = format_stats({late, cpu(1, 5, 5, 0, 5)}, true);
    EXPECT_NE(text.find("\n3 packets written out of order\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  cpu0: 10 seen, 10 sampled, 10 written, 0 ring full, 0 other output errors, 0 reported lost, "
                        "0 malformed, 0 after count, 0 not written, 3 written out of order\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(", 0 not written, 0 written out of order\n"), std::string::npos) << text;
    EXPECT_EQ(format_stats({late}, false).find("out of order"), std::string::npos);
    EXPECT_EQ(sum_stats({late, late}).out_of_order, 6u);
}
