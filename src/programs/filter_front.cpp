#include "programs/filter_front.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "base/ebpf_insn.hpp"
#include "base/error.hpp"
#include "xdpcap_abi.h"

namespace xdpcap {

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

} // namespace xdpcap
