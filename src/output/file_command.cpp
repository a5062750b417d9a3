#include "output/file_command.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>

#include "base/error.hpp"

extern char** environ;

namespace xdpcap {

namespace {

// Lowest priority, so that the command does not slow the capture down.
constexpr int kNiceLowest = 19;

// The capture blocks its stop signals and ignores SIGPIPE; the command must
// start with neither.
class SpawnAttributes {
public:
    SpawnAttributes()
    {
        ok_ = ::posix_spawnattr_init(&attr_) == 0;
        if (!ok_)
            return;
        sigset_t none, defaults;
        sigemptyset(&none);
        sigfillset(&defaults);
        ok_ = ::posix_spawnattr_setsigmask(&attr_, &none) == 0 &&
            ::posix_spawnattr_setsigdefault(&attr_, &defaults) == 0 &&
            ::posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) == 0;
    }
    ~SpawnAttributes()
    {
        ::posix_spawnattr_destroy(&attr_);
    }
    SpawnAttributes(const SpawnAttributes&) = delete;
    SpawnAttributes& operator=(const SpawnAttributes&) = delete;
    const posix_spawnattr_t* get() const noexcept { return ok_ ? &attr_ : nullptr; }

private:
    posix_spawnattr_t attr_{};
    bool ok_ = false;
};

} // namespace

void FileCommand::run(const std::string& file) noexcept
{
    reap();
    try {
        SpawnAttributes attributes;
        std::string command = command_, argument = file;
        char* argv[] = {command.data(), argument.data(), nullptr};
        pid_t pid = -1;
        // glibc reports a failed exec (no such command, not executable) here.
        const int err = ::posix_spawnp(&pid, command_.c_str(), nullptr, attributes.get(), argv, environ);
        if (err != 0) {
            std::fprintf(stderr, "xdpcap: cannot run %s on %s: %s\n", command_.c_str(), file.c_str(),
                         errno_text(err).c_str());
            return;
        }
        (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(pid), kNiceLowest); // best effort
        children_.push_back(pid);
    } catch (const std::exception&) {
        std::fprintf(stderr, "xdpcap: cannot run %s on %s: out of memory\n", command_.c_str(), file.c_str());
    }
}

void FileCommand::reap() noexcept
{
    std::erase_if(children_, [](pid_t pid) {
        int status = 0;
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        return done == pid || (done < 0 && errno == ECHILD);
    });
}

} // namespace xdpcap
