// -r's -w OUT: written under a temporary name beside OUT and renamed into
// place only once the reading is done, so that a run that fails never
// truncates or replaces a file that was there.
#pragma once

#include <string>

#include "base/unique_fd.hpp"

namespace xdpcap {

class ReplacedFile {
public:
    // Whether `path` is to be replaced this way: nothing there yet, or a
    // regular file. A symbolic link (but one open_output_path() follows) or
    // a directory there is an Error; any other file (a FIFO, /dev/null, a
    // trusted link such as /dev/stdout) is written in place.
    static bool wanted_for(const std::string& path);
    // Creates the temporary (O_EXCL) in `path`'s directory; an existing
    // `path` must be writable by this process.
    // `private_file`: the temporary is created mode 0600 (a copy of TLS secrets).
    static ReplacedFile create(const std::string& path, bool private_file = false);

    ReplacedFile(ReplacedFile&& other) noexcept;
    ReplacedFile& operator=(ReplacedFile&&) = delete;
    // A temporary never finished is removed.
    ~ReplacedFile();

    // A descriptor of the temporary for the writer.
    UniqueFd writer() const;
    const std::string& path() const noexcept { return path_; }
    bool existed() const noexcept { return existed_; }

    // The reading ended. Success: the temporary takes `path`'s place.
    // Failure: the bytes written go to `path` only when nothing was there
    // (what was read before the failure is kept); otherwise the temporary
    // is removed. Raises Error when the rename fails.
    void finish(bool succeeded);
    // Another process (the one waiting for the reader) finishes it.
    void leave_to_other_process() noexcept { pending_ = false; }

private:
    ReplacedFile(std::string path, std::string temporary, UniqueFd fd, bool existed)
        : path_(std::move(path)), temporary_(std::move(temporary)), fd_(std::move(fd)), existed_(existed)
    {
    }

    std::string path_;
    std::string temporary_;
    UniqueFd fd_;
    bool existed_;
    bool pending_ = true;
};

} // namespace xdpcap
