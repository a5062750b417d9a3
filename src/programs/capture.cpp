#include "programs/capture.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <new>
#include <utility>
#include <vector>

#include "capture.skel.h"
#include "base/counters.hpp"
#include "base/error.hpp"
#include "base/ebpf_insn.hpp"
#include "programs/filter_front.hpp"
#include "programs/libbpf_log.hpp"
#include "programs/trace.hpp"
#include "host/kallsyms.hpp"
#include "programs/scratch_maps.hpp"
#include "programs/kernel_btf.hpp"
#include "programs/program_btf.hpp"
#include "programs/xdp_inventory.hpp"

namespace xdpcap {

namespace {

// A test run of a program on one CPU (the flush of that CPU's staged frames).
// Filled by hand: libbpf's LIBBPF_OPTS is a C statement expression.
bpf_test_run_opts on_cpu(int cpu) noexcept
{
    bpf_test_run_opts opts{};
    opts.sz = sizeof(opts);
    opts.flags = BPF_F_TEST_RUN_ON_CPU;
    opts.cpu = static_cast<uint32_t>(cpu);
    return opts;
}

} // namespace

void SkeletonDeleter::operator()(xdpcap_capture* skel) const noexcept
{
    xdpcap_capture__destroy(skel);
}

namespace {

struct LoadAttempt {
    std::unique_ptr<xdpcap_capture, SkeletonDeleter> skel;
    int err = 0;
};

bool receives_with_xdp(ReceiveAt receive)
{
    return receive == ReceiveAt::Xdp || receive == ReceiveAt::NativeXdpElseTc;
}

bool receives_with_tc(ReceiveAt receive)
{
    return receive == ReceiveAt::Tc || receive == ReceiveAt::NativeXdpElseTc;
}

// Points the object's shared maps at the ones `sharing` holds and sizes its
// counters for every slot; false with errno set when libbpf refuses.
bool share_maps(xdpcap_capture& skel, const Sharing& sharing)
{
    skel.rodata->counters_base = sharing.counters_base();
    const uint32_t entries = sharing.slots * XDPCAP_COUNTERS_ENTRIES;
    bpf_map__set_max_entries(skel.maps.counters, entries);
    bpf_map__set_max_entries(skel.maps.sample_ticks, entries);
    if (!sharing.maps)
        return true;
    const SharedMaps& m = *sharing.maps;
    const std::pair<bpf_map*, int> reused[] = {
        {skel.maps.events, m.events.get()},   {skel.maps.counters, m.counters.get()},
        {skel.maps.stage, m.stage.get()},     {skel.maps.sample_ticks, m.sample_ticks.get()},
        {skel.maps.wake, m.wake.get()},       {skel.maps.wakeups, m.wakeups.get()},
    };
    for (const auto& [map, fd] : reused) {
        if (const int err = bpf_map__reuse_fd(map, fd); err != 0) {
            errno = -err;
            return false;
        }
    }
    return true;
}

// A marked helper call and the vmlinux kfunc (BTF id; 0: the kernel lacks
// it) it becomes.
struct MarkedKfunc {
    int32_t marker;
    uint32_t kfunc_id;
};

// Turns a program's marked calls into its kfuncs' calls just before load.
// Calls of a kfunc the kernel lacks stay, in code the verifier removes as
// dead (the program's settings never reach them).
int call_marked_kfuncs(bpf_program* program, std::initializer_list<MarkedKfunc> kfuncs) noexcept
{
    try {
        const bpf_insn* insns = bpf_program__insns(program);
        std::vector<bpf_insn> patched(insns, insns + bpf_program__insn_cnt(program));
        size_t calls = 0;
        for (const MarkedKfunc& k : kfuncs) {
            if (k.kfunc_id != 0)
                calls += call_kfunc_at_marker(patched, k.marker, static_cast<int32_t>(k.kfunc_id));
        }
        return calls == 0 ? 0 : bpf_program__set_insns(program, patched.data(), patched.size());
    } catch (const std::bad_alloc&) {
        return -ENOMEM;
    }
}

// libbpf hands each tc program (section "tc/xdpcap") here: bpf_cast_to_kern_ctx.
int prepare_tc_program(bpf_program* program, bpf_prog_load_opts*, long) noexcept
{
    return call_marked_kfuncs(program, {{XDPCAP_KERN_CTX_CALL, kernel_btf().kern_ctx_kfunc}});
}

// And the XDP program bound to the device (section "xdp/xdpcap_bound"): the
// RX metadata kfuncs.
int prepare_bound_program(bpf_program* program, bpf_prog_load_opts*, long) noexcept
{
    return call_marked_kfuncs(program, {{XDPCAP_RX_VLAN_CALL, kernel_btf().rx_vlan_kfunc},
                                        {XDPCAP_RX_HASH_CALL, kernel_btf().rx_hash_kfunc}});
}

// Once per process, before the first capture object is opened.
void register_sections()
{
    static const int handler = [] {
        libbpf_prog_handler_opts tc{};
        tc.sz = sizeof(tc);
        tc.prog_prepare_load_fn = prepare_tc_program;
        if (const int err = libbpf_register_prog_handler("tc/xdpcap", BPF_PROG_TYPE_SCHED_CLS,
                                                         static_cast<bpf_attach_type>(0), &tc);
            err < 0)
            return err;
        libbpf_prog_handler_opts bound{};
        bound.sz = sizeof(bound);
        bound.prog_prepare_load_fn = prepare_bound_program;
        return libbpf_register_prog_handler("xdp/xdpcap_bound", BPF_PROG_TYPE_XDP, BPF_XDP, &bound);
    }();
    if (handler < 0)
        throw Error("cannot prepare the capture program's hooks: " + errno_text(-handler));
}

LoadAttempt try_load(uint32_t snaplen, uint32_t ifindex, bool frags, bool with_filter, Direction direction,
                     ReceiveAt receive, uint32_t trace_programs, uint32_t sample_every, const Attribution& attribution,
                     const std::optional<Sharing>& sharing, RxReads bound_reads)
{
    register_sections();
    LoadAttempt attempt;
    attempt.skel.reset(xdpcap_capture__open());
    if (!attempt.skel) {
        attempt.err = errno;
        return attempt;
    }
    attempt.skel->rodata->snaplen = snaplen;
    attempt.skel->rodata->capture_ifindex = ifindex;
    attempt.skel->rodata->filter_enabled = with_filter;
    attempt.skel->rodata->sample_every = sample_every;
    if (!apply_attribution(*attempt.skel, attribution) || (sharing && !share_maps(*attempt.skel, *sharing))) {
        attempt.err = errno;
        attempt.skel.reset();
        return attempt;
    }
    // Read from the skb itself where the kernel hands tc its sk_buff
    // (bpf_cast_to_kern_ctx, 6.2), through bpf_probe_read_kernel before.
    // Without either (a locked-down kernel) or the field's place in the
    // kernel's BTF, frames go unflagged.
    if (const auto ip_summed = kernel_btf().skb_ip_summed; ip_summed && ip_summed->bits == 2 && direction != Direction::In) {
        const bool direct = kernel_btf().kern_ctx_kfunc != 0;
        if (direct || libbpf_probe_bpf_helper(BPF_PROG_TYPE_SCHED_CLS, BPF_FUNC_probe_read_kernel, nullptr) > 0) {
            attempt.skel->rodata->read_ip_summed = direct ? XDPCAP_IP_SUMMED_DIRECT : XDPCAP_IP_SUMMED_PROBED;
            attempt.skel->rodata->ip_summed_byte = ip_summed->byte_offset;
            attempt.skel->rodata->ip_summed_shift = ip_summed->shift;
        }
    }
    const bool ingress = direction != Direction::Out;
    const bool xdp = ingress && receives_with_xdp(receive);
    const bool tc_ingress = ingress && receives_with_tc(receive);
    const bool egress = direction != Direction::In;
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_frags, xdp && frags);
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_linear, xdp && !frags);
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_ingress, tc_ingress);
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_egress, egress);
    // Multi-buffer as xdpcap_frags: native mode may fall back to that one.
    const bool bound = xdp && frags && bound_reads.any();
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_bound, bound);
    if (bound) {
        bpf_program* prog = attempt.skel->progs.xdpcap_bound;
        bpf_program__set_ifindex(prog, ifindex);
        bpf_program__set_flags(prog, bpf_program__flags(prog) | BPF_F_XDP_HAS_FRAGS | kXdpDevBoundOnly);
        attempt.skel->rodata->bound_reads_vlan = bound_reads.vlan;
        attempt.skel->rodata->bound_reads_hash = bound_reads.hash;
    }
    // Received frames need it where the VLAN tag can be had back: from the
    // skb at tc, from the NIC's RX metadata at XDP.
    const bool rebuilds = egress || tc_ingress || (xdp && kernel_rx_metadata().vlan);
    size_first_record_scratch(attempt.skel->maps.wire_scratch, snaplen, rebuilds);
    size_part_scratch(attempt.skel->maps.part_scratch, snaplen);
    size_stage(attempt.skel->maps.stage);
    // Trace mode: an entry and an exit pair per traced program.
    if (trace_programs > 1)
        bpf_map__set_max_entries(attempt.skel->maps.counters, XDPCAP_COUNTERS_TRACE(trace_programs, 0));
    attempt.err = -xdpcap_capture__load(attempt.skel.get());
    if (attempt.err)
        attempt.skel.reset();
    return attempt;
}

// A descriptor of its own for what the object holds; none for a program
// not loaded (-1).
UniqueFd duplicate(int fd)
{
    if (fd < 0)
        return {};
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        throw Error("cannot keep a capture program's descriptor: " + errno_text(errno), kExitRuntime);
    return UniqueFd(copy);
}

} // namespace

CaptureProgram CaptureProgram::load(uint32_t snaplen, uint32_t ifindex, bool with_filter, Direction direction,
                                    ReceiveAt receive, uint32_t trace_programs, uint32_t sample_every,
                                    const Attribution& attribution, std::optional<Sharing> sharing, RxReads rx_reads)
{
    collect_libbpf_log();
    // Bound to the device only with nothing in front: a filter runs first
    // and reads what the program in front of it left.
    RxReads bound_reads = !with_filter && direction != Direction::Out && receives_with_xdp(receive) &&
            rx_front_build(kernel_rx_metadata())
        ? rx_reads
        : RxReads{};
    LoadAttempt attempt = try_load(snaplen, ifindex, true, with_filter, direction, receive, trace_programs, sample_every,
                                    attribution, sharing, bound_reads);
    if (!attempt.skel && bound_reads.any()) {
        // The device refused it: a program in front is tried at attach.
        clear_libbpf_log();
        bound_reads = {};
        attempt = try_load(snaplen, ifindex, true, with_filter, direction, receive, trace_programs, sample_every,
                           attribution, sharing, bound_reads);
    }
    bool multi_buffer = true;
    if (!attempt.skel && direction != Direction::Out && receives_with_xdp(receive)) {
        const std::string frags_reason = last_libbpf_log_line();
        clear_libbpf_log();
        attempt = try_load(snaplen, ifindex, false, with_filter, direction, receive, trace_programs, sample_every,
                           attribution, sharing, RxReads{});
        multi_buffer = false;
        if (!attempt.skel) {
            if (attempt.err == EPERM)
                throw Error("cannot load the capture program: " + errno_text(attempt.err) +
                            " (needs root or CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON)");
            std::string reason = last_libbpf_log_line();
            if (reason.empty())
                reason = frags_reason;
            throw Error("cannot load the capture program: " + errno_text(attempt.err) +
                        (reason.empty() ? "" : " (" + reason + ")"));
        }
    }
    if (!attempt.skel) {
        if (attempt.err == EPERM)
            throw Error("cannot load the capture program: " + errno_text(attempt.err) +
                        " (needs root or CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON)");
        const std::string reason = last_libbpf_log_line();
        throw Error("cannot load the capture program: " + errno_text(attempt.err) +
                    (reason.empty() ? "" : " (" + reason + ")"));
    }
    CaptureProgram program(std::move(attempt.skel), multi_buffer, direction, receive, ifindex, attribution,
                           sharing ? sharing->counters_base() : 0);
    program.rx_reads_ = rx_reads;
    if (multi_buffer && bound_reads.any()) {
        program.kept_.bound = duplicate(bpf_program__fd(program.object().progs.xdpcap_bound));
        program.bound_driver_ = rx_driver_reads(program.kept_.bound.get(), bound_reads);
    }
    program.open_wake();
    return program;
}


CaptureProgram::CaptureProgram(std::unique_ptr<xdpcap_capture, SkeletonDeleter> skel, bool multi_buffer,
                               Direction direction, ReceiveAt receive, uint32_t ifindex, const Attribution& attribution,
                               uint32_t counters_base)
    : skel_(std::move(skel)), multi_buffer_(multi_buffer),
      ingress_(direction != Direction::Out && receive != ReceiveAt::None), egress_loaded_(direction != Direction::In),
      receive_(receive), ifindex_(ifindex), counters_base_(counters_base), attribution_(attribution)
{
    const auto& progs = skel_->progs;
    const auto& maps = skel_->maps;
    kept_.programs[abi_value(Hook::Xdp)] =
        duplicate(bpf_program__fd(multi_buffer_ ? progs.xdpcap_frags : progs.xdpcap_linear));
    kept_.programs[abi_value(Hook::TcIngress)] = duplicate(bpf_program__fd(progs.xdpcap_ingress));
    kept_.programs[abi_value(Hook::TcEgress)] = duplicate(bpf_program__fd(progs.xdpcap_egress));
    kept_.flush = duplicate(bpf_program__fd(progs.xdpcap_flush));
    kept_.events = duplicate(bpf_map__fd(maps.events));
    kept_.counters = duplicate(bpf_map__fd(maps.counters));
    kept_.stage = duplicate(bpf_map__fd(maps.stage));
    kept_.wakeups = duplicate(bpf_map__fd(maps.wakeups));
    kept_.rx_meta = duplicate(bpf_map__fd(maps.rx_meta));
    kept_.next[0] = duplicate(bpf_map__fd(maps.capture_next));
    kept_.next[1] = duplicate(bpf_map__fd(maps.ingress_next));
    kept_.next[2] = duplicate(bpf_map__fd(maps.egress_next));
}

SharedMaps CaptureProgram::shared_maps() const
{
    const xdpcap_capture& skel = object();
    return SharedMaps{duplicate(bpf_map__fd(skel.maps.events)), duplicate(bpf_map__fd(skel.maps.counters)),
                      duplicate(bpf_map__fd(skel.maps.stage)),  duplicate(bpf_map__fd(skel.maps.sample_ticks)),
                      duplicate(bpf_map__fd(skel.maps.wake)),   duplicate(bpf_map__fd(skel.maps.wakeups))};
}

xdpcap_capture& CaptureProgram::object() const
{
    if (!skel_)
        throw Error("internal error: the capture program's object was released before its last loading step",
                    kExitRuntime);
    return *skel_;
}

void CaptureProgram::release_object() noexcept
{
    skel_.reset();
    // A tail-call map without a filter in front, and the RX metadata map
    // without XDP, are of no more use.
    for (Hook hook : {Hook::Xdp, Hook::TcIngress, Hook::TcEgress}) {
        if (!filter_prog_[abi_value(hook)])
            kept_.next[next_of(hook)].reset();
    }
    if (!loads(Hook::Xdp))
        kept_.rx_meta.reset();
}

void WakeupsDeleter::operator()(ring_buffer* rb) const noexcept
{
    ring_buffer__free(rb);
}

void CaptureProgram::open_wake() noexcept
{
    const size_t bytes = sizeof(xdpcap_wake);
    void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(object().maps.wake), 0);
    if (base == MAP_FAILED)
        return;
    wake_view_ = std::unique_ptr<void, StageUnmapper>(base, StageUnmapper{bytes});
    // Records are never read: their arrival is the message.
    auto ignore = [](void*, void*, size_t) { return 0; };
    wakeups_.reset(ring_buffer__new(kept_.wakeups.get(), ignore, nullptr, nullptr));
}

void CaptureProgram::set_sleeping(bool sleeping) const noexcept
{
    if (wake_view_)
        __atomic_store_n(&static_cast<xdpcap_wake*>(wake_view_.get())->sleeping, sleeping ? 1u : 0u,
                         __ATOMIC_SEQ_CST);
}

int CaptureProgram::wakeups_fd() const
{
    return kept_.wakeups.get();
}

void CaptureProgram::consume_wakeups() const noexcept
{
    if (wakeups_)
        ring_buffer__consume(wakeups_.get());
}


void CaptureProgram::load_trace(const std::vector<XdpProgramInfo>& targets, bool entry, bool exit,
                                std::span<const bpf_insn> filter)
{
    const xdpcap_capture& skel = object();
    trace_.emplace(TracePrograms::load(targets, entry, exit, skel.rodata->snaplen, ifindex_, skel.rodata->sample_every,
                                       events_map_fd(), kept_.counters.get(), bpf_map__fd(skel.maps.sample_ticks),
                                       stage_map_fd(), bpf_map__fd(skel.maps.wake), wakeups_fd(), filter));
    traced_ = true;
    trace_programs_ = static_cast<uint32_t>(targets.size());
    trace_points_ = (entry ? kTraceEntry : 0u) | (exit ? kTraceExit : 0u);
}

void CaptureProgram::load_drops(Direction direction, bool with_filter)
{
    const xdpcap_capture& skel = object();
    drops_.emplace(DropProgram::load(skel.rodata->snaplen, ifindex_, direction, skel.rodata->sample_every,
                                     events_map_fd(), kept_.counters.get(), bpf_map__fd(skel.maps.sample_ticks),
                                     stage_map_fd(), bpf_map__fd(skel.maps.wake), wakeups_fd(), with_filter,
                                     attribution_));
    drops_loaded_ = true;
}

void CaptureProgram::install_drop_filter(std::span<const bpf_insn> filter_body)
{
    drops_->install_filter(filter_body, kept_.counters.get());
}

int CaptureProgram::program_fd(Hook hook) const
{
    switch (hook) {
    case Hook::TcEgress:
    case Hook::TcIngress:
    case Hook::Xdp: return kept_.programs[abi_value(hook)].get();
    default: break; // the other hooks' programs are not in this skeleton
    }
    return -1;
}

bool CaptureProgram::loads(Hook hook) const noexcept
{
    switch (hook) {
    case Hook::Xdp: return ingress_ && receives_with_xdp(receive_);
    case Hook::TcIngress: return ingress_ && receives_with_tc(receive_);
    case Hook::TcEgress: return egress_loaded_;
    default: return false;
    }
}

namespace {

const char* mechanism_name(const std::optional<TcHook>& hook)
{
    if (!hook)
        return "";
    return hook->mechanism() == TcHook::Mechanism::Tcx ? "tcx" : "clsact";
}

} // namespace

const char* CaptureProgram::egress_mechanism() const noexcept
{
    return mechanism_name(egress_);
}

const char* CaptureProgram::ingress_mechanism() const noexcept
{
    return mechanism_name(tc_ingress_);
}

int CaptureProgram::rx_meta_map_fd() const
{
    return ingress_ && rx_front_build(kernel_rx_metadata()) ? kept_.rx_meta.get() : -1;
}

int CaptureProgram::rx_vlan_view_map_fd() const
{
    return kernel_rx_metadata().vlan ? rx_meta_map_fd() : -1;
}

void StageUnmapper::operator()(void* base) const noexcept
{
    ::munmap(base, bytes);
}

std::string CaptureProgram::enable_batching(size_t ring_bytes)
{
    // A batch takes at most an eighth of a ring: one that cannot fit while
    // the reader is behind would lose all its frames at once.
    const size_t limit = std::min<size_t>(XDPCAP_BATCH_BYTES, ring_bytes / 8) & ~size_t{7};
    if (limit < 2 * (sizeof(xdpcap_meta) + 64))
        return "rings too small";
    const int cpus = libbpf_num_possible_cpus();
    const int cpu = ::sched_getcpu();
    if (cpus <= 0 || cpu < 0)
        return "the CPUs cannot be counted";
    const size_t bytes = sizeof(xdpcap_stage) * static_cast<size_t>(cpus);
    void* base = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, stage_map_fd(), 0);
    if (base == MAP_FAILED)
        return std::string("the staging map cannot be mapped: ").append(errno_text(errno));
    stage_view_ = std::unique_ptr<void, StageUnmapper>(base, StageUnmapper{bytes});
    bpf_test_run_opts opts = on_cpu(cpu);
    if (bpf_prog_test_run_opts(kept_.flush.get(), &opts) != 0) {
        const int err = errno;
        stage_view_.reset();
        return std::string("the kernel does not run a flush program on a chosen CPU: ").append(errno_text(err));
    }
    // Every hook stages into the same entry of its CPU: the tracing
    // programs' own copies of the switch follow the capture programs'.
    xdpcap_capture& skel = object();
    skel.data->batch_bytes = static_cast<uint32_t>(limit);
    skel.bss->batching = 1;
    if (trace_)
        trace_->enable_batching(static_cast<uint32_t>(limit));
    if (drops_)
        drops_->enable_batching(static_cast<uint32_t>(limit));
    batching_ = true;
    return {};
}

uint32_t CaptureProgram::staged(int cpu) const noexcept
{
    if (!stage_view_ || cpu < 0 || static_cast<size_t>(cpu + 1) * sizeof(xdpcap_stage) > stage_view_.get_deleter().bytes)
        return 0;
    const auto* entry = static_cast<const uint8_t*>(stage_view_.get()) + static_cast<size_t>(cpu) * sizeof(xdpcap_stage);
    return __atomic_load_n(reinterpret_cast<const uint32_t*>(entry + offsetof(xdpcap_stage, batch) +
                                                            offsetof(xdpcap_batch, frames)),
                           __ATOMIC_RELAXED);
}

uint64_t CaptureProgram::staged_since(int cpu) const noexcept
{
    if (!staged(cpu))
        return UINT64_MAX;
    const auto* entry = static_cast<const uint8_t*>(stage_view_.get()) + static_cast<size_t>(cpu) * sizeof(xdpcap_stage);
    return __atomic_load_n(reinterpret_cast<const uint64_t*>(entry + offsetof(xdpcap_stage, oldest_ns)),
                           __ATOMIC_RELAXED);
}

bool CaptureProgram::flush(int cpu) const noexcept
{
    bpf_test_run_opts opts = on_cpu(cpu);
    return bpf_prog_test_run_opts(kept_.flush.get(), &opts) == 0;
}

int CaptureProgram::stage_map_fd() const
{
    return kept_.stage.get();
}

int CaptureProgram::events_map_fd() const
{
    return kept_.events.get();
}

void CaptureProgram::attach(uint32_t ifindex, XdpMode mode, const std::string& ifname)
{
    // Egress first: it cannot disturb received traffic if XDP then fails.
    if (egress_loaded_)
        egress_.emplace(TcHook::attach(entry_fd(Hook::TcEgress), ifindex, ifname, TcHook::Point::Egress));
    if (ingress_ && receive_ == ReceiveAt::Tc)
        tc_ingress_.emplace(TcHook::attach(entry_fd(Hook::TcIngress), ifindex, ifname, TcHook::Point::Ingress));
    else if (ingress_)
        attach_xdp(ifindex, mode, ifname);
    if (trace_)
        trace_->attach();
    if (drops_)
        drops_->attach();
}

void CaptureProgram::attach_xdp(uint32_t ifindex, XdpMode mode, const std::string& ifname)
{
    auto failure = [&](const char* what, int err) {
        std::string hint;
        if (err == EBUSY || err == EEXIST)
            hint = " (another XDP program was attached meanwhile)";
        else if (err == EINVAL && !multi_buffer_)
            hint = " (the MTU may be too large for a program without multi-buffer support)";
        else if (err == EOPNOTSUPP)
            hint = " (the driver does not support this XDP mode)";
        return Error("cannot attach to " + ifname + " in " + what + " mode: " + errno_text(err) + hint);
    };

    // Returns 0 once attached, else the errno of the attempt.
    auto attempt = [&](uint32_t flags, XdpMode as) -> int {
        bpf_link_create_opts opts{};
        opts.sz = sizeof opts;
        opts.flags = flags;
        // A device-bound program attaches natively only.
        const int prog = as != XdpMode::Native ? entry_fd(Hook::Xdp)
            : kept_.bound                      ? kept_.bound.get()
            : rx_front_                        ? rx_front_->program_fd()
                                               : entry_fd(Hook::Xdp);
        const int fd = bpf_link_create(prog, static_cast<int>(ifindex), BPF_XDP, &opts);
        if (fd < 0)
            return errno;
        link_.reset(fd);
        attached_mode_ = as;
        return 0;
    };

    if (mode == XdpMode::Generic) {
        if (int err = attempt(XDP_FLAGS_SKB_MODE, XdpMode::Generic))
            throw failure("generic", err);
        return;
    }
    // The tail call into the capture program needs both to be multi-buffer.
    if (!kept_.bound && rx_front_build(kernel_rx_metadata()) && rx_reads_.any() && multi_buffer_) {
        try {
            rx_front_.emplace(RxMetadataFront::load(ifindex, rx_meta_map_fd(), entry_fd(Hook::Xdp), rx_reads_));
        } catch (const Error& e) {
            rx_front_failure_ = e.what();
        }
    }
    int native_err = attempt(XDP_FLAGS_DRV_MODE, XdpMode::Native);
    if (native_err != 0 && (rx_front_ || kept_.bound) && native_err != EBUSY && native_err != EEXIST &&
        native_err != EPERM) {
        // Natively without it, should a device-bound program be what the driver refuses.
        rx_front_failure_ = "the driver refused a program bound to the device: " + errno_text(native_err);
        rx_front_.reset();
        kept_.bound.reset();
        native_err = attempt(XDP_FLAGS_DRV_MODE, XdpMode::Native);
    }
    if (native_err == 0)
        return;
    rx_front_.reset();
    kept_.bound.reset();
    if (mode == XdpMode::Native || native_err == EBUSY || native_err == EEXIST || native_err == EPERM)
        throw failure("native", native_err);
    if (receive_ == ReceiveAt::NativeXdpElseTc) {
        // Generic XDP would miss frames tc redirects and cut super-frames.
        tc_ingress_.emplace(TcHook::attach(entry_fd(Hook::TcIngress), ifindex, ifname, TcHook::Point::Ingress));
        return;
    }
    if (int err = attempt(XDP_FLAGS_SKB_MODE, XdpMode::Generic))
        throw failure("generic", err);
}

int CaptureProgram::entry_fd(Hook hook) const
{
    const UniqueFd& filter = filter_prog_[abi_value(hook)];
    return filter ? filter.get() : program_fd(hook);
}

void CaptureProgram::install_filter(Hook hook, std::span<const bpf_insn> filter_body)
{
    const bool egress = hook == Hook::TcEgress;
    const bool tc = hook != Hook::Xdp;
    const auto counters_key = static_cast<int32_t>(hook_info(hook).counters + counters_base_);
    const int32_t go_on = tc ? TC_ACT_UNSPEC : XDP_PASS;
    const int next = kept_.next[next_of(hook)].get();
    const std::vector<bpf_insn> prog = filter_front(kept_.counters.get(), counters_key, next, 0, go_on, filter_body);

    const uint32_t slot = 0;
    const int capture_fd = program_fd(hook);
    if (bpf_map_update_elem(next, &slot, &capture_fd, BPF_ANY) != 0)
        throw Error("cannot link the filter to the capture program: " + errno_text(errno));

    const char* name = egress ? "xdpcap_filter_tc" : tc ? "xdpcap_filter_in" : "xdpcap_filter";
    bpf_prog_load_opts opts{};
    std::optional<MainFunction> traceable_as;
    if (!tc) {
        opts.expected_attach_type = BPF_XDP;
        // A tail call needs caller and callee to agree on multi-buffer support.
        opts.prog_flags = multi_buffer_ ? BPF_F_XDP_HAS_FRAGS : 0;
        // A second capture on the interface traces this program at its entry.
        traceable_as = MainFunction{name, "xdp_md"};
    }
    filter_prog_[abi_value(hook)] =
        load_filter_front(tc ? BPF_PROG_TYPE_SCHED_CLS : BPF_PROG_TYPE_XDP, name, prog, opts, traceable_as);
}

bool CaptureProgram::link_defunct() const
{
    if ((egress_ && egress_->defunct()) || (tc_ingress_ && tc_ingress_->defunct()))
        return true;
    if (trace_) {
        // Our links keep the traced program alive, not the interface.
        char name[IF_NAMESIZE];
        return ::if_indextoname(ifindex_, name) == nullptr && errno == ENXIO;
    }
    if (!link_)
        return false;
    bpf_link_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(link_.get(), &info, &len) != 0)
        return false;
    return info.xdp.ifindex == 0;
}

std::vector<xdpcap_counters> CaptureProgram::read_key(uint32_t key) const
{
    const int cpus = libbpf_num_possible_cpus();
    std::vector<xdpcap_counters> values(cpus > 0 ? static_cast<size_t>(cpus) : 1);
    const uint32_t slot_key = key + counters_base_;
    if (bpf_map_lookup_elem(kept_.counters.get(), &slot_key, values.data()) != 0)
        throw Error("cannot read capture counters: " + errno_text(errno), kExitRuntime);
    return values;
}

std::vector<xdpcap_counters> CaptureProgram::read_trace_counters(uint32_t program, bool exit) const
{
    return read_key(XDPCAP_COUNTERS_TRACE(program, exit ? 1u : 0u));
}

std::vector<xdpcap_counters> CaptureProgram::read_trace_counters(bool exit) const
{
    std::vector<xdpcap_counters> values = read_trace_counters(0, exit);
    for (uint32_t program = 1; program < trace_programs_; ++program) {
        const auto more = read_trace_counters(program, exit);
        for (size_t cpu = 0; cpu < values.size(); ++cpu)
            values[cpu] = values[cpu] + more[cpu];
    }
    return values;
}

std::vector<xdpcap_counters> CaptureProgram::read_counters(Hook hook) const
{
    const uint32_t key = hook_info(hook).counters;
    std::vector<xdpcap_counters> values = read_key(key);
    if (traced_ && key == XDPCAP_COUNTERS_INGRESS) {
        // Received frames in trace mode: entry and exit samples together.
        for (bool exit : {false, true}) {
            const auto more = read_trace_counters(exit);
            for (size_t cpu = 0; cpu < values.size(); ++cpu)
                values[cpu] = values[cpu] + more[cpu];
        }
    }
    return values;
}

void refuse_if_xdp_attached(uint32_t ifindex, const std::string& ifname, bool default_at_tc)
{
    const auto attached = xdp_attachments(ifindex);
    if (attached.empty())
        return;
    const XdpAttachment& a = attached.front();
    if (is_xdpcap_program(a.program.name)) {
        // The hook cannot be shared here (no tracing program type, or its
        // link is gone): say who holds it, so that it can be stopped.
        throw Error(ifname + " is already being captured by another xdpcap (" + holders_text(a.program.id) +
                    ", XDP program '" + a.program.name + "' id " + std::to_string(a.program.id) +
                    "); stop it first, or capture there without --xdp-mode (at tc ingress) or with -Q out");
    }
    const std::string program = "'" + a.program.name + "' (id " + std::to_string(a.program.id) + ", " + a.mode + ")";
    const std::string elsewhere = default_at_tc
        ? " (without --xdp-mode received frames are captured at tc ingress, as it passes them; -Q out captures "
          "sent packets without XDP)"
        : " (-Q out captures sent packets without XDP)";
    if (const auto why = why_xdp_cannot_be_traced())
        throw Error(ifname + " already runs XDP program " + program + " and cannot be traced: " + *why + elsewhere);
    throw Error(ifname + " already has an XDP program attached ('" + a.program.name + "', id " +
                std::to_string(a.program.id) + ", " + a.mode +
                "); xdpcap does not share an interface with another XDP program (-Q out captures sent packets "
                "without XDP)");
}

} // namespace xdpcap
