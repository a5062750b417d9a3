// -Z and the capability drop: once the programs are attached and the rings
// mapped, the capture needs (almost) no privilege, so it keeps none it does
// not use.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

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
};

// Whether this kernel needs KeptCapabilities::bpf (see there).
bool bpf_needs_capability_on_open_fds();

// Changes to `user` when given (supplementary groups, group, user), then
// drops every capability but `keep` from every set, and forbids regaining
// any through execve. Raises Error when a step fails.
void drop_privileges(const std::optional<RunAsUser>& user, const KeptCapabilities& keep);

// Raises a capability kept in the permitted set into the effective set for
// its lifetime (no-op when it is effective already or not permitted).
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
