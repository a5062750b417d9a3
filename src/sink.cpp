#include "sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xdpcap {

namespace {

// A bigger pipe buffer lets a slow reader fall further behind before we block.
constexpr int kPipeBufferSize = 1 << 20;

} // namespace

Sink::Sink(UniqueFd owned, int fd, std::string name, size_t buffer_size, bool created)
    : owned_(std::move(owned)), fd_(fd), name_(std::move(name)), buffer_(buffer_size), created_(created)
{
    // Never reallocated on the hot path: reserve_around_reference() keeps
    // the count below kMaxSegments.
    segments_.reserve(kMaxSegments);
    unwritten_.reserve(kMaxSegments);
    struct stat st{};
    if (::fstat(fd_, &st) == 0 && S_ISFIFO(st.st_mode)) {
        is_pipe_ = true;
        (void)::fcntl(fd_, F_SETPIPE_SZ, kPipeBufferSize); // best effort: limits may forbid it
    }
}

Sink Sink::open_file(const std::string& path, size_t buffer_size)
{
    bool created = true;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) {
        created = false;
        fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    }
    if (fd < 0)
        throw Error("cannot write " + path + ": " + errno_text(errno));
    return Sink(UniqueFd(fd), fd, path, buffer_size, created);
}

Sink Sink::standard_output(size_t buffer_size)
{
    return Sink(UniqueFd(), STDOUT_FILENO, "standard output", buffer_size, false);
}

void Sink::start()
{
    struct stat st{};
    if (owned_ && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        if (::ftruncate(fd_, 0) != 0)
            throw Error("cannot truncate " + name_ + ": " + errno_text(errno));
    }
}

void Sink::discard()
{
    if (created_) {
        ::unlink(name_.c_str());
        created_ = false;
    }
    owned_.reset();
}

void Sink::append(const uint8_t* data, size_t n)
{
    if (n > buffer_.size()) {
        flush();
        write_all(data, n);
        return;
    }
    std::memcpy(reserve(n), data, n);
    commit(n);
}

void Sink::make_room(size_t n)
{
    flush();
    if (n > buffer_.size())
        buffer_.resize(n); // only for a block larger than any packet: never on the hot path
}

void Sink::flush()
{
    if (!segments_.empty()) {
        close_run();
        used_ = run_start_ = 0; // whatever happens, these bytes are not retried
        write_segments();
        return;
    }
    if (used_ == 0)
        return;
    const size_t n = used_;
    used_ = 0; // whatever happens, these bytes are not retried
    write_all(buffer_.data(), n);
}

void Sink::write_segments()
{
    // segments_ keeps the chunk as it was for failed_chunk(); writev advances a copy.
    unwritten_.assign(segments_.begin(), segments_.end());
    size_t size = 0;
    for (const iovec& segment : segments_)
        size += segment.iov_len;
    iovec* next = unwritten_.data();
    size_t left = unwritten_.size();
    size_t written = 0;
    while (left > 0) {
        const ssize_t n = ::writev(fd_, next, static_cast<int>(left));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int err = errno;
            std::vector<iovec> chunk(segments_.begin(), segments_.end());
            segments_.clear();
            fail(err, std::move(chunk), size, written);
        }
        written += static_cast<size_t>(n);
        for (size_t done = static_cast<size_t>(n); done > 0;) {
            if (done >= next->iov_len) {
                done -= next->iov_len;
                ++next;
                --left;
            } else {
                next->iov_base = static_cast<uint8_t*>(next->iov_base) + done;
                next->iov_len -= done;
                done = 0;
            }
        }
    }
    segments_.clear();
}

void Sink::fail(int err, std::vector<iovec> segments, size_t size, size_t written)
{
    failed_ = FailedChunk{std::move(segments), size, written};
    if (err == EPIPE)
        throw OutputClosed();
    throw Error("cannot write " + name_ + ": " + errno_text(err), kExitRuntime);
}

void Sink::write_all(const uint8_t* data, size_t n)
{
    const uint8_t* const chunk = data;
    const size_t chunk_size = n;
    while (n > 0) {
        const ssize_t written = ::write(fd_, data, n);
        if (written < 0) {
            if (errno == EINTR)
                continue;
            const int err = errno;
            fail(err, {iovec{const_cast<uint8_t*>(chunk), chunk_size}}, chunk_size, chunk_size - n);
        }
        data += written;
        n -= static_cast<size_t>(written);
    }
}

} // namespace xdpcap
