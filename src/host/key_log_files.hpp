// Where TLS key log lines come from: a file another program writes, followed
// as `tail -F` follows it (across truncation and replacement), and the
// private file -- COMMAND writes through SSLKEYLOGFILE. Both are read by
// polling from the capture loop's timer: a key log grows by a few lines per
// connection.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/unique_fd.hpp"

namespace xdpcap {

using KeyLogLineSink = std::function<void(std::string_view line)>;

// Hands complete lines (without their '\n') from an fd, from `offset` on;
// a partial last line waits for its end.
class KeyLogReader {
public:
    // Reads what was appended since the last call; starts over from the
    // beginning when the file is shorter than what was read (truncated).
    // False when reading failed (the errno in `error`).
    bool read_new(int fd, const KeyLogLineSink& sink, int& error);
    void start_at(uint64_t offset) noexcept
    {
        offset_ = offset;
        partial_.clear();
    }
    uint64_t offset() const noexcept { return offset_; }

private:
    uint64_t offset_ = 0;
    std::string partial_;
};

// --tls-keys-file FILE: follows FILE by name. Opened at once (before the
// capture gives up its privileges); a missing file is waited for.
class FollowedKeyLog {
public:
    // `from_start`: the lines already in the file too, else only new ones.
    FollowedKeyLog(std::string path, bool from_start);
    // Reads new lines; reopens the file when its name now leads to another
    // one (after the old one's last lines). A failure is one warning line
    // on stderr, once until it clears.
    void poll(const KeyLogLineSink& sink);
    const std::string& path() const noexcept { return path_; }

private:
    bool open_path(bool at_end);
    // "xdpcap: WHAT PATH AFTER[: error]", once until the file reads again.
    void warn_once(const char* what, const char* after, int err);

    std::string path_;
    UniqueFd fd_;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
    KeyLogReader reader_;
    bool warned_ = false;
};

// --tls-keys with -- COMMAND: a private directory holding one file that
// only the command's user may write (its path goes into SSLKEYLOGFILE) and
// that the capture reads through the fd it created it with. Removed when
// destroyed. `dir_owner`: the user xdpcap runs as by then (-Z's), who must
// be able to remove them.
class CommandKeyLog {
public:
    CommandKeyLog(uid_t command_uid, gid_t command_gid, uid_t dir_owner, gid_t dir_group);
    ~CommandKeyLog();
    CommandKeyLog(const CommandKeyLog&) = delete;
    CommandKeyLog& operator=(const CommandKeyLog&) = delete;

    const std::string& path() const noexcept { return path_; }
    void poll(const KeyLogLineSink& sink);

private:
    std::string dir_;
    std::string path_;
    UniqueFd fd_;
    KeyLogReader reader_;
    bool warned_ = false;
};

} // namespace xdpcap
