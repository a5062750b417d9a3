#include "output/sink.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/stop_signals.hpp"

namespace xdpcap {

namespace {

// A bigger pipe buffer lets a slow reader fall further behind before we block.
constexpr int kPipeBufferSize = 1 << 20;

} // namespace

Sink::Sink(UniqueFd owned, int fd, std::string name, size_t buffer_size, bool created)
    : owned_(std::move(owned)), fd_(fd),
      preallocation_(owned_ ? Preallocation::for_file(fd) : Preallocation()), name_(std::move(name)),
      buffer_(buffer_size), created_(created)
{
    // Never reallocated on the hot path: reserve_around_reference() keeps
    // the count below kMaxSegments.
    segments_.reserve(kMaxSegments);
    unwritten_.reserve(kMaxSegments);
    inspect_output();
}

void Sink::inspect_output()
{
    is_pipe_ = false;
    struct stat st{};
    if (::fstat(fd_, &st) == 0 && S_ISFIFO(st.st_mode)) {
        is_pipe_ = true;
        (void)::fcntl(fd_, F_SETPIPE_SZ, kPipeBufferSize); // best effort: limits may forbid it
        const int flags = ::fcntl(fd_, F_GETFL);
        if (flags >= 0 && !(flags & O_NONBLOCK) && ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) == 0 && !owned_)
            restore_flags_ = FlagsRestore(fd_, flags);
    }
}

Sink::FlagsRestore::~FlagsRestore()
{
    if (fd_ >= 0)
        (void)::fcntl(fd_, F_SETFL, flags_);
}

namespace {

bool trusted_owner(const struct stat& st)
{
    return st.st_uid == 0 || st.st_uid == ::getuid();
}

// The directory of `path`'s last component, opened to look at it and to
// open the link within it: neither can change between the two.
UniqueFd open_parent(const std::string& path, std::string& base)
{
    const size_t slash = path.rfind('/');
    base = slash == std::string::npos ? path : path.substr(slash + 1);
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    return UniqueFd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
}

bool trusted_link_in(int dir, const std::string& base)
{
    struct stat d{}, link{};
    return ::fstat(dir, &d) == 0 && trusted_owner(d) && !(d.st_mode & (S_IWGRP | S_IWOTH)) &&
        ::fstatat(dir, base.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode) &&
        trusted_owner(link) && (link.st_uid == d.st_uid || link.st_uid == 0);
}

} // namespace

bool trusted_symbolic_link(const std::string& path)
{
    std::string base;
    const UniqueFd dir = open_parent(path, base);
    return dir && trusted_link_in(dir.get(), base);
}

int open_output_path(const std::string& path, int flags, unsigned mode)
{
    const int fd = ::open(path.c_str(), flags | O_NOFOLLOW, mode);
    if (fd >= 0 || errno != ELOOP)
        return fd;
    std::string base;
    const UniqueFd dir = open_parent(path, base);
    if (!dir || !trusted_link_in(dir.get(), base)) {
        errno = ELOOP;
        return -1;
    }
    return ::openat(dir.get(), base.c_str(), flags & ~O_NOFOLLOW, mode);
}

namespace {

// O_NOFOLLOW's ELOOP said in words: the path's last component is a link.
std::string open_failure(const std::string& what, const std::string& path, int err)
{
    if (err == ELOOP)
        return what + " " + path + ": it is a symbolic link, which xdpcap does not follow";
    return what + " " + path + ": " + errno_text(err);
}

// A FIFO opened for writing blocks until a reader opens it, beyond the reach
// of signals; opened without blocking it fails with ENXIO until then, and we
// wait in steps that a stop signal can end.
int open_fifo(const std::string& path, StopSignals* stop)
{
    constexpr int kRetryMs = 100;
    for (;;) {
        const int fd = open_output_path(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0 || errno != ENXIO)
            return fd;
        if (stop ? !stop->pause(kRetryMs) : ::poll(nullptr, 0, kRetryMs) < 0)
            throw Error("stopped while waiting for a reader of " + path, kExitOk);
    }
}

} // namespace

Sink Sink::open_file(const std::string& path, size_t buffer_size, StopSignals* stop, bool private_file)
{
    // Never through a symbolic link someone else may have planted: as root,
    // it would have us write the file it points to.
    struct stat st{};
    if (::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
        const int fd = open_fifo(path, stop);
        if (fd < 0)
            throw Error(open_failure("cannot write", path, errno));
        Sink sink(UniqueFd(fd), fd, path, buffer_size, false);
        sink.watch(stop);
        return sink;
    }
    bool created = true;
    // Created private, never made so later: a reader who opened it in
    // between would keep reading.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, private_file ? 0600 : 0644);
    if (fd < 0 && errno == EEXIST) {
        created = false;
        fd = open_output_path(path, O_WRONLY | O_CLOEXEC);
    }
    if (fd < 0)
        throw Error(open_failure("cannot write", path, errno));
    Sink sink(UniqueFd(fd), fd, path, buffer_size, created);
    sink.watch(stop);
    if (private_file)
        sink.keep_private();
    return sink;
}

Sink Sink::standard_output(size_t buffer_size)
{
    return Sink(UniqueFd(), STDOUT_FILENO, "standard output", buffer_size, false);
}

Sink Sink::adopt(UniqueFd fd, std::string name, size_t buffer_size)
{
    const int raw = fd.get();
    return Sink(std::move(fd), raw, std::move(name), buffer_size, false);
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
    preallocation_.release();
    owned_.reset();
}

void Sink::close()
{
    flush();
    preallocation_.release();
    if (owned_) {
        if (::close(owned_.release()) != 0)
            throw Error("cannot write " + name_ + ": " + errno_text(errno), kExitRuntime);
    }
    fd_ = -1;
}

void Sink::keep_private()
{
    private_ = true;
    struct stat st{};
    if (owned_ && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) != 0600 &&
        ::fchmod(fd_, 0600) != 0) {
        const int err = errno;
        throw Error(std::string("cannot make ")
                        .append(name_)
                        .append(" private (mode 0600) for its TLS secrets: ")
                        .append(errno_text(err)));
    }
}

void Sink::reopen(const std::string& path)
{
    // -W's ring reuses its names, so an existing file is truncated; a link is not followed.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, private_ ? 0600 : 0644);
    if (fd < 0)
        throw Error(open_failure("cannot create", path, errno), kExitRuntime);
    if (private_ && ::fchmod(fd, 0600) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(std::string("cannot make ")
                        .append(path)
                        .append(" private (mode 0600) for its TLS secrets: ")
                        .append(errno_text(err)),
                    kExitRuntime);
    }
    preallocation_.release();
    owned_.reset(fd);
    fd_ = fd;
    preallocation_ = Preallocation::for_file(fd);
    name_ = path;
    created_ = false;
    bytes_ = 0;
    failed_ = FailedChunk{};
    inspect_output();
}

void Sink::append(const uint8_t* data, size_t n)
{
    if (n == 0)
        return; // an empty vector's data() may be null, which memcpy must not get
    if (n > buffer_.size()) {
        flush();
        bytes_ += n;
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
    if (used_ != 0 || !segments_.empty())
        ++flushes_;
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
    preallocation_.extend_to(bytes_); // bytes_ ends with this chunk
    // segments_ keeps the chunk as it was for failed_chunk(); writev advances a copy.
    unwritten_.assign(segments_.begin(), segments_.end());
    size_t size = 0;
    for (const iovec& segment : segments_)
        size += segment.iov_len;
    iovec* next = unwritten_.data();
    size_t left = unwritten_.size();
    size_t written = 0;
    while (left > 0) {
        const ssize_t n = do_writev(next, static_cast<int>(left));
        if (n < 0) {
            int err = errno;
            if (retry_after(err))
                continue;
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

ssize_t Sink::do_write(const uint8_t* data, size_t n)
{
    if (!faults_)
        return ::write(fd_, data, n);
    const ssize_t allowed = faults_->before_write(n);
    if (allowed < 0)
        return -1;
    return ::write(fd_, data, std::min(n, static_cast<size_t>(allowed)));
}

ssize_t Sink::do_writev(const iovec* iov, int count)
{
    if (!faults_)
        return ::writev(fd_, iov, count);
    size_t n = 0;
    for (int i = 0; i < count; ++i)
        n += iov[i].iov_len;
    const ssize_t allowed = faults_->before_write(n);
    if (allowed < 0)
        return -1;
    // A short write: the same pieces, cut after `allowed` bytes.
    std::vector<iovec> cut;
    for (size_t left = static_cast<size_t>(allowed); left > 0 && cut.size() < static_cast<size_t>(count);) {
        const iovec& piece = iov[cut.size()];
        cut.push_back(iovec{piece.iov_base, std::min(piece.iov_len, left)});
        left -= cut.back().iov_len;
    }
    if (cut.empty())
        return 0;
    return ::writev(fd_, cut.data(), static_cast<int>(cut.size()));
}

bool Sink::wait_writable()
{
    if (stop_)
        return stop_->wait_for(fd_, POLLOUT);
    pollfd fd{fd_, POLLOUT, 0};
    return ::poll(&fd, 1, -1) >= 0 || errno == EINTR;
}

void Sink::fail(int err, std::vector<iovec> segments, size_t size, size_t written)
{
    failed_ = FailedChunk{std::move(segments), size, written};
    if (err == EPIPE)
        throw OutputClosed();
    if (err == EINTR)
        throw OutputInterrupted();
    throw Error("cannot write " + name_ + ": " + errno_text(err), kExitRuntime);
}

bool Sink::retry_after(int& err)
{
    if (err == EINTR)
        return true;
    if (err == EAGAIN) {
        if (wait_writable())
            return true;
        err = EINTR; // a stop signal ended the wait
    }
    return false;
}

void Sink::write_all(const uint8_t* data, size_t n)
{
    preallocation_.extend_to(bytes_); // bytes_ ends with this chunk
    const uint8_t* const chunk = data;
    const size_t chunk_size = n;
    while (n > 0) {
        const ssize_t written = do_write(data, n);
        if (written < 0) {
            int err = errno;
            if (retry_after(err))
                continue;
            fail(err, {iovec{const_cast<uint8_t*>(chunk), chunk_size}}, chunk_size, chunk_size - n);
        }
        data += written;
        n -= static_cast<size_t>(written);
    }
}

} // namespace xdpcap
