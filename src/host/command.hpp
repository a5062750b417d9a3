// xdpcap [options] -- COMMAND [ARGS]: the command runs as a child that
// waits, before exec, until the capture is listening, so that its first
// packet is captured; the capture keeps only its packets (and its
// children's) and stops once it exits. The child holds no capability, runs
// as the user who asked for the capture, in a process group of its own that
// never outlives the capture.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "host/privileges.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

// Whom the command runs as, with what its environment takes from passwd.
struct CommandUser {
    std::string name;
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups; // supplementary, as initgroups would set them
    std::string home;
    std::string shell;
};

// -Z's user when given; else, for a process started by root through sudo,
// the user who ran sudo (SUDO_UID, SUDO_GID); else this process's real user.
// Raises Error in one line when that user has no passwd entry.
CommandUser command_user(const std::optional<RunAsUser>& run_as);

// The command's environment, from xdpcap's: every SUDO_* variable and MAIL
// removed; HOME, USER, LOGNAME and SHELL set from the user's passwd entry;
// XDG_RUNTIME_DIR kept only when `keep_runtime_dir` (it belongs to the
// user); `extra` ("NAME=value", --tls-keys' SSLKEYLOGFILE) added last, in
// place of the caller's; everything else as the caller's shell passed it.
std::vector<std::string> command_environment(const char* const* environment, const CommandUser& user,
                                             bool keep_runtime_dir, const std::vector<std::string>& extra = {});

// Why the child could not become the command, as it reports it.
enum class CommandStep : int {
    Ready = 0,
    NotFound,           // nowhere on PATH, or no such file
    SearchDenied,       // a directory on its path is closed to the user
    NotRegular,         // a directory or a device
    NotExecutable,      // no execute bit at all
    NotExecutableByUser, // execute bits, none of them the user's
    Groups,
    Gid,
    Uid,
    BoundingSet,
    Capabilities,
    NoNewPrivs,
    ParentDeath,
    Exec,
};

// The one line for a failed step: "cannot run /etc/passwd: Permission
// denied (not executable)". `path`: what was tried (the name when nothing
// was found).
std::string command_failure(const std::string& name, const std::string& path, CommandStep step, int err,
                            const std::string& user);

// The exit status xdpcap reports for the command's wait status: its own
// exit status, or 128 + the signal that killed it, as shells do.
int command_exit_status(int wait_status);

class CommandChild {
public:
    // How long the command has, after SIGTERM, before its group gets SIGKILL.
    static constexpr int kStopGraceMs = 2000;

    // Forks the child, which takes on the user's identity, drops every
    // capability, finds the command and then waits before exec. `run_as`:
    // -Z's user. `stdout_to_stderr`: xdpcap's standard output carries the
    // capture. `environment`: variables set in the command's environment
    // ("NAME=value"). Raises Error in one line when the command cannot be run.
    static CommandChild spawn(const std::vector<std::string>& argv, const std::optional<RunAsUser>& run_as,
                              bool stdout_to_stderr, const std::vector<std::string>& environment = {});
    CommandChild(CommandChild&&) = default;
    CommandChild& operator=(CommandChild&&) = delete;
    // Ends the command as finish() does.
    ~CommandChild();

    pid_t pid() const noexcept { return pid_; }
    // The user the command runs as: xdpcap needs CAP_KILL to stop it when
    // that is not its own.
    uid_t uid() const noexcept { return uid_; }
    // Readable once the child has exited (a pidfd).
    int exit_fd() const noexcept { return exit_fd_.get(); }
    // Lets the child exec the command; raises Error in one line when the
    // exec fails.
    void start();
    // Ends what is left of the command's process group: SIGTERM, SIGKILL
    // once the command has exited or after kStopGraceMs; reaps it. Returns
    // its wait status when it ended by itself, nothing when it was stopped
    // here (or never started).
    std::optional<int> finish();
    const std::string& name() const noexcept { return name_; }

private:
    CommandChild(pid_t pid, uid_t uid, UniqueFd go, UniqueFd report, UniqueFd exit_fd, std::string name,
                 std::string path, std::string user)
        : pid_(pid), uid_(uid), go_(std::move(go)), report_(std::move(report)), exit_fd_(std::move(exit_fd)),
          name_(std::move(name)), path_(std::move(path)), user_(std::move(user))
    {
    }
    bool exited() const;
    pid_t pid_;
    uid_t uid_;
    UniqueFd go_;     // write end: one byte starts the command, closing it ends the child
    UniqueFd report_; // read end of the child's close-on-exec report pipe
    UniqueFd exit_fd_;
    std::string name_;
    std::string path_;
    std::string user_;
    bool started_ = false;
    bool reaped_ = false;
};

// The path execvp would run for `name`, or nothing.
std::optional<std::string> find_command(const std::string& name);

} // namespace xdpcap
