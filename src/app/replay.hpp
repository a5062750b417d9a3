// -r FILE: the packets of a capture file through the filter (libpcap's, in
// userspace) to text lines or, with -w, into a filtered pcapng copy that
// keeps the input's interfaces and every option of each packet kept.
#pragma once

#include <string>

#include "cli/config.hpp"

namespace xdpcap {

// What happens to this process's privileges (see read_capture_file()).
enum class ReadPrivileges {
    Keep,   // in-process, as it is: tests, which must not fork or change user
    GiveUp, // the command line's -r
};

// Returns the exit status; raises Error for an unreadable or malformed file.
// GiveUp: started as root (or with capabilities), the files are opened,
// then every privilege goes before the first byte is parsed; a -w file is
// then renamed into place by a parent process that parses nothing.
int read_capture_file(const Config& config, const std::string& filter,
                      ReadPrivileges privileges = ReadPrivileges::Keep);

} // namespace xdpcap
