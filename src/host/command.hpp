// xdpcap [options] -- COMMAND [ARGS]: the command runs as a child that
// waits, before exec, until the capture is listening, so that its first
// packet is captured; the capture keeps only its packets (and its
// children's) and stops once it exits.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "host/privileges.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

class CommandChild {
public:
    // Forks the child, held before exec. `run_as`: -Z's user, whom the
    // command runs as too. `stdout_to_stderr`: xdpcap's standard output
    // carries the capture. Raises Error in one line for a command not found.
    static CommandChild spawn(const std::vector<std::string>& argv, const std::optional<RunAsUser>& run_as,
                              bool stdout_to_stderr);
    CommandChild(CommandChild&&) = default;
    CommandChild& operator=(CommandChild&&) = delete;
    // A child never started is told to exit, and reaped.
    ~CommandChild();

    pid_t pid() const noexcept { return pid_; }
    // Readable once the child has exited (a pidfd).
    int exit_fd() const noexcept { return exit_fd_.get(); }
    // Lets the child exec the command.
    void start();
    // After exit_fd() became readable: its wait status, reaped.
    std::optional<int> reap();
    const std::string& name() const noexcept { return name_; }

private:
    CommandChild(pid_t pid, UniqueFd go, UniqueFd exit_fd, std::string name)
        : pid_(pid), go_(std::move(go)), exit_fd_(std::move(exit_fd)), name_(std::move(name))
    {
    }
    pid_t pid_;
    UniqueFd go_; // write end: one byte starts the command, closing it ends the child
    UniqueFd exit_fd_;
    std::string name_;
    bool started_ = false;
    bool reaped_ = false;
};

// The path execvp would run for `name`, or nothing.
std::optional<std::string> find_command(const std::string& name);

} // namespace xdpcap
