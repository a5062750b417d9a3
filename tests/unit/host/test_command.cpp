#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "host/command.hpp"
#include "host/process_gone.hpp"
#include "base/error.hpp"

using namespace xdpcap;

namespace {

using xdpcap::test::gone;

std::string spawn_error(const std::vector<std::string>& argv)
{
    try {
        CommandChild::spawn(argv, std::nullopt, false);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

std::string read_file(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string status_field(const std::string& status, const std::string& name)
{
    const size_t at = status.find("\n" + name + ":\t");
    if (at == std::string::npos)
        return "missing";
    const size_t start = at + name.size() + 3;
    return status.substr(start, status.find('\n', start) - start);
}

} // namespace

TEST(Command, FoundAsExecvpWouldFindIt)
{
    EXPECT_EQ(find_command("/bin/sh"), "/bin/sh");
    const auto sh = find_command("sh");
    ASSERT_TRUE(sh.has_value());
    EXPECT_NE(sh->find("/sh"), std::string::npos);
    EXPECT_FALSE(find_command("no-such-command-xdpcap").has_value());
    EXPECT_FALSE(find_command("/etc/passwd").has_value()); // not executable
    EXPECT_FALSE(find_command("/").has_value());           // a directory
}

TEST(Command, AnUnknownCommandIsOneLine)
{
    EXPECT_EQ(spawn_error({"no-such-command-xdpcap", "-x"}),
              "cannot run no-such-command-xdpcap: no such command in PATH");
    EXPECT_EQ(spawn_error({"/no-such-dir-xdpcap/tool"}),
              "cannot run /no-such-dir-xdpcap/tool: No such file or directory");
}

TEST(Command, AFileThatCannotRunSaysWhy)
{
    EXPECT_EQ(spawn_error({"/etc/passwd"}), "cannot run /etc/passwd: Permission denied (not executable)");
    EXPECT_EQ(spawn_error({"/"}), "cannot run /: Permission denied (not a regular file)");
}

TEST(Command, FailureLines)
{
    EXPECT_EQ(command_failure("x", "/tmp/x", CommandStep::NotExecutableByUser, EACCES, "alice"),
              "cannot run /tmp/x: Permission denied (not executable by alice)");
    EXPECT_EQ(command_failure("x", "/tmp/x", CommandStep::Exec, ENOEXEC, "alice"),
              "cannot run /tmp/x: Exec format error (neither a program nor a script with #!)");
    EXPECT_EQ(command_failure("x", "x", CommandStep::Uid, EPERM, "alice"),
              "cannot run x as alice: setresuid: Operation not permitted");
    EXPECT_EQ(command_failure("/a/x", "/a/x", CommandStep::SearchDenied, EACCES, "alice"),
              "cannot run /a/x: Permission denied (a directory on its path is closed to alice)");
}

TEST(Command, ExitStatusAsShellsSayIt)
{
    EXPECT_EQ(command_exit_status(3 << 8), 3);
    EXPECT_EQ(command_exit_status(0), 0);
    EXPECT_EQ(command_exit_status(SIGKILL), 128 + SIGKILL);
}

TEST(Command, EnvironmentKeepsTheCallersAndResetsTheUsers)
{
    const CommandUser alice{"alice", 1000, 1000, {1000, 27}, "/home/alice", "/bin/zsh"};
    const char* const caller[] = {"TERM=xterm-256color", "SUDO_USER=alice", "HOME=/root", "PATH=/usr/bin:/bin",
                                  "SUDO_UID=1000", "LANG=de_DE.UTF-8", "MAIL=/var/mail/root", "USER=root",
                                  "LOGNAME=root", "SHELL=/bin/bash", "SUDO_COMMAND=/usr/sbin/xdpcap",
                                  "DISPLAY=:0", "LC_TIME=C", "SSLKEYLOGFILE=/tmp/keys",
                                  "XDG_RUNTIME_DIR=/run/user/0", "SUDOKU=1", "NOEQUALS", nullptr};
    const std::vector<std::string> expected = {
        "TERM=xterm-256color", "PATH=/usr/bin:/bin", "LANG=de_DE.UTF-8", "DISPLAY=:0", "LC_TIME=C",
        "SSLKEYLOGFILE=/tmp/keys", "SUDOKU=1", "NOEQUALS", "HOME=/home/alice", "USER=alice",
        "LOGNAME=alice", "SHELL=/bin/zsh"};
    EXPECT_EQ(command_environment(caller, alice, false), expected);
    const auto kept = command_environment(caller, alice, true);
    EXPECT_NE(std::find(kept.begin(), kept.end(), "XDG_RUNTIME_DIR=/run/user/0"), kept.end());
    // --tls-keys: its key log in place of the caller's.
    const auto keys = command_environment(caller, alice, false, {"SSLKEYLOGFILE=/run/xdpcap-keys.1/sslkeylog"});
    EXPECT_EQ(std::count_if(keys.begin(), keys.end(),
                            [](const std::string& v) { return v.starts_with("SSLKEYLOGFILE="); }),
              1);
    EXPECT_EQ(keys.back(), "SSLKEYLOGFILE=/run/xdpcap-keys.1/sslkeylog");
}

TEST(Command, ItsOwnUserWithoutSudo)
{
    ::unsetenv("SUDO_UID");
    const CommandUser user = command_user(std::nullopt);
    EXPECT_EQ(user.uid, ::getuid());
    EXPECT_EQ(user.gid, ::getgid());
}

TEST(Command, TheUserWhoRanSudo)
{
    if (::getuid() != 0)
        GTEST_SKIP() << "SUDO_UID counts for root only";
    ::setenv("SUDO_UID", "65534", 1);
    ::setenv("SUDO_GID", "65534", 1);
    const CommandUser user = command_user(std::nullopt);
    ::unsetenv("SUDO_UID");
    ::unsetenv("SUDO_GID");
    EXPECT_EQ(user.uid, 65534u);
    EXPECT_EQ(user.gid, 65534u);
    EXPECT_NE(user.name, "root");
}

TEST(Command, HeldUntilStartedAndEndedWhenNeverStarted)
{
    // A child never started exits without running the command (here it
    // would create a file); the destructor reaps it.
    const std::string marker = ::testing::TempDir() + "xdpcap-command-ran";
    std::remove(marker.c_str());
    {
        CommandChild child = CommandChild::spawn({"/bin/sh", "-c", "touch " + marker}, std::nullopt, false);
        EXPECT_GT(child.pid(), 0);
    }
    EXPECT_NE(::access(marker.c_str(), F_OK), 0);
    {
        CommandChild child = CommandChild::spawn({"/bin/sh", "-c", "touch " + marker + "; exit 4"}, std::nullopt,
                                                 false);
        child.start();
        pollfd p{child.exit_fd(), POLLIN, 0};
        ASSERT_EQ(::poll(&p, 1, 10000), 1);
        const auto status = child.finish();
        ASSERT_TRUE(status.has_value());
        EXPECT_TRUE(WIFEXITED(*status));
        EXPECT_EQ(WEXITSTATUS(*status), 4);
    }
    EXPECT_EQ(::access(marker.c_str(), F_OK), 0);
    std::remove(marker.c_str());
}

TEST(Command, NoCapabilityNoIgnoredOrBlockedSignalOwnGroup)
{
    const std::string out = ::testing::TempDir() + "xdpcap-command-status";
    std::remove(out.c_str());
    // As xdpcap has them when the command starts.
    sigset_t stops, old;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    ::sigprocmask(SIG_BLOCK, &stops, &old);
    const auto old_pipe = ::signal(SIGPIPE, SIG_IGN);
    const auto old_xfsz = ::signal(SIGXFSZ, SIG_IGN);
    {
        CommandChild child = CommandChild::spawn({"/bin/sh", "-c", "exec cat /proc/self/status > " + out}, std::nullopt,
                                                 false);
        child.start();
        pollfd p{child.exit_fd(), POLLIN, 0};
        ASSERT_EQ(::poll(&p, 1, 10000), 1);
        const auto status = child.finish();
        ASSERT_TRUE(status.has_value());
        EXPECT_EQ(*status, 0);
        const std::string text = read_file(out);
        EXPECT_EQ(status_field(text, "CapInh"), "0000000000000000");
        EXPECT_EQ(status_field(text, "CapPrm"), "0000000000000000");
        EXPECT_EQ(status_field(text, "CapEff"), "0000000000000000");
        EXPECT_EQ(status_field(text, "CapAmb"), "0000000000000000");
        if (::getuid() == 0) {
            EXPECT_EQ(status_field(text, "CapBnd"), "0000000000000000");
        }
        EXPECT_EQ(status_field(text, "NoNewPrivs"), "1");
        EXPECT_EQ(status_field(text, "SigBlk"), "0000000000000000");
        EXPECT_EQ(status_field(text, "SigIgn"), "0000000000000000");
        EXPECT_EQ(status_field(text, "NSpgid"), std::to_string(child.pid()));
    }
    ::signal(SIGPIPE, old_pipe);
    ::signal(SIGXFSZ, old_xfsz);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    std::remove(out.c_str());
}

TEST(Command, StoppedWithItsGroupSigkillAfterTheGrace)
{
    const std::string pids = ::testing::TempDir() + "xdpcap-command-pids";
    std::remove(pids.c_str());
    CommandChild child = CommandChild::spawn(
        {"/bin/sh", "-c", "trap '' TERM; sleep 30 & echo $! > " + pids + "; wait; wait"}, std::nullopt, false);
    child.start();
    for (int i = 0; i < 500 && read_file(pids).empty(); ++i)
        ::usleep(10000);
    ::usleep(50000); // the echo's newline, and the wait begun
    const pid_t sleeper = static_cast<pid_t>(std::atoi(read_file(pids).c_str()));
    ASSERT_GT(sleeper, 0);
    const auto begin = std::chrono::steady_clock::now();
    EXPECT_FALSE(child.finish().has_value()); // stopped here, not ended by itself
    const auto took = std::chrono::steady_clock::now() - begin;
    EXPECT_GE(took, std::chrono::milliseconds(CommandChild::kStopGraceMs - 100));
    EXPECT_LT(took, std::chrono::milliseconds(CommandChild::kStopGraceMs + 2000));
    bool sleeper_gone = false;
    for (int i = 0; i < 100 && !sleeper_gone; ++i) {
        sleeper_gone = gone(sleeper);
        if (!sleeper_gone)
            ::usleep(10000);
    }
    EXPECT_TRUE(sleeper_gone);
    EXPECT_TRUE(gone(child.pid()));
    std::remove(pids.c_str());
}

TEST(Command, InheritsNoDescriptorOfXdpcaps)
{
    const std::string out = ::testing::TempDir() + "xdpcap-command-fds";
    std::remove(out.c_str());
    // Not close-on-exec, as a library might leave one.
    const int leaked = ::fcntl(STDERR_FILENO, F_DUPFD, 100);
    ASSERT_GE(leaked, 100);
    {
        CommandChild child =
            CommandChild::spawn({"/bin/sh", "-c", "exec ls /proc/self/fd > " + out}, std::nullopt, false);
        child.start();
        pollfd p{child.exit_fd(), POLLIN, 0};
        ASSERT_EQ(::poll(&p, 1, 10000), 1);
        EXPECT_EQ(child.finish(), 0);
    }
    ::close(leaked);
    std::istringstream fds(read_file(out));
    std::vector<int> open;
    for (int fd; fds >> fd;)
        open.push_back(fd);
    EXPECT_FALSE(open.empty());
    EXPECT_EQ(std::find(open.begin(), open.end(), leaked), open.end());
    std::remove(out.c_str());
}
