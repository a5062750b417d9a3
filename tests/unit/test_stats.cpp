#include <gtest/gtest.h>

#include "stats.hpp"

using namespace xdpcap;

namespace {

CpuStats cpu(int id, uint64_t seen, uint64_t sampled, uint64_t failed, uint64_t written)
{
    CpuStats s;
    s.cpu = id;
    s.kernel.seen = seen;
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
