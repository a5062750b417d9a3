// Facts about the host and the capture interface, for messages and pcapng options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xdpcap {

struct InterfaceInfo {
    std::string name;
    uint32_t ifindex = 0;
    std::string driver; // empty when unknown
    std::string bus;    // ethtool bus_info; empty when none
    bool up = true;     // administratively up (IFF_UP)
    bool loopback = false; // IFF_LOOPBACK: every packet sent comes back in
    // Its frames begin with an Ethernet header (ARPHRD_ETHER; lo's too):
    // a tun, a WireGuard or an IP tunnel device carries bare IP packets.
    bool ethernet = true;
};

// tcpdump -D's list, in its order (libpcap's pcap_findalldevs): the
// network interfaces, and pseudo-devices (any, nflog, ...) xdpcap cannot
// capture. -D numbers them from 1, and -i N means the Nth.
struct ListedDevice {
    std::string name;
    std::string description; // libpcap's, empty for most interfaces
    uint32_t ifindex = 0;    // 0: not a network interface
};
std::vector<ListedDevice> tcpdump_devices();

// -i's argument: an interface name or, as with tcpdump, a number that names
// no interface, then taken as the Nth of tcpdump -D's list (xdpcap -D
// numbers it alike). Raises Error when there is no such interface.
InterfaceInfo lookup_interface(const std::string& argument);
// Whether -i's argument is tcpdump's pseudo-device "any": by its name, or
// by its number in tcpdump -D's list when no interface is named so.
bool names_any_device(const std::string& argument);
// Every interface of this network namespace, by ifindex (-i any).
std::vector<InterfaceInfo> namespace_interfaces();

// The interface of this ifindex, as namespace_interfaces() describes it;
// nothing when there is none (any more).
std::optional<InterfaceInfo> interface_by_index(uint32_t ifindex);

// The ifindex an all-digit argument stands for (0 included, refused later);
// nothing for anything else, or a number beyond 32 bits.
std::optional<uint32_t> interface_index_argument(const std::string& argument);
// False only when this namespace has no such interface: a failure to ask
// (no socket left) does not make one go away.
bool interface_exists(uint32_t ifindex);

std::string host_os();       // "Linux 6.18.0-..."
std::string host_hardware(); // "x86_64, <cpu model>"

// Called first in main: a closed standard stream would hand its number to
// the next file we open, and output meant for it would land there. Closed
// ones are reopened on /dev/null; the answer says whether stdout was closed.
void reserve_standard_streams();
bool standard_output_was_closed();

// Signals that an output error raises are turned into errors: SIGPIPE (a
// reader gone, also the reader of stderr) and SIGXFSZ (a file-size limit,
// then EFBIG like a full disk).
void ignore_signals_that_are_write_errors();

// Raises Error naming the capabilities when the process lacks what capture needs.
void require_capture_privileges();

} // namespace xdpcap
