#include "host/interfaces.hpp"

#include <linux/capability.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if_arp.h>
#include <net/if.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <memory>

#include <pcap/pcap.h>

#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

void query_driver(InterfaceInfo& info)
{
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock)
        return;
    ethtool_drvinfo drvinfo{};
    drvinfo.cmd = ETHTOOL_GDRVINFO;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, info.name.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = reinterpret_cast<char*>(&drvinfo);
    if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0)
        return;
    info.driver.assign(drvinfo.driver, strnlen(drvinfo.driver, sizeof drvinfo.driver));
    info.bus.assign(drvinfo.bus_info, strnlen(drvinfo.bus_info, sizeof drvinfo.bus_info));
}

void query_flags(InterfaceInfo& info)
{
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock)
        return;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, info.name.c_str(), IFNAMSIZ - 1);
    if (::ioctl(sock.get(), SIOCGIFFLAGS, &ifr) == 0) {
        info.up = (ifr.ifr_flags & IFF_UP) != 0;
        info.loopback = (ifr.ifr_flags & IFF_LOOPBACK) != 0;
    }
    if (::ioctl(sock.get(), SIOCGIFHWADDR, &ifr) == 0)
        info.ethernet = ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER || ifr.ifr_hwaddr.sa_family == ARPHRD_LOOPBACK;
}

bool has_capability(const __user_cap_data_struct (&data)[2], int cap)
{
    return (data[cap / 32].effective & (1u << (cap % 32))) != 0;
}

bool g_stdout_was_closed = false;

} // namespace

void reserve_standard_streams()
{
    for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        if (fd == STDOUT_FILENO)
            g_stdout_was_closed = true;
        // The lowest free number is this one.
        const int null_fd = ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
        if (null_fd >= 0 && null_fd != fd)
            ::close(null_fd);
    }
}

bool standard_output_was_closed()
{
    return g_stdout_was_closed;
}

void ignore_signals_that_are_write_errors()
{
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGXFSZ, SIG_IGN);
}

std::optional<uint32_t> interface_index_argument(const std::string& argument)
{
    uint32_t value = 0;
    const char* end = argument.data() + argument.size();
    const auto [ptr, ec] = std::from_chars(argument.data(), end, value);
    if (argument.empty() || argument.find_first_not_of("0123456789") != std::string::npos ||
        ec != std::errc() || ptr != end)
        return std::nullopt;
    return value;
}

std::vector<ListedDevice> tcpdump_devices()
{
    char error[PCAP_ERRBUF_SIZE] = {};
    pcap_if_t* all = nullptr;
    if (pcap_findalldevs(&all, error) != 0)
        throw Error(std::string("cannot list the interfaces: ") + error);
    std::unique_ptr<pcap_if_t, void (*)(pcap_if_t*)> owned(all, pcap_freealldevs);
    std::vector<ListedDevice> devices;
    for (const pcap_if_t* d = all; d; d = d->next)
        devices.push_back(ListedDevice{d->name, d->description ? d->description : "", ::if_nametoindex(d->name)});
    return devices;
}

InterfaceInfo lookup_interface(const std::string& argument)
{
    InterfaceInfo info;
    info.name = argument;
    info.ifindex = ::if_nametoindex(argument.c_str());
    if (info.ifindex == 0) {
        const int err = errno;
        const std::optional<uint32_t> number = interface_index_argument(argument);
        if (!number)
            throw Error("no such interface '" + argument + "'" + (err == ENODEV ? "" : ": " + errno_text(err)));
        if (*number == 0)
            throw Error("invalid interface number 0: tcpdump -D's numbers start at 1 (see xdpcap -D)");
        const std::vector<ListedDevice> devices = tcpdump_devices();
        if (*number > devices.size())
            throw Error("no interface has number " + argument + ": there are " + std::to_string(devices.size()) +
                        " (see xdpcap -D)");
        const ListedDevice& device = devices[*number - 1];
        if (device.ifindex == 0)
            throw Error("interface " + argument + " is " + device.name +
                        (device.description.empty() ? "" : " (" + device.description + ")") +
                        ", not a network interface: xdpcap captures network interfaces only (see xdpcap -D)");
        info.name = device.name;
        info.ifindex = device.ifindex;
    }
    query_driver(info);
    query_flags(info);
    return info;
}

bool names_any_device(const std::string& argument)
{
    if (argument == "any")
        return true;
    const std::optional<uint32_t> number = interface_index_argument(argument);
    if (!number || *number == 0 || ::if_nametoindex(argument.c_str()) != 0)
        return false;
    const std::vector<ListedDevice> devices = tcpdump_devices();
    return *number <= devices.size() && devices[*number - 1].name == "any";
}

std::vector<InterfaceInfo> namespace_interfaces()
{
    std::unique_ptr<struct if_nameindex, void (*)(struct if_nameindex*)> all(::if_nameindex(), ::if_freenameindex);
    if (!all)
        throw Error("cannot list the interfaces: " + errno_text(errno));
    std::vector<InterfaceInfo> interfaces;
    for (const struct if_nameindex* i = all.get(); i->if_index != 0; ++i) {
        InterfaceInfo info;
        info.name = i->if_name;
        info.ifindex = i->if_index;
        query_driver(info);
        query_flags(info);
        interfaces.push_back(std::move(info));
    }
    std::sort(interfaces.begin(), interfaces.end(),
              [](const InterfaceInfo& a, const InterfaceInfo& b) { return a.ifindex < b.ifindex; });
    return interfaces;
}

std::optional<InterfaceInfo> interface_by_index(uint32_t ifindex)
{
    char name[IF_NAMESIZE];
    if (::if_indextoname(ifindex, name) == nullptr)
        return std::nullopt;
    InterfaceInfo info;
    info.name = name;
    info.ifindex = ifindex;
    query_driver(info);
    query_flags(info);
    return info;
}

bool interface_exists(uint32_t ifindex)
{
    char name[IF_NAMESIZE];
    return ::if_indextoname(ifindex, name) != nullptr || errno != ENXIO;
}

std::string host_os()
{
    utsname uts{};
    if (::uname(&uts) != 0)
        return "Linux";
    return std::string(uts.sysname) + " " + uts.release;
}

std::string host_hardware()
{
    utsname uts{};
    std::string hardware = ::uname(&uts) == 0 ? uts.machine : "";
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) {
            auto colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size())
                hardware += (hardware.empty() ? "" : ", ") + line.substr(colon + 2);
            break;
        }
    }
    return hardware;
}

void require_capture_privileges()
{
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) != 0)
        return; // cannot tell: let the kernel decide
    const bool admin = has_capability(data, CAP_SYS_ADMIN);
    const bool bpf = admin || has_capability(data, CAP_BPF);
    const bool perfmon = admin || has_capability(data, CAP_PERFMON);
    const bool net_admin = has_capability(data, CAP_NET_ADMIN);
    if (bpf && perfmon && net_admin)
        return;
    std::string missing;
    for (auto [held, name] : {std::pair{bpf, "CAP_BPF"}, {net_admin, "CAP_NET_ADMIN"}, {perfmon, "CAP_PERFMON"}}) {
        if (!held)
            missing += std::string(missing.empty() ? "" : ", ") + name;
    }
    throw Error("capturing needs root or the capabilities CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON (missing: " +
                missing + ")");
}

} // namespace xdpcap
