/*
 * Why we translate classic BPF ourselves instead of handing it to the kernel:
 * an XDP program cannot run classic BPF, and the kernel's own cBPF-to-eBPF
 * conversion targets socket filters (skb helpers), not XDP. Here every packet
 * load is written the way the verifier accepts for XDP: an explicit check of
 * data + offset + size against data_end before a direct load. Loads that fall
 * outside the linear data (the fragments of a multi-buffer frame, or offsets
 * the verifier cannot bound) go through bpf_xdp_load_bytes(), so a filter
 * sees the whole frame, and a load past the end of the frame rejects the
 * packet exactly as classic BPF does.
 *
 * Register use: r6 = ctx, r7 = A, r8 = X, r9 = frame length (only when the
 * program reads it); r0-r5 are scratch and clobbered by helper calls. A and X
 * are u32: every operation on them is 32-bit, so the upper halves stay zero.
 */
#include "filter/translate.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "error.hpp"
#include "filter/ebpf_insn.hpp"

namespace xdpcap {

namespace {

constexpr uint8_t R0 = 0, R1 = 1, R2 = 2, R3 = 3, R4 = 4, R5 = 5;
constexpr uint8_t kCtx = 6, kA = 7, kX = 8, kLen = 9, kFp = 10;

// Scratch memory M[i] lives at r10 - 64 + 4 * i; the helper's buffer below it.
constexpr int16_t kMemBase = -64;
constexpr int16_t kLoadBuffer = -kFilterStackBytes;
static_assert(kMemBase - 8 >= kLoadBuffer);

// The verifier tracks packet offsets up to 0xffff (MAX_PACKET_OFF): offset +
// size must stay within it for the direct load to be provable.
constexpr uint32_t kMaxPacketOff = 0xffff;

constexpr bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    return make_insn(code, dst, src, off, imm);
}

// Classic constants are u32; eBPF immediates are s32 with the same bits.
constexpr int32_t imm32(uint32_t k) { return static_cast<int32_t>(k); }

constexpr bpf_insn alu32_imm(uint8_t op, uint8_t dst, int32_t imm) { return insn(BPF_ALU | op | BPF_K, dst, 0, 0, imm); }
constexpr bpf_insn alu32_reg(uint8_t op, uint8_t dst, uint8_t src) { return insn(BPF_ALU | op | BPF_X, dst, src, 0, 0); }
constexpr bpf_insn alu64_imm(uint8_t op, uint8_t dst, int32_t imm) { return insn(BPF_ALU64 | op | BPF_K, dst, 0, 0, imm); }
constexpr bpf_insn alu64_reg(uint8_t op, uint8_t dst, uint8_t src) { return insn(BPF_ALU64 | op | BPF_X, dst, src, 0, 0); }
constexpr bpf_insn mov32_imm(uint8_t dst, int32_t imm) { return alu32_imm(BPF_MOV, dst, imm); }
constexpr bpf_insn mov32_reg(uint8_t dst, uint8_t src) { return alu32_reg(BPF_MOV, dst, src); }
constexpr bpf_insn mov64_reg(uint8_t dst, uint8_t src) { return alu64_reg(BPF_MOV, dst, src); }
constexpr bpf_insn to_be(uint8_t dst, int32_t bits) { return insn(BPF_ALU | BPF_END | BPF_TO_BE, dst, 0, 0, bits); }
constexpr bpf_insn ldx_mem(uint8_t size, uint8_t dst, uint8_t src, int16_t off) { return insn(BPF_LDX | BPF_MEM | size, dst, src, off, 0); }
constexpr bpf_insn stx_mem(uint8_t size, uint8_t dst, uint8_t src, int16_t off) { return insn(BPF_STX | BPF_MEM | size, dst, src, off, 0); }
constexpr bpf_insn st_mem(uint8_t size, uint8_t dst, int16_t off, int32_t imm) { return insn(BPF_ST | BPF_MEM | size, dst, 0, off, imm); }
constexpr bpf_insn call(int32_t helper) { return insn(BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
constexpr bpf_insn exit_insn() { return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }

std::string hex(unsigned value)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%02x", value);
    return buf;
}

[[noreturn]] void unsupported(const sock_filter& f, size_t pc)
{
    throw Error("classic BPF instruction " + hex(f.code) + " at " + std::to_string(pc) +
                " is not supported in the kernel");
}

// The exact opcodes libpcap's interpreter (bpf_filter.c) accepts.
bool known_opcode(uint16_t code)
{
    switch (code) {
    case BPF_RET | BPF_K:
    case BPF_RET | BPF_A:
    case BPF_LD | BPF_W | BPF_ABS:
    case BPF_LD | BPF_H | BPF_ABS:
    case BPF_LD | BPF_B | BPF_ABS:
    case BPF_LD | BPF_W | BPF_IND:
    case BPF_LD | BPF_H | BPF_IND:
    case BPF_LD | BPF_B | BPF_IND:
    case BPF_LD | BPF_W | BPF_LEN:
    case BPF_LDX | BPF_W | BPF_LEN:
    case BPF_LDX | BPF_MSH | BPF_B:
    case BPF_LD | BPF_IMM:
    case BPF_LDX | BPF_IMM:
    case BPF_LD | BPF_MEM:
    case BPF_LDX | BPF_MEM:
    case BPF_ST:
    case BPF_STX:
    case BPF_JMP | BPF_JA:
    case BPF_JMP | BPF_JEQ | BPF_K:
    case BPF_JMP | BPF_JGT | BPF_K:
    case BPF_JMP | BPF_JGE | BPF_K:
    case BPF_JMP | BPF_JSET | BPF_K:
    case BPF_JMP | BPF_JEQ | BPF_X:
    case BPF_JMP | BPF_JGT | BPF_X:
    case BPF_JMP | BPF_JGE | BPF_X:
    case BPF_JMP | BPF_JSET | BPF_X:
    case BPF_MISC | BPF_TAX:
    case BPF_MISC | BPF_TXA:
    case BPF_ALU | BPF_NEG:
        return true;
    default:
        break;
    }
    if (BPF_CLASS(code) != BPF_ALU)
        return false;
    if (BPF_SRC(code) != BPF_K && BPF_SRC(code) != BPF_X)
        return false;
    switch (BPF_OP(code)) {
    case BPF_ADD:
    case BPF_SUB:
    case BPF_MUL:
    case BPF_DIV:
    case BPF_MOD:
    case BPF_AND:
    case BPF_OR:
    case BPF_XOR:
    case BPF_LSH:
    case BPF_RSH:
        return code == (BPF_ALU | BPF_OP(code) | BPF_SRC(code));
    default:
        return false;
    }
}

class Translator {
public:
    Translator(std::span<const sock_filter> classic, bool multi_buffer)
        : classic_(classic), multi_buffer_(multi_buffer)
    {
        // Labels 0..n-1 are the classic instructions, n is the shared reject.
        for (size_t i = 0; i <= classic.size(); ++i)
            new_label();
    }

    std::vector<bpf_insn> run()
    {
        if (classic_.empty())
            throw Error("classic BPF program is empty");
        const std::vector<bool> reachable = find_reachable();
        prologue(reachable);
        for (size_t pc = 0; pc < classic_.size(); ++pc) {
            if (!reachable[pc])
                continue; // the verifier refuses unreachable code
            bind(pc);
            translate(pc);
        }
        if (reject_used_) {
            bind(reject());
            emit(mov32_imm(R0, 0));
            emit(exit_insn());
        }
        resolve();
        return std::move(code_);
    }

private:
    using Label = size_t;
    static constexpr size_t kUnbound = std::numeric_limits<size_t>::max();

    Label new_label()
    {
        positions_.push_back(kUnbound);
        return positions_.size() - 1;
    }
    Label reject()
    {
        reject_used_ = true;
        return classic_.size();
    }
    void bind(Label label) { positions_[label] = code_.size(); }
    void emit(const bpf_insn& i) { code_.push_back(i); }
    void jump(uint8_t code, uint8_t dst, uint8_t src, int32_t imm, Label target)
    {
        fixups_.push_back({code_.size(), target});
        emit(insn(code, dst, src, 0, imm));
    }
    void ja(Label target) { jump(BPF_JMP | BPF_JA, 0, 0, 0, target); }

    // An unconditional jump would leave the code after it unreachable, which
    // the verifier refuses; a compare it can decide keeps the layout legal.
    void always_reject()
    {
        emit(mov32_imm(R0, 0));
        jump(BPF_JMP32 | BPF_JEQ | BPF_K, R0, 0, 0, reject());
    }

    void resolve()
    {
        for (const auto& [at, target] : fixups_) {
            if (positions_[target] == kUnbound)
                throw Error("internal error: eBPF jump to an unplaced label");
            const auto delta = static_cast<std::ptrdiff_t>(positions_[target]) - static_cast<std::ptrdiff_t>(at) - 1;
            if (delta < std::numeric_limits<int16_t>::min() || delta > std::numeric_limits<int16_t>::max())
                throw Error("filter is too large: an eBPF jump would span " + std::to_string(delta) +
                            " instructions (at most 32767)");
            code_[at].off = static_cast<int16_t>(delta);
        }
    }

    std::vector<bool> find_reachable() const
    {
        const size_t n = classic_.size();
        std::vector<bool> reachable(n, false);
        reachable[0] = true;
        const auto target = [&](size_t pc, uint64_t to) {
            if (to >= n)
                throw Error("classic BPF instruction " + hex(classic_[pc].code) + " at " + std::to_string(pc) +
                            " jumps past the end of the program");
            reachable[to] = true;
        };
        // Classic jumps only go forward, so one pass in order sees every edge.
        for (size_t pc = 0; pc < n; ++pc) {
            if (!reachable[pc])
                continue;
            const sock_filter& f = classic_[pc];
            if (!known_opcode(f.code))
                unsupported(f, pc);
            if (BPF_CLASS(f.code) == BPF_RET)
                continue;
            if (f.code == (BPF_JMP | BPF_JA)) {
                // libpcap emits backward jumps only for the header-chain loop of
                // `protochain`. The verifier would need a bound on a loop driven by
                // packet contents, and any bound would differ from libpcap's.
                if (static_cast<int32_t>(f.k) < 0)
                    throw Error("classic BPF instruction " + hex(f.code) + " at " + std::to_string(pc) +
                                " jumps backwards: the header-chain loop of `protochain` is not supported in the "
                                "kernel");
                target(pc, pc + 1 + uint64_t{f.k});
            } else if (BPF_CLASS(f.code) == BPF_JMP) {
                target(pc, pc + 1 + f.jt);
                target(pc, pc + 1 + f.jf);
            } else {
                target(pc, pc + 1);
            }
        }
        return reachable;
    }

    void prologue(const std::vector<bool>& reachable)
    {
        std::array<bool, BPF_MEMWORDS> slot_read{};
        bool uses_len = false;
        for (size_t pc = 0; pc < classic_.size(); ++pc) {
            if (!reachable[pc])
                continue;
            const sock_filter& f = classic_[pc];
            if (f.code == (BPF_LD | BPF_MEM) || f.code == (BPF_LDX | BPF_MEM))
                slot_read[static_cast<size_t>((mem_offset(f, pc) - kMemBase) / 4)] = true;
            uses_len |= f.code == (BPF_LD | BPF_W | BPF_LEN) || f.code == (BPF_LDX | BPF_W | BPF_LEN);
        }
        emit(mov64_reg(kCtx, R1));
        // Classic BPF starts with A = X = 0 and zeroed scratch memory; the
        // verifier refuses reads of stack never written, so zero what is read.
        emit(mov32_imm(kA, 0));
        emit(mov32_imm(kX, 0));
        for (size_t slot = 0; slot < slot_read.size(); ++slot)
            if (slot_read[slot])
                emit(st_mem(BPF_W, kFp, static_cast<int16_t>(kMemBase + 4 * static_cast<int>(slot)), 0));
        if (uses_len) {
            if (multi_buffer_) {
                emit(mov64_reg(R1, kCtx));
                emit(call(BPF_FUNC_xdp_get_buff_len));
                emit(mov32_reg(kLen, R0));
            } else {
                // Pointer subtraction: the verifier allows it with CAP_PERFMON,
                // which attaching a capture needs anyway.
                emit(ldx_mem(BPF_W, R2, kCtx, offsetof(xdp_md, data)));
                emit(ldx_mem(BPF_W, R3, kCtx, offsetof(xdp_md, data_end)));
                emit(alu64_reg(BPF_SUB, R3, R2));
                emit(mov32_reg(kLen, R3));
            }
        }
    }

    static int16_t mem_offset(const sock_filter& f, size_t pc)
    {
        if (f.k >= BPF_MEMWORDS)
            throw Error("classic BPF instruction " + hex(f.code) + " at " + std::to_string(pc) +
                        " uses scratch memory slot " + std::to_string(f.k) + " (there are 16)");
        return static_cast<int16_t>(kMemBase + 4 * static_cast<int>(f.k));
    }

    // dst (u32) = big-endian value of `size` bytes at frame offset k (+ X).
    void load_packet(uint8_t dst, uint8_t size_code, bool indexed, uint32_t k)
    {
        const uint32_t size = size_code == BPF_B ? 1 : size_code == BPF_H ? 2 : 4;
        const uint32_t fast_limit = kMaxPacketOff - size;
        const Label slow = multi_buffer_ ? new_label() : reject();
        const Label done = new_label();

        // r2 = offset, computed in 64 bits: X + k cannot wrap.
        emit(mov32_imm(R2, imm32(k)));
        if (indexed) {
            emit(alu64_reg(BPF_ADD, R2, kX));
            jump(BPF_JMP | BPF_JGT | BPF_K, R2, 0, imm32(fast_limit), slow);
        }
        const bool fast = indexed || k <= fast_limit;
        if (fast) {
            emit(ldx_mem(BPF_W, R3, kCtx, offsetof(xdp_md, data)));
            emit(ldx_mem(BPF_W, R4, kCtx, offsetof(xdp_md, data_end)));
            emit(alu64_reg(BPF_ADD, R3, R2));
            emit(mov64_reg(R5, R3));
            emit(alu64_imm(BPF_ADD, R5, imm32(size)));
            // The form the verifier turns into a proven range for r3.
            jump(BPF_JMP | BPF_JGT | BPF_X, R5, R4, 0, slow);
            emit(ldx_mem(size_code, dst, R3, 0));
            if (multi_buffer_)
                ja(done);
        }
        if (multi_buffer_) {
            bind(slow);
            if (indexed) {
                // bpf_xdp_load_bytes() takes a u32 offset.
                emit(mov64_reg(R3, R2));
                emit(alu64_imm(BPF_RSH, R3, 32));
                jump(BPF_JMP | BPF_JNE | BPF_K, R3, 0, 0, reject());
            }
            emit(mov64_reg(R1, kCtx));
            emit(mov64_reg(R3, kFp));
            emit(alu64_imm(BPF_ADD, R3, kLoadBuffer));
            emit(mov32_imm(R4, imm32(size)));
            emit(call(BPF_FUNC_xdp_load_bytes));
            // Fails when the bytes are not all in the frame: reject, as classic
            // BPF does. The kernel also refuses offsets above 0xffff, so in
            // frames over 64 KiB those bytes stay out of reach.
            jump(BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, reject());
            emit(ldx_mem(size_code, dst, kFp, kLoadBuffer));
        } else if (!fast) {
            always_reject();
        }
        bind(done);
        if (size > 1)
            emit(to_be(dst, imm32(size * 8)));
    }

    void alu(const sock_filter& f)
    {
        const uint8_t op = BPF_OP(f.code);
        if (BPF_SRC(f.code) == BPF_X) {
            if (op == BPF_DIV || op == BPF_MOD) {
                // Classic BPF rejects the packet on division by zero.
                jump(BPF_JMP32 | BPF_JEQ | BPF_K, kX, 0, 0, reject());
            } else if (op == BPF_LSH || op == BPF_RSH) {
                // libpcap 1.10.3's bpf_filter() sets A = 0 for X >= 32 (and
                // keeps going); eBPF would mask the count instead.
                const Label zero = new_label();
                const Label done = new_label();
                jump(BPF_JMP32 | BPF_JGT | BPF_K, kX, 0, 31, zero);
                emit(alu32_reg(op, kA, kX));
                ja(done);
                bind(zero);
                emit(mov32_imm(kA, 0));
                bind(done);
                return;
            }
            emit(alu32_reg(op, kA, kX));
            return;
        }
        if ((op == BPF_DIV || op == BPF_MOD) && f.k == 0) {
            // libpcap refuses to compile this; classic BPF would reject.
            always_reject();
            return;
        }
        if ((op == BPF_LSH || op == BPF_RSH) && f.k >= 32) {
            // libpcap refuses to compile this ("shift by more than 31 bits")
            // and the verifier refuses such shifts; same result as shifting
            // by X >= 32.
            emit(mov32_imm(kA, 0));
            return;
        }
        emit(alu32_imm(op, kA, imm32(f.k)));
    }

    void conditional(const sock_filter& f, size_t pc)
    {
        const size_t next = pc + 1;
        const size_t on_true = next + f.jt;
        const size_t on_false = next + f.jf;
        const uint8_t op = BPF_OP(f.code);
        const bool x = BPF_SRC(f.code) == BPF_X;
        const auto compare = [&](uint8_t jop, Label target) {
            // cBPF compares are unsigned 32-bit: JMP32 with the same bits.
            jump(BPF_JMP32 | jop | (x ? BPF_X : BPF_K), kA, x ? kX : 0, x ? 0 : imm32(f.k), target);
        };
        if (on_true == on_false) {
            if (on_true != next)
                ja(on_true);
            return;
        }
        if (on_true == next && op != BPF_JSET) {
            const uint8_t inverse = op == BPF_JEQ ? BPF_JNE : op == BPF_JGT ? BPF_JLE : BPF_JLT;
            compare(inverse, on_false);
            return;
        }
        compare(op, on_true);
        if (on_false != next)
            ja(on_false);
    }

    void translate(size_t pc)
    {
        const sock_filter& f = classic_[pc];
        switch (BPF_CLASS(f.code)) {
        case BPF_RET:
            if (BPF_RVAL(f.code) == BPF_A)
                emit(mov32_reg(R0, kA));
            else
                emit(mov32_imm(R0, f.k != 0 ? 1 : 0));
            emit(exit_insn());
            return;
        case BPF_LD:
            switch (BPF_MODE(f.code)) {
            case BPF_ABS:
            case BPF_IND:
                load_packet(kA, BPF_SIZE(f.code), BPF_MODE(f.code) == BPF_IND, f.k);
                return;
            case BPF_LEN:
                emit(mov32_reg(kA, kLen));
                return;
            case BPF_IMM:
                emit(mov32_imm(kA, imm32(f.k)));
                return;
            case BPF_MEM:
                emit(ldx_mem(BPF_W, kA, kFp, mem_offset(f, pc)));
                return;
            default:
                break;
            }
            break;
        case BPF_LDX:
            switch (BPF_MODE(f.code)) {
            case BPF_MSH:
                // X = 4 * (P[k] & 0xf), the IPv4 header length.
                load_packet(kX, BPF_B, false, f.k);
                emit(alu32_imm(BPF_AND, kX, 0xf));
                emit(alu32_imm(BPF_LSH, kX, 2));
                return;
            case BPF_LEN:
                emit(mov32_reg(kX, kLen));
                return;
            case BPF_IMM:
                emit(mov32_imm(kX, imm32(f.k)));
                return;
            case BPF_MEM:
                emit(ldx_mem(BPF_W, kX, kFp, mem_offset(f, pc)));
                return;
            default:
                break;
            }
            break;
        case BPF_ST:
            emit(stx_mem(BPF_W, kFp, kA, mem_offset(f, pc)));
            return;
        case BPF_STX:
            emit(stx_mem(BPF_W, kFp, kX, mem_offset(f, pc)));
            return;
        case BPF_ALU:
            if (BPF_OP(f.code) == BPF_NEG)
                emit(alu32_imm(BPF_NEG, kA, 0));
            else
                alu(f);
            return;
        case BPF_JMP:
            if (BPF_OP(f.code) == BPF_JA) {
                if (f.k != 0)
                    ja(pc + 1 + f.k);
            } else {
                conditional(f, pc);
            }
            return;
        case BPF_MISC:
            if (BPF_MISCOP(f.code) == BPF_TAX)
                emit(mov32_reg(kX, kA));
            else
                emit(mov32_reg(kA, kX));
            return;
        default:
            break;
        }
        unsupported(f, pc);
    }

    struct Fixup {
        size_t at;
        Label target;
    };

    std::span<const sock_filter> classic_;
    bool multi_buffer_;
    std::vector<bpf_insn> code_;
    std::vector<size_t> positions_;
    std::vector<Fixup> fixups_;
    bool reject_used_ = false;
};

} // namespace

std::vector<bpf_insn> translate_filter(std::span<const sock_filter> classic, bool multi_buffer)
{
    return Translator(classic, multi_buffer).run();
}

} // namespace xdpcap
