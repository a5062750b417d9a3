#include "output/preallocation.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>

namespace xdpcap {

Preallocation Preallocation::for_file(int fd) noexcept
{
    struct stat st{};
    struct statfs fs{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || ::fstatfs(fd, &fs) != 0 || fs.f_type != kExt4Magic)
        return Preallocation();
    return Preallocation(fd);
}

void Preallocation::grow(uint64_t end) noexcept
{
    const uint64_t to = (end / kStep + 1) * kStep;
    // KEEP_SIZE: readers of the growing file still see only what was written.
    int rc;
    do
        rc = ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(allocated_end_),
                         static_cast<off_t>(to - allocated_end_));
    while (rc != 0 && errno == EINTR);
    allocated_end_ = rc == 0 ? to : kStopped;
}

void Preallocation::release() noexcept
{
    if (fd_ < 0)
        return;
    // Also after a failed fallocate: it may have allocated part of its range.
    // ext4 frees the blocks past the end even when the size stays.
    struct stat st{};
    if (::fstat(fd_, &st) == 0)
        (void)::ftruncate(fd_, st.st_size);
    fd_ = -1;
    allocated_end_ = kStopped;
}

} // namespace xdpcap
