#include "filter/disasm.hpp"

#include <cstdint>
#include <cstdio>

namespace xdpcap {

namespace {

// Appended, not "literal" + string: GCC 12 at -O3 reports a false -Wrestrict
// overlap in the insert-at-front that operator+(const char*, string&&) does.
std::string reg(unsigned r, bool wide)
{
    std::string name(wide ? "r" : "w");
    name += std::to_string(r);
    return name;
}

// Offsets and small numbers read best in decimal, masks and large constants
// (ethertypes, addresses) in hex.
std::string number(int32_t value, bool hex_style)
{
    if (!hex_style || (value >= 0 && value <= 9))
        return std::to_string(value);
    char buf[16];
    std::snprintf(buf, sizeof buf, "%#x", static_cast<uint32_t>(value));
    return buf;
}

std::string signed_offset(int16_t off) { return off < 0 ? " - " + std::to_string(-off) : " + " + std::to_string(off); }

const char* alu_op(uint8_t op)
{
    switch (op) {
    case BPF_ADD: return "+=";
    case BPF_SUB: return "-=";
    case BPF_MUL: return "*=";
    case BPF_DIV: return "/=";
    case BPF_OR: return "|=";
    case BPF_AND: return "&=";
    case BPF_LSH: return "<<=";
    case BPF_RSH: return ">>=";
    case BPF_MOD: return "%=";
    case BPF_XOR: return "^=";
    case BPF_MOV: return "=";
    case BPF_ARSH: return "s>>=";
    default: return nullptr;
    }
}

const char* jmp_op(uint8_t op)
{
    switch (op) {
    case BPF_JEQ: return "==";
    case BPF_JGT: return ">";
    case BPF_JGE: return ">=";
    case BPF_JSET: return "&";
    case BPF_JNE: return "!=";
    case BPF_JSGT: return "s>";
    case BPF_JSGE: return "s>=";
    case BPF_JLT: return "<";
    case BPF_JLE: return "<=";
    case BPF_JSLT: return "s<";
    case BPF_JSLE: return "s<=";
    default: return nullptr;
    }
}

const char* size_name(uint8_t size)
{
    switch (size) {
    case BPF_B: return "u8";
    case BPF_H: return "u16";
    case BPF_W: return "u32";
    default: return "u64";
    }
}

std::string helper(int32_t id)
{
    switch (id) {
    case BPF_FUNC_xdp_load_bytes: return "bpf_xdp_load_bytes";
    case BPF_FUNC_xdp_get_buff_len: return "bpf_xdp_get_buff_len";
    case BPF_FUNC_skb_load_bytes: return "bpf_skb_load_bytes";
    case BPF_FUNC_probe_read_kernel: return "bpf_probe_read_kernel";
    case BPF_FUNC_get_smp_processor_id: return "bpf_get_smp_processor_id";
    case BPF_FUNC_get_prandom_u32: return "bpf_get_prandom_u32";
    case BPF_FUNC_map_lookup_elem: return "bpf_map_lookup_elem";
    case BPF_FUNC_loop: return "bpf_loop";
    default: return "helper";
    }
}

std::string target(size_t pc, int32_t off)
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "goto %+d <%03lld>", off, static_cast<long long>(pc) + 1 + off);
    return buf;
}

std::string statement(const bpf_insn& i, size_t pc)
{
    const uint8_t cls = BPF_CLASS(i.code);
    const bool x = BPF_SRC(i.code) == BPF_X;
    switch (cls) {
    case BPF_ALU:
    case BPF_ALU64: {
        const bool wide = cls == BPF_ALU64;
        const uint8_t op = BPF_OP(i.code);
        if (op == BPF_NEG)
            return reg(i.dst_reg, wide) + " = -" + reg(i.dst_reg, wide);
        if (op == BPF_END)
            return reg(i.dst_reg, wide) + " = " + (x ? "be" : "le") + std::to_string(i.imm) + " " +
                reg(i.dst_reg, wide);
        const char* text = alu_op(op);
        if (!text)
            break;
        const bool mask = op == BPF_AND || op == BPF_OR || op == BPF_XOR;
        return reg(i.dst_reg, wide) + " " + text + " " +
            (x ? reg(i.src_reg, wide) : number(i.imm, mask || (!wide && static_cast<uint32_t>(i.imm) >= 256)));
    }
    case BPF_LDX:
        if (BPF_MODE(i.code) != BPF_MEM)
            break;
        return reg(i.dst_reg, true) + " = *(" + size_name(BPF_SIZE(i.code)) + " *)(" + reg(i.src_reg, true) +
            signed_offset(i.off) + ")";
    case BPF_ST:
    case BPF_STX: {
        if (BPF_MODE(i.code) != BPF_MEM)
            break;
        const bool wide = BPF_SIZE(i.code) == BPF_DW;
        return std::string("*(") + size_name(BPF_SIZE(i.code)) + " *)(" + reg(i.dst_reg, true) +
            signed_offset(i.off) + ") = " + (cls == BPF_STX ? reg(i.src_reg, wide) : number(i.imm, false));
    }
    case BPF_JMP:
    case BPF_JMP32: {
        const uint8_t op = BPF_OP(i.code);
        if (cls == BPF_JMP && op == BPF_JA)
            return target(pc, i.off);
        if (cls == BPF_JMP && op == BPF_CALL && i.src_reg == BPF_PSEUDO_CALL)
            return "call " + target(pc, i.imm).substr(5); // "goto " off
        if (cls == BPF_JMP && op == BPF_CALL)
            return "call " + helper(i.imm) + "#" + std::to_string(i.imm);
        if (cls == BPF_JMP && op == BPF_EXIT)
            return "exit";
        const char* text = jmp_op(op);
        if (!text)
            break;
        const bool wide = cls == BPF_JMP;
        return "if " + reg(i.dst_reg, wide) + " " + text + " " +
            (x ? reg(i.src_reg, wide) : number(i.imm, op == BPF_JSET || static_cast<uint32_t>(i.imm) >= 256)) + " " +
            target(pc, i.off);
    }
    default:
        break;
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, "unknown opcode %#04x", i.code);
    return buf;
}

} // namespace

std::string dump_ebpf(std::span<const bpf_insn> program)
{
    std::string text;
    for (size_t pc = 0; pc < program.size(); ++pc) {
        char prefix[32];
        std::snprintf(prefix, sizeof prefix, "(%03zu) ", pc);
        const bpf_insn& i = program[pc];
        // A 64-bit immediate takes two slots: a map or a callback.
        if (i.code == (BPF_LD | BPF_DW | BPF_IMM) && pc + 1 < program.size()) {
            text += prefix + reg(i.dst_reg, true) + " = ";
            if (i.src_reg == BPF_PSEUDO_FUNC)
                text += "callback " + target(pc, i.imm).substr(5) + "\n";
            else if (i.src_reg == BPF_PSEUDO_MAP_FD)
                text += "map fd " + std::to_string(i.imm) + "\n";
            else
                text += std::to_string((static_cast<uint64_t>(static_cast<uint32_t>(program[pc + 1].imm)) << 32) |
                                       static_cast<uint32_t>(i.imm)) + "\n";
            ++pc;
            continue;
        }
        text += prefix + statement(i, pc) + "\n";
    }
    return text;
}

} // namespace xdpcap
