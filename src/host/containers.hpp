// Containers (podman, docker) for process attribution: --container finds a
// running container's cgroup and network namespace by name or ID, and the
// packet labels name the container a process's cgroup belongs to.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/unique_fd.hpp"

namespace xdpcap {

struct Container {
    std::string name;
    std::string id;          // the full ID
    pid_t pid = 0;           // its first process, in this pid namespace
    std::string cgroup_path; // below the cgroup v2 root, as /proc/PID/cgroup says
    std::string engine;      // "podman" or "docker"
};

// Asks podman, then docker. Raises Error in one line when neither knows a
// running container by that name or ID.
Container find_container(const std::string& name_or_id);

// The container ID (or names the engines use) in a cgroup path: libpod-ID,
// docker-ID.scope, docker/ID, crio-ID, cri-containerd-ID; empty for none.
std::string container_id_in_cgroup(std::string_view path);

// Cgroup v2 ids to the container they belong to: "web" for the --container
// one, else the first 12 characters of its ID; empty for none. Looked up
// once per cgroup, by walking the cgroup v2 hierarchy from a root opened at
// construction, while xdpcap may still mount one (privileges go later).
class ContainerNames {
public:
    explicit ContainerNames(std::optional<Container> known = std::nullopt);
    const std::string& of(uint64_t cgroup_id);

private:
    UniqueFd root_; // none: no names
    std::optional<Container> known_;
    std::unordered_map<uint64_t, std::string> names_;
};

} // namespace xdpcap
