// Process attribution (-k and the process filters): the kprobes that record
// which process owns each socket, and the maps the capture programs read
// that from. Loaded once for every interface; the kprobes' links are fds,
// gone with the process.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <bpf/libbpf.h>

#include "base/unique_fd.hpp"

struct xdpcap_owners;

namespace xdpcap {

// -k and the process filters: the owners maps the hooks read
// (SocketOwners), shared with every interface's programs. Default: off.
struct Attribution {
    int owners_fd = -1;
    int echo_fd = -1;
    int closing_fd = -1;
    int local_fd = -1;
    int existing_fd = -1;
    int neighbour_fd = -1;
    int peer_netns_fd = -1;
    bool filter = false; // only the packets of wanted owners

    bool on() const noexcept { return owners_fd >= 0; }
};

// A capture or drop object's attribution settings and the owners maps it
// names (bpf/process.h), before it is loaded: with -k the maps are shared
// from `attribution`; otherwise one entry each, so that a capture without -k
// does not create, and for the LRU maps fill, some 8 MB it never reads.
// False, with errno set, when one cannot be shared.
template <class Skeleton>
bool apply_attribution(Skeleton& skel, const Attribution& attribution)
{
    if (attribution.on()) {
        skel.rodata->attribute = 1;
        skel.rodata->process_filter = attribution.filter;
    }
    bpf_map* const maps[] = {skel.maps.socket_owners, skel.maps.echo_owners, skel.maps.closing_owners,
                             skel.maps.local_addresses, skel.maps.existing_owners,
                             skel.maps.neigh_owners, skel.maps.peer_netns};
    const int fds[] = {attribution.owners_fd, attribution.echo_fd, attribution.closing_fd, attribution.local_fd,
                       attribution.existing_fd, attribution.neighbour_fd, attribution.peer_netns_fd};
    for (size_t i = 0; i < std::size(maps); ++i) {
        if ((attribution.on() ? bpf_map__reuse_fd(maps[i], fds[i]) : bpf_map__set_max_entries(maps[i], 1)) != 0)
            return false;
    }
    return true;
}

// Whose sockets the capture keeps (--pid, --follow-forks, --pname,
// --cgroup); none set: every socket's owner is only named (-k).
struct OwnerSelection {
    std::optional<uint32_t> pid;
    bool follow_forks = false;         // and the processes it starts
    std::optional<std::string> comm;   // a command name, as the kernel keeps it (15 bytes)
    std::optional<std::string> cgroup; // a cgroup v2 directory, and those below it
    bool neighbours = false;           // -- COMMAND: and its next hops' ARP and NDP
};

class SocketOwners {
public:
    struct Deleter {
        void operator()(xdpcap_owners* skel) const noexcept; // detaches the kprobes too
    };
    // Kprobes on the socket security hooks where the kernel has kprobe
    // events; else hooks on the cgroup v2 root and raw tracepoints. Raises
    // Error in one line where the kernel can run neither.
    static SocketOwners load(const OwnerSelection& selection);
    // This network namespace's addresses, for the hooks to tell a packet to
    // this host from one passing through; and the other namespaces it has an
    // id for with theirs, where a packet's ends may be sockets too. Raises
    // Error in one line.
    void learn_local_addresses();
    // Once attached: the owners of the TCP and UDP sockets this network
    // namespace already has, from sock_diag and /proc/PID/fd, so that their
    // packets are named from the first. A socket several processes hold
    // names the one the selection wants, else the lowest pid. Returns how
    // many sockets were named; raises Error in one line.
    size_t learn_existing_sockets();
    // From now on every socket a process uses gets its owner recorded.
    void attach();
    // Once attached: what this kernel cannot tell, for one warning line.
    std::optional<std::string> limitation() const;
    // For the capture programs: Attribution with these maps.
    Attribution attribution(bool filter) const;

private:
    SocketOwners(std::unique_ptr<xdpcap_owners, Deleter> skel, bool kprobes, OwnerSelection selection)
        : skel_(std::move(skel)), kprobes_(kprobes), selection_(std::move(selection))
    {
    }
    std::unique_ptr<xdpcap_owners, Deleter> skel_;
    bool kprobes_;
    OwnerSelection selection_;
    std::vector<const char*> missing_; // tracepoints this kernel lacks
};

} // namespace xdpcap
