#include "host/containers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "host/child_start.hpp"
#include "host/cgroups.hpp"
#include "host/command.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

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

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void run_engine_child(const char* path, char* const* argv, int out, int err, pid_t parent)
{
    start_child_group(); // killed as a group, with whatever it starts
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent)
        ::_exit(127);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || ::dup2(null, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
        ::dup2(err, STDERR_FILENO) < 0)
        ::_exit(127);
    ::execv(path, argv);
    ::_exit(127);
}

// Keeps the last bytes of standard error only: enough for its last line.
void keep_tail(std::string& text, const char* bytes, size_t n)
{
    constexpr size_t kKept = 4096;
    text.append(bytes, n);
    if (text.size() > kKept)
        text.erase(0, text.size() - kKept);
}

std::string last_line(const std::string& text)
{
    size_t end = text.find_last_not_of(" \t\r\n");
    if (end == std::string::npos)
        return {};
    const size_t start = text.rfind('\n', end);
    return text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

bool contains_folded(const std::string& text, std::string_view word)
{
    const auto it = std::search(text.begin(), text.end(), word.begin(), word.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
    });
    return it != text.end();
}

// The signals that would end this process while it waits (SIGINT from a
// terminal, SIGTERM): blocked meanwhile, watched (never read) through a
// signalfd, and back to what they were afterwards.
class HeldSignals {
public:
    HeldSignals()
    {
        sigemptyset(&set_);
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
            sigaddset(&set_, sig);
        ::sigprocmask(SIG_BLOCK, &set_, &old_);
        fd_.reset(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
    }
    ~HeldSignals() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
    HeldSignals(const HeldSignals&) = delete;
    HeldSignals& operator=(const HeldSignals&) = delete;
    int fd() const { return fd_.get(); }

private:
    sigset_t set_{};
    sigset_t old_{};
    UniqueFd fd_;
};

} // namespace

EngineAnswer run_engine(const std::vector<std::string>& argv, int timeout_ms, size_t output_limit)
{
    EngineAnswer answer;
    const auto path = find_command(argv.front());
    if (!path)
        return answer; // Missing
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0)
        throw Error("cannot run " + argv.front() + ": " + errno_text(errno));
    UniqueFd out_read(out[0]), out_write(out[1]);
    if (::pipe2(err, O_CLOEXEC) != 0)
        throw Error("cannot run " + argv.front() + ": " + errno_text(errno));
    UniqueFd err_read(err[0]), err_write(err[1]);
    std::vector<char*> args;
    for (const std::string& arg : argv)
        args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const HeldSignals signals;
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0)
        throw Error("cannot run " + argv.front() + ": " + errno_text(errno));
    if (pid == 0)
        run_engine_child(path->c_str(), args.data(), out[1], err[1], parent);
    ::setpgid(pid, pid);
    out_write.reset();
    err_write.reset();
    const UniqueFd exited(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    bool interrupted = false;
    bool gone = !exited; // without a pidfd: done once both pipes end
    answer.outcome = EngineAnswer::Outcome::Ran;
    while (out_read || err_read || !gone) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) {
            answer.outcome = EngineAnswer::Outcome::TimedOut;
            break;
        }
        pollfd fds[4] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0},
                         {gone ? -1 : exited.get(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
        if (::poll(fds, 4, static_cast<int>(left)) < 0) {
            if (errno == EINTR)
                continue;
            answer.outcome = EngineAnswer::Outcome::TimedOut;
            break;
        }
        if (fds[3].revents) {
            interrupted = true;
            break;
        }
        char buf[16384];
        if (fds[0].revents) {
            const ssize_t n = ::read(out_read.get(), buf, sizeof buf);
            if (n > 0)
                answer.output.append(buf, static_cast<size_t>(n));
            else if (n == 0 || errno != EINTR)
                out_read.reset();
            if (answer.output.size() > output_limit) {
                answer.outcome = EngineAnswer::Outcome::TooMuchOutput;
                break;
            }
        }
        if (fds[1].revents) {
            const ssize_t n = ::read(err_read.get(), buf, sizeof buf);
            if (n > 0)
                keep_tail(answer.last_error, buf, static_cast<size_t>(n));
            else if (n == 0 || errno != EINTR)
                err_read.reset();
        }
        if (fds[2].revents)
            gone = true;
    }
    // Unreaped, its pid is still its group's id: nothing else can be hit.
    // Whatever it left running in its group goes with it.
    ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    answer.wait_status = status;
    answer.last_error = last_line(answer.last_error);
    if (interrupted)
        throw Error("interrupted while waiting for " + argv.front());
    if (answer.outcome != EngineAnswer::Outcome::Ran)
        answer.output.clear();
    return answer;
}

std::optional<std::string> engine_problem(const std::string& engine, const EngineAnswer& answer, int timeout_ms,
                                          size_t output_limit)
{
    using Outcome = EngineAnswer::Outcome;
    const std::string call = engine + " inspect";
    switch (answer.outcome) {
    case Outcome::Missing:
        return std::nullopt;
    case Outcome::TimedOut: {
        const int tenths = (timeout_ms + 50) / 100;
        std::string seconds = std::to_string(tenths / 10);
        if (tenths % 10) {
            seconds += '.';
            seconds += std::to_string(tenths % 10);
        }
        return call + " gave no answer within " + seconds + " s (stopped)";
    }
    case Outcome::TooMuchOutput:
        return call + " wrote more than " +
            (output_limit >= (size_t{1} << 20) && output_limit % (size_t{1} << 20) == 0
                 ? std::to_string(output_limit >> 20) + " MiB"
                 : std::to_string(output_limit) + " bytes") +
            " (stopped)";
    case Outcome::Ran:
        break;
    }
    if (WIFEXITED(answer.wait_status) && WEXITSTATUS(answer.wait_status) == 0)
        return std::nullopt;
    // Not a fault: the container is not that engine's, or the engine does
    // not run here.
    if (contains_folded(answer.last_error, "no such container") ||
        contains_folded(answer.last_error, "no such object") ||
        contains_folded(answer.last_error, "cannot connect to the docker daemon"))
        return std::nullopt;
    std::string said = answer.last_error;
    if (said.size() > 300)
        said = said.substr(0, 300) + "...";
    for (char& c : said) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = '?'; // one line, nothing for the terminal to act on
    }
    if (!said.empty())
        return call + " failed: " + said;
    return call + (WIFEXITED(answer.wait_status)
                       ? " failed with exit status " + std::to_string(WEXITSTATUS(answer.wait_status))
                       : " was killed by signal " + std::to_string(WTERMSIG(answer.wait_status)));
}

CgroupContainer container_in_cgroup(std::string_view path)
{
    // Each prefix with the engine that names its cgroups so.
    static constexpr std::pair<std::string_view, std::string_view> kPrefixes[] = {
        {"libpod-", "podman"}, {"docker-", "docker"}, {"crio-", "CRI-O"}, {"cri-containerd-", "containerd"},
        {"", "docker"}};
    CgroupContainer found;
    size_t start = 0;
    while (start < path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos)
            end = path.size();
        std::string_view part = path.substr(start, end - start);
        if (part.size() > 6 && part.substr(part.size() - 6) == ".scope")
            part.remove_suffix(6);
        for (const auto& [prefix, engine] : kPrefixes) {
            if (part.rfind(prefix, 0) != 0)
                continue;
            const std::string_view rest = part.substr(prefix.size());
            // A bare directory counts only under docker/ (cgroupfs driver).
            if (rest.size() == 64 && all_hex(rest) &&
                (!prefix.empty() || (start >= 7 && path.substr(start - 7, 7) == "docker/")))
                found = CgroupContainer{std::string(rest), std::string(engine)};
        }
        start = end + 1;
    }
    return found;
}

std::string container_id_in_cgroup(std::string_view path)
{
    return container_in_cgroup(path).id;
}

Container find_container(const std::string& name_or_id)
{
    if (!valid_container_name(name_or_id))
        throw Error("--container " + name_or_id + ": not a container name or ID");
    std::vector<std::string> problems;
    for (const char* engine : {"podman", "docker"}) {
        const EngineAnswer answer = run_engine({engine, "inspect", "--type", "container", "--format",
                                                "{{.Name}} {{.Id}} {{.State.Pid}}", name_or_id});
        if (auto problem = engine_problem(engine, answer)) {
            problems.push_back(std::move(*problem));
            continue;
        }
        if (answer.outcome != EngineAnswer::Outcome::Ran || !WIFEXITED(answer.wait_status) ||
            WEXITSTATUS(answer.wait_status) != 0)
            continue;
        const std::string* out = &answer.output;
        Container c;
        c.engine = engine;
        const size_t a = out->find(' ');
        const size_t b = a == std::string::npos ? a : out->find(' ', a + 1);
        if (b == std::string::npos) {
            problems.push_back(std::string(engine) + " inspect answered what xdpcap cannot read");
            continue;
        }
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
    if (!problems.empty()) {
        std::string text = "--container " + name_or_id + ": ";
        for (size_t i = 0; i < problems.size(); ++i)
            text += (i ? "; " : "") + problems[i];
        throw Error(text);
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
