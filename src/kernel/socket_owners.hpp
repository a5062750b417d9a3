// Process attribution (-k and the process filters): the kprobes that record
// which process owns each socket, and the maps the capture programs read
// that from. Loaded once for every interface; the kprobes' links are fds,
// gone with the process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cli/config.hpp"

struct xdpcap_owners;

namespace xdpcap {

// -k and the process filters: the owners maps the hooks read
// (SocketOwners), shared with every interface's programs. Default: off.
struct Attribution {
    int owners_fd = -1;
    int echo_fd = -1;
    bool filter = false; // only the packets of wanted owners

    bool on() const noexcept { return owners_fd >= 0; }
};

// A cgroup v2 directory as the kernel numbers it.
struct CgroupId {
    uint64_t id = 0;    // its inode number in the cgroup2 file system
    uint32_t level = 0; // directories between it and the root
};

// `path`: a directory on a cgroup2 file system, or a path below the cgroup2
// root as /proc/PID/cgroup shows it ("/system.slice/x.service"). Raises
// Error in one line when it is neither.
CgroupId resolve_cgroup(const std::string& path);

class SocketOwners {
public:
    struct Deleter {
        void operator()(xdpcap_owners* skel) const noexcept; // detaches the kprobes too
    };
    // Raises Error in one line where the kernel cannot run the kprobes.
    static SocketOwners load(const ProcessSelection& selection);
    // From now on every socket a process uses gets its owner recorded.
    void attach();
    int owners_map_fd() const;
    int echo_map_fd() const;

private:
    explicit SocketOwners(std::unique_ptr<xdpcap_owners, Deleter> skel) : skel_(std::move(skel)) {}
    std::unique_ptr<xdpcap_owners, Deleter> skel_;
};

} // namespace xdpcap
