#include <gtest/gtest.h>

#include <cstring>

#include "output/process_labels.hpp"

using namespace xdpcap;

namespace {

xdpcap_process process(uint32_t pid, uint32_t tid, const char* comm)
{
    xdpcap_process p{};
    p.pid = pid;
    p.tid = tid;
    std::strncpy(p.comm, comm, sizeof p.comm);
    return p;
}

} // namespace

TEST(ProcessLabels, NamesTheProcessAsMacOsTcpdump)
{
    ProcessLabels labels;
    EXPECT_EQ(labels.label(process(1234, 1234, "curl")), "proc curl:1234");
    EXPECT_EQ(labels.label(process(1234, 1240, "curl")), "proc curl:1234, tid 1240");
    EXPECT_EQ(labels.label(process(0, 0, "")), "");
}

TEST(ProcessLabels, FifteenBytesAndNoControlCharacters)
{
    ProcessLabels labels;
    xdpcap_process p = process(7, 7, "");
    std::memcpy(p.comm, "abcdefghijklmno\0", 16);
    EXPECT_EQ(labels.label(p), "proc abcdefghijklmno:7");
    p.comm[1] = '\n';
    EXPECT_EQ(labels.label(p), "proc a?cdefghijklmno:7");
}

TEST(ProcessLabels, AnOwnerSharingASlotIsNotConfused)
{
    ProcessLabels labels;
    // Every pid in turn: any two that share a slot are told apart.
    for (uint32_t pid = 1; pid < 2000; ++pid)
        ASSERT_EQ(labels.label(process(pid, pid, "x")), "proc x:" + std::to_string(pid));
    EXPECT_EQ(labels.label(process(5, 5, "y")), "proc y:5");
}

TEST(ProcessLabels, NamesTheContainerOncePerOwner)
{
    int asked = 0;
    ProcessLabels labels([&](uint64_t cgroup) {
        ++asked;
        return cgroup == 77 ? std::string("web") : std::string();
    });
    xdpcap_process p = process(10, 10, "wget");
    p.cgroup_id = 77;
    EXPECT_EQ(labels.label(p), "proc wget:10, container web");
    EXPECT_EQ(labels.label(p), "proc wget:10, container web");
    p.cgroup_id = 78;
    EXPECT_EQ(labels.label(p), "proc wget:10");
    EXPECT_EQ(asked, 2);
}

TEST(ProcessLabels, ReadBackFromAFile)
{
    const auto named = [](std::string_view label, uint32_t pid) {
        const auto n = ProcessLabels::parse(label, pid);
        return n ? std::string(n->comm) + "|" + std::string(n->container) : std::string("none");
    };
    EXPECT_EQ(named("proc curl:1234", 1234), "curl|");
    EXPECT_EQ(named("proc curl:1234, tid 1240", 1234), "curl|");
    EXPECT_EQ(named("proc wget:10, tid 11, container web", 10), "wget|web");
    EXPECT_EQ(named("proc wget:10, container my:10, box", 10), "wget|my:10, box");
    // A name with ':' and ", " in it, and one of 15 bytes.
    EXPECT_EQ(named("proc a:5, b:7:7", 7), "a:5, b:7|");
    EXPECT_EQ(named("proc abcdefghijklmno:7", 7), "abcdefghijklmno|");
    // Not a label of that process, or no label at all.
    EXPECT_EQ(named("proc curl:1234", 123), "none");
    EXPECT_EQ(named("proc curl:1234", 12345), "none");
    EXPECT_EQ(named("drop reason NO_SOCKET", 1), "none");
    EXPECT_EQ(named("proc abcdefghijklmnop:7", 7), "none");
}

// Both ends on this host: the sender, " > ", the receiver, each with its own
// thread and container; told apart from the same sender with another peer.
TEST(ProcessLabels, NamesBothEndsSenderFirst)
{
    ProcessLabels labels([](uint64_t cgroup) { return cgroup == 77 ? std::string("web") : std::string(); });
    xdpcap_process server = process(987, 990, "http.server");
    server.cgroup_id = 77;
    EXPECT_EQ(labels.label(process(1234, 1234, "curl"), server), "proc curl:1234 > http.server:987, tid 990, container web");
    EXPECT_EQ(labels.label(server, process(1234, 1234, "curl")), "proc http.server:987, tid 990, container web > curl:1234");
    EXPECT_EQ(labels.label(process(1234, 1234, "curl"), process(5, 5, "nc")), "proc curl:1234 > nc:5");
    EXPECT_EQ(labels.label(process(1234, 1234, "curl")), "proc curl:1234");
}

TEST(ProcessLabels, BothEndsReadBackFromAFile)
{
    const auto first = [](std::string_view label, uint32_t pid) {
        const auto n = ProcessLabels::parse(label, pid);
        return n ? std::string(n->comm) + "|" + std::string(n->container) : std::string("none");
    };
    const auto peer = [](std::string_view label, uint32_t pid) {
        const auto n = ProcessLabels::parse_peer(label, pid);
        return n ? std::string(n->comm) + ":" + std::to_string(n->pid) + "|" + std::string(n->container)
                 : std::string("none");
    };
    EXPECT_EQ(first("proc curl:1234 > http.server:987", 1234), "curl|");
    EXPECT_EQ(peer("proc curl:1234 > http.server:987", 1234), "http.server:987|");
    EXPECT_EQ(first("proc wget:10, container b > httpd:20, tid 21, container a", 10), "wget|b");
    EXPECT_EQ(peer("proc wget:10, container b > httpd:20, tid 21, container a", 10), "httpd:20|a");
    EXPECT_EQ(peer("proc wget:10 > httpd:20, container a", 10), "httpd:20|a");
    // Names holding ':', " > " and digits.
    EXPECT_EQ(first("proc a > b:1:7 > c:2:9", 7), "a > b:1|");
    EXPECT_EQ(peer("proc a > b:1:7 > c:2:9", 7), "c:2:9|");
    // One end only.
    EXPECT_EQ(peer("proc curl:1234", 1234), "none");
    EXPECT_EQ(peer("proc curl:1234, container web", 1234), "none");
    EXPECT_EQ(peer("proc curl:1234 > x", 1234), "none");
}
