#include "output/replaced_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "base/error.hpp"
#include "output/sink.hpp"

namespace xdpcap {

namespace {

// "dir/.name.xdpcap-PID-N": hidden beside the file, so that the rename stays
// within one file system.
std::string temporary_name(const std::string& path, unsigned attempt)
{
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    return dir + "." + base + ".xdpcap-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
}

} // namespace

bool ReplacedFile::wanted_for(const std::string& path)
{
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        return true; // the open of the temporary says what is wrong, if anything
    if (S_ISLNK(st.st_mode) && trusted_symbolic_link(path))
        return false; // /dev/stdout: written where it leads
    if (S_ISLNK(st.st_mode))
        throw Error("cannot write " + path + ": it is a symbolic link, which xdpcap does not follow");
    if (S_ISDIR(st.st_mode))
        throw Error("cannot write " + path + ": " + errno_text(EISDIR));
    return S_ISREG(st.st_mode);
}

ReplacedFile ReplacedFile::create(const std::string& path, bool private_file)
{
    if (path.empty() || path.back() == '/')
        throw Error("cannot write " + path + ": " + errno_text(EISDIR));
    struct stat st {};
    const bool existed = ::lstat(path.c_str(), &st) == 0;
    // As the file system would answer an open for writing, not replaced behind its back.
    if (existed && ::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0)
        throw Error("cannot write " + path + ": " + errno_text(errno));
    constexpr unsigned kAttempts = 100;
    for (unsigned attempt = 0; attempt < kAttempts; ++attempt) {
        std::string temporary = temporary_name(path, attempt);
        UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           private_file ? 0600 : 0644));
        if (fd)
            return ReplacedFile(path, std::move(temporary), std::move(fd), existed);
        if (errno != EEXIST)
            throw Error("cannot write " + path + ": " + errno_text(errno));
    }
    throw Error("cannot write " + path + ": no free temporary name beside it");
}

ReplacedFile::ReplacedFile(ReplacedFile&& other) noexcept
    : path_(std::move(other.path_)), temporary_(std::move(other.temporary_)), fd_(std::move(other.fd_)),
      existed_(other.existed_), pending_(std::exchange(other.pending_, false))
{
}

ReplacedFile::~ReplacedFile()
{
    if (pending_)
        ::unlink(temporary_.c_str());
}

UniqueFd ReplacedFile::writer() const
{
    UniqueFd fd(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!fd)
        throw Error("cannot write " + path_ + ": " + errno_text(errno));
    return fd;
}

void ReplacedFile::finish(bool succeeded)
{
    if (!pending_)
        return;
    pending_ = false;
    struct stat st {};
    const bool written = ::fstat(fd_.get(), &st) == 0 && st.st_size > 0;
    if (!succeeded && (existed_ || !written)) {
        ::unlink(temporary_.c_str());
        return;
    }
    if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        ::unlink(temporary_.c_str());
        throw Error("cannot write " + path_ + ": cannot rename " + temporary_ + " to it: " + errno_text(err));
    }
}

} // namespace xdpcap
