#include "host/cgroups.hpp"

#include <mntent.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "base/error.hpp"

namespace xdpcap {

namespace {

std::string cgroup2_mount(const char* mounts_file)
{
    std::FILE* mounts = ::setmntent(mounts_file, "r");
    if (!mounts)
        return {};
    std::string root;
    while (const mntent* m = ::getmntent(mounts)) {
        if (std::strcmp(m->mnt_type, "cgroup2") == 0) {
            root = m->mnt_dir;
            break;
        }
    }
    ::endmntent(mounts);
    return root;
}

// A cgroup path relative to the hierarchy's root: `path` is a directory
// under a cgroup2 mount point (here or in init's mount namespace), or
// already relative to the root ("/system.slice/x.service").
std::string cgroup_relative(const std::string& path)
{
    for (const char* mounts : {"/proc/self/mounts", "/proc/1/mounts"}) {
        const std::string mount = cgroup2_mount(mounts);
        if (!mount.empty() && path.compare(0, mount.size(), mount) == 0 &&
            (path.size() == mount.size() || path[mount.size()] == '/'))
            return path.substr(mount.size());
    }
    return path;
}

} // namespace

// The root of the cgroup v2 hierarchy, as a directory fd. Where this mount
// namespace has it mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on
// hosts that still mount v1 controllers), that; else (ip netns exec
// remounts /sys) a mount of our own, detached again at once.
UniqueFd open_cgroup2_root(const char* what)
{
    if (const std::string root = cgroup2_mount("/proc/self/mounts"); !root.empty()) {
        UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!fd)
            throw Error(std::string(what) + ": cannot open " + root + ": " + errno_text(errno));
        return fd;
    }
    char dir[] = "/tmp/xdpcap-cgroup2-XXXXXX";
    if (!::mkdtemp(dir))
        throw Error(std::string(what) + ": no cgroup v2 file system is mounted here, and none can be: " +
                    errno_text(errno));
    UniqueFd fd;
    int err = 0;
    if (::mount("cgroup2", dir, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) {
        fd.reset(::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        err = errno;
        ::umount2(dir, MNT_DETACH);
    } else {
        err = errno;
    }
    ::rmdir(dir);
    if (!fd)
        throw Error(std::string(what) + ": no cgroup v2 file system is mounted here, and none can be: " +
                    errno_text(err));
    return fd;
}

CgroupId resolve_cgroup(const std::string& path)
{
    const UniqueFd root = open_cgroup2_root("--cgroup");
    std::string relative = cgroup_relative(path);
    uint32_t level = 0;
    std::string cleaned;
    for (const auto& part : std::filesystem::path(relative)) {
        const std::string name = part.string();
        if (name.empty() || name == "/" || name == ".")
            continue;
        if (name == "..")
            throw Error("--cgroup " + path + ": give the cgroup without '..'");
        cleaned += (cleaned.empty() ? "" : "/") + name;
        ++level;
    }
    struct stat st {};
    if (::fstatat(root.get(), cleaned.empty() ? "." : cleaned.c_str(), &st, 0) != 0 || !S_ISDIR(st.st_mode))
        throw Error("--cgroup " + path + ": no such cgroup v2 directory");
    return CgroupId{st.st_ino, level};
}

} // namespace xdpcap
