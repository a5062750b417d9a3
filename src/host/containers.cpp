#include "host/containers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/error.hpp"
#include "host/cgroups.hpp"
#include "base/unique_fd.hpp"

extern char** environ;

namespace xdpcap {

namespace {

// Runs argv (found in PATH) and returns its standard output, or nothing
// when it cannot run or fails.
std::optional<std::string> output_of(const std::vector<std::string>& argv)
{
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0)
        return std::nullopt;
    UniqueFd read_end(out[0]);
    UniqueFd write_end(out[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args;
    for (const std::string& arg : argv)
        args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int err = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    write_end.reset();
    if (err != 0)
        return std::nullopt;
    std::string text;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(read_end.get(), buf, sizeof buf);
        if (n > 0)
            text.append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EINTR)
            break;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return std::nullopt;
    return text;
}

bool valid_container_name(const std::string& name)
{
    if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0])))
        return false;
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
            return false;
    }
    return true;
}

std::string cgroup_of_process(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) == 0)
            return line.substr(3);
    }
    return {};
}

bool all_hex(std::string_view s)
{
    for (char c : s) {
        if (!std::isxdigit(static_cast<unsigned char>(c)))
            return false;
    }
    return !s.empty();
}

// The cgroup path of the directory with inode `id` below `dir`.
bool find_cgroup(int dir, uint64_t id, std::string& path, int depth)
{
    if (depth > 32)
        return false;
    const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    DIR* d = ::fdopendir(fd);
    if (!d) {
        ::close(fd);
        return false;
    }
    bool found = false;
    while (const dirent* e = ::readdir(d)) {
        if (e->d_type != DT_DIR || std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0)
            continue;
        const UniqueFd child(::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        struct stat st {};
        if (!child || ::fstat(child.get(), &st) != 0)
            continue;
        const size_t mark = path.size();
        path += "/";
        path += e->d_name;
        if (st.st_ino == id || find_cgroup(child.get(), id, path, depth + 1)) {
            found = true;
            break;
        }
        path.resize(mark);
    }
    ::closedir(d);
    return found;
}

} // namespace

std::string container_id_in_cgroup(std::string_view path)
{
    std::string id;
    size_t start = 0;
    while (start < path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos)
            end = path.size();
        std::string_view part = path.substr(start, end - start);
        if (part.size() > 6 && part.substr(part.size() - 6) == ".scope")
            part.remove_suffix(6);
        for (std::string_view prefix : {"libpod-", "docker-", "crio-", "cri-containerd-", ""}) {
            if (part.rfind(prefix, 0) != 0)
                continue;
            const std::string_view rest = part.substr(prefix.size());
            // A bare directory counts only under docker/ (cgroupfs driver).
            if (rest.size() == 64 && all_hex(rest) &&
                (!prefix.empty() || (start >= 7 && path.substr(start - 7, 7) == "docker/")))
                id = std::string(rest);
        }
        start = end + 1;
    }
    return id;
}

Container find_container(const std::string& name_or_id)
{
    if (!valid_container_name(name_or_id))
        throw Error("--container " + name_or_id + ": not a container name or ID");
    for (const char* engine : {"podman", "docker"}) {
        const auto out = output_of({engine, "inspect", "--type", "container", "--format",
                                    "{{.Name}} {{.Id}} {{.State.Pid}}", name_or_id});
        if (!out)
            continue;
        Container c;
        c.engine = engine;
        std::string pid;
        const size_t a = out->find(' ');
        const size_t b = a == std::string::npos ? a : out->find(' ', a + 1);
        if (b == std::string::npos)
            continue;
        c.name = out->substr(0, a);
        if (!c.name.empty() && c.name[0] == '/')
            c.name.erase(0, 1); // docker's
        c.id = out->substr(a + 1, b - a - 1);
        c.pid = static_cast<pid_t>(std::strtol(out->c_str() + b + 1, nullptr, 10));
        if (c.pid <= 0)
            throw Error("--container " + name_or_id + ": the " + engine + " container is not running");
        c.cgroup_path = cgroup_of_process(c.pid);
        if (c.cgroup_path.empty())
            throw Error("--container " + name_or_id + ": its process " + std::to_string(c.pid) +
                        " is in no cgroup v2 group");
        return c;
    }
    throw Error("--container " + name_or_id + ": no running podman or docker container of that name or ID");
}

ContainerNames::ContainerNames(std::optional<Container> known) : known_(std::move(known))
{
    try {
        root_ = open_cgroup2_root("naming containers");
    } catch (const Error&) {
        // No cgroup v2 hierarchy to look in: no names.
    }
}

const std::string& ContainerNames::of(uint64_t cgroup_id)
{
    if (const auto it = names_.find(cgroup_id); it != names_.end())
        return it->second;
    std::string name;
    std::string path;
    if (root_ && cgroup_id != 0 && find_cgroup(root_.get(), cgroup_id, path, 0)) {
        const std::string id = container_id_in_cgroup(path);
        if (!id.empty())
            name = known_ && known_->id == id ? known_->name : id.substr(0, 12);
    }
    return names_.emplace(cgroup_id, std::move(name)).first->second;
}

} // namespace xdpcap
