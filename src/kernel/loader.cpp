#include "kernel/loader.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/pkt_cls.h>
#include <net/if.h>

#include <algorithm>
#include <cstddef>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "capture.skel.h"
#include "trace.skel.h"
#include "error.hpp"
#include "filter/ebpf_insn.hpp"
#include "capture/stats.hpp"
#include "kernel/filter_front.hpp"
#include "kernel/kallsyms.hpp"
#include "kernel/scratch_maps.hpp"
#include "kernel/kernel_btf.hpp"
#include "kernel/program_btf.hpp"
#include "kernel/xdp_inventory.hpp"

namespace xdpcap {

void SkeletonDeleter::operator()(xdpcap_capture* skel) const noexcept
{
    xdpcap_capture__destroy(skel);
}

void SkeletonDeleter::operator()(xdpcap_trace* skel) const noexcept
{
    xdpcap_trace__destroy(skel);
}

namespace {

// libbpf's diagnostics (verifier log included) are kept, not printed: a
// failure becomes one line that quotes the most telling part.
std::string g_libbpf_log;

int collect_libbpf_log(enum libbpf_print_level level, const char* format, va_list args)
{
    if (level == LIBBPF_DEBUG)
        return 0;
    char line[1024];
    const int n = std::vsnprintf(line, sizeof line, format, args);
    if (g_libbpf_log.size() < 64 * 1024)
        g_libbpf_log += line;
    return n;
}

std::string last_log_line()
{
    std::string log = g_libbpf_log;
    while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
        log.pop_back();
    auto start = log.rfind('\n');
    return start == std::string::npos ? log : log.substr(start + 1);
}

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

LoadAttempt try_load(uint32_t snaplen, uint32_t ifindex, bool frags, bool with_filter, Direction direction,
                     ReceiveAt receive, uint32_t trace_programs, uint32_t sample_every, const Attribution& attribution)
{
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
    if (!apply_attribution(*attempt.skel, attribution)) {
        attempt.err = errno;
        attempt.skel.reset();
        return attempt;
    }
    // Without the helper (a locked-down kernel) or the field's place in the
    // kernel's BTF, sent frames go unflagged.
    if (const auto ip_summed = kernel_btf().skb_ip_summed; ip_summed && ip_summed->bits == 2 && direction != Direction::In &&
        libbpf_probe_bpf_helper(BPF_PROG_TYPE_SCHED_CLS, BPF_FUNC_probe_read_kernel, nullptr) > 0) {
        attempt.skel->rodata->read_ip_summed = 1;
        attempt.skel->rodata->ip_summed_byte = ip_summed->byte_offset;
        attempt.skel->rodata->ip_summed_shift = ip_summed->shift;
    }
    const bool ingress = direction != Direction::Out;
    const bool xdp = ingress && receives_with_xdp(receive);
    const bool tc_ingress = ingress && receives_with_tc(receive);
    const bool egress = direction != Direction::In;
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_frags, xdp && frags);
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_linear, xdp && !frags);
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_ingress, tc_ingress);
    bpf_program__set_autoload(attempt.skel->progs.xdpcap_egress, egress);
    // Received frames need it where the VLAN tag can be had back: from the
    // skb at tc, from the NIC's RX metadata at XDP.
    const bool rebuilds = egress || tc_ingress || (xdp && kernel_rx_metadata().vlan);
    size_first_record_scratch(attempt.skel->maps.wire_scratch, snaplen, rebuilds);
    size_part_scratch(attempt.skel->maps.part_scratch, snaplen);
    // Trace mode: an entry and an exit pair per traced program.
    if (trace_programs > 1)
        bpf_map__set_max_entries(attempt.skel->maps.counters, XDPCAP_COUNTERS_TRACE(trace_programs, 0));
    attempt.err = -xdpcap_capture__load(attempt.skel.get());
    if (attempt.err)
        attempt.skel.reset();
    return attempt;
}

} // namespace

CaptureProgram CaptureProgram::load(uint32_t snaplen, uint32_t ifindex, bool with_filter, Direction direction,
                                    ReceiveAt receive, uint32_t trace_programs, uint32_t sample_every,
                                    const Attribution& attribution)
{
    libbpf_set_print(collect_libbpf_log);
    g_libbpf_log.clear();
    LoadAttempt attempt = try_load(snaplen, ifindex, true, with_filter, direction, receive, trace_programs, sample_every,
                                    attribution);
    bool multi_buffer = true;
    if (!attempt.skel && direction != Direction::Out && receives_with_xdp(receive)) {
        const std::string frags_reason = last_log_line();
        g_libbpf_log.clear();
        attempt = try_load(snaplen, ifindex, false, with_filter, direction, receive, trace_programs, sample_every,
                           attribution);
        multi_buffer = false;
        if (!attempt.skel) {
            if (attempt.err == EPERM)
                throw Error("cannot load the capture program: " + errno_text(attempt.err) +
                            " (needs root or CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON)");
            std::string reason = last_log_line();
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
        const std::string reason = last_log_line();
        throw Error("cannot load the capture program: " + errno_text(attempt.err) +
                    (reason.empty() ? "" : " (" + reason + ")"));
    }
    return CaptureProgram(std::move(attempt.skel), multi_buffer, direction, receive, ifindex, attribution);
}

namespace {

// r<dst> = map fd, patched to the map by the kernel (two instructions).
void load_map_fd(std::vector<bpf_insn>& out, uint8_t dst, int map_fd)
{
    out.push_back(make_insn(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, map_fd));
    out.push_back(make_insn(0, 0, 0, 0, 0));
}

// The verifier's log ends with its verdict; keep the last line that says something.
std::string verifier_reason(const std::string& log)
{
    std::string reason;
    size_t start = 0;
    while (start < log.size()) {
        size_t end = log.find('\n', start);
        if (end == std::string::npos)
            end = log.size();
        const std::string line = log.substr(start, end - start);
        if (!line.empty() && line.rfind("processed ", 0) != 0 && line.rfind("verification time", 0) != 0 &&
            line.rfind("stack depth", 0) != 0)
            reason = line;
        start = end + 1;
    }
    return reason;
}

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

// Registers r6 (ctx) and r7 (verdict) survive the helper calls.
std::vector<bpf_insn> filter_front(int counters_fd, int32_t counters_key, int next_fd, int32_t slot, int32_t go_on,
                                   std::span<const bpf_insn> filter_body)
{
    constexpr uint8_t R0 = 0, R1 = 1, R2 = 2, R3 = 3, R6 = 6, R7 = 7, FP = 10;
    std::vector<bpf_insn> prog;
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_X, R6, R1, 0, 0));
    const size_t call_at = prog.size();
    prog.push_back(make_insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 0)); // target patched below
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_X, R7, R0, 0, 0));
    prog.push_back(make_insn(BPF_ST | BPF_MEM | BPF_W, FP, 0, -4, counters_key));
    load_map_fd(prog, R1, counters_fd);
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_X, R2, FP, 0, 0));
    prog.push_back(make_insn(BPF_ALU64 | BPF_ADD | BPF_K, R2, 0, 0, -4));
    prog.push_back(make_insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem));
    const size_t no_counters_at = prog.size();
    prog.push_back(make_insn(BPF_JMP | BPF_JEQ | BPF_K, R0, 0, 0, 0)); // -> verdict check, patched
    prog.push_back(make_insn(BPF_LDX | BPF_MEM | BPF_DW, R1, R0, offsetof(xdpcap_counters, seen), 0));
    prog.push_back(make_insn(BPF_ALU64 | BPF_ADD | BPF_K, R1, 0, 0, 1));
    prog.push_back(make_insn(BPF_STX | BPF_MEM | BPF_DW, R0, R1, offsetof(xdpcap_counters, seen), 0));
    const size_t verdict_at = prog.size();
    prog[no_counters_at].off = static_cast<int16_t>(verdict_at - no_counters_at - 1);
    const size_t reject_at = prog.size();
    prog.push_back(make_insn(BPF_JMP32 | BPF_JEQ | BPF_K, R7, 0, 0, 0)); // -> go on, patched
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_X, R1, R6, 0, 0));
    load_map_fd(prog, R2, next_fd);
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_K, R3, 0, 0, slot));
    prog.push_back(make_insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_tail_call));
    const size_t pass_at = prog.size();
    prog[reject_at].off = static_cast<int16_t>(pass_at - reject_at - 1);
    prog.push_back(make_insn(BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, go_on));
    prog.push_back(make_insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    prog[call_at].imm = static_cast<int32_t>(prog.size() - call_at - 1);
    prog.insert(prog.end(), filter_body.begin(), filter_body.end());
    return prog;
}

UniqueFd load_filter_front(bpf_prog_type type, const char* name, const std::vector<bpf_insn>& prog,
                           bpf_prog_load_opts opts, const std::optional<MainFunction>& traceable_as)
{
    std::string log(1 << 20, '\0');
    opts.sz = sizeof opts;
    opts.log_level = 1;
    opts.log_size = static_cast<uint32_t>(log.size());
    opts.log_buf = log.data();
    const ProgramBtf btf(prog, traceable_as);
    btf.apply(opts);
    const int fd = bpf_prog_load(type, name, "GPL", prog.data(), prog.size(), &opts);
    if (fd < 0) {
        const int err = errno;
        const bool loops = std::any_of(prog.begin(), prog.end(), [](const bpf_insn& i) {
            return i.code == (BPF_JMP | BPF_CALL) && i.src_reg == 0 && i.imm == BPF_FUNC_loop;
        });
        if (loops && libbpf_probe_bpf_helper(type, BPF_FUNC_loop, nullptr) == 0)
            throw Error("'protochain' needs the kernel's bpf_loop helper (Linux 5.17 and later), which this "
                        "kernel lacks");
        log.resize(std::strlen(log.c_str()));
        const std::string reason = verifier_reason(log);
        throw Error("the kernel refused the filter program: " + errno_text(err) +
                    (reason.empty() ? "" : " (verifier: " + reason + ")"));
    }
    return UniqueFd(fd);
}

TracePrograms TracePrograms::load(const std::vector<XdpProgramInfo>& targets, bool entry, bool exit,
                                  uint32_t snaplen, uint32_t ifindex, uint32_t sample_every, int events_fd,
                                  int counters_fd, int sample_ticks_fd, std::span<const bpf_insn> filter)
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
            bpf_map__reuse_fd(skel->maps.sample_ticks, sample_ticks_fd) != 0)
            throw Error("cannot share the capture maps with the trace programs: " + errno_text(errno));
        bpf_program__set_autoload(skel->progs.xdpcap_entry, entry);
        bpf_program__set_autoload(skel->progs.xdpcap_exit, exit);
        for (bpf_program* prog : {skel->progs.xdpcap_entry, skel->progs.xdpcap_exit}) {
            if (bpf_program__set_attach_target(prog, instance.target.get(), target.name.c_str()) != 0)
                throw Error("cannot trace " + what + ": " + errno_text(errno));
        }
        g_libbpf_log.clear();
        if (const int err = -xdpcap_trace__load(skel)) {
            const std::string reason = last_log_line();
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

void CaptureProgram::load_trace(const std::vector<XdpProgramInfo>& targets, bool entry, bool exit,
                                std::span<const bpf_insn> filter)
{
    trace_.emplace(TracePrograms::load(targets, entry, exit, skel_->rodata->snaplen, ifindex_,
                                       skel_->rodata->sample_every, bpf_map__fd(skel_->maps.events),
                                       bpf_map__fd(skel_->maps.counters), bpf_map__fd(skel_->maps.sample_ticks),
                                       filter));
    traced_ = true;
    trace_programs_ = static_cast<uint32_t>(targets.size());
    trace_points_ = (entry ? kTraceEntry : 0u) | (exit ? kTraceExit : 0u);
}

void CaptureProgram::load_drops(Direction direction, bool with_filter)
{
    drops_.emplace(DropProgram::load(skel_->rodata->snaplen, ifindex_, direction, skel_->rodata->sample_every,
                                     bpf_map__fd(skel_->maps.events), bpf_map__fd(skel_->maps.counters),
                                     bpf_map__fd(skel_->maps.sample_ticks), with_filter, attribution_));
    drops_loaded_ = true;
}

void CaptureProgram::install_drop_filter(std::span<const bpf_insn> filter_body)
{
    drops_->install_filter(filter_body, bpf_map__fd(skel_->maps.counters));
}

std::vector<xdpcap_counters> CaptureProgram::read_drop_counters() const
{
    return read_key(XDPCAP_COUNTERS_DROPS);
}

int CaptureProgram::program_fd(Hook hook) const
{
    if (hook == Hook::Egress)
        return bpf_program__fd(skel_->progs.xdpcap_egress);
    if (hook == Hook::TcIngress)
        return bpf_program__fd(skel_->progs.xdpcap_ingress);
    return bpf_program__fd(multi_buffer_ ? skel_->progs.xdpcap_frags : skel_->progs.xdpcap_linear);
}

bool CaptureProgram::loads(Hook hook) const noexcept
{
    switch (hook) {
    case Hook::Ingress: return ingress_ && receives_with_xdp(receive_);
    case Hook::TcIngress: return ingress_ && receives_with_tc(receive_);
    case Hook::Egress: return egress_loaded_;
    }
    return false;
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
    return ingress_ && rx_front_build(kernel_rx_metadata()) ? bpf_map__fd(skel_->maps.rx_meta) : -1;
}

int CaptureProgram::rx_vlan_view_map_fd() const
{
    return kernel_rx_metadata().vlan ? rx_meta_map_fd() : -1;
}

int CaptureProgram::events_map_fd() const
{
    return bpf_map__fd(skel_->maps.events);
}

void CaptureProgram::attach(uint32_t ifindex, XdpMode mode, const std::string& ifname)
{
    // Egress first: it cannot disturb received traffic if XDP then fails.
    if (egress_loaded_)
        egress_.emplace(TcHook::attach(entry_fd(Hook::Egress), ifindex, ifname, TcHook::Point::Egress));
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
        const int prog = rx_front_ && as == XdpMode::Native ? rx_front_->program_fd() : entry_fd(Hook::Ingress);
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
    if (rx_front_build(kernel_rx_metadata()) && multi_buffer_) {
        try {
            rx_front_.emplace(RxMetadataFront::load(ifindex, rx_meta_map_fd(), entry_fd(Hook::Ingress)));
        } catch (const Error& e) {
            rx_front_failure_ = e.what();
        }
    }
    int native_err = attempt(XDP_FLAGS_DRV_MODE, XdpMode::Native);
    if (native_err != 0 && rx_front_ && native_err != EBUSY && native_err != EEXIST && native_err != EPERM) {
        // Natively without it, should the front be what the driver refuses.
        rx_front_failure_ = "the driver refused a program bound to the device: " + errno_text(native_err);
        rx_front_.reset();
        native_err = attempt(XDP_FLAGS_DRV_MODE, XdpMode::Native);
    }
    if (native_err == 0)
        return;
    rx_front_.reset();
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
    const UniqueFd& filter = filter_prog_[static_cast<int>(hook)];
    return filter ? filter.get() : program_fd(hook);
}

void CaptureProgram::install_filter(Hook hook, std::span<const bpf_insn> filter_body)
{
    const bool egress = hook == Hook::Egress;
    const bool tc = hook != Hook::Ingress;
    const int32_t counters_key = egress ? XDPCAP_COUNTERS_EGRESS : XDPCAP_COUNTERS_INGRESS;
    const int32_t go_on = tc ? TC_ACT_UNSPEC : XDP_PASS;
    bpf_map* next = egress ? skel_->maps.egress_next
        : tc               ? skel_->maps.ingress_next
                           : skel_->maps.capture_next;
    const std::vector<bpf_insn> prog =
        filter_front(bpf_map__fd(skel_->maps.counters), counters_key, bpf_map__fd(next), 0, go_on, filter_body);

    const uint32_t slot = 0;
    const int capture_fd = program_fd(hook);
    if (bpf_map_update_elem(bpf_map__fd(next), &slot, &capture_fd, BPF_ANY) != 0)
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
    filter_prog_[static_cast<int>(hook)] =
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
    if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.counters), &key, values.data()) != 0)
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
    if (hook == Hook::Egress)
        return read_key(XDPCAP_COUNTERS_EGRESS);
    std::vector<xdpcap_counters> values = read_key(XDPCAP_COUNTERS_INGRESS);
    if (traced_) {
        // Received frames in trace mode: entry and exit samples together.
        for (bool exit : {false, true}) {
            const auto more = read_trace_counters(exit);
            for (size_t cpu = 0; cpu < values.size(); ++cpu)
                values[cpu] = values[cpu] + more[cpu];
        }
    }
    return values;
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

void refuse_if_xdp_attached(uint32_t ifindex, const std::string& ifname)
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
    if (const auto why = why_xdp_cannot_be_traced())
        throw Error(ifname + " already runs XDP program " + program + " and cannot be traced: " + *why +
                    " (-Q out captures sent packets without XDP)");
    throw Error(ifname + " already has an XDP program attached ('" + a.program.name + "', id " +
                std::to_string(a.program.id) + ", " + a.mode +
                "); xdpcap does not share an interface with another XDP program (-Q out captures sent packets "
                "without XDP)");
}

} // namespace xdpcap
