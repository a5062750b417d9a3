#include "programs/tc_hook.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <linux/capability.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "host/privileges.hpp"

namespace xdpcap {

namespace {

// Debian 12's UAPI headers predate tcx (kernel 6.6).
constexpr int kAttachTcxIngress = 46; // BPF_TCX_INGRESS
constexpr int kAttachTcxEgress = 47;  // BPF_TCX_EGRESS
constexpr uint32_t kFlagBefore = 1u << 3; // BPF_F_BEFORE: with no relative program, first

// Our tc filters' identity: 'XD' and a slot, one per capture at a hook
// point, so that several captures share an interface. The low bit records
// whether an xdpcap created the clsact qdisc: the last xdpcap filter to go
// removes it then, also when it is a later run removing a killed one's
// leftovers. Priority 1: we see every frame before other filters decide;
// our programs return TC_ACT_UNSPEC, so the next filter runs after ours.
constexpr uint32_t kHandleBase = 0x58440000; // 'XD'
constexpr uint32_t kHandleCreatedQdisc = 1;
constexpr uint32_t kSlots = 32;
constexpr uint32_t kPriority = 1;
// Before several captures could share an interface: one handle each way.
constexpr uint32_t kLegacyHandleOwnQdisc = 0x58445043;    // 'XDPC'
constexpr uint32_t kLegacyHandleSharedQdisc = 0x58445044; // 'XDPD'

constexpr uint32_t handle_of(uint32_t slot, bool created_qdisc)
{
    return kHandleBase | slot << 1 | (created_qdisc ? kHandleCreatedQdisc : 0);
}

constexpr bool says_created_qdisc(uint32_t handle)
{
    return handle == kLegacyHandleOwnQdisc || (handle != kLegacyHandleSharedQdisc && (handle & kHandleCreatedQdisc));
}

bpf_tc_hook clsact_hook_of(uint32_t ifindex, bpf_tc_attach_point point)
{
    bpf_tc_hook hook{};
    hook.sz = sizeof hook;
    hook.ifindex = static_cast<int>(ifindex);
    hook.attach_point = point;
    return hook;
}

bpf_tc_opts filter_of(uint32_t handle)
{
    bpf_tc_opts opts{};
    opts.sz = sizeof opts;
    opts.handle = handle;
    opts.priority = kPriority;
    return opts;
}

// Test seam: forces the clsact path on kernels that have tcx.
bool tcx_disabled_for_tests()
{
    const char* value = std::getenv("XDPCAP_TEST_NO_TCX");
    return value && std::strcmp(value, "1") == 0;
}

// Whether any process holds a file descriptor of the program.
bool program_in_use(uint32_t prog_id)
{
    const std::string wanted = "prog_id:\t" + std::to_string(prog_id);
    DIR* proc = ::opendir("/proc");
    if (!proc)
        return true; // cannot tell: leave it alone
    bool found = false;
    while (!found) {
        const dirent* entry = ::readdir(proc);
        if (!entry)
            break;
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
            continue;
        const std::string dir = std::string("/proc/") + entry->d_name + "/fdinfo";
        DIR* fds = ::opendir(dir.c_str());
        if (!fds)
            continue;
        while (const dirent* fd = ::readdir(fds)) {
            if (fd->d_name[0] == '.')
                continue;
            std::ifstream info(dir + "/" + fd->d_name);
            for (std::string line; std::getline(info, line);) {
                if (line == wanted) {
                    found = true;
                    break;
                }
            }
            if (found)
                break;
        }
        ::closedir(fds);
    }
    ::closedir(proc);
    return found;
}

std::string program_name(uint32_t prog_id)
{
    UniqueFd fd(bpf_prog_get_fd_by_id(prog_id));
    if (!fd)
        return {};
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0)
        return {};
    return std::string(info.name, strnlen(info.name, sizeof info.name));
}

bool is_our_program(const std::string& name)
{
    return name.rfind("xdpcap_", 0) == 0;
}

bpf_tc_attach_point attach_point_of(TcHook::Point point)
{
    return point == TcHook::Point::Ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS;
}

// Every handle an xdpcap filter may have.
std::vector<uint32_t> all_handles()
{
    std::vector<uint32_t> handles{kLegacyHandleOwnQdisc, kLegacyHandleSharedQdisc};
    for (uint32_t slot = 0; slot < kSlots; ++slot) {
        handles.push_back(handle_of(slot, false));
        handles.push_back(handle_of(slot, true));
    }
    return handles;
}

// An xdpcap filter on the interface: its hook point, handle and program.
struct OurFilter {
    bpf_tc_attach_point point;
    uint32_t handle;
    uint32_t prog_id;
};

// By handle; with `check_program`, only those running an xdpcap program
// (looking a program up by id needs privileges the capture gave up once
// attached: detach() goes by handle alone).
std::vector<OurFilter> our_filters(uint32_t ifindex, bool check_program = true)
{
    std::vector<OurFilter> found;
    for (const bpf_tc_attach_point point : {BPF_TC_INGRESS, BPF_TC_EGRESS}) {
        for (const uint32_t handle : all_handles()) {
            bpf_tc_hook qdisc = clsact_hook_of(ifindex, point);
            bpf_tc_opts query = filter_of(handle);
            if (bpf_tc_query(&qdisc, &query) == 0 && (!check_program || is_our_program(program_name(query.prog_id))))
                found.push_back(OurFilter{point, handle, query.prog_id});
        }
    }
    return found;
}

// The whole clsact qdisc, both hook points: what destroying it takes.
bpf_tc_hook whole_clsact_of(uint32_t ifindex)
{
    return clsact_hook_of(ifindex, static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS));
}

} // namespace

TcHook::TcHook(TcHook&& other) noexcept
    : mechanism_(other.mechanism_), point_(other.point_), link_(std::move(other.link_)), ifindex_(other.ifindex_),
      tc_handle_(other.tc_handle_), tc_attached_(std::exchange(other.tc_attached_, false))
{
}

TcHook& TcHook::operator=(TcHook&& other) noexcept
{
    if (this != &other) {
        detach();
        mechanism_ = other.mechanism_;
        point_ = other.point_;
        link_ = std::move(other.link_);
        ifindex_ = other.ifindex_;
        tc_handle_ = other.tc_handle_;
        tc_attached_ = std::exchange(other.tc_attached_, false);
    }
    return *this;
}

TcHook TcHook::attach(int prog_fd, uint32_t ifindex, const std::string& ifname, Point point)
{
    TcHook hook;
    hook.ifindex_ = ifindex;
    hook.point_ = point;
    const char* where = point == Point::Ingress ? "ingress" : "egress";
    if (!tcx_disabled_for_tests()) {
        bpf_link_create_opts opts{};
        opts.sz = sizeof opts;
        opts.flags = kFlagBefore;
        const int type = point == Point::Ingress ? kAttachTcxIngress : kAttachTcxEgress;
        const int fd = bpf_link_create(prog_fd, static_cast<int>(ifindex), static_cast<bpf_attach_type>(type), &opts);
        if (fd >= 0) {
            hook.mechanism_ = Mechanism::Tcx;
            hook.link_.reset(fd);
            return hook;
        }
        const int err = errno;
        // EINVAL: the kernel does not know the tcx attach type.
        if (err != EINVAL)
            throw Error(std::string("cannot attach the ") + where + " program to " + ifname +
                        " (tcx): " + errno_text(err));
    }

    hook.mechanism_ = Mechanism::Clsact;
    remove_stale_clsact_filter(ifindex);
    bpf_tc_hook qdisc = clsact_hook_of(ifindex, attach_point_of(point));
    const int created = bpf_tc_hook_create(&qdisc);
    if (created != 0 && created != -EEXIST)
        throw Error("cannot add a clsact qdisc to " + ifname + " for " + where + " capture: " + errno_text(-created));
    // Whether an xdpcap created the qdisc: we did, or another capture's
    // filter says so.
    const std::vector<OurFilter> others = our_filters(ifindex);
    const bool created_qdisc = created == 0 || std::any_of(others.begin(), others.end(), [](const OurFilter& f) {
                                   return says_created_qdisc(f.handle);
                               });
    int err = -EEXIST;
    for (uint32_t slot = 0; slot < kSlots && err == -EEXIST; ++slot) {
        const bool taken = std::any_of(others.begin(), others.end(), [&](const OurFilter& f) {
            return f.point == attach_point_of(point) && (f.handle | kHandleCreatedQdisc) == handle_of(slot, true);
        });
        if (taken)
            continue;
        hook.tc_handle_ = handle_of(slot, created_qdisc);
        bpf_tc_opts filter = filter_of(hook.tc_handle_);
        filter.prog_fd = prog_fd;
        // EEXIST: another capture took the slot meanwhile; the next one.
        err = bpf_tc_attach(&qdisc, &filter);
    }
    if (err != 0) {
        if (created == 0) {
            bpf_tc_hook whole = whole_clsact_of(ifindex);
            bpf_tc_hook_destroy(&whole);
        }
        throw Error(std::string("cannot attach the ") + where + " program to " + ifname + " (clsact): " +
                    (err == -EEXIST ? std::to_string(kSlots) + " captures already share its " + where
                                    : errno_text(-err)));
    }
    hook.tc_attached_ = true;
    return hook;
}

void TcHook::detach() noexcept
{
    link_.reset();
    if (!tc_attached_)
        return;
    tc_attached_ = false;
    // The only step after setup that needs a capability (kept for it).
    const ScopedCapability net_admin(CAP_NET_ADMIN);
    bpf_tc_hook qdisc = clsact_hook_of(ifindex_, attach_point_of(point_));
    const bpf_tc_opts filter = filter_of(tc_handle_);
    bpf_tc_detach(&qdisc, &filter);
    // The last xdpcap filter on a qdisc an xdpcap created takes it along.
    if (says_created_qdisc(tc_handle_) && our_filters(ifindex_, false).empty()) {
        bpf_tc_hook whole = whole_clsact_of(ifindex_);
        bpf_tc_hook_destroy(&whole);
    }
}

bool TcHook::defunct() const
{
    if (link_) {
        bpf_link_info info{};
        uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(link_.get(), &info, &len) != 0)
            return false;
        return info.xdp.ifindex == 0; // tcx.ifindex: same place in the union
    }
    if (tc_attached_) {
        char name[IF_NAMESIZE];
        return ::if_indextoname(ifindex_, name) == nullptr;
    }
    return false;
}

bool remove_stale_clsact_filter(uint32_t ifindex)
{
    bool removed = false;
    bool destroy_qdisc = false;
    // A filter whose program no process holds is a killed capture's.
    for (const OurFilter& f : our_filters(ifindex)) {
        if (program_in_use(f.prog_id))
            continue;
        bpf_tc_hook qdisc = clsact_hook_of(ifindex, f.point);
        const bpf_tc_opts filter = filter_of(f.handle);
        if (bpf_tc_detach(&qdisc, &filter) != 0)
            continue;
        removed = true;
        destroy_qdisc = destroy_qdisc || says_created_qdisc(f.handle);
    }
    // Only when no live capture's filter is left on it.
    if (destroy_qdisc && our_filters(ifindex).empty()) {
        bpf_tc_hook whole = whole_clsact_of(ifindex);
        bpf_tc_hook_destroy(&whole);
    }
    return removed;
}

} // namespace xdpcap
