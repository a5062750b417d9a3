#include "host/privileges.hpp"

#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <vector>

#include "base/error.hpp"

namespace xdpcap {

namespace {

// Raw capget/capset: no libcap dependency for a handful of bits.
struct CapSets {
    __user_cap_data_struct data[2]{};

    static CapSets current()
    {
        CapSets sets;
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        if (::syscall(SYS_capget, &header, sets.data) != 0)
            throw Error("cannot read this process's capabilities: " + errno_text(errno));
        return sets;
    }
    bool set() noexcept
    {
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        return ::syscall(SYS_capset, &header, data) == 0;
    }
    static bool has(const __u32 (&words)[2], int cap) { return (words[cap / 32] >> (cap % 32)) & 1u; }
    bool effective(int cap) const { return has({data[0].effective, data[1].effective}, cap); }
    bool permitted(int cap) const { return has({data[0].permitted, data[1].permitted}, cap); }
    void add(int cap, bool effective_too)
    {
        data[cap / 32].permitted |= 1u << (cap % 32);
        if (effective_too)
            data[cap / 32].effective |= 1u << (cap % 32);
    }
    void set_effective(int cap, bool on)
    {
        if (on)
            data[cap / 32].effective |= 1u << (cap % 32);
        else
            data[cap / 32].effective &= ~(1u << (cap % 32));
    }
    bool any_permitted() const { return data[0].permitted || data[1].permitted; }
};

std::string fail(const std::string& user, const char* step, int err)
{
    return (user.empty() ? std::string("cannot drop privileges: ") : "cannot change to user " + user + ": ") + step +
        ": " + errno_text(err);
}

// Running as the user and its group already: there is nothing to change.
bool already(const RunAsUser& user)
{
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    return ::getresuid(&ruid, &euid, &suid) == 0 && ::getresgid(&rgid, &egid, &sgid) == 0 && ruid == user.uid &&
        euid == user.uid && suid == user.uid && rgid == user.gid && egid == user.gid && sgid == user.gid;
}

// The user's entry; nothing when there is no such user.
std::optional<RunAsUser> find_user(const std::string& name)
{
    std::vector<char> buffer(16384);
    passwd entry{};
    passwd* found = nullptr;
    const int err = ::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (err != 0 && err != ENOENT && err != ESRCH)
        throw Error("cannot look up user '" + name + "' (-Z): " + errno_text(err));
    if (!found)
        return std::nullopt;
    return RunAsUser{name, entry.pw_uid, entry.pw_gid};
}

// Empties the bounding set but for `kept`, where this process may
// (CAP_SETPCAP): not even a program it could execute would get more.
void drop_bounding_set(const CapSets& kept)
{
    if (!CapSets::current().effective(CAP_SETPCAP))
        return;
    int last = CAP_LAST_CAP;
    std::ifstream("/proc/sys/kernel/cap_last_cap") >> last;
    for (int cap = 0; cap <= last && cap < 64; ++cap) {
        if (!kept.permitted(cap) && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            throw Error(fail("", "PR_CAPBSET_DROP", errno));
    }
}

} // namespace

RunAsUser lookup_run_as_user(const std::string& name)
{
    const std::optional<RunAsUser> found = find_user(name);
    if (!found)
        throw Error("unknown user '" + name + "' (-Z)");
    const RunAsUser& user = *found;
    // Checked now, so that nothing is attached by a run that cannot change.
    const CapSets caps = CapSets::current();
    if (!already(user) && !(caps.effective(CAP_SETUID) && caps.effective(CAP_SETGID)))
        throw Error("-Z " + name + " needs root or the capabilities CAP_SETUID and CAP_SETGID");
    return user;
}

bool bpf_needs_capability_on_open_fds()
{
    // Linux 5.19 limited the sysctl to creating maps and loading programs.
    utsname u{};
    int major = 0, minor = 0;
    if (::uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
        (major > 5 || (major == 5 && minor >= 19)))
        return false;
    std::ifstream sysctl("/proc/sys/kernel/unprivileged_bpf_disabled");
    int disabled = 1;
    if (!(sysctl >> disabled))
        return true;
    return disabled != 0;
}

void drop_privileges(const std::optional<RunAsUser>& user, const KeptCapabilities& keep)
{
    const std::string name = user ? user->name : std::string();
    const CapSets before = CapSets::current();
    CapSets after;
    if (keep.net_admin_at_exit && before.permitted(CAP_NET_ADMIN))
        after.add(CAP_NET_ADMIN, false);
    if (keep.kill && before.permitted(CAP_KILL))
        after.add(CAP_KILL, false);
    if (keep.join) {
        for (const int cap : kJoinCapabilities) {
            if (before.permitted(cap))
                after.add(cap, false);
        }
    }
    if (keep.bpf) {
        // CAP_SYS_ADMIN stands in for CAP_BPF where the latter is missing.
        const int cap = before.permitted(CAP_BPF) ? CAP_BPF : CAP_SYS_ADMIN;
        if (before.permitted(cap))
            after.add(cap, true);
    }
    drop_bounding_set(after);
    if (user && !already(*user)) {
        // A change of user clears every capability unless asked to keep the
        // permitted ones across it.
        if (after.any_permitted() && ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0)
            throw Error(fail(name, "PR_SET_KEEPCAPS", errno));
        if (::initgroups(name.c_str(), user->gid) != 0)
            throw Error(fail(name, "initgroups", errno));
        if (::setresgid(user->gid, user->gid, user->gid) != 0)
            throw Error(fail(name, "setresgid", errno));
        if (::setresuid(user->uid, user->uid, user->uid) != 0)
            throw Error(fail(name, "setresuid", errno));
        if (after.any_permitted())
            ::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    }
    if (!after.set())
        throw Error(fail(name, "capset", errno));
    // Nothing to inherit, and execve (never used, but still) grants nothing.
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        throw Error(fail(name, "PR_SET_NO_NEW_PRIVS", errno));
    if (user && (::getuid() != user->uid || ::geteuid() != user->uid || ::getgid() != user->gid))
        throw Error("cannot change to user " + name + ": the change did not take effect");
}

void keep_only_rename_capabilities() noexcept
{
    try {
        const CapSets before = CapSets::current();
        CapSets after;
        for (const int cap : {CAP_DAC_OVERRIDE, CAP_FOWNER}) {
            if (before.permitted(cap))
                after.add(cap, true);
        }
        drop_bounding_set(after);
        after.set();
        ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    } catch (const Error&) {
    }
}

FileSystemIdentity::FileSystemIdentity(const RunAsUser& user)
{
    if (already(user))
        return;
    const int count = ::getgroups(0, nullptr);
    groups_.resize(count > 0 ? static_cast<size_t>(count) : 0);
    if (count < 0 || ::getgroups(count, groups_.data()) != count)
        throw Error(fail(user.name, "getgroups", errno));
    fsuid_ = static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1)));
    fsgid_ = static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1)));
    changed_ = true;
    // initgroups: the same groups the change of user gives later.
    if (::initgroups(user.name.c_str(), user.gid) != 0) {
        const int err = errno;
        restore();
        throw Error(fail(user.name, "initgroups", err));
    }
    // setfsuid/setfsgid report no error: the ids read back tell.
    ::setfsgid(user.gid);
    ::setfsuid(user.uid);
    if (static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) != user.gid ||
        static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) != user.uid) {
        restore();
        throw Error("cannot change to user " + user.name + ": setfsuid/setfsgid did not take effect");
    }
}

FileSystemIdentity::~FileSystemIdentity()
{
    if (changed_)
        restore();
}

void FileSystemIdentity::restore() noexcept
{
    ::setfsuid(fsuid_);
    ::setfsgid(fsgid_);
    (void)::setgroups(groups_.size(), groups_.data());
}

bool running_privileged()
{
    return ::geteuid() == 0 || ::getuid() == 0 || CapSets::current().any_permitted();
}

std::optional<RunAsUser> default_reading_user()
{
    // A user holding capabilities through the binary's file capabilities
    // keeps its own uid; only the capabilities go.
    if (::getuid() != 0 && ::geteuid() != 0)
        return std::nullopt;
    for (const char* name : {kReadingUser, "nobody"}) {
        if (std::optional<RunAsUser> user = find_user(name))
            return *user;
    }
    throw Error(std::string("no user to read the file as: neither ") + kReadingUser +
                " nor nobody exists; give -Z USER");
}

ScopedCapability::ScopedCapability(int capability) noexcept : capability_(capability)
{
    try {
        CapSets caps = CapSets::current();
        if (caps.effective(capability) || !caps.permitted(capability))
            return;
        caps.set_effective(capability, true);
        raised_ = caps.set();
    } catch (const Error&) {
    }
}

ScopedCapabilities::ScopedCapabilities(std::span<const int> capabilities) noexcept
{
    try {
        CapSets caps = CapSets::current();
        std::vector<int> raising;
        for (const int cap : capabilities) {
            if (!caps.effective(cap) && caps.permitted(cap)) {
                caps.set_effective(cap, true);
                raising.push_back(cap);
            }
        }
        if (!raising.empty() && caps.set())
            raised_ = std::move(raising);
    } catch (...) {
    }
}

ScopedCapabilities::~ScopedCapabilities()
{
    if (raised_.empty())
        return;
    try {
        CapSets caps = CapSets::current();
        for (const int cap : raised_)
            caps.set_effective(cap, false);
        caps.set();
    } catch (const Error&) {
    }
}

ScopedCapability::~ScopedCapability()
{
    if (!raised_)
        return;
    try {
        CapSets caps = CapSets::current();
        caps.set_effective(capability_, false);
        caps.set();
    } catch (const Error&) {
    }
}

void raise_open_file_limit() noexcept
{
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

} // namespace xdpcap
