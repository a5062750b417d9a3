// Sockets that exist before a capture starts, and who holds them: the
// kernel's sock_diag lists this network namespace's TCP and UDP sockets
// with their addresses and inode; /proc/PID/fd names the processes whose
// descriptors point at each inode.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace xdpcap {

// One socket as sock_diag shows it. Addresses in network order, IPv4 in the
// first four bytes; ports in host order; the remote end zero for listeners
// and unconnected UDP sockets.
struct DiagSocket {
    uint8_t family = 0;   // 4 or 6 (an IPv6 socket's IPv4 peers v4-mapped)
    uint8_t protocol = 0; // IPPROTO_TCP or IPPROTO_UDP
    uint16_t local_port = 0;
    uint16_t remote_port = 0;
    std::array<uint8_t, 16> local{};
    std::array<uint8_t, 16> remote{};
    uint64_t inode = 0;
};

// The TCP (but time-wait and request sockets, which no process holds) and
// UDP sockets of this process's network namespace, IPv4 and IPv6. Raises
// Error in one line when the kernel does not answer.
std::vector<DiagSocket> list_namespace_sockets();

// A process as the kernel names it: what the socket hooks record.
struct ProcessFacts {
    pid_t pid = 0;
    pid_t parent = 0;
    std::string comm;   // /proc/PID/comm, at most 15 bytes
    std::string cgroup; // its cgroup v2 path below the root ("/system.slice/x.service")
};

// For each inode in `wanted`, the processes with a descriptor on it, in
// ascending pid order. Processes that go while they are read are skipped.
std::unordered_map<uint64_t, std::vector<pid_t>>
socket_holders(const std::unordered_map<uint64_t, size_t>& wanted, const char* proc = "/proc");

// Of the processes holding one socket (ascending pids), the one it is
// named after: the first `wanted` (the process selection keeps it), else
// the first `known` (it could be read), most often the parent that made a
// socket it shares with its children. 0 when none is known.
template <class Known, class Wanted>
pid_t choose_holder(const std::vector<pid_t>& pids, Known known, Wanted wanted)
{
    pid_t chosen = 0;
    for (const pid_t pid : pids) {
        if (!known(pid))
            continue;
        if (wanted(pid))
            return pid;
        if (chosen == 0)
            chosen = pid;
    }
    return chosen;
}

// What /proc says of `pid`; false when it is gone.
bool read_process_facts(pid_t pid, ProcessFacts& facts, const char* proc = "/proc");

// The inode of a "/proc/PID/fd" link's target "socket:[INODE]"; 0 when it is
// not a socket.
uint64_t socket_inode_of_link(const char* target);

} // namespace xdpcap
