#include "programs/rx_meta.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "host/kallsyms.hpp"
#include "programs/kernel_btf.hpp"
#include "host/link_attributes.hpp"
#include "rx_meta.skel.h"
#include "rx_meta_hash.skel.h"
#include "xdpcap_abi.h"

namespace xdpcap {

namespace {

std::vector<bpf_insn> translated_instructions(int prog_fd)
{
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0 || info.xlated_prog_len == 0)
        return {};
    std::vector<bpf_insn> insns(info.xlated_prog_len / sizeof(bpf_insn));
    bpf_prog_info again{};
    again.xlated_prog_len = static_cast<uint32_t>(insns.size() * sizeof(bpf_insn));
    again.xlated_prog_insns = reinterpret_cast<uint64_t>(insns.data());
    len = sizeof again;
    if (bpf_obj_get_info_by_fd(prog_fd, &again, &len) != 0)
        return {};
    return insns;
}

} // namespace

const KernelRxMetadata& kernel_rx_metadata()
{
    static const KernelRxMetadata probed{kernel_btf().rx_vlan_kfunc != 0, kernel_btf().rx_hash_kfunc != 0};
    return probed;
}

KfuncCallTargets kfunc_call_targets(std::span<const bpf_insn> xlated, uint64_t call_base,
                                    std::span<const uint64_t> default_addresses)
{
    KfuncCallTargets out;
    if (call_base == 0)
        return out;
    size_t call = 0;
    for (const bpf_insn& insn : xlated) {
        if (insn.code != (BPF_JMP | BPF_CALL) || insn.src_reg != BPF_PSEUDO_KFUNC_CALL)
            continue;
        if (call >= default_addresses.size() || call >= 2)
            break;
        // The verifier leaves the target as an offset from __bpf_call_base;
        // without the right to see kernel addresses it leaves nothing.
        if (insn.imm == 0 || default_addresses[call] == 0)
            return out;
        const uint64_t target = call_base + static_cast<uint64_t>(static_cast<int64_t>(insn.imm));
        out.driver[call] = target != default_addresses[call];
        ++call;
    }
    out.known = call == default_addresses.size();
    return out;
}

// One of the two builds of the program: with the VLAN kfunc, or without it.
struct RxMetadataFront::Objects {
    std::unique_ptr<xdpcap_rx_front, void (*)(xdpcap_rx_front*)> full{nullptr, xdpcap_rx_front__destroy};
    std::unique_ptr<xdpcap_rx_front_hash, void (*)(xdpcap_rx_front_hash*)> hash_only{nullptr,
                                                                                     xdpcap_rx_front_hash__destroy};
    bpf_program* program = nullptr;
};

namespace {

// Both skeletons name their maps, program and settings alike.
template <class Skeleton>
bpf_program* load_front(Skeleton* skel, int (*load)(Skeleton*), uint32_t ifindex, int rx_meta_map_fd,
                        int next_prog_fd, bool read_vlan, bool read_hash)
{
    skel->rodata->read_vlan = read_vlan;
    skel->rodata->read_hash = read_hash;
    if (bpf_map__reuse_fd(skel->maps.rx_meta, rx_meta_map_fd) != 0)
        throw Error("cannot share the RX metadata map: " + errno_text(errno));
    bpf_program* prog = skel->progs.xdpcap_rx_meta;
    bpf_program__set_ifindex(prog, ifindex);
    bpf_program__set_flags(prog, bpf_program__flags(prog) | kXdpDevBoundOnly);
    if (const int err = -load(skel))
        throw Error("the kernel refused a program bound to the device: " + errno_text(err));
    const uint32_t slot = 0;
    if (next_prog_fd >= 0 && bpf_map_update_elem(bpf_map__fd(skel->maps.rx_next), &slot, &next_prog_fd, BPF_ANY) != 0)
        throw Error("cannot link the RX metadata program to the capture program: " + errno_text(errno));
    return prog;
}

} // namespace

std::optional<RxFrontBuild> rx_front_build(const KernelRxMetadata& kernel) noexcept
{
    if (kernel.vlan)
        return RxFrontBuild::VlanAndHash;
    if (kernel.hash)
        return RxFrontBuild::HashOnly;
    return std::nullopt;
}

RxReads rx_reads(const KernelRxMetadata& kernel, const std::string& driver, bool hash_types_wanted) noexcept
{
    return RxReads{kernel.vlan, kernel.hash && (driver != "veth" || hash_types_wanted)};
}

std::span<const uint8_t> rx_front_object(RxFrontBuild build) noexcept
{
    size_t size = 0;
    const void* bytes = build == RxFrontBuild::VlanAndHash ? xdpcap_rx_front__elf_bytes(&size)
                                                           : xdpcap_rx_front_hash__elf_bytes(&size);
    return {static_cast<const uint8_t*>(bytes), size};
}

RxMetadataFront::RxMetadataFront(std::unique_ptr<Objects> objects) : objects_(std::move(objects)) {}
RxMetadataFront::RxMetadataFront(RxMetadataFront&&) noexcept = default;
RxMetadataFront& RxMetadataFront::operator=(RxMetadataFront&&) noexcept = default;
RxMetadataFront::~RxMetadataFront() = default;

int RxMetadataFront::program_fd() const
{
    return bpf_program__fd(objects_->program);
}

RxMetadataFront RxMetadataFront::load(uint32_t ifindex, int rx_meta_map_fd, int next_prog_fd, RxReads reads)
{
    const KernelRxMetadata& kernel = kernel_rx_metadata();
    const std::optional<RxFrontBuild> build = rx_front_build(kernel);
    if (!build)
        throw Error("this kernel has no XDP RX metadata kfunc");
    const bool read_vlan = *build == RxFrontBuild::VlanAndHash && reads.vlan;
    const bool read_hash = kernel.hash && reads.hash;
    auto objects = std::make_unique<Objects>();
    if (read_vlan) {
        objects->full.reset(xdpcap_rx_front__open());
        if (!objects->full)
            throw Error("cannot open the RX metadata program: " + errno_text(errno));
        objects->program = load_front(objects->full.get(), xdpcap_rx_front__load, ifindex, rx_meta_map_fd,
                                      next_prog_fd, read_vlan, read_hash);
    } else {
        objects->hash_only.reset(xdpcap_rx_front_hash__open());
        if (!objects->hash_only)
            throw Error("cannot open the RX metadata program: " + errno_text(errno));
        objects->program = load_front(objects->hash_only.get(), xdpcap_rx_front_hash__load, ifindex,
                                      rx_meta_map_fd, next_prog_fd, read_vlan, read_hash);
    }

    RxMetadataFront front(std::move(objects));
    front.driver_ = rx_driver_reads(front.program_fd(), RxReads{read_vlan, read_hash});
    return front;
}

RxReads rx_driver_reads(int prog_fd, RxReads reads)
{
    std::vector<const char*> names{"__bpf_call_base"};
    if (reads.vlan)
        names.push_back("bpf_xdp_metadata_rx_vlan_tag");
    if (reads.hash)
        names.push_back("bpf_xdp_metadata_rx_hash");
    const std::vector<uint64_t> addresses = kernel_symbol_addresses(names);
    const KfuncCallTargets targets = kfunc_call_targets(translated_instructions(prog_fd), addresses[0],
                                                        std::span<const uint64_t>(addresses).subspan(1));
    RxReads driver;
    size_t call = 0;
    if (reads.vlan)
        driver.vlan = !targets.known || targets.driver[call++];
    if (reads.hash)
        driver.hash = !targets.known || targets.driver[call++];
    return driver;
}

std::optional<std::string> rx_vlan_missing_reason(uint32_t ifindex, const std::string& driver)
{
    if (!kernel_rx_metadata().vlan)
        return "this kernel lacks the XDP RX metadata kfunc bpf_xdp_metadata_rx_vlan_tag (Linux 6.8)";
    UniqueFd map(bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "xdpcap_probe", sizeof(uint32_t), sizeof(xdpcap_rx_meta),
                                1, nullptr));
    if (!map)
        return "cannot probe the driver: " + errno_text(errno);
    try {
        if (RxMetadataFront::load(ifindex, map.get(), -1, RxReads{.vlan = true}).driver_reads().vlan)
            return std::nullopt;
    } catch (const Error& e) {
        return std::string(e.what());
    }
    return no_vlan_from_driver(driver);
}

std::string no_vlan_from_driver(const std::string& driver)
{
    return "driver " + (driver.empty() ? std::string("of the interface") : driver) +
        " does not hand them to XDP programs";
}

namespace {

bool ethtool_flag_on(const std::string& ifname, uint32_t flag)
{
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock)
        return false;
    ethtool_value value{};
    value.cmd = ETHTOOL_GFLAGS;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = reinterpret_cast<char*>(&value);
    if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0)
        return false;
    return (value.data & flag) != 0;
}

// A veth's peer: its ifindex (0 unknown) and, when it is in this network
// namespace, its name. rtnetlink says where it is (IFLA_LINK_NETNSID only
// when the peer is in another namespace, whose ifindexes mean nothing here).
struct VethPeer {
    uint32_t ifindex = 0;
    std::string name;
};

VethPeer veth_peer(const std::string& ifname)
{
    VethPeer peer;
    const auto attributes = link_attributes(::if_nametoindex(ifname.c_str()));
    if (!attributes)
        return peer;
    peer.ifindex = attributes->link;
    char name[IF_NAMESIZE] = {};
    if (peer.ifindex != 0 && !attributes->link_in_other_namespace && ::if_indextoname(peer.ifindex, name))
        peer.name = name;
    return peer;
}

} // namespace

bool rx_vlan_tags_outside_frames(const std::string& ifname, const std::string& driver)
{
    if (driver != "veth")
        return ethtool_flag_on(ifname, ETH_FLAG_RXVLAN);
    const VethPeer peer = veth_peer(ifname);
    return peer.name.empty() || ethtool_flag_on(peer.name, ETH_FLAG_TXVLAN);
}

RxVlanRemedy rx_vlan_remedy(const std::string& ifname, const std::string& driver)
{
    if (driver != "veth")
        return {"rx-vlan-offload on", "'ethtool -K " + ifname + " rxvlan off' keeps them"};
    const VethPeer peer = veth_peer(ifname);
    std::string where =
        "'ethtool -K " + (peer.name.empty() ? std::string("PEER") : peer.name) + " txvlan off' on its peer";
    if (peer.name.empty())
        where += peer.ifindex ? " (ifindex " + std::to_string(peer.ifindex) + ", another namespace)"
                              : " (another namespace)";
    return {"the peer's tx-vlan-offload on", where + " keeps them"};
}

} // namespace xdpcap
