// Output files for Sink tests: an in-memory file, a pipe, a temporary
// directory, and write faults injected through the sink's test seam.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "output/sink.hpp"

namespace xdpcap::test {

using Bytes = std::vector<uint8_t>;

// An anonymous in-memory file the Sink opens by path.
class MemFile {
public:
    MemFile() : fd_(::memfd_create("xdpcap-test", MFD_CLOEXEC)) {}
    ~MemFile() { ::close(fd_); }
    MemFile(const MemFile&) = delete;
    MemFile& operator=(const MemFile&) = delete;
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
    Bytes contents() const
    {
        Bytes out(static_cast<size_t>(::lseek(fd_, 0, SEEK_END)));
        EXPECT_EQ(::pread(fd_, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
        return out;
    }

private:
    int fd_;
};

// A fresh directory under `parent`, removed with everything in it.
class TempDir {
public:
    explicit TempDir(const std::string& parent = "/tmp")
    {
        std::string pattern = parent + "/xdpcap-test-XXXXXX";
        if (::mkdtemp(pattern.data()))
            path_ = pattern;
        EXPECT_FALSE(path_.empty()) << "mkdtemp in " << parent;
    }
    ~TempDir()
    {
        if (!path_.empty())
            std::filesystem::remove_all(path_);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

inline Bytes read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

// A pipe whose contents a test can read back, or whose reader can go away.
class SmallPipe {
public:
    SmallPipe()
    {
        EXPECT_EQ(::pipe2(fds_, O_CLOEXEC), 0);
    }
    ~SmallPipe()
    {
        close_reader();
        ::close(fds_[1]);
    }
    SmallPipe(const SmallPipe&) = delete;
    SmallPipe& operator=(const SmallPipe&) = delete;
    std::string writer_path() const { return "/proc/self/fd/" + std::to_string(fds_[1]); }
    // Everything in the pipe now.
    Bytes contents()
    {
        Bytes out;
        ::fcntl(fds_[0], F_SETFL, O_NONBLOCK);
        uint8_t chunk[4096];
        for (ssize_t n; (n = ::read(fds_[0], chunk, sizeof chunk)) > 0;)
            out.insert(out.end(), chunk, chunk + n);
        return out;
    }
    void close_reader()
    {
        if (fds_[0] >= 0)
            ::close(fds_[0]);
        fds_[0] = -1;
    }

private:
    int fds_[2] = {-1, -1};
};

// The output takes `budget` bytes: the write that reaches the budget is cut
// short there (if any of it fits), and every write after that fails with `err`.
class FailAfter : public WriteFaults {
public:
    FailAfter(size_t budget, int err) : budget_(budget), err_(err) {}
    ssize_t before_write(size_t n) override
    {
        if (budget_ == 0) {
            errno = err_;
            return -1;
        }
        const size_t take = n < budget_ ? n : budget_;
        budget_ -= take;
        return static_cast<ssize_t>(take);
    }

private:
    size_t budget_;
    int err_;
};

// Every other write call fails with EAGAIN first: a transient condition the
// sink must wait out, not report.
class EagainEveryOther : public WriteFaults {
public:
    ssize_t before_write(size_t n) override
    {
        if (++calls_ % 2 == 1) {
            errno = EAGAIN;
            return -1;
        }
        return static_cast<ssize_t>(n);
    }

private:
    unsigned calls_ = 0;
};

} // namespace xdpcap::test
