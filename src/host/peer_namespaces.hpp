// The other network namespaces of this host that this one has an id for
// (the namespaces at a veth's other end: containers', test namespaces),
// and their addresses, asked of rtnetlink in this namespace.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/unique_fd.hpp"

namespace xdpcap {

struct NamespaceAddress {
    uint8_t family = 0; // 4 or 6
    std::array<uint8_t, 16> bytes{};
};

struct PeerNamespace {
    int32_t nsid = 0; // its id here, as bpf_sk_lookup_* and IFA_TARGET_NETNSID take it
    std::vector<NamespaceAddress> addresses; // its interfaces' addresses and broadcast addresses
};

// Every namespace with an id here, in the kernel's order; empty where the
// kernel tells none (before 4.20 it cannot list another's addresses).
std::vector<PeerNamespace> peer_namespaces();

// The id here of the network namespace a process is in (RTM_GETNSID by
// pid: no access to its /proc/PID/ns/net needed), one socket for many
// questions. Nothing when the process is gone or its namespace has no id
// here (this namespace's own included).
class ProcessNamespaceIds {
public:
    ProcessNamespaceIds();
    std::optional<int32_t> of(pid_t pid);

private:
    UniqueFd fd_;
    uint32_t sequence_ = 0;
};

} // namespace xdpcap
