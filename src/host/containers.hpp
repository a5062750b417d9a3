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
#include <vector>

#include "base/unique_fd.hpp"

namespace xdpcap {

struct Container {
    std::string name;
    std::string id;          // the full ID
    pid_t pid = 0;           // its first process, in this pid namespace
    std::string cgroup_path; // below the cgroup v2 root, as /proc/PID/cgroup says
    std::string engine;      // "podman" or "docker"
};

// One podman or docker call, bounded: killed (its whole process group) and
// reaped after kEngineTimeoutMs or once its output passes kEngineOutputLimit.
struct EngineAnswer {
    enum class Outcome { Ran, Missing, TimedOut, TooMuchOutput };
    Outcome outcome = Outcome::Missing;
    int wait_status = 0;    // Ran: its wait status
    std::string output;     // Ran: its standard output
    std::string last_error; // the last non-empty line of its standard error
};
inline constexpr int kEngineTimeoutMs = 5000;
inline constexpr size_t kEngineOutputLimit = size_t{1} << 20;

// Runs argv (argv[0] found in PATH). SIGINT, SIGTERM or SIGHUP meanwhile
// kill the call first, then take their course; raises Error when that
// leaves this process running.
EngineAnswer run_engine(const std::vector<std::string>& argv, int timeout_ms = kEngineTimeoutMs,
                        size_t output_limit = kEngineOutputLimit);

// What went wrong with a call that did not answer: "podman inspect failed:
// Error: database is locked"; nothing when it ran, or said it knows no such
// container, or is not installed or running here.
std::optional<std::string> engine_problem(const std::string& engine, const EngineAnswer& answer,
                                          int timeout_ms = kEngineTimeoutMs,
                                          size_t output_limit = kEngineOutputLimit);

// Asks podman, then docker. Raises Error in one line when neither knows a
// running container by that name or ID, or with what went wrong when
// asking (a timeout, podman's own error).
Container find_container(const std::string& name_or_id);

// The container a cgroup path names (libpod-ID, docker-ID.scope, docker/ID,
// crio-ID, cri-containerd-ID): its ID, and the engine that names cgroups so
// ("podman", "docker", "CRI-O", "containerd"); both empty for none.
struct CgroupContainer {
    std::string id;
    std::string engine;
};
CgroupContainer container_in_cgroup(std::string_view path);
// Its ID alone.
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
