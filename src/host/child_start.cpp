#include "host/child_start.hpp"

#include <signal.h>
#include <unistd.h>

namespace xdpcap {

void start_child_group() noexcept
{
    ::setpgid(0, 0);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP)
            ::sigaction(sig, &default_action, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

} // namespace xdpcap
