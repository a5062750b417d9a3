#include "host/key_log_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/error.hpp"

namespace xdpcap {

bool KeyLogReader::read_new(int fd, const KeyLogLineSink& sink, int& error)
{
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        error = errno;
        return false;
    }
    if (static_cast<uint64_t>(st.st_size) < offset_)
        start_at(0); // truncated: what is there now is new
    char buffer[16384];
    for (;;) {
        const ssize_t n = ::pread(fd, buffer, sizeof buffer, static_cast<off_t>(offset_));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            error = errno;
            return false;
        }
        if (n == 0)
            return true;
        offset_ += static_cast<uint64_t>(n);
        std::string_view chunk(buffer, static_cast<size_t>(n));
        for (size_t end; (end = chunk.find('\n')) != std::string_view::npos; chunk.remove_prefix(end + 1)) {
            if (partial_.empty()) {
                sink(chunk.substr(0, end));
            } else {
                partial_.append(chunk.substr(0, end));
                sink(partial_);
                partial_.clear();
            }
        }
        // A key log line is under 200 bytes: a longer run without a line
        // end is no key log, and is not kept.
        if (partial_.size() + chunk.size() <= 4096)
            partial_.append(chunk);
        else
            partial_.clear();
    }
}

FollowedKeyLog::FollowedKeyLog(std::string path, bool from_start) : path_(std::move(path))
{
    if (!open_path(!from_start)) {
        const int err = errno;
        warn_once("cannot open TLS key log", " yet", err);
    }
}

bool FollowedKeyLog::open_path(bool at_end)
{
    UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd)
        return false;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        return false;
    if (!S_ISREG(st.st_mode)) {
        warn_once("TLS key log", " is not a regular file", 0);
        errno = EINVAL;
        return false;
    }
    fd_ = std::move(fd);
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    reader_.start_at(at_end ? static_cast<uint64_t>(st.st_size) : 0);
    return true;
}

void FollowedKeyLog::warn_once(const char* what, const char* after, int err)
{
    if (warned_)
        return;
    warned_ = true;
    std::string line = std::string("xdpcap: ").append(what).append(" ").append(path_).append(after);
    if (err)
        line.append(": ").append(errno_text(err));
    line.push_back('\n');
    std::fputs(line.c_str(), stderr);
}

void FollowedKeyLog::poll(const KeyLogLineSink& sink)
{
    if (fd_) {
        int err = 0;
        if (!reader_.read_new(fd_.get(), sink, err))
            warn_once("cannot read TLS key log", "", err);
    }
    // tail -F: the name may lead to a new file now (a log rotated, a
    // program that writes a new file and renames it over the old one). The
    // old file's last lines were read above; the new one is read whole.
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0)
        return;
    if (fd_ && st.st_dev == dev_ && st.st_ino == ino_)
        return;
    if (open_path(false)) {
        warned_ = false;
        int err = 0;
        if (!reader_.read_new(fd_.get(), sink, err))
            warn_once("cannot read TLS key log", "", err);
    } else if (const int err = errno; err != ENOENT) {
        warn_once("cannot open TLS key log", "", err);
    }
}

namespace {

std::string make_private_dir()
{
    for (const char* base : {"/run", "/tmp"}) {
        std::string pattern = std::string(base).append("/xdpcap-keys.XXXXXX");
        if (::mkdtemp(pattern.data()))
            return pattern;
    }
    const int err = errno;
    throw Error(std::string("cannot create a private directory for the TLS key log: ").append(errno_text(err)));
}

} // namespace

CommandKeyLog::CommandKeyLog(uid_t command_uid, gid_t command_gid, uid_t dir_owner, gid_t dir_group)
    : dir_(make_private_dir())
{
    path_ = dir_ + "/sslkeylog";
    // The command's user only passes through the directory (0711) unless
    // it owns it; mkdtemp made it 0700 and unguessable.
    if (dir_owner != command_uid || ::geteuid() != dir_owner) {
        if ((::geteuid() != dir_owner && ::chown(dir_.c_str(), dir_owner, dir_group) != 0) ||
            (dir_owner != command_uid && ::chmod(dir_.c_str(), 0711) != 0)) {
            const int err = errno;
            ::rmdir(dir_.c_str());
            throw Error(
                std::string("cannot prepare ").append(dir_).append(" for the TLS key log: ").append(errno_text(err)));
        }
    }
    fd_.reset(::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd_ || ::fchmod(fd_.get(), 0600) != 0 ||
        (::geteuid() != command_uid && ::fchown(fd_.get(), command_uid, command_gid) != 0)) {
        const int err = errno;
        fd_.reset();
        ::unlink(path_.c_str());
        ::rmdir(dir_.c_str());
        throw Error(std::string("cannot create the TLS key log ").append(path_).append(": ").append(errno_text(err)));
    }
}

CommandKeyLog::~CommandKeyLog()
{
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
}

void CommandKeyLog::poll(const KeyLogLineSink& sink)
{
    int err = 0;
    if (!reader_.read_new(fd_.get(), sink, err) && !warned_) {
        warned_ = true;
        const std::string line =
            std::string("xdpcap: cannot read the command's TLS key log: ").append(errno_text(err)).append("\n");
        std::fputs(line.c_str(), stderr);
    }
}

} // namespace xdpcap
