// The process side of a live capture: --container's container, and the
// socket owners and -- COMMAND's child that --pid, --pname, --cgroup and -k
// need.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/config.hpp"
#include "host/command.hpp"
#include "host/containers.hpp"
#include "host/key_log_files.hpp"
#include "host/privileges.hpp"
#include "programs/owners.hpp"
#include "programs/uprobes.hpp"

namespace xdpcap::live {

// --container; with --container-netns this process enters its network
// namespace. Nothing without --container.
std::optional<Container> enter_container(const Config& config);

// --pid, --pname, --cgroup, --container, -- COMMAND: one set of socket
// owners for every interface, and the child whose pid they are filtered by.
struct ProcessSide {
    // --tls-keys: the command's key log; removed after the command ended.
    std::unique_ptr<CommandKeyLog> key_log;
    std::optional<CommandChild> command; // -- COMMAND
    ContainerNames container_names;      // -k: the containers of the owners' cgroups
    SocketOwners owners;
    std::optional<TlsKeyProbes> tls_keys; // --tls-keylog
    std::vector<std::string> tls_key_notes; // processes and libraries whose keys are not read
};

// Nothing unless a process selection or -k asks for owners.
std::optional<ProcessSide> start_process_side(const Config& config, const std::optional<Container>& container,
                                              const std::optional<RunAsUser>& run_as);

} // namespace xdpcap::live
