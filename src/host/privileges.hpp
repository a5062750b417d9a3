// -Z and the capability drop: once the programs are attached and the rings
// mapped, the capture needs (almost) no privilege, so it keeps none it does
// not use.
#pragma once

#include <linux/capability.h>
#include <sys/types.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace xdpcap {

// The user -Z names, looked up before anything is attached.
struct RunAsUser {
    std::string name;
    uid_t uid = 0;
    gid_t gid = 0; // the user's primary group
};

// Raises Error (one line) for an unknown user, or when this process could
// not change to it (neither root nor CAP_SETUID and CAP_SETGID).
RunAsUser lookup_run_as_user(const std::string& name);

// What the run still needs after setup.
struct KeptCapabilities {
    // Removing the clsact egress filter (and qdisc) at exit: a netlink
    // request that needs CAP_NET_ADMIN. Kept permitted, raised only then.
    bool net_admin_at_exit = false;
    // Kernels before 5.19 with kernel.unprivileged_bpf_disabled set refuse
    // every bpf() command without CAP_BPF, even on an open map or link.
    // Kept effective for the whole run then.
    bool bpf = false;
    // Stopping -- COMMAND's process group when it runs as another user
    // than xdpcap (through sudo, say). Kept permitted, raised only then.
    bool kill = false;
    // -i any and -i PATTERN: an interface created during the capture joins
    // it, which loads and attaches its programs and maps its rings as the
    // start did: kJoinCapabilities, kept permitted and raised only then.
    bool join = false;
};

// What loading, mapping and attaching an interface's capture takes: bpf()
// (CAP_BPF; CAP_SYS_ADMIN where a kernel knows no CAP_BPF, and to read
// another program's name by its id), the perf rings (CAP_PERFMON, and
// CAP_IPC_LOCK beyond perf_event_mlock_kb) and tc (CAP_NET_ADMIN).
inline constexpr int kJoinCapabilities[] = {CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_IPC_LOCK};

// Whether this kernel needs KeptCapabilities::bpf (see there).
bool bpf_needs_capability_on_open_fds();

// Changes to `user` when given (supplementary groups, group, user), then
// drops every capability but `keep` from every set, and forbids regaining
// any through execve. Raises Error when a step fails.
void drop_privileges(const std::optional<RunAsUser>& user, const KeptCapabilities& keep);

// While it lives, files are opened as `user` would open them: this thread's
// file-system user and group ids (setfsuid(2)) and the process's
// supplementary groups are the user's, so a file created belongs to it and
// the permissions checked are its own; a root process's file capabilities
// (CAP_DAC_OVERRIDE, ...) are out of the effective set meanwhile. Restored
// when destroyed. Nothing changes when the process is the user already.
class FileSystemIdentity {
public:
    explicit FileSystemIdentity(const RunAsUser& user);
    ~FileSystemIdentity();
    FileSystemIdentity(const FileSystemIdentity&) = delete;
    FileSystemIdentity& operator=(const FileSystemIdentity&) = delete;

private:
    void restore() noexcept;

    bool changed_ = false;
    uid_t fsuid_ = 0;
    gid_t fsgid_ = 0;
    std::vector<gid_t> groups_;
};

// Whether this process holds any privilege to give up: root, or a
// capability in its permitted set.
bool running_privileged();

// -i any holds several descriptors per interface (programs, maps, links):
// the soft limit on open files is raised to the hard one.
void raise_open_file_limit() noexcept;

// Whom -r reads as without -Z: started as root, the unprivileged user
// kReadingUser when the system has one, else nobody; started as another
// user (with file capabilities), no change of user.
inline constexpr const char* kReadingUser = "xdpcap";
std::optional<RunAsUser> default_reading_user();

// The process that only renames a file into place keeps what that takes:
// CAP_DAC_OVERRIDE (any directory) and CAP_FOWNER (a sticky one), where it
// holds them; every other capability goes, and no_new_privs is set. Best
// effort: what this process does next is safe without it.
void keep_only_rename_capabilities() noexcept;

// Raises a capability kept in the permitted set into the effective set for
// its lifetime (no-op when it is effective already or not permitted).
// Several at once: KeptCapabilities::join's while an interface joins.
class ScopedCapabilities {
public:
    explicit ScopedCapabilities(std::span<const int> capabilities) noexcept;
    ~ScopedCapabilities();
    ScopedCapabilities(const ScopedCapabilities&) = delete;
    ScopedCapabilities& operator=(const ScopedCapabilities&) = delete;

private:
    std::vector<int> raised_;
};

class ScopedCapability {
public:
    explicit ScopedCapability(int capability) noexcept;
    ~ScopedCapability();
    ScopedCapability(const ScopedCapability&) = delete;
    ScopedCapability& operator=(const ScopedCapability&) = delete;

private:
    int capability_;
    bool raised_ = false;
};

} // namespace xdpcap
