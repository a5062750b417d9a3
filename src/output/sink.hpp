// Buffered output to a file or standard output: one write(2) per batch,
// partial writes resumed, errors reported with the path. Large pieces can be
// referred to instead of copied; they then go out with one writev(2) together
// with the buffered bytes around them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <sys/uio.h>

#include "base/error.hpp"
#include "output/preallocation.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

// The reader of our standard output went away (EPIPE): a normal way to stop.
class OutputClosed : public Error {
public:
    OutputClosed() : Error("the output reader closed the pipe", kExitOk) {}
};

// A stop signal arrived while the output could take nothing (a stalled pipe
// reader): the capture stops; what was not written is counted.
class OutputInterrupted : public Error {
public:
    OutputInterrupted() : Error("stopped while the output took nothing more", kExitOk) {}
};

class StopSignals;

// open(2) for an output file that does not follow a final symbolic link
// (ELOOP), unless no one but root, or this process's own (real) user, could
// have put the link there: the link and its directory theirs, the directory
// writable by no one else, as /dev/stdout or /proc/self/fd/N.
int open_output_path(const std::string& path, int flags, unsigned mode = 0);
// Whether `path` is a symbolic link open_output_path() follows.
bool trusted_symbolic_link(const std::string& path);

// Test seam in the output path: consulted before every write(2)/writev(2)
// the sink makes, it lets a test fail the Nth write with any errno, or cut a
// write short, without touching the system. Never set outside tests.
class WriteFaults {
public:
    virtual ~WriteFaults() = default;
    // `n` bytes are about to be written. Return n to write them, a smaller
    // count to write only that many, or -1 with errno set to fail the call.
    virtual ssize_t before_write(size_t n) = 0;
};

class Sink {
public:
    static constexpr size_t kDefaultBufferSize = 1 << 20;
    // The most segments one writev(2) takes (IOV_MAX on Linux).
    static constexpr size_t kMaxSegments = 1024;

    // Opens (creating if needed) without truncating, so a setup failure can
    // leave an existing file untouched; start() truncates. A FIFO without a
    // reader is waited for, as long as no stop signal arrives.
    // `private_file`: created 0600 (see keep_private()).
    static Sink open_file(const std::string& path, size_t buffer_size = kDefaultBufferSize,
                          StopSignals* stop = nullptr, bool private_file = false);
    static Sink standard_output(size_t buffer_size = kDefaultBufferSize);
    // A file opened elsewhere (a temporary to be renamed), named `name` in
    // messages; it is never removed or truncated here.
    static Sink adopt(UniqueFd fd, std::string name, size_t buffer_size = kDefaultBufferSize);
    // --tls-keys: the file (and every file -C/-G opens after it) is mode
    // 0600 whatever the umask, an existing one too: it holds secrets.
    void keep_private();

    Sink(Sink&&) noexcept = default;
    Sink& operator=(Sink&&) = delete;
    ~Sink() { preallocation_.release(); } // while the file is still open

    // While the output takes nothing (a full pipe), wait for it and for
    // these signals: a stop signal ends the wait with OutputInterrupted.
    void watch(StopSignals* stop) noexcept { stop_ = stop; }
    void inject_faults(WriteFaults* faults) noexcept { faults_ = faults; }

    void start();   // capture is running: truncate a regular file
    void discard(); // setup failed: remove the file if we created it

    // Room for n contiguous bytes, flushing first if needed.
    uint8_t* reserve(size_t n)
    {
        if (buffer_.size() - used_ < n)
            make_room(n);
        return buffer_.data() + used_;
    }
    void commit(size_t n) noexcept
    {
        used_ += n;
        bytes_ += n;
    }

    // Whether reserve(n), or reserve_around_reference(n), would find room
    // without a flush (which can fail): for a writer that must not throw.
    bool has_room(size_t n) const noexcept { return buffer_.size() - used_ >= n; }
    bool has_room_around_reference(size_t n) const noexcept
    {
        return has_room(n) && segments_.size() + 3 <= kMaxSegments;
    }

    // Room for n buffered bytes around one refer(), flushing first if needed,
    // so that a block made of both never straddles two writes.
    void reserve_around_reference(size_t n)
    {
        if (buffer_.size() - used_ < n || segments_.size() + 3 > kMaxSegments)
            make_room(n);
    }
    // Queues n bytes at `data` without copying them, after everything
    // buffered so far. They must stay unchanged until flush() returns or
    // throws; call reserve_around_reference() first.
    void refer(const uint8_t* data, size_t n) noexcept
    {
        close_run();
        segments_.push_back(iovec{const_cast<uint8_t*>(data), n});
        bytes_ += n;
    }
    bool has_references() const noexcept { return !segments_.empty(); }
    void append(const uint8_t* data, size_t n);
    void append(const std::vector<uint8_t>& bytes) { append(bytes.data(), bytes.size()); }

    void flush();
    size_t pending() const noexcept { return used_; }
    // Bytes handed to this file so far, buffered ones included: what -C
    // compares with the size limit, without asking the file system.
    uint64_t bytes() const noexcept { return bytes_; }

    // File rotation: flushes and closes the file (a failure of either is an
    // Error) ...
    void close();
    // ... and then creates (or truncates) the next one, in the current
    // credentials. Buffers are kept.
    void reopen(const std::string& path);
    // Flushes begun so far: bytes buffered after the Nth began are in a
    // later chunk.
    uint64_t flushes() const noexcept { return flushes_; }

    // After a failed write: the pieces of the failed chunk, and how many of
    // its bytes reached the output. The chunk starts at a block boundary.
    struct FailedChunk {
        std::vector<iovec> segments;
        size_t size = 0;
        size_t written = 0;
    };
    const FailedChunk& failed_chunk() const noexcept { return failed_; }
    const std::string& name() const noexcept { return name_; }
    bool is_pipe() const noexcept { return is_pipe_; }
    int fd() const noexcept { return fd_; }

private:
    Sink(UniqueFd owned, int fd, std::string name, size_t buffer_size, bool created);
    // Pipes are written without blocking (see restore_flags_).
    void inspect_output();
    void make_room(size_t n);
    void write_all(const uint8_t* data, size_t n);
    void write_segments();
    [[noreturn]] void fail(int err, std::vector<iovec> segments, size_t size, size_t written);
    // After EAGAIN: false when a stop signal ended the wait.
    bool wait_writable();
    // After a failed write: true to try again (EINTR, or EAGAIN once the
    // output is writable); otherwise `err` is the failure to report.
    bool retry_after(int& err);
    // write(2)/writev(2), through the fault seam when a test set one.
    ssize_t do_write(const uint8_t* data, size_t n);
    ssize_t do_writev(const iovec* iov, int count);
    // Ends the run of buffered bytes since the last reference.
    void close_run() noexcept
    {
        if (used_ > run_start_)
            segments_.push_back(iovec{buffer_.data() + run_start_, used_ - run_start_});
        run_start_ = used_;
    }

    UniqueFd owned_;
    int fd_;
    bool private_ = false;
    // A file we opened, on ext4: its blocks are allocated ahead of the writes.
    Preallocation preallocation_;
    std::string name_;
    std::vector<uint8_t> buffer_;
    size_t used_ = 0;
    // Only while something is referred to: the buffered runs and references
    // in output order; buffered bytes since the last reference start here.
    std::vector<iovec> segments_;
    std::vector<iovec> unwritten_; // writev's working copy
    size_t run_start_ = 0;
    bool created_ = false;
    bool is_pipe_ = false;
    FailedChunk failed_;
    StopSignals* stop_ = nullptr;
    uint64_t flushes_ = 0;
    uint64_t bytes_ = 0;
    WriteFaults* faults_ = nullptr;
    // Pipes are written without blocking, so that a stop signal is noticed
    // while the reader stalls; standard output gets its flags back at the end.
    class FlagsRestore {
    public:
        FlagsRestore() = default;
        FlagsRestore(int fd, int flags) : fd_(fd), flags_(flags) {}
        FlagsRestore(FlagsRestore&& o) noexcept : fd_(std::exchange(o.fd_, -1)), flags_(o.flags_) {}
        FlagsRestore& operator=(FlagsRestore&& o) noexcept
        {
            std::swap(fd_, o.fd_);
            std::swap(flags_, o.flags_);
            return *this;
        }
        ~FlagsRestore();

    private:
        int fd_ = -1;
        int flags_ = 0;
    } restore_flags_;
};

} // namespace xdpcap
