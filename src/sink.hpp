// Buffered output to a file or standard output: one write(2) per batch,
// partial writes resumed, errors reported with the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "error.hpp"
#include "unique_fd.hpp"

namespace xdpcap {

// The reader of our standard output went away (EPIPE): a normal way to stop.
class OutputClosed : public Error {
public:
    OutputClosed() : Error("the output reader closed the pipe", kExitOk) {}
};

class Sink {
public:
    static constexpr size_t kDefaultBufferSize = 1 << 20;

    // Opens (creating if needed) without truncating, so a setup failure can
    // leave an existing file untouched; start() truncates.
    static Sink open_file(const std::string& path, size_t buffer_size = kDefaultBufferSize);
    static Sink standard_output(size_t buffer_size = kDefaultBufferSize);

    Sink(Sink&&) noexcept = default;
    Sink& operator=(Sink&&) noexcept = default;
    ~Sink() = default;

    void start();   // capture is running: truncate a regular file
    void discard(); // setup failed: remove the file if we created it

    // Room for n contiguous bytes, flushing first if needed.
    uint8_t* reserve(size_t n)
    {
        if (buffer_.size() - used_ < n)
            make_room(n);
        return buffer_.data() + used_;
    }
    void commit(size_t n) noexcept { used_ += n; }
    void append(const uint8_t* data, size_t n);
    void append(const std::vector<uint8_t>& bytes) { append(bytes.data(), bytes.size()); }

    void flush();
    size_t pending() const noexcept { return used_; }

    // After a failed write: the bytes of the failed chunk, and how many of
    // them reached the output. The chunk starts at a block boundary.
    struct FailedChunk {
        const uint8_t* data = nullptr;
        size_t size = 0;
        size_t written = 0;
    };
    const FailedChunk& failed_chunk() const noexcept { return failed_; }
    const std::string& name() const noexcept { return name_; }
    bool is_pipe() const noexcept { return is_pipe_; }
    int fd() const noexcept { return fd_; }

private:
    Sink(UniqueFd owned, int fd, std::string name, size_t buffer_size, bool created);
    void make_room(size_t n);
    void write_all(const uint8_t* data, size_t n);

    UniqueFd owned_;
    int fd_;
    std::string name_;
    std::vector<uint8_t> buffer_;
    size_t used_ = 0;
    bool created_ = false;
    bool is_pipe_ = false;
    FailedChunk failed_;
};

} // namespace xdpcap
