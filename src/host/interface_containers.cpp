#include "host/interface_containers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "base/unique_fd.hpp"
#include "host/link_attributes.hpp"
#include "host/peer_namespaces.hpp"

namespace xdpcap {

namespace {

// A small /proc file's contents, at most `limit` bytes; empty when it cannot be read.
std::string read_small_file(int dir, const char* name, size_t limit)
{
    const UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC));
    std::string text;
    if (!fd)
        return text;
    char buf[4096];
    while (text.size() < limit) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n <= 0)
            break;
        text.append(buf, static_cast<size_t>(n));
    }
    return text;
}

// The cgroup v2 path in /proc/PID/cgroup's text ("0::/path").
std::string_view unified_cgroup(std::string_view text)
{
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string_view::npos)
            end = text.size();
        const std::string_view line = text.substr(at, end - at);
        if (line.rfind("0::", 0) == 0)
            return line.substr(3);
        at = end + 1;
    }
    return {};
}

// The characters podman and docker allow in a name: nothing a terminal acts on.
bool plain_name(std::string_view name)
{
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
            return false;
    }
    return !name.empty();
}

std::string docker_name(const std::string& id)
{
    const UniqueFd dir(::open(("/var/lib/docker/containers/" + id).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return dir ? docker_config_name(read_small_file(dir.get(), "config.v2.json", size_t{1} << 20)) : std::string();
}

// What one walk over /proc learns: the container of each namespace asked
// about, and the names conmon's command lines give.
struct ProcessWalk {
    std::unordered_map<int32_t, CgroupContainer> by_nsid;
    std::unordered_map<std::string, std::string> conmon_names; // by container ID
};

ProcessWalk walk_processes(const std::unordered_set<int32_t>& wanted)
{
    ProcessWalk walk;
    DIR* proc = ::opendir("/proc");
    if (!proc)
        return walk;
    ProcessNamespaceIds namespaces;
    std::unordered_set<std::string> asked; // one question per container
    while (const dirent* e = ::readdir(proc)) {
        if (!std::isdigit(static_cast<unsigned char>(e->d_name[0])))
            continue;
        const UniqueFd dir(::openat(::dirfd(proc), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!dir)
            continue;
        const std::string cgroup = read_small_file(dir.get(), "cgroup", 16384);
        CgroupContainer container = container_in_cgroup(unified_cgroup(cgroup));
        if (container.id.empty()) {
            // conmon runs beside its container, outside its cgroup.
            if (read_small_file(dir.get(), "comm", 64) == "conmon\n") {
                if (auto named = conmon_container(read_small_file(dir.get(), "cmdline", 65536)))
                    walk.conmon_names.insert(std::move(*named));
            }
            continue;
        }
        if (walk.by_nsid.size() == wanted.size() || !asked.insert(container.id).second)
            continue;
        const auto nsid = namespaces.of(static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10)));
        if (nsid && wanted.count(*nsid))
            walk.by_nsid.emplace(*nsid, std::move(container)); // the first (lowest pid) stays
    }
    ::closedir(proc);
    return walk;
}

} // namespace

std::vector<std::optional<InterfaceContainer>> containers_of_interfaces(const std::vector<InterfaceInfo>& interfaces,
                                                                      const std::optional<Container>& known)
{
    std::vector<std::optional<InterfaceContainer>> found(interfaces.size());
    std::vector<int32_t> nsids(interfaces.size(), -1);
    std::unordered_set<int32_t> wanted;
    for (size_t i = 0; i < interfaces.size(); ++i) {
        if (interfaces[i].driver != "veth")
            continue;
        if (const auto attributes = link_attributes(interfaces[i].ifindex); attributes && attributes->link_nsid >= 0) {
            nsids[i] = attributes->link_nsid;
            wanted.insert(nsids[i]);
        }
    }
    if (wanted.empty())
        return found;
    const ProcessWalk walk = walk_processes(wanted);
    for (size_t i = 0; i < interfaces.size(); ++i) {
        const auto it = walk.by_nsid.find(nsids[i]);
        if (it == walk.by_nsid.end())
            continue;
        InterfaceContainer container{{}, it->second.id, it->second.engine};
        if (known && known->id == container.id) {
            container.name = known->name;
        } else if (const auto named = walk.conmon_names.find(container.id); named != walk.conmon_names.end()) {
            container.name = named->second;
        } else if (container.engine == "docker") {
            container.name = docker_name(container.id);
        }
        if (container.name.empty())
            container.name = container.id.substr(0, 12);
        found[i] = std::move(container);
    }
    return found;
}

std::optional<InterfaceContainer> container_of_interface(const InterfaceInfo& iface,
                                                         const std::optional<Container>& known)
{
    return containers_of_interfaces({iface}, known).front();
}

std::optional<std::pair<std::string, std::string>> conmon_container(std::string_view cmdline)
{
    std::string id, name;
    std::string_view previous;
    size_t at = 0;
    while (at < cmdline.size()) {
        size_t end = cmdline.find('\0', at);
        if (end == std::string_view::npos)
            end = cmdline.size();
        const std::string_view arg = cmdline.substr(at, end - at);
        if (previous == "-c" || previous == "--cid")
            id = arg;
        else if (previous == "-n" || previous == "--name")
            name = arg;
        else if (arg.rfind("--cid=", 0) == 0)
            id = arg.substr(6);
        else if (arg.rfind("--name=", 0) == 0)
            name = arg.substr(7);
        previous = arg;
        at = end + 1;
    }
    if (id.empty() || !plain_name(name))
        return std::nullopt;
    return std::pair(std::move(id), std::move(name));
}

std::string docker_config_name(std::string_view json)
{
    // Docker writes the container's name with a leading slash ("/web"),
    // which no other "Name" in the file has.
    static constexpr std::string_view kKey = "\"Name\":\"/";
    const size_t at = json.find(kKey);
    if (at == std::string_view::npos)
        return {};
    const size_t start = at + kKey.size();
    const size_t end = json.find('"', start);
    if (end == std::string_view::npos)
        return {};
    const std::string_view name = json.substr(start, end - start);
    return plain_name(name) ? std::string(name) : std::string();
}

std::string container_description(const InterfaceContainer& container)
{
    return std::string("container ").append(container.name).append(", ").append(container.engine);
}

} // namespace xdpcap
