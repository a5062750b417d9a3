// The sockets a capture finds already open: sock_diag's list of this
// namespace's sockets, /proc/PID/fd's holders of each, and what /proc says
// of a process. Needs no root: every socket here is this process's own.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "base/unique_fd.hpp"
#include "host/existing_sockets.hpp"

using namespace xdpcap;

namespace {

uint64_t inode_of(int fd)
{
    struct stat st {};
    return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

uint16_t local_port_of(int fd)
{
    sockaddr_in address{};
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    return ntohs(address.sin_port);
}

const DiagSocket* find(const std::vector<DiagSocket>& sockets, uint64_t inode)
{
    const auto it = std::find_if(sockets.begin(), sockets.end(), [&](const DiagSocket& s) { return s.inode == inode; });
    return it == sockets.end() ? nullptr : &*it;
}

} // namespace

TEST(ExistingSockets, ListsListenersConnectionsAndUdpWithTheirEnds)
{
    const UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in loopback{};
    loopback.sin_family = AF_INET;
    loopback.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&loopback), sizeof loopback), 0);
    ASSERT_EQ(::listen(listener.get(), 4), 0);
    loopback.sin_port = htons(local_port_of(listener.get()));
    const UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&loopback), sizeof loopback), 0);
    const UniqueFd server(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(server);
    const UniqueFd udp(::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_in6 any6{};
    any6.sin6_family = AF_INET6;
    ASSERT_EQ(::bind(udp.get(), reinterpret_cast<sockaddr*>(&any6), sizeof any6), 0);

    const std::vector<DiagSocket> sockets = list_namespace_sockets();
    const DiagSocket* l = find(sockets, inode_of(listener.get()));
    const DiagSocket* c = find(sockets, inode_of(client.get()));
    const DiagSocket* s = find(sockets, inode_of(server.get()));
    const DiagSocket* u = find(sockets, inode_of(udp.get()));
    ASSERT_TRUE(l && c && s && u);
    const uint16_t port = ntohs(loopback.sin_port);
    const uint8_t lo[4] = {127, 0, 0, 1};
    EXPECT_EQ(l->family, 4);
    EXPECT_EQ(l->protocol, IPPROTO_TCP);
    EXPECT_EQ(l->local_port, port);
    EXPECT_EQ(l->remote_port, 0);
    EXPECT_EQ(std::memcmp(l->local.data(), lo, 4), 0);
    EXPECT_EQ(c->remote_port, port);
    EXPECT_EQ(s->local_port, port);
    EXPECT_EQ(s->remote_port, c->local_port);
    EXPECT_EQ(std::memcmp(s->remote.data(), lo, 4), 0);
    EXPECT_EQ(u->family, 6);
    EXPECT_EQ(u->protocol, IPPROTO_UDP);
    EXPECT_NE(u->local_port, 0);
    EXPECT_TRUE(std::all_of(u->local.begin(), u->local.end(), [](uint8_t b) { return b == 0; }));

    // Every one of them is this process's, found through /proc/self/fd.
    std::unordered_map<uint64_t, size_t> wanted;
    for (const DiagSocket* each : {l, c, s, u})
        wanted.emplace(each->inode, 0);
    const auto holders = socket_holders(wanted);
    for (const DiagSocket* each : {l, c, s, u}) {
        ASSERT_TRUE(holders.contains(each->inode));
        EXPECT_EQ(holders.at(each->inode), std::vector<pid_t>{::getpid()});
    }
}

TEST(ExistingSockets, SocketLinksAreReadAsInodes)
{
    EXPECT_EQ(socket_inode_of_link("socket:[12345]"), 12345u);
    EXPECT_EQ(socket_inode_of_link("socket:[12345"), 0u);
    EXPECT_EQ(socket_inode_of_link("pipe:[12345]"), 0u);
    EXPECT_EQ(socket_inode_of_link("/dev/null"), 0u);
}

TEST(ExistingSockets, ProcessFactsAreWhatTheKernelRecords)
{
    ProcessFacts facts;
    ASSERT_TRUE(read_process_facts(::getpid(), facts));
    EXPECT_EQ(facts.pid, ::getpid());
    EXPECT_EQ(facts.parent, ::getppid());
    EXPECT_EQ(facts.comm, std::string("unit_tests"));
    EXPECT_EQ(facts.cgroup.substr(0, 1), "/");
    EXPECT_FALSE(read_process_facts(0, facts));
}

TEST(ExistingSockets, ASharedSocketNamesTheWantedHolderElseTheLowestKnownPid)
{
    const std::vector<pid_t> holders{10, 20, 30};
    const auto known = [](pid_t pid) { return pid != 10; };
    EXPECT_EQ(choose_holder(holders, known, [](pid_t pid) { return pid == 30; }), 30);
    EXPECT_EQ(choose_holder(holders, known, [](pid_t) { return false; }), 20);
    EXPECT_EQ(choose_holder(holders, known, [](pid_t) { return true; }), 20);
    EXPECT_EQ(choose_holder(holders, [](pid_t) { return true; }, [](pid_t) { return false; }), 10);
    // A wanted pid that cannot be read names nobody of its own.
    EXPECT_EQ(choose_holder(holders, known, [](pid_t pid) { return pid == 10; }), 20);
    EXPECT_EQ(choose_holder(holders, [](pid_t) { return false; }, [](pid_t) { return true; }), 0);
}
