#include "host/worker_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/error.hpp"

namespace xdpcap {

namespace {

constexpr int kPassedOn[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Restores the signal mask it replaced.
class MaskedSignals {
public:
    explicit MaskedSignals(const sigset_t& set)
    {
        if (::sigprocmask(SIG_BLOCK, &set, &old_) != 0)
            throw Error("cannot block signals: " + errno_text(errno));
    }
    ~MaskedSignals() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
    MaskedSignals(const MaskedSignals&) = delete;
    MaskedSignals& operator=(const MaskedSignals&) = delete;

private:
    sigset_t old_{};
};

WorkerEnd wait_for(pid_t child, const sigset_t& set)
{
    for (;;) {
        siginfo_t info{};
        const int sig = ::sigwaitinfo(&set, &info);
        if (sig < 0 && errno == EINTR)
            continue;
        if (sig < 0)
            throw Error("cannot wait for the reading process: " + errno_text(errno));
        if (sig != SIGCHLD) {
            ::kill(child, sig);
            continue;
        }
        int status = 0;
        const pid_t done = ::waitpid(child, &status, WNOHANG);
        if (done < 0 && errno != EINTR)
            throw Error("cannot wait for the reading process: " + errno_text(errno));
        if (done == child)
            return WIFSIGNALED(status) ? WorkerEnd{kExitRuntime, WTERMSIG(status)}
                                       : WorkerEnd{WEXITSTATUS(status), 0};
    }
}

} // namespace

std::optional<WorkerEnd> fork_worker(const std::function<void()>& parent_first)
{
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : kPassedOn)
        sigaddset(&set, sig);
    sigaddset(&set, SIGCHLD);
    // Blocked before the fork, so that none is lost between it and the wait;
    // SIGCHLD ignored (inherited so) would have the child reaped unseen.
    const MaskedSignals masked(set);
    ::signal(SIGCHLD, SIG_DFL);
    // Whatever is buffered would otherwise be written twice.
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0)
        throw Error("cannot start the reading process: " + errno_text(errno));
    if (child == 0)
        return std::nullopt; // ~MaskedSignals: the child's mask is the parent's
    parent_first();
    return wait_for(child, set);
}

int end_as(const WorkerEnd& end)
{
    if (end.signal == 0)
        return end.exit_status;
    ::signal(end.signal, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, end.signal);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(end.signal);
    return end.exit_status;
}

} // namespace xdpcap
