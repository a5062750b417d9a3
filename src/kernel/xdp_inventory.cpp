#include "kernel/xdp_inventory.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "error.hpp"
#include "unique_fd.hpp"

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

std::vector<XdpProgramInfo> dispatcher_components(uint32_t dispatcher_id)
{
    std::vector<XdpProgramInfo> found;
    for (uint32_t id = 0; bpf_link_get_next_id(id, &id) == 0;) {
        UniqueFd link(bpf_link_get_fd_by_id(id));
        if (!link)
            continue;
        bpf_link_info info{};
        uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(link.get(), &info, &len) != 0 || info.type != BPF_LINK_TYPE_TRACING ||
            info.tracing.target_obj_id != dispatcher_id)
            continue;
        XdpProgramInfo component = describe_program(info.prog_id);
        UniqueFd prog(bpf_prog_get_fd_by_id(info.prog_id));
        bpf_prog_info pinfo{};
        uint32_t plen = sizeof pinfo;
        if (prog && bpf_obj_get_info_by_fd(prog.get(), &pinfo, &plen) == 0 && pinfo.type == kProgTypeExt)
            found.push_back(component);
    }
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

std::string list_interfaces()
{
    std::unique_ptr<struct if_nameindex, void (*)(struct if_nameindex*)> all(::if_nameindex(), ::if_freenameindex);
    std::string text;
    if (!all)
        return text;
    std::vector<std::pair<unsigned, std::string>> ifaces;
    for (const struct if_nameindex* i = all.get(); i->if_index != 0; ++i)
        ifaces.emplace_back(i->if_index, i->if_name);
    std::sort(ifaces.begin(), ifaces.end());
    for (const auto& [index, name] : ifaces) {
        text += std::to_string(index) + "." + name + " [" + interface_flags(name.c_str()) + "]";
        for (const XdpAttachment& a : xdp_attachments(index)) {
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
