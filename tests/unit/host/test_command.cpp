#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "host/command.hpp"
#include "base/error.hpp"

using namespace xdpcap;

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
    try {
        CommandChild::spawn({"no-such-command-xdpcap", "-x"}, std::nullopt, false);
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "cannot run no-such-command-xdpcap: no such command in PATH");
    }
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
        std::optional<int> status;
        for (int i = 0; i < 500 && !status; ++i) {
            status = child.reap();
            if (!status)
                ::usleep(10000);
        }
        ASSERT_TRUE(status.has_value());
        EXPECT_TRUE(WIFEXITED(*status));
        EXPECT_EQ(WEXITSTATUS(*status), 4);
    }
    EXPECT_EQ(::access(marker.c_str(), F_OK), 0);
    std::remove(marker.c_str());
}
