#include "kernel/socket_owners.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>
#include <mntent.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "owners.skel.h"
#include "error.hpp"

namespace xdpcap {

void SocketOwners::Deleter::operator()(xdpcap_owners* skel) const noexcept
{
    xdpcap_owners__destroy(skel);
}

namespace {

bool on_cgroup2(const std::string& path)
{
    struct statfs fs {};
    return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

// Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup, or
// /sys/fs/cgroup/unified on hosts that still mount v1 controllers.
std::string cgroup2_root()
{
    std::FILE* mounts = ::setmntent("/proc/self/mounts", "r");
    if (!mounts)
        throw Error("cannot read /proc/self/mounts: " + errno_text(errno));
    std::string root;
    while (const mntent* m = ::getmntent(mounts)) {
        if (std::strcmp(m->mnt_type, "cgroup2") == 0) {
            root = m->mnt_dir;
            break;
        }
    }
    ::endmntent(mounts);
    if (root.empty())
        throw Error("--cgroup: no cgroup v2 file system is mounted here");
    return root;
}

} // namespace

CgroupId resolve_cgroup(const std::string& path)
{
    namespace fs = std::filesystem;
    const std::string root = cgroup2_root();
    std::string dir = path;
    if (!on_cgroup2(dir))
        dir = root + (path.front() == '/' ? "" : "/") + path;
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !on_cgroup2(dir))
        throw Error("--cgroup " + path + ": no such cgroup v2 directory (under " + root + ")");
    std::error_code ec;
    const fs::path canonical = fs::canonical(dir, ec);
    const fs::path canonical_root = fs::canonical(root, ec);
    if (ec)
        throw Error("--cgroup " + path + ": " + ec.message());
    uint32_t level = 0;
    for (const auto& part : canonical.lexically_relative(canonical_root)) {
        if (part != ".")
            ++level;
    }
    return CgroupId{st.st_ino, level};
}

SocketOwners SocketOwners::load(const ProcessSelection& selection)
{
    std::unique_ptr<xdpcap_owners, Deleter> skel(xdpcap_owners__open());
    if (!skel)
        throw Error("cannot open the process attribution programs: " + errno_text(errno));
    if (selection.pid) {
        skel->rodata->want_pid = *selection.pid;
        skel->rodata->want_descendants = selection.follow_forks;
    }
    if (selection.comm) {
        skel->rodata->match_comm = 1;
        std::memcpy(const_cast<char*>(skel->rodata->want_comm), selection.comm->data(),
                    std::min(selection.comm->size(), sizeof(skel->rodata->want_comm) - 1));
    }
    if (selection.cgroup) {
        const CgroupId cgroup = resolve_cgroup(*selection.cgroup);
        skel->rodata->want_cgroup = cgroup.id;
        skel->rodata->want_cgroup_level = cgroup.level;
    }
    if (const int err = -xdpcap_owners__load(skel.get())) {
        if (err == EPERM)
            throw Error("cannot load the process attribution programs: " + errno_text(err) +
                        " (needs root or CAP_BPF and CAP_PERFMON)");
        throw Error("process attribution needs kprobes on the kernel's socket security hooks "
                    "(CONFIG_KPROBES, CONFIG_SECURITY_NETWORK); loading them failed: " + errno_text(err));
    }
    return SocketOwners(std::move(skel));
}

void SocketOwners::attach()
{
    // Each kept in the skeleton, which detaches it when destroyed.
    const std::pair<bpf_program*, bpf_link**> probes[] = {
        {skel_->progs.xdpcap_socket_created, &skel_->links.xdpcap_socket_created},
        {skel_->progs.xdpcap_socket_connect, &skel_->links.xdpcap_socket_connect},
        {skel_->progs.xdpcap_socket_sendmsg, &skel_->links.xdpcap_socket_sendmsg},
        {skel_->progs.xdpcap_socket_recvmsg, &skel_->links.xdpcap_socket_recvmsg},
        {skel_->progs.xdpcap_socket_accepted, &skel_->links.xdpcap_socket_accepted},
        {skel_->progs.xdpcap_socket_cloned, &skel_->links.xdpcap_socket_cloned},
        {skel_->progs.xdpcap_socket_freed, &skel_->links.xdpcap_socket_freed},
    };
    for (const auto& [program, link] : probes) {
        *link = bpf_program__attach(program);
        if (!*link) {
            const int err = errno;
            const char* section = bpf_program__section_name(program);
            const char* function = std::strchr(section, '/');
            throw Error(std::string("process attribution needs a kprobe on ") + (function ? function + 1 : section) +
                        ": " + errno_text(err));
        }
    }
}

int SocketOwners::owners_map_fd() const
{
    return bpf_map__fd(skel_->maps.socket_owners);
}

int SocketOwners::echo_map_fd() const
{
    return bpf_map__fd(skel_->maps.echo_owners);
}

} // namespace xdpcap
