// -z: a command run on every output file once it is closed, as tcpdump runs
// it: the command itself (found on PATH, no shell) with the file name as its
// only argument, at the lowest priority, in parallel with the capture.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace xdpcap {

class FileCommand {
public:
    explicit FileCommand(std::string command) : command_(std::move(command)) {}
    FileCommand(FileCommand&&) = default;
    FileCommand& operator=(FileCommand&&) = default;
    // Reaps what has finished; the rest outlives the capture, as with tcpdump.
    ~FileCommand() { reap(); }

    // Starts the command on `file` without waiting for it. A command that
    // cannot be started is reported in one line on stderr; the capture goes on.
    void run(const std::string& file) noexcept;
    // Collects the exit status of every command that has finished (no zombies).
    void reap() noexcept;
    size_t running() const noexcept { return children_.size(); }

private:
    std::string command_;
    std::vector<pid_t> children_;
};

} // namespace xdpcap
