// Output files for Sink tests: an in-memory file, and a pipe that can be made
// to fail part-way.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

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

// A pipe that takes only `capacity` bytes and never blocks the writer.
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
    // The sink opens its own description of the pipe: limit that one.
    static void make_small_and_nonblocking(int fd)
    {
        ASSERT_EQ(::fcntl(fd, F_SETPIPE_SZ, 4096), 4096);
        ASSERT_EQ(::fcntl(fd, F_SETFL, O_NONBLOCK), 0);
    }
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

} // namespace xdpcap::test
