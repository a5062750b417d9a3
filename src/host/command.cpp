#include "host/command.hpp"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.hpp"

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

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void run_child(int go, const std::vector<std::string>& argv, const char* path,
                            const std::optional<RunAsUser>& run_as, bool stdout_to_stderr)
{
    char byte;
    ssize_t n;
    do {
        n = ::read(go, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1)
        ::_exit(127); // the capture did not start
    ::close(go);
    // xdpcap takes its stop signals through a signalfd: the command gets
    // them as any program does.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (stdout_to_stderr)
        ::dup2(STDERR_FILENO, STDOUT_FILENO);
    if (run_as && (::initgroups(run_as->name.c_str(), run_as->gid) != 0 || ::setgid(run_as->gid) != 0 ||
                   ::setuid(run_as->uid) != 0)) {
        static const char msg[] = "xdpcap: cannot run the command as the -Z user\n";
        (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
        ::_exit(127);
    }
    std::vector<char*> args;
    for (const std::string& arg : argv)
        args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(path, args.data());
    static const char msg[] = "xdpcap: cannot run the command\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
}

} // namespace

CommandChild CommandChild::spawn(const std::vector<std::string>& argv, const std::optional<RunAsUser>& run_as,
                                 bool stdout_to_stderr)
{
    const auto path = find_command(argv.front());
    if (!path)
        throw Error("cannot run " + argv.front() + ": no such command" +
                    (argv.front().find('/') == std::string::npos ? " in PATH" : ""));
    int go[2];
    if (::pipe2(go, O_CLOEXEC) != 0)
        throw Error("cannot start " + argv.front() + ": " + errno_text(errno));
    UniqueFd go_read(go[0]);
    UniqueFd go_write(go[1]);
    const pid_t pid = ::fork();
    if (pid < 0)
        throw Error("cannot start " + argv.front() + ": " + errno_text(errno));
    if (pid == 0) {
        ::close(go[1]);
        run_child(go[0], argv, path->c_str(), run_as, stdout_to_stderr);
    }
    go_read.reset();
    UniqueFd exit_fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!exit_fd) {
        const int err = errno;
        go_write.reset();
        ::waitpid(pid, nullptr, 0);
        throw Error("cannot watch " + argv.front() + " (pidfd_open, Linux 5.3 and later): " + errno_text(err));
    }
    return CommandChild(pid, std::move(go_write), std::move(exit_fd), argv.front());
}

void CommandChild::start()
{
    const char byte = 1;
    if (::write(go_.get(), &byte, 1) != 1)
        throw Error("cannot start " + name_ + ": " + errno_text(errno));
    go_.reset();
    started_ = true;
}

std::optional<int> CommandChild::reap()
{
    if (reaped_)
        return std::nullopt;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_)
        return std::nullopt;
    reaped_ = true;
    return status;
}

CommandChild::~CommandChild()
{
    if (!exit_fd_ || reaped_)
        return;
    if (!started_) {
        go_.reset(); // the child exits without running the command
        ::waitpid(pid_, nullptr, 0);
        return;
    }
    // Started and still running when the capture ends (-c, a signal):
    // left to run, collected if it is done.
    ::waitpid(pid_, nullptr, WNOHANG);
}

} // namespace xdpcap
