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
#include <optional>
#include <string>
#include <vector>

#include "output/preallocation.hpp"
#include "output/sink.hpp"

using namespace xdpcap;

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

// A file name in an ext4 directory, removed at the end.
class Ext4File {
public:
    explicit Ext4File(const std::string& dir) : path_(dir + "/xdpcap-prealloc-XXXXXX")
    {
        const int fd = ::mkstemp(path_.data());
        EXPECT_GE(fd, 0);
        ::close(fd);
    }
    ~Ext4File() { ::unlink(path_.c_str()); }
    Ext4File(const Ext4File&) = delete;
    Ext4File& operator=(const Ext4File&) = delete;
    const std::string& path() const { return path_; }
    struct stat status() const
    {
        struct stat st{};
        EXPECT_EQ(::stat(path_.c_str(), &st), 0);
        return st;
    }
    uint64_t allocated() const { return static_cast<uint64_t>(status().st_blocks) * 512; }
    uint64_t size() const { return static_cast<uint64_t>(status().st_size); }

private:
    std::string path_;
};

std::vector<uint8_t> pattern(size_t n)
{
    std::vector<uint8_t> bytes(n);
    for (size_t i = 0; i < n; ++i)
        bytes[i] = static_cast<uint8_t>(i * 13 + i / 4096);
    return bytes;
}

// A sink on `path` that has written `bytes` and flushed them.
Sink written_sink(const std::string& path, const std::vector<uint8_t>& bytes)
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
    Ext4File file(*dir);
    const std::vector<uint8_t> bytes = pattern(kWritten);
    Sink sink = written_sink(file.path(), bytes);
    EXPECT_EQ(file.size(), kWritten) << "readers see only what was written";
    EXPECT_GE(file.allocated(), Preallocation::kStep) << "blocks allocated ahead of the writes";
    sink.close();
    EXPECT_EQ(file.size(), kWritten);
    EXPECT_LE(file.allocated(), kTrimmedAtMost) << "no blocks left past the end";

    std::vector<uint8_t> back(kWritten);
    const int fd = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(::read(fd, back.data(), back.size()), static_cast<ssize_t>(back.size()));
    ::close(fd);
    EXPECT_EQ(back, bytes);
}

TEST(Preallocation, Ext4FileIsTrimmedWhenTheSinkGoesAwayUnclosed)
{
    NEED_EXT4(dir);
    Ext4File file(*dir);
    const std::vector<uint8_t> bytes = pattern(kWritten / 2);
    std::optional<Sink> moved;
    {
        Sink sink = written_sink(file.path(), bytes);
        moved.emplace(std::move(sink));
    } // the moved-from sink goes away: it must neither trim nor close the file
    moved->append(bytes.data(), bytes.size());
    moved->flush();
    EXPECT_GE(file.allocated(), Preallocation::kStep) << "still allocated ahead";
    moved.reset();
    EXPECT_EQ(file.size(), kWritten);
    EXPECT_LE(file.allocated(), kTrimmedAtMost);
}

TEST(Preallocation, EachRotatedFileIsTrimmed)
{
    NEED_EXT4(dir);
    Ext4File first(*dir), second(*dir);
    const std::vector<uint8_t> bytes = pattern(kWritten);
    Sink sink = written_sink(first.path(), bytes);
    sink.close();
    sink.reopen(second.path());
    sink.append(bytes.data(), bytes.size());
    sink.flush();
    EXPECT_GE(second.allocated(), Preallocation::kStep) << "the next file is allocated ahead too";
    sink.close();
    for (const Ext4File* file : {&first, &second}) {
        EXPECT_EQ(file->size(), kWritten);
        EXPECT_LE(file->allocated(), kTrimmedAtMost);
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
