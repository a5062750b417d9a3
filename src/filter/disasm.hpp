// Readable listing of eBPF instructions, for `xdpcap -d`.
#pragma once

#include <linux/bpf.h>

#include <span>
#include <string>

namespace xdpcap {

// One line per instruction, "(NNN) " then a C-like statement; jumps also
// show their absolute target as <NNN>. 64-bit registers print as rN, their
// 32-bit halves as wN.
std::string dump_ebpf(std::span<const bpf_insn> program);

} // namespace xdpcap
