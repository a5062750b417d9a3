#include "app/process_side.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap::live {

namespace {

// --container-netns: this process moves into the container's network
// namespace, where -i's interfaces are looked up and captured.
void enter_network_namespace(pid_t pid, const std::string& name)
{
    const std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
    const UniqueFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns || ::setns(ns.get(), CLONE_NEWNET) != 0)
        throw Error("--container-netns: cannot enter " + name + "'s network namespace (" + path +
                    "): " + errno_text(errno));
}

// --pid of no process selects nothing, ever: refused before anything is
// loaded. With --follow-forks a process that takes the pid later is followed.
void require_process(const ProcessSelection& asked)
{
    if (!asked.pid || asked.follow_forks)
        return;
    if (::kill(static_cast<pid_t>(*asked.pid), 0) != 0 && errno == ESRCH)
        throw Error("--pid " + std::to_string(*asked.pid) + ": no such process");
}

} // namespace

std::optional<Container> enter_container(const Config& config)
{
    if (!config.process.container)
        return std::nullopt;
    Container container = find_container(*config.process.container);
    if (config.process.container_netns)
        enter_network_namespace(container.pid, container.name);
    return container;
}

// -- COMMAND's child is forked first: its pid is what the owners are
// filtered by.
std::optional<ProcessSide> start_process_side(const Config& config, const std::optional<Container>& container,
                                              const std::optional<RunAsUser>& run_as)
{
    if (!config.process.wanted())
        return std::nullopt;
    const ProcessSelection& asked = config.process;
    require_process(asked);
    OwnerSelection selection{.pid = asked.pid, .follow_forks = asked.follow_forks, .comm = asked.comm,
                             .cgroup = container ? std::optional(container->cgroup_path) : asked.cgroup};
    std::unique_ptr<CommandKeyLog> key_log;
    std::optional<CommandChild> command;
    if (!asked.command.empty()) {
        std::vector<std::string> environment;
        if (config.tls_keys.command) {
            const CommandUser user = command_user(run_as);
            // Removed at the end by whom xdpcap is by then: -Z's user, or root.
            key_log = std::make_unique<CommandKeyLog>(user.uid, user.gid, run_as ? run_as->uid : ::geteuid(),
                                                      run_as ? run_as->gid : ::getegid());
            environment.push_back(std::string("SSLKEYLOGFILE=").append(key_log->path()));
        }
        command.emplace(CommandChild::spawn(asked.command, run_as, config.writes_to_stdout(), environment));
        selection.pid = static_cast<uint32_t>(command->pid());
        selection.follow_forks = true;
        selection.neighbours = true;
    }
    SocketOwners owners = SocketOwners::load(selection);
    owners.learn_local_addresses();
    ContainerNames container_names(container);
    return ProcessSide{std::move(key_log), std::move(command), std::move(container_names), std::move(owners)};
}

} // namespace xdpcap::live
