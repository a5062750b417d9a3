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
    if (used_ == 0)
        return;
    const size_t n = used_;
    used_ = 0; // whatever happens, these bytes are not retried
    write_all(buffer_.data(), n);
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
            failed_ = FailedChunk{chunk, chunk_size, chunk_size - n};
            if (errno == EPIPE)
                throw OutputClosed();
            throw Error("cannot write " + name_ + ": " + errno_text(errno), kExitRuntime);
        }
        data += written;
        n -= static_cast<size_t>(written);
    }
}

} // namespace xdpcap
