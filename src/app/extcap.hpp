// Wireshark's extcap interface (extcap(4)): every network interface appears in
// Wireshark's and tshark's interface lists as "xdpcap:IFACE", and a capture
// started there runs the normal capture writing pcapng to Wireshark's fifo.
#pragma once

#include <string>
#include <vector>

namespace xdpcap::extcap {

inline constexpr const char* kInterfacePrefix = "xdpcap:";

// True when the command line is a call from Wireshark (any --extcap-*
// argument, --capture or --fifo): main() then hands it to run().
bool is_extcap_call(int argc, const char* const* argv);

enum class Action { Version, Interfaces, Dlts, Config, CheckFilter, Capture };

struct Request {
    Action action = Action::Version;
    std::string interface; // "eth0" for "xdpcap:eth0"
    std::string fifo;
    std::string filter;
    // The config dialog's choices, as xdpcap options with their values.
    std::vector<std::string> options;
};

// Raises Error for anything Wireshark would not send.
Request parse(int argc, const char* const* argv);

std::string interfaces_text(const std::vector<std::string>& interfaces);
std::string dlts_text();
std::string config_text();
// The xdpcap command line that performs a capture request.
std::vector<std::string> capture_command(const Request& request);

// Answers the call; returns the exit status. Errors reach Wireshark as one
// "xdpcap: ..." line on stderr and a non-zero status.
int run(int argc, const char* const* argv);

} // namespace xdpcap::extcap
