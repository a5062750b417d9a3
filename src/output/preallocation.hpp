// Blocks allocated ahead of a capture file's writes, where the file system
// makes that cheaper than allocating them as each write reaches them, and
// given back past the file's end when it is done.
//
// ext4 reserves, maps and charges to quota every 4 KiB block that write(2)
// first reaches (delayed allocation: ext4_da_write_begin, a third of the
// consumer's samples at 64-byte frames). Blocks preallocated as unwritten
// extents, 8 MiB at a time, skip that. tmpfs measured slower with it (each page is
// allocated either way) and XFS no faster, so only ext4 gets it.
#pragma once

#include <cstdint>
#include <utility>

namespace xdpcap {

class Preallocation {
public:
    static constexpr uint64_t kStep = uint64_t{8} << 20;
    // ext4's f_type (statfs(2)).
    static constexpr long kExt4Magic = 0xEF53;

    Preallocation() = default;
    // Active for a regular file on ext4; `fd` is not owned, and must stay
    // open until release().
    static Preallocation for_file(int fd) noexcept;
    Preallocation(Preallocation&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)), allocated_end_(std::exchange(other.allocated_end_, kStopped))
    {
    }
    // Releases what this one holds first.
    Preallocation& operator=(Preallocation&& other) noexcept
    {
        if (this != &other) {
            release();
            fd_ = std::exchange(other.fd_, -1);
            allocated_end_ = std::exchange(other.allocated_end_, kStopped);
        }
        return *this;
    }
    ~Preallocation() = default; // the owner of the fd calls release() before closing it

    bool active() const noexcept { return fd_ >= 0; }
    // Before the file is written up to byte `end`. A failure (no space left,
    // say) only stops the preallocation: the write then reports it.
    void extend_to(uint64_t end) noexcept
    {
        if (end > allocated_end_) [[unlikely]]
            grow(end);
    }
    // Frees the blocks past the file's end (ftruncate to its own size) and
    // stops; before the file is closed.
    void release() noexcept;

private:
    // allocated_end_ when nothing more is to be allocated: inactive, failed
    // or released.
    static constexpr uint64_t kStopped = UINT64_MAX;

    explicit Preallocation(int fd) noexcept : fd_(fd), allocated_end_(0) {}
    void grow(uint64_t end) noexcept;

    int fd_ = -1;
    uint64_t allocated_end_ = kStopped;
};

} // namespace xdpcap
