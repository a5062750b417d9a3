// Preallocation: an ext4 capture file has its blocks allocated ahead of the
// writes, and none past its end once it is closed, however it is closed;
// other files get none.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "output/preallocation.hpp"
#include "output/sink.hpp"
#include "test_outputs.hpp"

using namespace xdpcap;
using namespace xdpcap::test;

namespace {

// A directory on ext4 that this user may write to, if there is one.
std::optional<std::string> ext4_directory()
{
    std::vector<std::string> candidates;
    if (const char* tmpdir = std::getenv("TMPDIR"))
        candidates.emplace_back(tmpdir);
    candidates.insert(candidates.end(), {"/var/tmp", "/tmp", "."});
    for (const std::string& dir : candidates) {
        struct statfs fs{};
        if (::statfs(dir.c_str(), &fs) == 0 && fs.f_type == Preallocation::kExt4Magic && ::access(dir.c_str(), W_OK) == 0)
            return dir;
    }
    return std::nullopt;
}

uint64_t allocated(const std::string& path)
{
    struct stat st{};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return static_cast<uint64_t>(st.st_blocks) * 512;
}

uint64_t size_of(const std::string& path)
{
    return std::filesystem::file_size(path);
}

Bytes pattern(size_t n)
{
    Bytes bytes(n);
    for (size_t i = 0; i < n; ++i)
        bytes[i] = static_cast<uint8_t>(i * 13 + i / 4096);
    return bytes;
}

// A sink on `path` that has written `bytes` and flushed them.
Sink written_sink(const std::string& path, const Bytes& bytes)
{
    Sink sink = Sink::open_file(path);
    sink.start();
    sink.append(bytes.data(), bytes.size());
    sink.flush();
    return sink;
}

constexpr size_t kWritten = 3 << 20;
// Whole blocks for what was written, and nothing more.
constexpr uint64_t kTrimmedAtMost = kWritten + 4096;

#define NEED_EXT4(dir)                                                                                          \
    const std::optional<std::string> dir = ext4_directory();                                                    \
    if (!dir)                                                                                                    \
        GTEST_SKIP() << "no writable ext4 directory (TMPDIR, /var/tmp, /tmp, .)";

} // namespace

TEST(Preallocation, Ext4FileIsAllocatedAheadOfItsWritesAndTrimmedAtClose)
{
    NEED_EXT4(dir);
    const TempDir tmp(*dir);
    const std::string file = tmp / "capture";
    const Bytes bytes = pattern(kWritten);
    Sink sink = written_sink(file, bytes);
    EXPECT_EQ(size_of(file), kWritten) << "readers see only what was written";
    EXPECT_GE(allocated(file), Preallocation::kStep) << "blocks allocated ahead of the writes";
    sink.close();
    EXPECT_EQ(size_of(file), kWritten);
    EXPECT_LE(allocated(file), kTrimmedAtMost) << "no blocks left past the end";
    EXPECT_EQ(read_file(file), bytes);
}

TEST(Preallocation, Ext4FileIsTrimmedWhenTheSinkGoesAwayUnclosed)
{
    NEED_EXT4(dir);
    const TempDir tmp(*dir);
    const std::string file = tmp / "capture";
    const Bytes bytes = pattern(kWritten / 2);
    std::optional<Sink> moved;
    {
        Sink sink = written_sink(file, bytes);
        moved.emplace(std::move(sink));
    } // the moved-from sink goes away: it must neither trim nor close the file
    moved->append(bytes.data(), bytes.size());
    moved->flush();
    EXPECT_GE(allocated(file), Preallocation::kStep) << "still allocated ahead";
    moved.reset();
    EXPECT_EQ(size_of(file), kWritten);
    EXPECT_LE(allocated(file), kTrimmedAtMost);
}

TEST(Preallocation, EachRotatedFileIsTrimmed)
{
    NEED_EXT4(dir);
    const TempDir tmp(*dir);
    const std::string first = tmp / "first", second = tmp / "second";
    const Bytes bytes = pattern(kWritten);
    Sink sink = written_sink(first, bytes);
    sink.close();
    sink.reopen(second);
    sink.append(bytes.data(), bytes.size());
    sink.flush();
    EXPECT_GE(allocated(second), Preallocation::kStep) << "the next file is allocated ahead too";
    sink.close();
    for (const std::string& file : {first, second}) {
        EXPECT_EQ(size_of(file), kWritten);
        EXPECT_LE(allocated(file), kTrimmedAtMost);
    }
}

TEST(Preallocation, NoneForTmpfsFilesOrPipes)
{
    const int memfd = ::memfd_create("xdpcap-test", MFD_CLOEXEC);
    ASSERT_GE(memfd, 0);
    EXPECT_FALSE(Preallocation::for_file(memfd).active());
    ::close(memfd);
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    EXPECT_FALSE(Preallocation::for_file(fds[1]).active());
    ::close(fds[0]);
    ::close(fds[1]);
}
