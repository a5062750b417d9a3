#include "base/stop_signals.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "base/error.hpp"

namespace xdpcap {

namespace {

long long monotonic_ms()
{
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

} // namespace

StopSignals StopSignals::block()
{
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1})
        sigaddset(&set, sig);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0)
        throw Error("cannot block signals: " + errno_text(errno));
    UniqueFd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd)
        throw Error("signalfd: " + errno_text(errno));
    return StopSignals(std::move(fd));
}

bool StopSignals::poll()
{
    signalfd_siginfo info;
    while (::read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        if (info.ssi_signo == SIGUSR1) {
            if (print_status_)
                print_status_();
        } else { // SIGINT, SIGTERM, SIGHUP
            if (!stop_)
                first_stop_ms_ = monotonic_ms();
            stop_ = true;
            ++stops_;
        }
    }
    return stop_;
}

int StopSignals::grace_left_ms() const
{
    if (!stop_)
        return -1;
    if (stops_ > 1)
        return 0;
    const long long left = first_stop_ms_ + kStopGraceMs - monotonic_ms();
    return left > 0 ? static_cast<int>(left) : 0;
}

bool StopSignals::wait_for(int fd, short events)
{
    for (;;) {
        poll();
        const int timeout = grace_left_ms();
        if (timeout == 0)
            return false;
        pollfd fds[2] = {{fd, events, 0}, {fd_.get(), POLLIN, 0}};
        const int n = ::poll(fds, 2, timeout);
        if (n < 0 && errno != EINTR)
            throw Error("poll: " + errno_text(errno), kExitRuntime);
        // Readiness includes the error and hang-up cases: the caller's next
        // call reports them.
        if (n > 0 && fds[0].revents != 0)
            return true;
    }
}

bool StopSignals::pause(int ms)
{
    if (poll())
        return false;
    pollfd fd{fd_.get(), POLLIN, 0};
    (void)::poll(&fd, 1, ms);
    return !poll();
}

} // namespace xdpcap
