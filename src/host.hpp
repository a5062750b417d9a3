// Facts about the host and the capture interface, for messages and pcapng options.
#pragma once

#include <cstdint>
#include <string>

namespace xdpcap {

struct InterfaceInfo {
    std::string name;
    uint32_t ifindex = 0;
    std::string driver; // empty when unknown
    std::string bus;    // ethtool bus_info; empty when none
    bool up = true;     // administratively up (IFF_UP)
};

// Raises Error when the interface does not exist.
InterfaceInfo lookup_interface(const std::string& name);
bool interface_exists(uint32_t ifindex);

std::string host_os();       // "Linux 6.18.0-..."
std::string host_hardware(); // "x86_64, <cpu model>"

// Raises Error naming the capabilities when the process lacks what capture needs.
void require_capture_privileges();

} // namespace xdpcap
