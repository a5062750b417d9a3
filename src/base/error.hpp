// Errors travel as exceptions to one boundary (main), where each becomes a
// single "xdpcap: ..." line on stderr and an exit status.
#pragma once

#include <stdexcept>
#include <string>

namespace xdpcap {

enum ExitStatus : int {
    kExitOk = 0,
    kExitSetup = 1,   // bad input, or capture could not start
    kExitRuntime = 2, // capture started, then failed (write error, interface gone)
};

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, int exit_status = kExitSetup)
        : std::runtime_error(message), exit_status_(exit_status) {}
    int exit_status() const noexcept { return exit_status_; }

private:
    int exit_status_;
};

// "No such device" for ENODEV; never a bare number.
std::string errno_text(int err);

} // namespace xdpcap
