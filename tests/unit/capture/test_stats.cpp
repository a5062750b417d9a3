#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "capture/stats.hpp"

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

TEST(Stats, BothDirectionsSplitTheKernelCounts)
{
    CpuStats s = cpu(2, 10, 9, 1, 9);
    s.ingress = {6, 6, 6, 0, 0, 0, 0, 0};
    s.egress = {4, 4, 3, 1, 1, 1, 0, 0};
    const std::string text = format_stats({s}, true, false, true);
    EXPECT_NE(text.find("  cpu2: 10 seen, 9 sampled, 9 written, 1 ring full"), std::string::npos) << text;
    EXPECT_NE(text.find("\n    in: 6 seen, 6 sampled, 0 output errors; out: 4 seen, 3 sampled, 1 output errors\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(format_stats({s}, true, false, false).find("in:"), std::string::npos);
    const std::string filtered = format_stats({s}, true, true, true);
    EXPECT_NE(filtered.find("in: 6 seen, 6 kept by filter, 6 sampled"), std::string::npos) << filtered;
}

TEST(Stats, TraceModeSplitsEntryFromExit)
{
    // Trace mode: 5 frames, each seen at entry and at exit; the filter kept
    // 2 at entry and 3 at exit.
    CpuStats s = cpu(1, 10, 5, 0, 5);
    s.kernel.matched = 5;
    s.entry = {5, 2, 2, 0, 0, 0, 0, 0};
    s.exit = {5, 3, 3, 0, 0, 0, 0, 0};
    s.ingress = s.entry + s.exit;
    const std::string both = format_stats({s}, true, true, false, kTraceEntry | kTraceExit);
    EXPECT_NE(both.find("\n    entry: 5 seen, 2 kept by filter, 2 sampled, 0 output errors; "
                        "exit: 5 seen, 3 kept by filter, 3 sampled, 0 output errors\n"),
              std::string::npos)
        << both;
    EXPECT_EQ(both.find("in:"), std::string::npos) << both;
    const std::string with_egress = format_stats({s}, true, false, true, kTraceExit);
    EXPECT_NE(with_egress.find("\n    exit: 5 seen, 3 sampled, 0 output errors; out: 0 seen"), std::string::npos)
        << with_egress;
    EXPECT_EQ(with_egress.find("entry:"), std::string::npos) << with_egress;
    EXPECT_EQ(format_stats({s}, false, true, true, kTraceEntry).find("entry:"), std::string::npos);
}

TEST(Stats, CountersAddFieldByField)
{
    const xdpcap_counters sum = xdpcap_counters{1, 2, 3, 4, 5, 6, 7, 8} + xdpcap_counters{10, 20, 30, 40, 50, 60, 70, 80};
    EXPECT_EQ(sum.seen, 11u);
    EXPECT_EQ(sum.matched, 22u);
    EXPECT_EQ(sum.sampled, 33u);
    EXPECT_EQ(sum.output_failed, 44u);
    EXPECT_EQ(sum.ring_full, 55u);
    EXPECT_EQ(sum.pending_drops, 66u);
    EXPECT_EQ(sum.sample_skipped, 77u);
    EXPECT_EQ(sum.no_link_header, 88u);
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

namespace {

CpuStats on(const char* interface, CpuStats s)
{
    s.interface = interface;
    return s;
}

} // namespace

TEST(Stats, SeveralInterfacesGetALineEach)
{
    const std::vector<CpuStats> cpus = {on("veth0", cpu(0, 10, 8, 2, 8)), on("veth0", cpu(1, 5, 5, 0, 5)),
                                        on("veth1", cpu(0, 1, 1, 0, 1)), on("veth1", cpu(1, 0, 0, 0, 0))};
    EXPECT_EQ(format_stats(cpus, false),
              "14 packets captured\n16 packets received by filter\n2 packets dropped by kernel\n"
              "veth0: 13 packets captured, 15 received by filter, 2 dropped by kernel\n"
              "veth1: 1 packet captured, 1 received by filter, 0 dropped by kernel\n");
    const std::string verbose = format_stats(cpus, true);
    EXPECT_NE(verbose.find("\n  veth0@cpu1: 5 seen, 5 sampled, 5 written"), std::string::npos) << verbose;
    EXPECT_NE(verbose.find("\n  veth1@cpu0: 1 seen, 1 sampled, 1 written"), std::string::npos) << verbose;
    EXPECT_EQ(verbose.find("  cpu"), std::string::npos) << verbose;
}

TEST(Stats, OneInterfaceKeepsTcpdumpsLinesOnly)
{
    const std::string text = format_stats({on("veth0", cpu(0, 3, 3, 0, 3)), on("veth0", cpu(1, 1, 1, 0, 1))}, true);
    EXPECT_EQ(text.find("veth0"), std::string::npos) << text;
    EXPECT_NE(text.find("\n  cpu1: 1 seen"), std::string::npos) << text;
}

// At a rotation: what the kernel sampled but the rings still hold, and the
// sample on its way to the next file, are the next file's.
TEST(Stats, AsTakenLeavesWhatTheRingsHoldToLater)
{
    CpuStats a = cpu(0, 20, 18, 2, 10);
    a.ring.samples = 12; // 6 still in the ring
    CpuStats b = cpu(1, 5, 5, 0, 4);
    const auto taken = as_taken({a, b}, size_t{1}); // one of cpu1's is pending
    EXPECT_EQ(taken[0].kernel.seen, 14u);
    EXPECT_EQ(taken[0].kernel.matched, 14u);
    EXPECT_EQ(taken[0].kernel.sampled, 12u);
    EXPECT_EQ(taken[0].ring.written, 10u);
    EXPECT_EQ(taken[1].kernel.seen, 4u);
    EXPECT_EQ(taken[1].ring.samples, 4u);
    EXPECT_EQ(taken[1].ring.written, 4u);
    // Nothing pending and nothing in flight: unchanged.
    EXPECT_EQ(as_taken({b})[0].kernel.seen, 5u);
}

// Frames staged in a CPU's batch are seen, not yet sampled: the next file's.
TEST(Stats, AsTakenLeavesStagedFramesToLater)
{
    CpuStats a = cpu(0, 30, 20, 0, 20);
    a.ring.samples = 20;
    a.staged = 10;
    const auto taken = as_taken({a});
    EXPECT_EQ(taken[0].kernel.seen, 20u);
    EXPECT_EQ(taken[0].kernel.matched, 20u);
    EXPECT_EQ(taken[0].kernel.sampled, 20u);
}

TEST(Stats, SamplingAddsTheSkippedPackets)
{
    CpuStats s = cpu(0, 100, 10, 0, 10);
    s.kernel.sample_skipped = 90;
    StatsFormat format;
    format.sample_every = 10;
    EXPECT_EQ(format_stats({s}, format), "10 packets captured\n100 packets received by filter\n"
                                         "0 packets dropped by kernel\n90 packets skipped by sampling (1 in 10 kept)\n");
    format.per_cpu = true;
    const std::string verbose = format_stats({s}, format);
    EXPECT_NE(verbose.find("0 written out of order, 90 skipped by sampling\n"), std::string::npos) << verbose;
    format.both_directions = true;
    s.ingress = s.kernel;
    const std::string split = format_stats({s}, format);
    EXPECT_NE(split.find("in: 100 seen, 90 skipped by sampling, 10 sampled, 0 output errors;"), std::string::npos)
        << split;
    // Without --sample the line is absent, as before.
    EXPECT_EQ(format_stats({s}, false).find("sampling"), std::string::npos);
    CpuStats one = cpu(0, 10, 1, 0, 1);
    one.kernel.sample_skipped = 1;
    EXPECT_NE(format_stats({one}, StatsFormat{.sample_every = 2}).find("\n1 packet skipped by sampling (1 in 2"),
              std::string::npos);
}

TEST(Stats, InterimStatisticsAreOneMarkedLine)
{
    const std::vector<CpuStats> cpus = {cpu(0, 10, 8, 2, 8), cpu(1, 5, 5, 0, 5)};
    StatsFormat format;
    format.interim = true;
    EXPECT_EQ(format_stats(cpus, format), "interim statistics: 13 packets captured, 15 packets received by filter, "
                                          "2 packets dropped by kernel\n");
    format.per_cpu = true;
    const std::string verbose = format_stats(cpus, format);
    EXPECT_EQ(verbose.rfind(kInterimPrefix, 0), 0u) << verbose;
    EXPECT_NE(verbose.find("kernel, 0 packets written out of order\n  cpu0: "), std::string::npos) << verbose;
    // The final statistics never carry the marker.
    format.interim = false;
    EXPECT_EQ(format_stats(cpus, format).find("interim"), std::string::npos);
}

TEST(Stats, KernelDropsByReason)
{
    CpuStats s = cpu(0, 10, 10, 0, 10);
    s.drops = {4, 4, 4, 0, 0, 0, 0, 1};
    StatsFormat format{.drops = true, .drop_reasons = {{"NO_SOCKET", 3}, {"IP_CSUM", 1}}};
    EXPECT_EQ(format_stats({s}, format),
              "10 packets captured\n10 packets received by filter\n0 packets dropped by kernel\n"
              "4 packets dropped by the kernel's stack\n"
              "1 packet dropped by the kernel's stack before it had an Ethernet header (not captured)\n");
    format.per_cpu = true;
    const std::string verbose = format_stats({s}, format);
    EXPECT_NE(verbose.find("\n4 packets dropped by the kernel's stack: NO_SOCKET 3, IP_CSUM 1\n"), std::string::npos)
        << verbose;
    EXPECT_NE(verbose.find("drops: 4 seen, 4 sampled, 0 output errors"), std::string::npos) << verbose;
    format.drop_misses = 2;
    EXPECT_NE(format_stats({s}, format).find("\n2 drops missed: the drop program was already running on that CPU\n"),
              std::string::npos);
    format.interim = true;
    const std::string interim = format_stats({s}, format);
    EXPECT_NE(interim.find(", 4 packets dropped by the kernel's stack: NO_SOCKET 3, IP_CSUM 1, "), std::string::npos)
        << interim;
}

// Samples read once the capture had ended are counted, with why.
TEST(Stats, NotWrittenAfterTheEnd)
{
    CpuStats s = cpu(0, 26, 26, 0, 24);
    s.ring.discarded = 2;
    const auto totals = sum_stats({s});
    EXPECT_EQ(totals.received, totals.captured + totals.dropped + totals.discarded + totals.unwritten + totals.invalid);
    const std::string by_count = format_stats({s}, false);
    EXPECT_EQ(by_count, "24 packets captured\n26 packets received by filter\n0 packets dropped by kernel\n"
                        "2 packets not written: the count of -c was reached\n");
    const std::string by_files = format_stats({s}, StatsFormat{.file_limit_reached = true});
    EXPECT_NE(by_files.find("\n2 packets not written: the last file of -W was complete\n"), std::string::npos)
        << by_files;
    s.ring.discarded = 1;
    EXPECT_NE(format_stats({s}, false).find("\n1 packet not written: the count"), std::string::npos);
    CpuStats other = cpu(1, 3, 3, 0, 3);
    other.interface = "eth1";
    s.interface = "eth0";
    EXPECT_NE(format_stats({s, other}, false).find("eth0: 24 packets captured, 26 received by filter, 0 dropped by "
                                                   "kernel, 1 not written after the capture ended\n"),
              std::string::npos);
}

namespace {

// The man page as plain words: no comments, macros, fonts or quotes, roff's
// escapes for '-' and apostrophes resolved, white space collapsed.
std::string man_page_words()
{
    std::ifstream in(XDPCAP_MAN_PAGE);
    std::string words;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(".\\\"", 0) == 0)
            continue;
        if (!line.empty() && line[0] == '.')
            line = line.find(' ') == std::string::npos ? "" : line.substr(line.find(' '));
        line = std::regex_replace(line, std::regex(R"(\\f(\[[^\]]*\]|\(..|.))"), "");
        line = std::regex_replace(line, std::regex(R"(\\-)"), "-");
        line = std::regex_replace(line, std::regex(R"(\\\(aq|\\\(cq)"), "'");
        line = std::regex_replace(line, std::regex(R"(\\\(lq|\\\(rq|\\&|")"), " ");
        words += line + ' ';
    }
    return std::regex_replace(words, std::regex(R"(\s+)"), " ");
}

} // namespace

// Every counter the statistics can print, with every option that adds one
// and every count non-zero, is named in the man page (STATISTICS).
TEST(Stats, EveryCounterIsInTheManPage)
{
    const std::string man = man_page_words();
    ASSERT_GT(man.size(), 10000u) << XDPCAP_MAN_PAGE;
    std::vector<CpuStats> cpus;
    for (int n = 0; n < 2; ++n) {
        CpuStats s;
        s.cpu = n;
        s.interface = n == 0 ? "eth0" : "eth1";
        for (xdpcap_counters* k : {&s.kernel, &s.ingress, &s.egress, &s.entry, &s.exit, &s.drops}) {
            k->seen = 90;
            k->matched = 80;
            k->sampled = 70;
            k->sample_skipped = 3;
            k->output_failed = 5;
            k->ring_full = 2;
            k->no_link_header = 2;
        }
        s.ring = RingTally{.samples = 70, .written = 60, .discarded = 2, .unwritten = 2, .invalid = 2,
                           .lost_records = 2, .out_of_order = 2, .cut = 2, .partial = 2, .incomplete = 2,
                           .stray_parts = 2};
        cpus.push_back(s);
    }
    std::string printed;
    for (const bool per_cpu : {false, true}) {
        for (const unsigned trace : {0u, kTraceEntry | kTraceExit}) {
            for (const bool limit : {false, true}) {
                printed += format_stats(cpus, StatsFormat{.per_cpu = per_cpu,
                                                          .filtering = true,
                                                          .both_directions = true,
                                                          .trace_points = trace,
                                                          .sample_every = 4,
                                                          .drops = true,
                                                          .drop_reasons = {{"NO_SOCKET", 5}},
                                                          .drop_misses = 2,
                                                          .largest_snaplen = true,
                                                          .file_limit_reached = limit});
            }
        }
    }
    // A label is what follows a count, up to the next count or separator.
    const std::regex label(R"((?:^|[ (])\d+ ([A-Za-z][^,;:\n(0-9]*[A-Za-z)]))");
    size_t checked = 0;
    for (auto it = std::sregex_iterator(printed.begin(), printed.end(), label); it != std::sregex_iterator(); ++it) {
        const std::string text = (*it)[1].str();
        ++checked;
        EXPECT_NE(man.find(text), std::string::npos) << "printed but not in the man page: \"" << text << "\"";
    }
    EXPECT_GT(checked, 40u) << printed;
}
