// One eBPF instruction from its fields; shared by the filter translator and
// the loader that wraps its output.
#pragma once

#include <linux/bpf.h>

#include <cstdint>

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

} // namespace xdpcap
