#include "host/command.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "base/error.hpp"
#include "host/child_start.hpp"

extern char** environ;

namespace xdpcap {

std::optional<std::string> find_command(const std::string& name)
{
    const auto runnable = [](const std::string& path) {
        struct stat st {};
        return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
    };
    if (name.find('/') != std::string::npos)
        return runnable(name) ? std::optional<std::string>(name) : std::nullopt;
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        const size_t end = std::min(dirs.find(':', start), dirs.size());
        const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
        if (runnable(dir + "/" + name))
            return dir + "/" + name;
        start = end + 1;
    }
    return std::nullopt;
}

namespace {

std::optional<unsigned long> id_from(const char* text)
{
    if (!text || !*text)
        return std::nullopt;
    unsigned long value = 0;
    const char* end = text + std::strlen(text);
    const auto [ptr, ec] = std::from_chars(text, end, value);
    if (ec != std::errc() || ptr != end || value > 0xfffffffeul)
        return std::nullopt;
    return value;
}

// The paths execvp would try for `name`, in order.
std::vector<std::string> candidates_for(const std::string& name)
{
    if (name.find('/') != std::string::npos)
        return {name};
    const char* path = std::getenv("PATH");
    const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::vector<std::string> paths;
    size_t start = 0;
    while (start <= dirs.size()) {
        const size_t end = std::min(dirs.find(':', start), dirs.size());
        const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
        paths.push_back(dir + "/" + name);
        start = end + 1;
    }
    return paths;
}

// What the child writes on its close-on-exec report pipe: once when ready
// (err: the index of the path found), or once for the step that failed.
struct ChildReport {
    int32_t step;
    int32_t err;
};

// Everything the child needs, prepared before fork: between fork and exec
// only async-signal-safe calls are made.
struct ChildPlan {
    int go;
    int report;
    pid_t parent;
    bool stdout_to_stderr;
    uid_t uid;
    gid_t gid;
    const std::vector<gid_t>* groups;
    bool set_groups;
    std::vector<char*> argv;
    std::vector<char*> envp;
    std::vector<const char*> candidates;
    bool searched; // looked up in PATH
};

[[noreturn]] void fail_child(const ChildPlan& plan, CommandStep step, int err)
{
    const ChildReport report{static_cast<int32_t>(step), err};
    (void)!::write(plan.report, &report, sizeof report);
    ::_exit(127);
}

// The step a path fails at for the user this child now is, or Ready.
CommandStep check_path(const char* path, int& err)
{
    struct stat st {};
    if (::stat(path, &st) != 0) {
        err = errno;
        return errno == EACCES ? CommandStep::SearchDenied : CommandStep::NotFound;
    }
    if (!S_ISREG(st.st_mode)) {
        err = EACCES;
        return CommandStep::NotRegular;
    }
    if (::access(path, X_OK) != 0) {
        err = errno;
        return (st.st_mode & 0111) == 0 ? CommandStep::NotExecutable : CommandStep::NotExecutableByUser;
    }
    return CommandStep::Ready;
}

[[noreturn]] void run_child(const ChildPlan& plan)
{
    // Stopped as a group, with whatever it starts; signals as any program gets them.
    start_child_group();
    // No descriptor of the capture's reaches the command.
    ::syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);

    // The bounding set first, while CAP_SETPCAP is still held: as uid 0 an
    // exec would otherwise be given back every capability in it.
    for (int cap = 0; cap <= 63; ++cap) {
        const int held = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (held < 0)
            break; // past the kernel's last capability
        if (held == 1 && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && plan.uid == 0)
            fail_child(plan, CommandStep::BoundingSet, errno);
    }
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (plan.set_groups && ::setgroups(plan.groups->size(), plan.groups->data()) != 0)
        fail_child(plan, CommandStep::Groups, errno);
    if (::setresgid(plan.gid, plan.gid, plan.gid) != 0)
        fail_child(plan, CommandStep::Gid, errno);
    if (::setresuid(plan.uid, plan.uid, plan.uid) != 0)
        fail_child(plan, CommandStep::Uid, errno);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct nothing[2]{};
    if (::syscall(SYS_capset, &header, nothing) != 0)
        fail_child(plan, CommandStep::Capabilities, errno);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        fail_child(plan, CommandStep::NoNewPrivs, errno);
    // After the last change of credentials, which clears it; xdpcap may
    // have died before it was set.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        fail_child(plan, CommandStep::ParentDeath, errno);
    if (::getppid() != plan.parent)
        ::_exit(127);

    // Found as execvp would, but as the user: a file only root may run is
    // refused now, before anything is attached.
    CommandStep worst = CommandStep::NotFound;
    int worst_err = ENOENT;
    int found = -1;
    for (size_t i = 0; i < plan.candidates.size() && found < 0; ++i) {
        int err = 0;
        CommandStep step = check_path(plan.candidates[i], err);
        // A PATH directory closed to the user is one it does not search.
        if (step == CommandStep::SearchDenied && plan.searched)
            step = CommandStep::NotFound;
        if (step == CommandStep::Ready)
            found = static_cast<int>(i);
        else if (static_cast<int>(step) > static_cast<int>(worst)) {
            worst = step;
            worst_err = err;
        }
    }
    if (found < 0)
        fail_child(plan, worst, worst_err);
    const ChildReport ready{static_cast<int32_t>(CommandStep::Ready), found};
    if (::write(plan.report, &ready, sizeof ready) != sizeof ready)
        ::_exit(127);

    char byte;
    ssize_t n;
    do {
        n = ::read(plan.go, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1)
        ::_exit(127); // the capture did not start
    if (plan.stdout_to_stderr)
        ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execve(plan.candidates[static_cast<size_t>(found)], plan.argv.data(), plan.envp.data());
    fail_child(plan, CommandStep::Exec, errno);
}

// Reads one report; false at end of file (the child exited or exec'd).
bool read_report(int fd, ChildReport& report)
{
    size_t got = 0;
    auto* bytes = reinterpret_cast<char*>(&report);
    while (got < sizeof report) {
        const ssize_t n = ::read(fd, bytes + got, sizeof report - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        got += static_cast<size_t>(n);
    }
    return true;
}

void reap(pid_t pid, int* status)
{
    while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
}

bool runtime_dir_belongs_to(uid_t uid)
{
    const char* dir = std::getenv("XDG_RUNTIME_DIR");
    struct stat st {};
    return dir && ::stat(dir, &st) == 0 && st.st_uid == uid;
}

} // namespace

CommandUser command_user(const std::optional<RunAsUser>& run_as)
{
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    const char* source = nullptr;
    if (run_as) {
        uid = run_as->uid;
        gid = run_as->gid;
    } else if (const auto sudo_uid = id_from(std::getenv("SUDO_UID")); sudo_uid && ::getuid() == 0) {
        // sudo leaves root's real uid and says who ran it.
        uid = static_cast<uid_t>(*sudo_uid);
        source = "SUDO_UID";
        const auto sudo_gid = id_from(std::getenv("SUDO_GID"));
        gid = sudo_gid ? static_cast<gid_t>(*sudo_gid) : static_cast<gid_t>(-1);
    }
    std::vector<char> buffer(16384);
    passwd entry{};
    passwd* found = nullptr;
    ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found);
    CommandUser user;
    user.uid = uid;
    if (!found) {
        if (source)
            throw Error("cannot run the command as the user who ran sudo (" + std::string(source) + " " +
                        std::to_string(uid) + "): no such user");
        // This process's own user, unknown to passwd: itself, as it is.
        return CommandUser{.name = std::to_string(uid), .uid = uid, .gid = gid, .groups = {},
                           .home = std::string(1, '/'), .shell = std::string("/bin/sh")};
    }
    user.name = entry.pw_name;
    user.gid = gid == static_cast<gid_t>(-1) ? entry.pw_gid : gid;
    user.home = entry.pw_dir && *entry.pw_dir ? entry.pw_dir : "/";
    user.shell = entry.pw_shell && *entry.pw_shell ? entry.pw_shell : "/bin/sh";
    int count = 64;
    std::vector<gid_t> groups(static_cast<size_t>(count));
    while (::getgrouplist(user.name.c_str(), user.gid, groups.data(), &count) < 0) {
        groups.resize(static_cast<size_t>(count) + 64);
        count = static_cast<int>(groups.size());
    }
    groups.resize(static_cast<size_t>(count));
    user.groups = std::move(groups);
    return user;
}

namespace {

// Whether `variables` ("NAME=value") set `name`.
bool set_in(const std::vector<std::string>& variables, std::string_view name)
{
    return std::any_of(variables.begin(), variables.end(), [&](const std::string& variable) {
        return variable.size() > name.size() && variable.compare(0, name.size(), name) == 0 &&
            variable[name.size()] == '=';
    });
}

} // namespace

std::vector<std::string> command_environment(const char* const* environment, const CommandUser& user,
                                             bool keep_runtime_dir, const std::vector<std::string>& extra)
{
    static constexpr std::string_view kReplaced[] = {"HOME", "USER", "LOGNAME", "SHELL", "MAIL"};
    std::vector<std::string> result;
    for (const char* const* entry = environment; entry && *entry; ++entry) {
        const std::string_view text(*entry);
        const std::string_view name = text.substr(0, text.find('='));
        if (name.substr(0, 5) == "SUDO_" ||
            std::find(std::begin(kReplaced), std::end(kReplaced), name) != std::end(kReplaced) ||
            (name == "XDG_RUNTIME_DIR" && !keep_runtime_dir) || set_in(extra, name))
            continue;
        result.emplace_back(text);
    }
    result.push_back("HOME=" + user.home);
    result.push_back("USER=" + user.name);
    result.push_back("LOGNAME=" + user.name);
    result.push_back("SHELL=" + user.shell);
    result.insert(result.end(), extra.begin(), extra.end());
    return result;
}

std::string command_failure(const std::string& name, const std::string& path, CommandStep step, int err,
                            const std::string& user)
{
    const std::string as = "cannot run " + name + " as " + user + ": ";
    switch (step) {
    case CommandStep::Ready:
        break;
    case CommandStep::NotFound:
        return name.find('/') == std::string::npos ? "cannot run " + name + ": no such command in PATH"
                                                   : "cannot run " + name + ": " + errno_text(err ? err : ENOENT);
    case CommandStep::SearchDenied:
        return "cannot run " + path + ": " + errno_text(err) + " (a directory on its path is closed to " + user +
            ")";
    case CommandStep::NotRegular:
        return "cannot run " + path + ": " + errno_text(EACCES) + " (not a regular file)";
    case CommandStep::NotExecutable:
        return "cannot run " + path + ": " + errno_text(EACCES) + " (not executable)";
    case CommandStep::NotExecutableByUser:
        return "cannot run " + path + ": " + errno_text(EACCES) + " (not executable by " + user + ")";
    case CommandStep::Groups:
        return as + "setgroups: " + errno_text(err);
    case CommandStep::Gid:
        return as + "setresgid: " + errno_text(err);
    case CommandStep::Uid:
        return as + "setresuid: " + errno_text(err);
    case CommandStep::BoundingSet:
        return as + "cannot empty the capability bounding set: " + errno_text(err);
    case CommandStep::Capabilities:
        return as + "capset: " + errno_text(err);
    case CommandStep::NoNewPrivs:
        return as + "PR_SET_NO_NEW_PRIVS: " + errno_text(err);
    case CommandStep::ParentDeath:
        return as + "PR_SET_PDEATHSIG: " + errno_text(err);
    case CommandStep::Exec:
        return "cannot run " + path + ": " + errno_text(err) +
            (err == ENOEXEC ? " (neither a program nor a script with #!)" : "");
    }
    return "cannot run " + name + ": " + errno_text(err);
}

int command_exit_status(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return kExitRuntime;
}

CommandChild CommandChild::spawn(const std::vector<std::string>& argv, const std::optional<RunAsUser>& run_as,
                                 bool stdout_to_stderr, const std::vector<std::string>& extra_environment)
{
    const CommandUser user = command_user(run_as);
    const std::vector<std::string> candidates = candidates_for(argv.front());
    const std::vector<std::string> environment =
        command_environment(environ, user, runtime_dir_belongs_to(user.uid), extra_environment);
    const std::string& name = argv.front();
    ChildPlan plan{.go = -1, .report = -1, .parent = ::getpid(), .stdout_to_stderr = stdout_to_stderr,
                   .uid = user.uid, .gid = user.gid, .groups = &user.groups,
                   // A user running xdpcap as itself keeps the groups it has.
                   .set_groups = user.uid != ::getuid() || ::getuid() == 0, .argv = {}, .envp = {},
                   .candidates = {}, .searched = argv.front().find('/') == std::string::npos};
    for (const std::string& arg : argv)
        plan.argv.push_back(const_cast<char*>(arg.c_str()));
    plan.argv.push_back(nullptr);
    for (const std::string& variable : environment)
        plan.envp.push_back(const_cast<char*>(variable.c_str()));
    plan.envp.push_back(nullptr);
    for (const std::string& path : candidates)
        plan.candidates.push_back(path.c_str());

    int go[2], report[2];
    if (::pipe2(go, O_CLOEXEC) != 0)
        throw Error("cannot start " + name + ": " + errno_text(errno));
    UniqueFd go_read(go[0]);
    UniqueFd go_write(go[1]);
    if (::pipe2(report, O_CLOEXEC) != 0)
        throw Error("cannot start " + name + ": " + errno_text(errno));
    UniqueFd report_read(report[0]);
    UniqueFd report_write(report[1]);
    plan.go = go[0];
    plan.report = report[1];
    const pid_t pid = ::fork();
    if (pid < 0)
        throw Error("cannot start " + name + ": " + errno_text(errno));
    if (pid == 0) {
        ::close(go[1]);
        ::close(report[0]);
        run_child(plan);
    }
    ::setpgid(pid, pid); // also here: no signal to the group can come before it exists
    go_read.reset();
    report_write.reset();
    ChildReport ready{};
    if (!read_report(report_read.get(), ready) || ready.step != static_cast<int32_t>(CommandStep::Ready)) {
        const bool said = ready.step != 0;
        go_write.reset();
        reap(pid, nullptr);
        if (!said)
            throw Error("cannot start " + name + ": its child process ended before running it");
        const auto step = static_cast<CommandStep>(ready.step);
        const std::string tried = candidates.size() == 1 ? candidates.front() : name;
        throw Error(command_failure(name, tried, step, ready.err, user.name));
    }
    UniqueFd exit_fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!exit_fd) {
        const int err = errno;
        go_write.reset();
        reap(pid, nullptr);
        throw Error("cannot watch " + name + " (pidfd_open, Linux 5.3 and later): " + errno_text(err));
    }
    const std::string path = ready.err >= 0 && static_cast<size_t>(ready.err) < candidates.size()
        ? candidates[static_cast<size_t>(ready.err)]
        : name;
    return CommandChild(pid, user.uid, std::move(go_write), std::move(report_read), std::move(exit_fd), name, path,
                        user.name);
}

void CommandChild::start()
{
    const char byte = 1;
    if (::write(go_.get(), &byte, 1) != 1)
        throw Error("cannot start " + name_ + ": " + errno_text(errno));
    go_.reset();
    started_ = true;
    // End of file: the exec succeeded (the pipe is close-on-exec).
    ChildReport failed{};
    const bool said = read_report(report_.get(), failed);
    report_.reset();
    if (said)
        throw Error(command_failure(name_, path_, static_cast<CommandStep>(failed.step), failed.err, user_));
}

bool CommandChild::exited() const
{
    pollfd p{exit_fd_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
}

std::optional<int> CommandChild::finish()
{
    if (!exit_fd_ || reaped_)
        return std::nullopt;
    reaped_ = true;
    if (!started_) {
        go_.reset(); // the child exits without running the command
        reap(pid_, nullptr);
        return std::nullopt;
    }
    const bool by_itself = exited();
    {
        // The command may run as another user than xdpcap now is.
        const ScopedCapability may_signal(CAP_KILL);
        // Its pid stays its group's id until it is reaped below: these
        // signals cannot reach another group.
        ::kill(-pid_, SIGTERM);
        if (!by_itself) {
            pollfd p{exit_fd_.get(), POLLIN, 0};
            while (::poll(&p, 1, kStopGraceMs) < 0 && errno == EINTR) {
            }
        }
        if (::kill(-pid_, SIGKILL) != 0 && errno == EPERM && !exited()) {
            // Not ours to stop (no CAP_KILL): it dies with this process,
            // by its parent-death signal; waiting for it could last forever.
            std::fprintf(stderr, "xdpcap: warning: cannot stop %s: %s\n", name_.c_str(), errno_text(EPERM).c_str());
            return std::nullopt;
        }
    }
    int status = 0;
    reap(pid_, &status);
    if (by_itself)
        return status;
    return std::nullopt;
}

CommandChild::~CommandChild()
{
    finish();
}

} // namespace xdpcap
