#include "host/existing_sockets.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

// Request sockets and time-wait sockets have no inode: no process holds one.
constexpr uint32_t held_states = ~((1u << TCP_TIME_WAIT) | (1u << 12 /* TCP_NEW_SYN_RECV */));

void dump(int fd, uint8_t family, uint8_t protocol, std::vector<DiagSocket>& out)
{
    struct {
        nlmsghdr header;
        inet_diag_req_v2 request;
    } message{};
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    message.header.nlmsg_seq = protocol;
    message.request.sdiag_family = family;
    message.request.sdiag_protocol = protocol;
    message.request.idiag_states = protocol == IPPROTO_TCP ? held_states : ~0u;
    if (::send(fd, &message, sizeof message, 0) != static_cast<ssize_t>(sizeof message))
        throw Error("cannot ask the kernel for the sockets that exist (sock_diag): " + errno_text(errno));
    // Large reads: a dump of thousands of sockets in few system calls.
    static constexpr size_t buffer_size = 256 * 1024;
    const std::unique_ptr<char[]> buffer(new char[buffer_size]);
    for (;;) {
        ssize_t got = ::recv(fd, buffer.get(), buffer_size, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            throw Error("cannot read the sockets that exist (sock_diag): " + errno_text(errno));
        }
        for (auto* h = reinterpret_cast<nlmsghdr*>(buffer.get()); NLMSG_OK(h, got);
             h = NLMSG_NEXT(h, got)) {
            if (h->nlmsg_type == NLMSG_DONE)
                return;
            if (h->nlmsg_type == NLMSG_ERROR) {
                const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
                // A kernel without this protocol's diag module lists none.
                if (error->error == -ENOENT)
                    return;
                throw Error("the kernel refuses to list the sockets that exist (sock_diag): " +
                            errno_text(-error->error));
            }
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
                continue;
            const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
            if (m->idiag_inode == 0)
                continue;
            DiagSocket s;
            s.family = family == AF_INET ? 4 : 6;
            s.protocol = protocol;
            s.local_port = ntohs(m->id.idiag_sport);
            s.remote_port = ntohs(m->id.idiag_dport);
            const size_t length = family == AF_INET ? 4 : 16;
            std::memcpy(s.local.data(), m->id.idiag_src, length);
            std::memcpy(s.remote.data(), m->id.idiag_dst, length);
            s.inode = m->idiag_inode;
            out.push_back(s);
        }
    }
}

} // namespace

std::vector<DiagSocket> list_namespace_sockets()
{
    const UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
    if (!fd)
        throw Error("cannot open a sock_diag socket to list the sockets that exist: " + errno_text(errno));
    std::vector<DiagSocket> sockets;
    for (const uint8_t protocol : {IPPROTO_TCP, IPPROTO_UDP}) {
        for (const uint8_t family : {AF_INET, AF_INET6})
            dump(fd.get(), family, protocol, sockets);
    }
    return sockets;
}

uint64_t socket_inode_of_link(const char* target)
{
    static constexpr char prefix[] = "socket:[";
    if (std::strncmp(target, prefix, sizeof prefix - 1) != 0)
        return 0;
    char* end = nullptr;
    const unsigned long long inode = std::strtoull(target + sizeof prefix - 1, &end, 10);
    return end && *end == ']' && end[1] == '\0' ? inode : 0;
}

std::unordered_map<uint64_t, std::vector<pid_t>>
socket_holders(const std::unordered_map<uint64_t, size_t>& wanted, const char* proc)
{
    std::unordered_map<uint64_t, std::vector<pid_t>> holders;
    const std::unique_ptr<DIR, int (*)(DIR*)> processes(::opendir(proc), ::closedir);
    if (!processes)
        throw Error(std::string("cannot list the processes in ") + proc + ": " + errno_text(errno));
    std::vector<pid_t> pids;
    while (const dirent* entry = ::readdir(processes.get())) {
        char* end = nullptr;
        const long pid = std::strtol(entry->d_name, &end, 10);
        if (pid > 0 && *end == '\0')
            pids.push_back(static_cast<pid_t>(pid));
    }
    std::sort(pids.begin(), pids.end());
    char path[64];
    char target[64];
    for (const pid_t pid : pids) {
        std::snprintf(path, sizeof path, "%s/%d/fd", proc, pid);
        const int dir_fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
            continue; // gone, or a kernel thread's
        const std::unique_ptr<DIR, int (*)(DIR*)> fds(::fdopendir(dir_fd), ::closedir);
        if (!fds) {
            ::close(dir_fd);
            continue;
        }
        while (const dirent* entry = ::readdir(fds.get())) {
            if (entry->d_name[0] == '.')
                continue;
            const ssize_t length = ::readlinkat(dir_fd, entry->d_name, target, sizeof target - 1);
            if (length <= 0)
                continue;
            target[length] = '\0';
            const uint64_t inode = socket_inode_of_link(target);
            if (inode == 0 || !wanted.contains(inode))
                continue;
            std::vector<pid_t>& list = holders[inode];
            if (list.empty() || list.back() != pid)
                list.push_back(pid);
        }
    }
    return holders;
}

bool read_process_facts(pid_t pid, ProcessFacts& facts, const char* proc)
{
    facts = ProcessFacts{};
    facts.pid = pid;
    const auto read_file = [&](const char* name, std::string& text) {
        char path[64];
        std::snprintf(path, sizeof path, "%s/%d/%s", proc, pid, name);
        const UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
        if (!fd)
            return false;
        char buffer[4096];
        const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
        if (got < 0)
            return false;
        text.assign(buffer, static_cast<size_t>(got));
        return true;
    };
    std::string stat;
    std::string cgroup;
    if (!read_file("comm", facts.comm) || !read_file("stat", stat) || !read_file("cgroup", cgroup))
        return false;
    if (!facts.comm.empty() && facts.comm.back() == '\n')
        facts.comm.pop_back();
    // "PID (COMM) STATE PPID ...": the command may hold spaces and parentheses.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos)
        return false;
    char state = 0;
    int parent = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &parent) != 2)
        return false;
    facts.parent = parent;
    // The v2 line: "0::/path".
    for (size_t start = 0; start < cgroup.size();) {
        size_t end = cgroup.find('\n', start);
        if (end == std::string::npos)
            end = cgroup.size();
        if (cgroup.compare(start, 3, "0::") == 0) {
            facts.cgroup = cgroup.substr(start + 3, end - start - 3);
            break;
        }
        start = end + 1;
    }
    return true;
}

} // namespace xdpcap
