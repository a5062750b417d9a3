// cgroup v2 directories: where the hierarchy is, and how the kernel numbers
// a directory in it.
#pragma once

#include <cstdint>
#include <string>

#include "base/unique_fd.hpp"

namespace xdpcap {

// A cgroup v2 directory as the kernel numbers it.
struct CgroupId {
    uint64_t id = 0;    // its inode number in the cgroup2 file system
    uint32_t level = 0; // directories between it and the root
};

// The root of the cgroup v2 hierarchy, as a directory fd; `what` starts the
// one-line Error where there is none.
UniqueFd open_cgroup2_root(const char* what);

// `path`: a directory on a cgroup2 file system, or a path below the cgroup2
// root as /proc/PID/cgroup shows it ("/system.slice/x.service"). Raises
// Error in one line when it is neither.
CgroupId resolve_cgroup(const std::string& path);

} // namespace xdpcap
