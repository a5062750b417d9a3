#include "programs/drops.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "drops.skel.h"
#include "base/error.hpp"
#include "programs/filter_front.hpp"
#include "host/kallsyms.hpp"
#include "programs/kernel_btf.hpp"
#include "programs/scratch_maps.hpp"
#include "xdpcap_abi.h"

namespace xdpcap {

void DropProgram::Deleter::operator()(xdpcap_drops* skel) const noexcept
{
    xdpcap_drops__destroy(skel);
}

std::optional<std::string> drop_reasons_refusal(const KernelBtf& btf)
{
    if (!btf.loaded)
        return "--drops needs the kernel's BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF) to name the drop "
               "reasons; this kernel has none";
    if (btf.drop_reasons.empty())
        return "--drops needs the kernel's drop reasons (Linux 5.17 and later); this kernel's skb:kfree_skb has none";
    return std::nullopt;
}


void require_drop_reasons()
{
    if (const auto refusal = drop_reasons_refusal(kernel_btf()))
        throw Error(*refusal);
}

DropProgram DropProgram::load(uint32_t snaplen, uint32_t ifindex, Direction direction, uint32_t sample_every,
                              int events_fd, int counters_fd, int sample_ticks_fd, int stage_fd, int wake_fd, int wakeups_fd, bool with_filter,
                              const Attribution& attribution)
{
    require_drop_reasons();
    std::unique_ptr<xdpcap_drops, Deleter> skel(xdpcap_drops__open());
    if (!skel)
        throw Error("cannot open the drop program: " + errno_text(errno));
    skel->rodata->snaplen = snaplen;
    skel->rodata->capture_ifindex = ifindex;
    skel->rodata->filter_enabled = with_filter;
    skel->rodata->sample_every = sample_every;
    // The namespace we run in is the interface's: -i finds it there.
    struct stat netns {};
    if (::stat("/proc/self/ns/net", &netns) != 0)
        throw Error("cannot read this process's network namespace: " + errno_text(errno));
    skel->rodata->capture_netns = static_cast<uint32_t>(netns.st_ino);
    skel->rodata->drop_direction = direction == Direction::In    ? XDPCAP_DIR_INGRESS
                                   : direction == Direction::Out ? XDPCAP_DIR_EGRESS
                                                                 : 0;
    if (bpf_map__reuse_fd(skel->maps.events, events_fd) != 0 ||
        bpf_map__reuse_fd(skel->maps.counters, counters_fd) != 0 ||
        bpf_map__reuse_fd(skel->maps.sample_ticks, sample_ticks_fd) != 0 ||
        bpf_map__reuse_fd(skel->maps.stage, stage_fd) != 0 || bpf_map__reuse_fd(skel->maps.wake, wake_fd) != 0 ||
        bpf_map__reuse_fd(skel->maps.wakeups, wakeups_fd) != 0)
        throw Error("cannot share the capture maps with the drop program: " + errno_text(errno));
    if (!apply_attribution(*skel, attribution))
        throw Error("cannot share the process owners with the drop program: " + errno_text(errno));
    bpf_program__set_autoload(skel->progs.xdpcap_drop_sample, with_filter);
    size_gather_scratch(skel->maps.gather_scratch, snaplen, true);
    size_part_scratch(skel->maps.part_scratch, 0); // parts are built in gather_scratch
    const DirectMap direct_map = find_direct_map();
    const std::optional<std::string> limitation =
        direct_map.unreadable ? std::optional<std::string>("dropped frames keep only their linear bytes (their "
                                                           "headers, mostly): " + *direct_map.unreadable)
                              : std::nullopt;
    skel->rodata->read_pages = !direct_map.unreadable;
    skel->rodata->page_offset_base_at = direct_map.page_offset_base_at;
    skel->rodata->vmemmap_base_at = direct_map.vmemmap_base_at;
    if (const int err = -xdpcap_drops__load(skel.get())) {
        if (err == EPERM)
            throw Error("cannot load the drop program: " + errno_text(err) +
                        " (needs root or CAP_BPF and CAP_PERFMON)");
        throw Error("cannot load the drop program on the skb:kfree_skb tracepoint: " + errno_text(err));
    }
    if (with_filter) {
        const uint32_t slot = 0;
        const int sampler = bpf_program__fd(skel->progs.xdpcap_drop_sample);
        if (bpf_map_update_elem(bpf_map__fd(skel->maps.drop_sampler), &slot, &sampler, BPF_ANY) != 0)
            throw Error("cannot link the filter to the drop program: " + errno_text(errno));
    }
    return DropProgram(std::move(skel), limitation);
}

int DropProgram::view_map_fd() const
{
    return bpf_map__fd(skel_->maps.drop_view);
}

void DropProgram::install_filter(std::span<const bpf_insn> body, int counters_fd)
{
    const std::vector<bpf_insn> prog = filter_front(counters_fd, hook_info(Hook::Drop).counters,
                                                    bpf_map__fd(skel_->maps.drop_sampler), 0, 0, body);
    filter_ = load_filter_front(BPF_PROG_TYPE_RAW_TRACEPOINT, "xdpcap_fdrop", prog, bpf_prog_load_opts{});
    const uint32_t slot = 0;
    const int fd = filter_.get();
    if (bpf_map_update_elem(bpf_map__fd(skel_->maps.drop_filter), &slot, &fd, BPF_ANY) != 0)
        throw Error("cannot link the drop program to its filter: " + errno_text(errno));
}

uint64_t DropProgram::missed() const noexcept
{
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(bpf_program__fd(skel_->progs.xdpcap_drop), &info, &len) != 0)
        return 0;
    return info.recursion_misses;
}

void DropProgram::enable_batching(uint32_t batch_bytes) noexcept
{
    skel_->data->batch_bytes = batch_bytes;
    skel_->bss->batching = 1;
}

void DropProgram::attach()
{
    // Kept in the skeleton, which destroys it with itself.
    skel_->links.xdpcap_drop = bpf_program__attach_raw_tracepoint(skel_->progs.xdpcap_drop, "kfree_skb");
    if (!skel_->links.xdpcap_drop)
        throw Error("cannot attach to the skb:kfree_skb tracepoint: " + errno_text(errno));
}

} // namespace xdpcap
