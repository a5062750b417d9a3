#include "programs/xdp_inventory.hpp"
#include "programs/rx_meta.hpp"
#include "programs/trace.hpp"
#include "host/interface_containers.hpp"
#include "host/link_attributes.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.hpp"
#include "host/interfaces.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap {

namespace {

constexpr uint32_t kProgTypeExt = BPF_PROG_TYPE_EXT;

// The name of the program's main function, which bpf_prog_info cuts at 15
// characters.
std::string full_name(const bpf_prog_info& info, int fd)
{
    std::string name(info.name, strnlen(info.name, sizeof info.name));
    if (!info.btf_id || info.nr_func_info == 0)
        return name;
    const int64_t type_id = main_function_type_id(fd);
    if (type_id <= 0)
        return name;
    std::unique_ptr<btf, void (*)(btf*)> types(btf__load_from_kernel_by_id(info.btf_id), btf__free);
    if (!types)
        return name;
    const btf_type* type = btf__type_by_id(types.get(), static_cast<uint32_t>(type_id));
    const char* btf_name = type ? btf__name_by_offset(types.get(), type->name_off) : nullptr;
    return btf_name && *btf_name ? btf_name : name;
}

// Every BPF link the kernel has, with its info, until `visit` returns true
// (it may keep the descriptor it is given).
template <class Visit>
void for_each_link(Visit&& visit)
{
    for (uint32_t id = 0; bpf_link_get_next_id(id, &id) == 0;) {
        UniqueFd link(bpf_link_get_fd_by_id(id));
        bpf_link_info info{};
        uint32_t len = sizeof info;
        if (link && bpf_obj_get_info_by_fd(link.get(), &info, &len) == 0 && visit(link, info))
            return;
    }
}

std::vector<XdpProgramInfo> dispatcher_components(uint32_t dispatcher_id)
{
    std::vector<XdpProgramInfo> found;
    for_each_link([&](UniqueFd&, const bpf_link_info& info) {
        if (info.type != BPF_LINK_TYPE_TRACING || info.tracing.target_obj_id != dispatcher_id)
            return false;
        XdpProgramInfo component = describe_program(info.prog_id);
        UniqueFd prog(bpf_prog_get_fd_by_id(info.prog_id));
        bpf_prog_info pinfo{};
        uint32_t plen = sizeof pinfo;
        if (prog && bpf_obj_get_info_by_fd(prog.get(), &pinfo, &plen) == 0 && pinfo.type == kProgTypeExt)
            found.push_back(component);
        return false;
    });
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return found;
}

std::string interface_flags(const char* name)
{
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    if (!sock || ::ioctl(sock.get(), SIOCGIFFLAGS, &ifr) != 0)
        return "";
    std::string flags;
    auto add = [&](bool on, const char* word) {
        if (on)
            flags += std::string(flags.empty() ? "" : ", ") + word;
    };
    add(ifr.ifr_flags & IFF_UP, "Up");
    add(ifr.ifr_flags & IFF_RUNNING, "Running");
    add(ifr.ifr_flags & IFF_LOOPBACK, "Loopback");
    add(ifr.ifr_flags & IFF_PROMISC, "Promiscuous");
    return flags;
}

std::string describe(const XdpProgramInfo& p)
{
    return "'" + p.name + "' (id " + std::to_string(p.id) + (p.tag.empty() ? "" : ", tag " + p.tag) + ")";
}

} // namespace

int64_t main_function_type_id(int prog_fd)
{
    bpf_func_info func{};
    bpf_prog_info info{};
    info.nr_func_info = 1;
    info.func_info_rec_size = sizeof func;
    info.func_info = reinterpret_cast<uintptr_t>(&func);
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0)
        return -1;
    return info.btf_id && info.nr_func_info != 0 ? func.type_id : 0;
}

XdpProgramInfo describe_program(uint32_t prog_id)
{
    XdpProgramInfo out;
    out.id = prog_id;
    UniqueFd fd(bpf_prog_get_fd_by_id(prog_id));
    if (!fd)
        return out;
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0)
        return out;
    out.name = full_name(info, fd.get());
    char tag[2 * BPF_TAG_SIZE + 1];
    for (int i = 0; i < BPF_TAG_SIZE; ++i)
        std::snprintf(tag + 2 * i, 3, "%02x", info.tag[i]);
    out.tag = tag;
    return out;
}

bool is_xdpcap_program(std::string_view name)
{
    // bpf/capture.bpf.c, bpf/rx_meta.bpf.c and the filter front programs.
    for (std::string_view ours : {"xdpcap_frags", "xdpcap_linear", "xdpcap_bound", "xdpcap_filter", "xdpcap_rx_meta"}) {
        if (name == ours)
            return true;
    }
    return false;
}

std::optional<BpfFdinfo> parse_bpf_fdinfo(std::string_view fdinfo)
{
    BpfFdinfo out;
    bool program = false;
    bool prog_id = false;
    while (!fdinfo.empty()) {
        const size_t end = fdinfo.find('\n');
        const std::string_view line = fdinfo.substr(0, end);
        fdinfo = end == std::string_view::npos ? std::string_view{} : fdinfo.substr(end + 1);
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos)
            continue;
        const std::string_view key = line.substr(0, colon);
        std::string_view value = line.substr(colon + 1);
        value.remove_prefix(std::min(value.find_first_not_of(" \t"), value.size()));
        if (key == "link_id") {
            out.link = true;
        } else if (key == "prog_type") {
            program = true;
        } else if (key == "prog_id") {
            const auto [rest, ec] = std::from_chars(value.data(), value.data() + value.size(), out.prog_id);
            prog_id = ec == std::errc{} && out.prog_id != 0;
        }
    }
    if (!prog_id || (!out.link && !program))
        return std::nullopt;
    return out;
}

namespace {

using Directory = std::unique_ptr<DIR, int (*)(DIR*)>;

Directory open_directory(const std::string& path)
{
    return Directory(::opendir(path.c_str()), ::closedir);
}

// Numeric entries only: pids in /proc, descriptors in fd/.
std::optional<int> number_entry(const char* name)
{
    int value = 0;
    const char* end = name + std::strlen(name);
    const auto [rest, ec] = std::from_chars(name, end, value);
    if (ec != std::errc{} || rest != end || value < 0)
        return std::nullopt;
    return value;
}

// A small procfs file, whole; empty when it cannot be read.
std::string read_small_file(const std::string& path)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    std::string text;
    if (!fd)
        return text;
    char chunk[1024];
    for (;;) {
        const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || text.size() > 64 * 1024)
            return text;
        text.append(chunk, static_cast<size_t>(n));
    }
}

// The kind of descriptor `path` (a /proc/PID/fd entry) is, from its link text.
bool is_bpf_link_or_program(const std::string& path)
{
    char target[64];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n <= 0)
        return false;
    const std::string_view kind(target, static_cast<size_t>(n));
    return kind == "anon_inode:bpf_link" || kind == "anon_inode:bpf-prog";
}

} // namespace

std::vector<int> program_holders(uint32_t prog_id, const std::string& proc)
{
    std::vector<int> link_holders, program_only;
    const Directory processes = open_directory(proc);
    if (!processes)
        return {};
    const int self = ::getpid();
    while (const dirent* process = ::readdir(processes.get())) {
        const auto pid = number_entry(process->d_name);
        if (!pid || *pid == self)
            continue;
        const std::string base = proc + "/" + process->d_name;
        const Directory fds = open_directory(base + "/fd");
        if (!fds)
            continue;
        bool holds_link = false, holds_program = false;
        while (const dirent* fd = ::readdir(fds.get())) {
            if (!number_entry(fd->d_name) || !is_bpf_link_or_program(base + "/fd/" + fd->d_name))
                continue;
            const auto info = parse_bpf_fdinfo(read_small_file(base + "/fdinfo/" + fd->d_name));
            if (!info || info->prog_id != prog_id)
                continue;
            (info->link ? holds_link : holds_program) = true;
        }
        if (holds_link)
            link_holders.push_back(*pid);
        else if (holds_program)
            program_only.push_back(*pid);
    }
    std::vector<int>& found = link_holders.empty() ? program_only : link_holders;
    std::sort(found.begin(), found.end());
    return found;
}

std::vector<XdpAttachment> xdp_attachments(uint32_t ifindex)
{
    bpf_xdp_query_opts query{};
    query.sz = sizeof query;
    std::vector<XdpAttachment> out;
    if (bpf_xdp_query(static_cast<int>(ifindex), 0, &query) != 0)
        return out;
    for (auto [id, mode] : {std::pair{query.drv_prog_id, "native"}, {query.skb_prog_id, "generic"},
                            {query.hw_prog_id, "offload"}}) {
        if (!id)
            continue;
        XdpAttachment a;
        a.mode = mode;
        a.program = describe_program(id);
        a.components = dispatcher_components(id);
        out.push_back(std::move(a));
    }
    return out;
}

UniqueFd xdp_link_of(uint32_t ifindex, uint32_t prog_id)
{
    UniqueFd found;
    for_each_link([&](UniqueFd& link, const bpf_link_info& info) {
        if (info.type != BPF_LINK_TYPE_XDP || info.xdp.ifindex != ifindex || info.prog_id != prog_id)
            return false;
        found = std::move(link);
        return true;
    });
    return found;
}

std::vector<XdpProgramInfo> trace_targets(const XdpAttachment& attached, const std::optional<std::string>& wanted)
{
    const std::vector<XdpProgramInfo> all =
        attached.components.empty() ? std::vector<XdpProgramInfo>{attached.program} : attached.components;
    if (!wanted)
        return all;
    for (const XdpProgramInfo& p : all) {
        if (p.name == *wanted || std::to_string(p.id) == *wanted)
            return {p};
    }
    std::string choices;
    for (size_t i = 0; i < all.size(); ++i)
        choices += (i ? ", " : "") + describe(all[i]);
    throw Error("--program " + *wanted + " names no program running there; the choices are " + choices);
}

namespace {

// The interface as -i would find it; a blank one when it cannot be told.
InterfaceInfo interface_info(const std::string& name)
{
    try {
        return lookup_interface(name);
    } catch (const Error&) {
        return {};
    }
}

// The interface's driver, empty when it cannot be told.
std::string driver_of(const std::string& name)
{
    return interface_info(name).driver;
}

// -D's word on received VLAN tags for a capture there in the default mode.
std::string rx_vlan_listing(unsigned ifindex, const std::string& name)
{
    const std::string driver = driver_of(name);
    if (!rx_vlan_tags_outside_frames(name, driver))
        return "in the frames";
    // The default mode takes a veth's received frames at tc ingress.
    if (driver == "veth")
        return "restored from the skb (tc ingress)";
    const auto why = rx_vlan_missing_reason(ifindex, "");
    if (why)
        return "missing (" + rx_vlan_remedy(name, driver).setting + "; " + *why + ")";
    return "restored from the NIC's RX metadata (native mode)";
}

} // namespace

std::string received_at_listing(const ReceiveFacts& facts, const std::vector<XdpAttachment>& attached,
                                const std::optional<std::string>& untraceable)
{
    const bool any = !attached.empty();
    const bool ours = any && is_xdpcap_program(attached.front().program.name);
    if (default_receive(facts) == ReceiveAt::Tc) {
        if (ours)
            return "tc ingress (another xdpcap takes them with XDP)";
        return any ? "tc ingress (after the XDP program there)" : "tc ingress";
    }
    if (ours)
        return "tc ingress (another xdpcap takes them with XDP)";
    if (any) {
        if (untraceable)
            return "nowhere (the XDP program there holds the XDP hook and cannot be traced: " + *untraceable + ")";
        return "trace mode (fentry/fexit on the XDP program there)";
    }
    if (facts.native_xdp)
        return "XDP native mode";
    return "XDP native mode (tc ingress where the driver has none)";
}

std::string holders_text(uint32_t prog_id)
{
    const std::vector<int> pids = program_holders(prog_id);
    if (pids.empty())
        return "pid unknown";
    std::string text = pids.size() > 1 ? "pids " : "pid ";
    for (size_t i = 0; i < pids.size(); ++i)
        text += (i ? ", " : "") + std::to_string(pids[i]);
    return text;
}

std::string list_interfaces()
{
    std::string text;
    // tcpdump -D's numbers, which -i N takes.
    const std::vector<ListedDevice> devices = tcpdump_devices();
    // A host-side veth names the container at its other end, as -i any's
    // interface descriptions do: one walk over /proc for them all.
    std::vector<InterfaceInfo> infos;
    for (const ListedDevice& device : devices) {
        if (device.ifindex != 0)
            infos.push_back(interface_info(device.name));
    }
    const std::vector<std::optional<InterfaceContainer>> containers = containers_of_interfaces(infos);
    size_t info_at = 0;
    for (size_t number = 1; number <= devices.size(); ++number) {
        const ListedDevice& device = devices[number - 1];
        const std::string& name = device.name;
        const uint32_t index = device.ifindex;
        text += std::to_string(number) + "." + name;
        if (!device.description.empty())
            text += " (" + device.description + ")";
        if (index == 0 && name == "any") {
            text += ", every interface of this network namespace that carries Ethernet frames, "
                    "received at: tc ingress, sent at: tc egress (never XDP)\n";
            continue;
        }
        if (index == 0) {
            text += ", not a network interface: not captured by xdpcap\n";
            continue;
        }
        text += " [" + interface_flags(name.c_str()) + "], ifindex " + std::to_string(index);
        const InterfaceInfo& info = infos[info_at];
        if (const std::optional<InterfaceContainer>& container = containers[info_at]; container)
            text += ", " + container_description(*container);
        ++info_at;
        // Where the default mode takes received frames.
        const std::vector<XdpAttachment> attached = xdp_attachments(index);
        const bool foreign = !attached.empty() && !is_xdpcap_program(attached.front().program.name);
        text += ", received at: " +
            received_at_listing(ReceiveFacts{info.driver, info.loopback, native_xdp_support(index)}, attached,
                                foreign ? why_xdp_cannot_be_traced() : std::nullopt);
        text += ", received VLAN tags: " + rx_vlan_listing(index, name);
        for (const XdpAttachment& a : attached) {
            text += ", XDP " + a.mode + " " + describe(a.program);
            if (!a.components.empty()) {
                text += " running";
                for (size_t c = 0; c < a.components.size(); ++c)
                    text += (c ? ", " : " ") + describe(a.components[c]);
            }
        }
        text += "\n";
    }
    return text;
}

} // namespace xdpcap
