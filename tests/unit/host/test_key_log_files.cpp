// Following a key log as tail -F does: new lines only, a partial line kept
// for its end, truncation and replacement.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "host/key_log_files.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

void append(const std::string& path, const std::string& text)
{
    std::ofstream(path, std::ios::app) << text;
}

void replace(const std::string& path, const std::string& text)
{
    const std::string next = path + ".new";
    std::ofstream(next) << text;
    ASSERT_EQ(std::rename(next.c_str(), path.c_str()), 0);
}

std::vector<std::string> poll(FollowedKeyLog& log)
{
    std::vector<std::string> lines;
    log.poll([&](std::string_view line) { lines.emplace_back(line); });
    return lines;
}

using Lines = std::vector<std::string>;

} // namespace

TEST(FollowedKeyLog, FromItsEndAcrossTruncationAndReplacement)
{
    TempDir dir;
    const std::string path = dir.path() + "/keys.log";
    append(path, "old 1\nold 2\n");
    FollowedKeyLog log(path, false);
    EXPECT_EQ(poll(log), Lines{});
    append(path, "new 1\nnew ");
    EXPECT_EQ(poll(log), Lines{"new 1"});
    append(path, "2\n");
    EXPECT_EQ(poll(log), Lines{"new 2"});
    ASSERT_EQ(::truncate(path.c_str(), 0), 0);
    EXPECT_EQ(poll(log), Lines{});
    append(path, "after truncation\n");
    EXPECT_EQ(poll(log), Lines{"after truncation"});
    replace(path, "replaced 1\nreplaced 2\n");
    EXPECT_EQ(poll(log), (Lines{"replaced 1", "replaced 2"}));
    append(path, "appended\n");
    EXPECT_EQ(poll(log), Lines{"appended"});
}

TEST(FollowedKeyLog, FromTheStartAndAFileThatComesLater)
{
    TempDir dir;
    const std::string path = dir.path() + "/keys.log";
    append(path, "first\n");
    FollowedKeyLog from_start(path, true);
    EXPECT_EQ(poll(from_start), Lines{"first"});

    const std::string later = dir.path() + "/later.log";
    ::testing::internal::CaptureStderr();
    FollowedKeyLog waiting(later, false);
    EXPECT_EQ(poll(waiting), Lines{});
    const std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find("cannot open TLS key log " + later + " yet"), std::string::npos) << said;
    append(later, "born\n");
    EXPECT_EQ(poll(waiting), Lines{"born"});
}

TEST(CommandKeyLog, APrivateFileReadAsItGrows)
{
    std::string dir;
    {
        CommandKeyLog log(::geteuid(), ::getegid(), ::geteuid(), ::getegid());
        dir = log.path().substr(0, log.path().rfind('/'));
        struct stat st {};
        ASSERT_EQ(::stat(log.path().c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 0600u);
        ASSERT_EQ(::stat(dir.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 077, 0u);
        append(log.path(), "CLIENT_RANDOM a b\n");
        std::vector<std::string> lines;
        log.poll([&](std::string_view line) { lines.emplace_back(line); });
        EXPECT_EQ(lines, Lines{"CLIENT_RANDOM a b"});
    }
    EXPECT_NE(::access(dir.c_str(), F_OK), 0); // removed with everything in it
}
