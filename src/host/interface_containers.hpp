// The container a host-side interface leads into: a veth whose peer is in
// another network namespace, and the container whose processes live there
// (podman, docker, CRI-O, containerd), named for interface descriptions and
// text lines.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/containers.hpp"
#include "host/interfaces.hpp"

namespace xdpcap {

struct InterfaceContainer {
    std::string name;   // as its engine names it ("web"); else its ID's first 12 characters
    std::string id;     // the full ID
    std::string engine; // "podman", "docker", "CRI-O", "containerd"
};

// For each interface, in order: the container at its other end, where it is
// a veth whose peer is in another network namespace and a container's
// process is in that namespace (the lowest-numbered such process's container
// where several share it, as a pod's do); nothing otherwise. `known`
// (--container's) is named as its engine answered. One walk over /proc for
// them all, and none when no interface is such a veth.
std::vector<std::optional<InterfaceContainer>> containers_of_interfaces(
    const std::vector<InterfaceInfo>& interfaces, const std::optional<Container>& known = std::nullopt);

// One interface's, for an interface that joins or is renamed during a
// capture. Needs to read every process's cgroup (/proc/PID/cgroup is
// world-readable) and, for the name, conmon's command line or docker's
// config.v2.json.
std::optional<InterfaceContainer> container_of_interface(const InterfaceInfo& iface,
                                                         const std::optional<Container>& known = std::nullopt);

// conmon's command line as /proc/PID/cmdline holds it (NUL-separated):
// the container ID (-c) and name (-n) podman and CRI-O start it with;
// nothing when either is missing.
std::optional<std::pair<std::string, std::string>> conmon_container(std::string_view cmdline);

// docker's containers/ID/config.v2.json: the container's "Name", without
// docker's leading '/'; empty when it has none.
std::string docker_config_name(std::string_view json);

// What an interface description says of it: "container web, podman".
std::string container_description(const InterfaceContainer& container);

} // namespace xdpcap
