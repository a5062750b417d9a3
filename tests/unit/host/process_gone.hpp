// Whether a process the test started has ended, for the tests of the
// children xdpcap starts and must not leave behind.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <string>

namespace xdpcap::test {

// Gone, or a zombie nobody needs to stop.
inline bool gone(pid_t pid)
{
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!std::getline(stat, text))
        return true;
    const size_t close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

} // namespace xdpcap::test
