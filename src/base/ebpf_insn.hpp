// One eBPF instruction from its fields; shared by the filter translator and
// the loader that wraps its output.
#pragma once

#include <linux/bpf.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace xdpcap {

constexpr bpf_insn make_insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

// Turns every call of helper number `marker` into a call of the vmlinux
// kfunc with BTF id `kfunc_id`; returns how many there were.
inline size_t call_kfunc_at_marker(std::span<bpf_insn> insns, int32_t marker, int32_t kfunc_id)
{
    size_t patched = 0;
    for (bpf_insn& insn : insns) {
        if (insn.code == (BPF_JMP | BPF_CALL) && insn.src_reg == 0 && insn.imm == marker) {
            insn = make_insn(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, kfunc_id);
            ++patched;
        }
    }
    return patched;
}

} // namespace xdpcap
