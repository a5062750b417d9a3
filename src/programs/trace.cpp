#include "programs/trace.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <utility>

#include "base/error.hpp"
#include "host/kallsyms.hpp"
#include "programs/filter_front.hpp"
#include "programs/libbpf_log.hpp"
#include "programs/program_btf.hpp"
#include "programs/scratch_maps.hpp"
#include "trace.skel.h"
#include "xdpcap_abi.h"

namespace xdpcap {

void TracePrograms::Deleter::operator()(xdpcap_trace* skel) const noexcept
{
    xdpcap_trace__destroy(skel);
}

namespace {

// The BTF id of a program's main function: what fentry/fexit attach to.
uint32_t main_function_btf_id(int prog_fd, const std::string& what)
{
    const int64_t type_id = main_function_type_id(prog_fd);
    if (type_id < 0)
        throw Error("cannot read " + what + ": " + errno_text(errno));
    if (type_id == 0)
        throw Error("cannot filter while tracing " + what + ": it carries no BTF");
    return static_cast<uint32_t>(type_id);
}

} // namespace

TracePrograms TracePrograms::load(const std::vector<XdpProgramInfo>& targets, bool entry, bool exit,
                                  uint32_t snaplen, uint32_t ifindex, uint32_t sample_every, int events_fd,
                                  int counters_fd, int sample_ticks_fd, int stage_fd, int wake_fd, int wakeups_fd,
                                  std::span<const bpf_insn> filter)
{
    TracePrograms out;
    const DirectMap direct_map = find_direct_map();
    if (direct_map.unreadable && snaplen > XDPCAP_MAX_SAMPLE_SIZE)
        out.limitation_ = "traced frames are kept up to " + std::to_string(XDPCAP_MAX_SAMPLE_SIZE) +
            " bytes: " + *direct_map.unreadable;
    out.entry_ = entry;
    out.exit_ = exit;
    for (size_t index = 0; index < targets.size(); ++index) {
        const XdpProgramInfo& target = targets[index];
        const std::string what = "XDP program '" + target.name + "' (id " + std::to_string(target.id) + ")";
        Instance instance;
        instance.name = what;
        instance.target.reset(bpf_prog_get_fd_by_id(target.id));
        if (!instance.target)
            throw Error("cannot open " + what + " to trace it: " + errno_text(errno));
        instance.skel.reset(xdpcap_trace__open());
        if (!instance.skel)
            throw Error("cannot open the trace programs: " + errno_text(errno));
        xdpcap_trace* skel = instance.skel.get();
        skel->rodata->snaplen = snaplen;
        skel->rodata->capture_ifindex = ifindex;
        skel->rodata->program_index = static_cast<uint16_t>(index);
        skel->rodata->filter_enabled = !filter.empty();
        skel->rodata->sample_every = sample_every;
        // Frames longer than one record: their parts from the fragments' pages.
        skel->rodata->read_pages = !direct_map.unreadable;
        skel->rodata->page_offset_base_at = direct_map.page_offset_base_at;
        skel->rodata->vmemmap_base_at = direct_map.vmemmap_base_at;
        size_gather_scratch(skel->maps.gather_scratch, snaplen, snaplen > XDPCAP_MAX_SAMPLE_SIZE);
        // Into the same rings, counters and sampling ticks as the capture
        // object's hooks.
        if (bpf_map__reuse_fd(skel->maps.events, events_fd) != 0 ||
            bpf_map__reuse_fd(skel->maps.counters, counters_fd) != 0 ||
            bpf_map__reuse_fd(skel->maps.sample_ticks, sample_ticks_fd) != 0 ||
            bpf_map__reuse_fd(skel->maps.stage, stage_fd) != 0 || bpf_map__reuse_fd(skel->maps.wake, wake_fd) != 0 ||
            bpf_map__reuse_fd(skel->maps.wakeups, wakeups_fd) != 0)
            throw Error("cannot share the capture maps with the trace programs: " + errno_text(errno));
        bpf_program__set_autoload(skel->progs.xdpcap_entry, entry);
        bpf_program__set_autoload(skel->progs.xdpcap_exit, exit);
        for (bpf_program* prog : {skel->progs.xdpcap_entry, skel->progs.xdpcap_exit}) {
            if (bpf_program__set_attach_target(prog, instance.target.get(), target.name.c_str()) != 0)
                throw Error("cannot trace " + what + ": " + errno_text(errno));
        }
        clear_libbpf_log();
        if (const int err = -xdpcap_trace__load(skel)) {
            const std::string reason = last_libbpf_log_line();
            throw Error("cannot trace " + what + ": " + errno_text(err) + (reason.empty() ? "" : " (" + reason + ")"));
        }
        if (!filter.empty())
            load_trace_filter(instance, static_cast<uint32_t>(index), filter, entry, exit, counters_fd);
        out.instances_.push_back(std::move(instance));
    }
    return out;
}

void TracePrograms::load_trace_filter(Instance& instance, uint32_t program, std::span<const bpf_insn> filter,
                                      bool entry, bool exit, int counters_fd)
{
    // The sampling programs become tail-call targets: the kernel lets a
    // tracing program tail-call one of the same attach type and function.
    const uint32_t target_btf_id = main_function_btf_id(instance.target.get(), instance.name);
    xdpcap_trace* skel = instance.skel.get();
    const std::pair<bool, bpf_program*> hooks[2] = {{entry, skel->progs.xdpcap_entry}, {exit, skel->progs.xdpcap_exit}};
    for (int hook = 0; hook < 2; ++hook) {
        if (!hooks[hook].first)
            continue;
        UniqueFd& samplers = instance.samplers[hook];
        samplers.reset(bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, hook == 0 ? "xdpcap_tentry" : "xdpcap_texit",
                                      sizeof(uint32_t), sizeof(uint32_t), 1, nullptr));
        if (!samplers)
            throw Error("cannot create the trace filter's program array: " + errno_text(errno));
        const uint32_t slot = 0;
        const int sampler = bpf_program__fd(hooks[hook].second);
        if (bpf_map_update_elem(samplers.get(), &slot, &sampler, BPF_ANY) != 0)
            throw Error("cannot link the filter to the trace program: " + errno_text(errno));
        const std::vector<bpf_insn> prog =
            filter_front(counters_fd, static_cast<int32_t>(XDPCAP_COUNTERS_TRACE(program, hook)), samplers.get(), 0,
                         0, filter);
        bpf_prog_load_opts opts{};
        opts.expected_attach_type = hook == 0 ? BPF_TRACE_FENTRY : BPF_TRACE_FEXIT;
        opts.attach_prog_fd = static_cast<uint32_t>(instance.target.get());
        opts.attach_btf_id = target_btf_id;
        instance.filter[hook] =
            load_filter_front(BPF_PROG_TYPE_TRACING, hook == 0 ? "xdpcap_fentry" : "xdpcap_fexit", prog, opts);
    }
}

void TracePrograms::enable_batching(uint32_t batch_bytes) noexcept
{
    for (Instance& instance : instances_) {
        instance.skel->data->batch_bytes = batch_bytes;
        instance.skel->bss->batching = 1;
    }
}

void TracePrograms::attach()
{
    for (Instance& instance : instances_) {
        if (instance.filter[0] || instance.filter[1]) {
            for (int slot = 0; slot < 2; ++slot) {
                if (!instance.filter[slot])
                    continue;
                instance.filter_link[slot].reset(bpf_raw_tracepoint_open(nullptr, instance.filter[slot].get()));
                if (!instance.filter_link[slot])
                    throw Error(std::string("cannot attach to the ") + (slot == 0 ? "entry" : "exit") + " of " +
                                instance.name + ": " + errno_text(errno));
            }
            continue;
        }
        xdpcap_trace* skel = instance.skel.get();
        // Kept in the skeleton, which destroys them with itself.
        if (entry_) {
            skel->links.xdpcap_entry = bpf_program__attach_trace(skel->progs.xdpcap_entry);
            if (!skel->links.xdpcap_entry)
                throw Error("cannot attach to the entry of " + instance.name + ": " + errno_text(errno));
        }
        if (exit_) {
            skel->links.xdpcap_exit = bpf_program__attach_trace(skel->progs.xdpcap_exit);
            if (!skel->links.xdpcap_exit)
                throw Error("cannot attach to the exit of " + instance.name + ": " + errno_text(errno));
        }
    }
}

std::optional<std::string> trace_unavailable(int probe_result)
{
    if (probe_result == 1)
        return std::nullopt;
    if (probe_result == 0)
        return std::string("this kernel does not offer fentry/fexit (the tracing program type)");
    return "loading a tracing program (fentry/fexit) failed: " + errno_text(-probe_result);
}

std::optional<std::string> why_xdp_cannot_be_traced()
{
    // fentry/fexit on a BPF program needs the tracing program type.
    return trace_unavailable(libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACING, nullptr));
}

} // namespace xdpcap
