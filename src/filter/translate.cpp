/*
 * Why we translate classic BPF ourselves instead of handing it to the kernel:
 * an XDP program cannot run classic BPF, and the kernel's own cBPF-to-eBPF
 * conversion targets socket filters, not programs we attach ourselves. Here
 * every packet load is written the way the verifier accepts: an explicit
 * check of data + offset + size against data_end before a direct load. Loads
 * that fall outside the linear data (fragments of a multi-buffer frame, the
 * paged part of an skb, or offsets the verifier cannot bound) go through
 * bpf_xdp_load_bytes() or bpf_skb_load_bytes(), so a filter sees the whole
 * frame, and a load past the end of the frame rejects the packet exactly as
 * classic BPF does.
 *
 * Backward jumps (libpcap's `protochain` header-chain loop) become calls of
 * bpf_loop() (kernel >= 5.17) with the loop's body as the callback, so a
 * chain is followed as far as the frame goes while the verifier checks the
 * body once. A, X, the ctx and the frame length travel through a small state
 * block in the filter's frame; scratch memory is copied in and out. A loop
 * that is not a single-entry region (libpcap emits none) keeps the older form:
 * a counted loop, bounded at kProtochainMaxHeaders turns.
 *
 * Ancillary loads (offsets from SKF_AD_OFF, which libpcap's Linux code emits
 * for `inbound`, `outbound` and `ifindex`) get the value the kernel's socket
 * filters would see, computed for the hook, or an Error: never a packet load.
 *
 * Register use: r6 = ctx, r7 = A, r8 = X, r9 = frame length (only when the
 * program reads it); r0-r5 are scratch and clobbered by helper calls. A and X
 * are u32: every operation on them is 32-bit, so the upper halves stay zero.
 */
#include "filter/translate.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "base/error.hpp"
#include "base/ebpf_insn.hpp"
#include "xdpcap_abi.h"

namespace xdpcap {

namespace {

constexpr uint8_t R0 = 0, R1 = 1, R2 = 2, R3 = 3, R4 = 4, R5 = 5;
constexpr uint8_t kCtx = 6, kA = 7, kX = 8, kLen = 9, kFp = 10;

// Scratch memory M[i] lives at r10 - 64 + 4 * i; the helpers' buffer below
// it, then one 8-byte counter per loop.
constexpr int16_t kMemBase = -64;
constexpr int16_t kLoadBuffer = -72;
// XDP wire view: the rx_meta map key, and the four wire bytes 12..15 (the
// tag) as one big-endian word.
constexpr int16_t kRxMetaKey = -80;
constexpr int16_t kWireTag = -76;
constexpr int16_t kLoopCounters = -80; // the first one just below
// The bpf_loop() state, below the counters: the ctx, A, X, the frame length
// and how the loop was left (0: rejected, or ran out of turns; n: exit n).
constexpr int16_t kLoopState = kLoopCounters - 8 * kMaxFilterLoops - 24;
constexpr int16_t kStateCtx = 0, kStateA = 8, kStateX = 12, kStateLen = 16, kStateExit = 20;
constexpr int32_t kExitReject = 0;
// In a callback's own frame: the pointer to that state.
constexpr int16_t kCallbackState = kLoopCounters - 8;
static_assert(kMemBase - 8 >= kLoadBuffer);
static_assert(kLoadBuffer - 8 >= kRxMetaKey && kWireTag + 4 <= kLoadBuffer);
static_assert(kLoopState >= -kFilterStackBytes && kLoopState % 8 == 0);

constexpr uint32_t kAncillaryBase = static_cast<uint32_t>(SKF_AD_OFF);
// Below SKF_AD_OFF, down to SKF_LL_OFF, the kernel reads relative to the
// link-layer or network header; libpcap's interpreter reads past the frame.
constexpr uint32_t kSpecialBase = static_cast<uint32_t>(SKF_LL_OFF);

// The kernel's pkt_type values (<linux/if_packet.h>).
constexpr int32_t kPacketHost = 0, kPacketBroadcast = 1, kPacketMulticast = 2, kPacketOutgoing = 4;

struct Ancillary {
    uint32_t field;
    const char* name;
    const char* what; // the tcpdump keyword that emits it, or what it is
};

constexpr std::array<Ancillary, 16> kAncillary{{
    {SKF_AD_PROTOCOL, "SKF_AD_PROTOCOL", "the skb protocol"},
    {SKF_AD_PKTTYPE, "SKF_AD_PKTTYPE", "'inbound'/'outbound'"},
    {SKF_AD_IFINDEX, "SKF_AD_IFINDEX", "'ifindex'"},
    {SKF_AD_NLATTR, "SKF_AD_NLATTR", "a netlink attribute"},
    {SKF_AD_NLATTR_NEST, "SKF_AD_NLATTR_NEST", "a nested netlink attribute"},
    {SKF_AD_MARK, "SKF_AD_MARK", "the skb mark"},
    {SKF_AD_QUEUE, "SKF_AD_QUEUE", "the skb queue"},
    {SKF_AD_HATYPE, "SKF_AD_HATYPE", "the device type"},
    {SKF_AD_RXHASH, "SKF_AD_RXHASH", "the skb hash"},
    {SKF_AD_CPU, "SKF_AD_CPU", "the CPU"},
    {SKF_AD_ALU_XOR_X, "SKF_AD_ALU_XOR_X", "A ^ X"},
    {SKF_AD_VLAN_TAG, "SKF_AD_VLAN_TAG", "'vlan' on a live Linux handle"},
    {SKF_AD_VLAN_TAG_PRESENT, "SKF_AD_VLAN_TAG_PRESENT", "'vlan' on a live Linux handle"},
    {SKF_AD_PAY_OFFSET, "SKF_AD_PAY_OFFSET", "the payload offset"},
    {SKF_AD_RANDOM, "SKF_AD_RANDOM", "a random number"},
    {SKF_AD_VLAN_TPID, "SKF_AD_VLAN_TPID", "the VLAN protocol"},
}};

const char* context_name(FilterContext context)
{
    switch (context) {
    case FilterContext::Xdp: return "XDP";
    case FilterContext::TcEgress: return "tc egress";
    case FilterContext::TcIngress: return "tc ingress";
    case FilterContext::Trace: return "trace mode (fentry/fexit)";
    case FilterContext::Drop: return "kernel drop (skb:kfree_skb)";
    }
    return "";
}

// The kernel's struct xdp_buff starts with `void *data, *data_end` (stable
// since XDP exists); the verifier checks these loads against its BTF.
constexpr int16_t kXdpBuffData = 0, kXdpBuffDataEnd = 8;

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

// Turns a bpf_loop() may run: more than a 512 KiB frame has 8-byte headers.
constexpr int32_t kMaxLoopTurns = 1 << 16;

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
    Translator(std::span<const sock_filter> classic, const FilterTarget& target)
        : classic_(classic), target_(target), xdp_(target.context == FilterContext::Xdp),
          skb_(target.context == FilterContext::TcEgress || target.context == FilterContext::TcIngress),
          trace_(target.context == FilterContext::Trace),
          drop_(target.context == FilterContext::Drop), probed_(trace_ || drop_),
          // An skb always has a paged part bpf_skb_load_bytes() reaches.
          slow_path_(skb_ || (xdp_ && target.multi_buffer))
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
        choose_callback_loops(reachable);
        const bool uses_len = prologue(reachable);
        uses_len_ = uses_len;
        // At tc egress a VLAN tag may sit in skb metadata (TX VLAN offload)
        // rather than in the bytes. The filter must see the frame as on the
        // wire, so the program is emitted twice: packet as is, and a wire
        // view with the tag put back at offset 12.
        // At XDP the NIC may have taken the tag out (rx VLAN offload); the
        // program in front says so in the rx_meta map, and the same two
        // copies serve.
        const bool xdp_wire = xdp_ && target_.rx_meta_map_fd >= 0;
        const bool wire_copy = (skb_ || xdp_wire || drop_) && reads_packet(reachable);
        Label wire_entry = 0;
        if (wire_copy) {
            wire_entry = new_label();
            if (skb_) {
                emit(ldx_mem(BPF_W, R0, kCtx, offsetof(__sk_buff, vlan_present)));
                jump(BPF_JMP32 | BPF_JNE | BPF_K, R0, 0, 0, wire_entry);
            } else if (drop_) {
                fetch_drop_tag(wire_entry);
            } else {
                fetch_rx_tag(wire_entry);
            }
        }
        body(reachable, uses_len);
        if (wire_copy) {
            bind(wire_entry);
            wire_ = true;
            pc_base_ = positions_.size();
            for (size_t pc = 0; pc < classic_.size(); ++pc)
                new_label();
            body(reachable, uses_len);
        }
        if (reject_used_) {
            bind(reject());
            emit(mov32_imm(R0, 0));
            emit(exit_insn());
        }
        // Callbacks are subprograms of their own: after the filter's code.
        for (size_t i = 0; i < pending_.size(); ++i)
            callback(reachable, pending_[i]);
        resolve();
        return std::move(code_);
    }

private:
    using Label = size_t;
    static constexpr size_t kUnbound = std::numeric_limits<size_t>::max();

    struct CallbackLoop {
        size_t head;
        size_t last;
        std::vector<size_t> exits; // classic pcs; exit id = index + 1
    };
    struct PendingCallback {
        const CallbackLoop* loop;
        bool wire;
        Label entry;
    };
    // Emitting a callback: where its jumps out of the loop go.
    struct Scope {
        Label next_turn;
        Label reject;
        std::map<size_t, Label> exit_stub;
        const CallbackLoop* loop = nullptr;
        bool reject_used = false;
        size_t head() const { return loop->head; }
    };


    Label new_label()
    {
        positions_.push_back(kUnbound);
        return positions_.size() - 1;
    }
    Label reject()
    {
        if (scope_) {
            scope_->reject_used = true;
            return scope_->reject;
        }
        reject_used_ = true;
        return classic_.size();
    }
    void bind(Label label) { positions_[label] = code_.size(); }
    // The label of a classic instruction in the copy being emitted; in a
    // callback, a way out of the loop is the stub that leaves it.
    Label pc_label(size_t pc) const
    {
        if (scope_) {
            if (const auto stub = scope_->exit_stub.find(pc); stub != scope_->exit_stub.end())
                return stub->second;
        }
        return pc_base_ + pc;
    }
    void emit(const bpf_insn& i) { code_.push_back(i); }
    // In the wire view, where the tag's four bytes come from: a word the
    // prologue kept on the stack (XDP, drops), or the skb's fields (tc).
    bool tag_on_stack() const { return (xdp_ || drop_) && wire_; }
    void jump(uint8_t code, uint8_t dst, uint8_t src, int32_t imm, Label target)
    {
        fixups_.push_back({code_.size(), target});
        emit(insn(code, dst, src, 0, imm));
    }
    void ja(Label target) { jump(BPF_JMP | BPF_JA, 0, 0, 0, target); }

    // An unconditional jump would leave the code after it unreachable, which
    // the verifier refuses; a compare it can decide keeps the layout legal.
    void always_jump(Label target)
    {
        emit(mov32_imm(R0, 0));
        jump(BPF_JMP32 | BPF_JEQ | BPF_K, R0, 0, 0, target);
    }
    void always_reject() { always_jump(reject()); }

    // dst = a reference to the subprogram at `target`, for bpf_loop().
    void func_ref(uint8_t dst, Label target)
    {
        func_fixups_.push_back({code_.size(), target});
        emit(insn(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_FUNC, 0, 0));
        emit(insn(0, 0, 0, 0, 0));
    }

    void resolve()
    {
        for (const auto& [at, target] : func_fixups_) {
            if (positions_[target] == kUnbound)
                throw Error("internal error: reference to an unplaced callback");
            code_[at].imm = static_cast<int32_t>(positions_[target] - at - 1);
        }
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

    std::vector<bool> find_reachable()
    {
        const size_t n = classic_.size();
        std::vector<bool> reachable(n, false);
        std::vector<size_t> work = {0};
        reachable[0] = true;
        const auto target = [&](size_t pc, int64_t to) {
            if (to < 0 || static_cast<uint64_t>(to) >= n)
                throw Error("classic BPF instruction " + hex(classic_[pc].code) + " at " + std::to_string(pc) +
                            " jumps " + (to < 0 ? "before the start" : "past the end") + " of the program");
            if (!reachable[static_cast<size_t>(to)]) {
                reachable[static_cast<size_t>(to)] = true;
                work.push_back(static_cast<size_t>(to));
            }
        };
        while (!work.empty()) {
            const size_t pc = work.back();
            work.pop_back();
            const sock_filter& f = classic_[pc];
            if (!known_opcode(f.code))
                unsupported(f, pc);
            const auto next = static_cast<int64_t>(pc) + 1;
            if (BPF_CLASS(f.code) == BPF_RET)
                continue;
            if (f.code == (BPF_JMP | BPF_JA)) {
                // Signed, as libpcap's interpreter reads it: libpcap emits
                // backward jumps for the header-chain loop of `protochain`.
                const int64_t to = next + static_cast<int32_t>(f.k);
                if (to <= static_cast<int64_t>(pc) && to >= 0 && !loop_counter_.contains(static_cast<size_t>(to))) {
                    if (loop_counter_.size() == kMaxFilterLoops)
                        throw Error("filter has more than " + std::to_string(kMaxFilterLoops) +
                                    " loops (each 'protochain' is one or two)");
                    loop_counter_.emplace(static_cast<size_t>(to),
                                          static_cast<int16_t>(kLoopCounters - 8 * (1 + static_cast<int>(loop_counter_.size()))));
                }
                target(pc, to);
            } else if (BPF_CLASS(f.code) == BPF_JMP) {
                target(pc, next + f.jt);
                target(pc, next + f.jf);
            } else {
                target(pc, next);
            }
        }
        return reachable;
    }

    bool reads_packet(const std::vector<bool>& reachable) const
    {
        for (size_t pc = 0; pc < classic_.size(); ++pc) {
            const uint16_t code = classic_[pc].code;
            if (!reachable[pc])
                continue;
            if ((code & ~BPF_SIZE(0xff)) == (BPF_LD | BPF_ABS) && classic_[pc].k >= kSpecialBase)
                continue; // ancillary
            if (BPF_CLASS(code) == BPF_LD || BPF_CLASS(code) == BPF_LDX) {
                const uint8_t mode = BPF_MODE(code);
                if (mode == BPF_ABS || mode == BPF_IND || mode == BPF_MSH || mode == BPF_LEN)
                    return true;
            }
        }
        return false;
    }

    void body(const std::vector<bool>& reachable, bool uses_len)
    {
        if (uses_len)
            frame_length();
        for (size_t pc = 0; pc < classic_.size(); ++pc) {
            if (!reachable[pc])
                continue; // the verifier refuses unreachable code
            const CallbackLoop* loop = loop_containing(pc);
            if (loop && pc != loop->head)
                continue; // the callback runs it
            bind(pc_label(pc));
            if (loop)
                loop_call(*loop);
            else
                translate(pc);
        }
    }

    // Successors of a classic instruction (none for a return).
    std::vector<size_t> successors(size_t pc) const
    {
        const sock_filter& f = classic_[pc];
        const size_t next = pc + 1;
        if (BPF_CLASS(f.code) == BPF_RET)
            return {};
        if (f.code == (BPF_JMP | BPF_JA))
            return {static_cast<size_t>(static_cast<int64_t>(next) + static_cast<int32_t>(f.k))};
        if (BPF_CLASS(f.code) == BPF_JMP)
            return {next + f.jt, next + f.jf};
        return {next};
    }

    // A loop whose only entry is its head, holding no other loop, runs as a
    // bpf_loop() callback; its ways out are the instructions after it that
    // it jumps to and the returns inside it.
    void choose_callback_loops(const std::vector<bool>& reachable)
    {
        std::map<size_t, size_t> last_of;
        for (size_t pc = 0; pc < classic_.size(); ++pc)
            if (reachable[pc])
                for (const size_t to : successors(pc))
                    if (to <= pc)
                        last_of[to] = std::max(last_of[to], pc);
        for (const auto& [loop_head, loop_last] : last_of) {
            // Copies: clang 14 cannot capture structured bindings.
            const size_t head = loop_head, last = loop_last;
            const auto inside = [&](size_t pc) { return pc >= head && pc <= last; };
            bool single_entry = true;
            std::vector<size_t> exits;
            for (size_t pc = 0; pc < classic_.size() && single_entry; ++pc) {
                if (!reachable[pc])
                    continue;
                if (inside(pc) && BPF_CLASS(classic_[pc].code) == BPF_RET)
                    exits.push_back(pc);
                for (const size_t to : successors(pc)) {
                    if (!inside(pc) && inside(to) && to != head)
                        single_entry = false; // entered in the middle
                    else if (inside(pc) && to <= pc && to != head)
                        single_entry = false; // another loop inside
                    else if (inside(pc) && to > last)
                        exits.push_back(to);
                }
            }
            if (!single_entry || BPF_CLASS(classic_[head].code) == BPF_RET)
                continue;
            std::sort(exits.begin(), exits.end());
            exits.erase(std::unique(exits.begin(), exits.end()), exits.end());
            callback_loops_.emplace(head, CallbackLoop{head, last, std::move(exits)});
            loop_counter_.erase(head);
        }
    }

    const CallbackLoop* loop_containing(size_t pc) const
    {
        for (const auto& [head, loop] : callback_loops_)
            if (pc >= loop.head && pc <= loop.last)
                return &loop;
        return nullptr;
    }

    // At the loop's head: state out, bpf_loop(turns, callback, state, 0),
    // state back in, then on to the way out the callback recorded.
    void loop_call(const CallbackLoop& loop)
    {
        const Label entry = new_label();
        pending_.push_back({&loop, wire_, entry});
        emit(stx_mem(BPF_DW, kFp, kCtx, kLoopState + kStateCtx));
        emit(stx_mem(BPF_W, kFp, kA, kLoopState + kStateA));
        emit(stx_mem(BPF_W, kFp, kX, kLoopState + kStateX));
        if (uses_len_)
            emit(stx_mem(BPF_W, kFp, kLen, kLoopState + kStateLen));
        emit(st_mem(BPF_W, kFp, kLoopState + kStateExit, kExitReject));
        emit(mov32_imm(R1, kMaxLoopTurns));
        func_ref(R2, entry);
        emit(mov64_reg(R3, kFp));
        emit(alu64_imm(BPF_ADD, R3, kLoopState));
        emit(mov32_imm(R4, 0));
        emit(call(BPF_FUNC_loop));
        emit(ldx_mem(BPF_W, kA, kFp, kLoopState + kStateA));
        emit(ldx_mem(BPF_W, kX, kFp, kLoopState + kStateX));
        emit(ldx_mem(BPF_W, R0, kFp, kLoopState + kStateExit));
        std::vector<std::pair<size_t, Label>> returns;
        for (size_t i = 0; i < loop.exits.size(); ++i) {
            const size_t pc = loop.exits[i];
            const auto id = static_cast<int32_t>(i + 1);
            if (pc <= loop.last) {
                returns.emplace_back(pc, new_label());
                jump(BPF_JMP32 | BPF_JEQ | BPF_K, R0, 0, id, returns.back().second);
            } else {
                jump(BPF_JMP32 | BPF_JEQ | BPF_K, R0, 0, id, pc_label(pc));
            }
        }
        ja(reject());
        for (const auto& [pc, label] : returns) {
            bind(label);
            translate(pc);
        }
    }

    // The loop's body as a bpf_loop() callback: r1 = turn, r2 = the state.
    // Returns 0 to go round again, 1 when it has left the loop.
    void callback(const std::vector<bool>& reachable, const PendingCallback& pending)
    {
        const CallbackLoop& loop = *pending.loop;
        wire_ = pending.wire;
        pc_base_ = positions_.size();
        for (size_t pc = 0; pc < classic_.size(); ++pc)
            new_label();
        scope_ = Scope{new_label(), new_label(), {}, &loop};
        for (size_t i = 0; i < loop.exits.size(); ++i)
            scope_->exit_stub.emplace(loop.exits[i], new_label());
        const Scope& scope = *scope_;
        bind(pending.entry);
        emit(stx_mem(BPF_DW, kFp, R2, kCallbackState));
        emit(ldx_mem(BPF_DW, kCtx, R2, kStateCtx));
        // The verifier checks this body once, from the state of the first
        // turn (6.1 does not iterate callbacks): A, X and scratch memory get
        // a zero it cannot see through, so that it checks every path later
        // turns can take, not only those of the first turn's constants.
        emit(mov64_reg(R5, R1));
        emit(alu64_reg(BPF_SUB, R5, R1));
        emit(ldx_mem(BPF_W, kA, R2, kStateA));
        emit(alu32_reg(BPF_ADD, kA, R5));
        emit(ldx_mem(BPF_W, kX, R2, kStateX));
        emit(alu32_reg(BPF_ADD, kX, R5));
        if (uses_len_)
            emit(ldx_mem(BPF_W, kLen, R2, kStateLen));
        for (size_t slot = 0; slot < slot_read_.size(); ++slot) {
            if (!slot_read_[slot])
                continue;
            const auto at = static_cast<int16_t>(kMemBase + 4 * static_cast<int>(slot));
            emit(ldx_mem(BPF_W, R0, R2, static_cast<int16_t>(at - kLoopState)));
            emit(alu32_reg(BPF_ADD, R0, R5));
            emit(stx_mem(BPF_W, kFp, R0, at));
        }
        if (tag_on_stack()) {
            emit(ldx_mem(BPF_W, R0, R2, static_cast<int16_t>(kWireTag - kLoopState)));
            emit(stx_mem(BPF_W, kFp, R0, kWireTag));
        }
        for (size_t pc = loop.head; pc <= loop.last; ++pc) {
            if (!reachable[pc] || BPF_CLASS(classic_[pc].code) == BPF_RET)
                continue;
            bind(pc_label(pc));
            translate(pc);
        }
        // Falling off the last instruction is impossible: it jumps.
        bind(scope.next_turn);
        leave_callback(std::nullopt);
        if (scope.reject_used) {
            bind(scope.reject);
            leave_callback(kExitReject);
        }
        for (size_t i = 0; i < loop.exits.size(); ++i) {
            bind(scope.exit_stub.at(loop.exits[i]));
            leave_callback(static_cast<int32_t>(i + 1));
        }
        scope_.reset();
    }

    // State back to the filter's frame; exit id or, without one, next turn.
    void leave_callback(std::optional<int32_t> exit_id)
    {
        emit(ldx_mem(BPF_DW, R1, kFp, kCallbackState));
        emit(stx_mem(BPF_W, R1, kA, kStateA));
        emit(stx_mem(BPF_W, R1, kX, kStateX));
        for (size_t slot = 0; slot < slot_read_.size(); ++slot) {
            if (!slot_read_[slot])
                continue;
            const auto at = static_cast<int16_t>(kMemBase + 4 * static_cast<int>(slot));
            emit(ldx_mem(BPF_W, R0, kFp, at));
            emit(stx_mem(BPF_W, R1, R0, static_cast<int16_t>(at - kLoopState)));
        }
        if (exit_id)
            emit(st_mem(BPF_W, R1, kStateExit, *exit_id));
        emit(mov32_imm(R0, exit_id ? 1 : 0));
        emit(exit_insn());
    }

    // Drop: when the view says the skb holds a tag in metadata, keeps the
    // four wire bytes it stands for at kWireTag and goes to `wire_entry`.
    void fetch_drop_tag(Label wire_entry)
    {
        const Label plain = new_label();
        emit(ldx_mem(BPF_H, R1, kCtx, offsetof(xdpcap_drop_view, flags)));
        emit(alu32_imm(BPF_AND, R1, XDPCAP_FLAG_VLAN_RESTORED));
        jump(BPF_JMP32 | BPF_JEQ | BPF_K, R1, 0, 0, plain);
        emit(ldx_mem(BPF_H, R1, kCtx, offsetof(xdpcap_drop_view, vlan_proto)));
        emit(to_be(R1, 16)); // __be16 in the view
        emit(alu32_imm(BPF_LSH, R1, 16));
        emit(ldx_mem(BPF_H, R2, kCtx, offsetof(xdpcap_drop_view, vlan_tci)));
        emit(alu32_reg(BPF_OR, R1, R2));
        emit(stx_mem(BPF_W, kFp, R1, kWireTag));
        always_jump(wire_entry);
        bind(plain);
    }

    // XDP: when the rx_meta map says the NIC took the tag out, keeps the
    // four wire bytes it stood for at kWireTag and goes to `wire_entry`.
    void fetch_rx_tag(Label wire_entry)
    {
        const Label plain = new_label();
        emit(st_mem(BPF_W, kFp, kRxMetaKey, 0));
        emit(insn(BPF_LD | BPF_DW | BPF_IMM, R1, BPF_PSEUDO_MAP_FD, 0, target_.rx_meta_map_fd));
        emit(insn(0, 0, 0, 0, 0));
        emit(mov64_reg(R2, kFp));
        emit(alu64_imm(BPF_ADD, R2, kRxMetaKey));
        emit(call(BPF_FUNC_map_lookup_elem));
        jump(BPF_JMP | BPF_JEQ | BPF_K, R0, 0, 0, plain);
        emit(ldx_mem(BPF_H, R1, R0, offsetof(xdpcap_rx_meta, flags)));
        emit(alu32_imm(BPF_AND, R1, XDPCAP_FLAG_VLAN_RESTORED));
        jump(BPF_JMP32 | BPF_JEQ | BPF_K, R1, 0, 0, plain);
        emit(ldx_mem(BPF_H, R1, R0, offsetof(xdpcap_rx_meta, vlan_proto)));
        emit(to_be(R1, 16)); // __be16 in the map: the number as on the wire
        emit(alu32_imm(BPF_LSH, R1, 16));
        emit(ldx_mem(BPF_H, R2, R0, offsetof(xdpcap_rx_meta, vlan_tci)));
        emit(alu32_reg(BPF_OR, R1, R2));
        emit(stx_mem(BPF_W, kFp, R1, kWireTag));
        always_jump(wire_entry);
        bind(plain);
    }

    // Returns whether the program reads the frame length.
    bool prologue(const std::vector<bool>& reachable)
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
        if (trace_) {
            emit(ldx_mem(BPF_DW, kCtx, R1, 0)); // the traced program's xdp_buff
        } else if (drop_) {
            // The CPU's view of the dropped frame; none: nothing to keep.
            emit(st_mem(BPF_W, kFp, kRxMetaKey, 0));
            emit(insn(BPF_LD | BPF_DW | BPF_IMM, R1, BPF_PSEUDO_MAP_FD, 0, target_.drop_view_map_fd));
            emit(insn(0, 0, 0, 0, 0));
            emit(mov64_reg(R2, kFp));
            emit(alu64_imm(BPF_ADD, R2, kRxMetaKey));
            emit(call(BPF_FUNC_map_lookup_elem));
            const Label found = new_label();
            jump(BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, found);
            emit(mov32_imm(R0, 0));
            emit(exit_insn());
            bind(found);
            emit(mov64_reg(kCtx, R0));
        } else {
            emit(mov64_reg(kCtx, R1));
        }
        // Classic BPF starts with A = X = 0 and zeroed scratch memory; the
        // verifier refuses reads of stack never written, so zero what is read.
        emit(mov32_imm(kA, 0));
        emit(mov32_imm(kX, 0));
        slot_read_ = slot_read;
        for (size_t slot = 0; slot < slot_read.size(); ++slot)
            if (slot_read[slot])
                emit(st_mem(BPF_W, kFp, static_cast<int16_t>(kMemBase + 4 * static_cast<int>(slot)), 0));
        for (const auto& [head, counter] : loop_counter_)
            emit(st_mem(BPF_DW, kFp, counter, 0));
        return uses_len;
    }

    void frame_length()
    {
        if (drop_) {
            emit(ldx_mem(BPF_W, kLen, kCtx, offsetof(xdpcap_drop_view, frame_len)));
            if (wire_)
                emit(alu32_imm(BPF_ADD, kLen, 4)); // the tag back in
            return;
        }
        if (skb_) {
            emit(ldx_mem(BPF_W, kLen, kCtx, offsetof(__sk_buff, len)));
            if (wire_)
                emit(alu32_imm(BPF_ADD, kLen, 4)); // the tag back in
        } else if (trace_ || target_.multi_buffer) {
            // Tracing programs have the variant taking the xdp_buff.
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
        if (xdp_ && wire_)
            emit(alu32_imm(BPF_ADD, kLen, 4));
    }

    static int16_t mem_offset(const sock_filter& f, size_t pc)
    {
        if (f.k >= BPF_MEMWORDS)
            throw Error("classic BPF instruction " + hex(f.code) + " at " + std::to_string(pc) +
                        " uses scratch memory slot " + std::to_string(f.k) + " (there are 16)");
        return static_cast<int16_t>(kMemBase + 4 * static_cast<int>(f.k));
    }

    int16_t data_field() const { return xdp_ ? offsetof(xdp_md, data) : offsetof(__sk_buff, data); }
    int16_t data_end_field() const { return xdp_ ? offsetof(xdp_md, data_end) : offsetof(__sk_buff, data_end); }

    // dst (u32) = big-endian value of `size` bytes at frame offset k (+ X);
    // goes to `fail` (the shared reject unless given) when they are not all
    // in the frame.
    void load_packet(uint8_t dst, uint8_t size_code, bool indexed, uint32_t k, std::optional<Label> fail_label = {})
    {
        const Label fail = fail_label ? *fail_label : reject();
        // r2 = offset, computed in 64 bits: X + k cannot wrap.
        emit(mov32_imm(R2, imm32(k)));
        if (indexed)
            emit(alu64_reg(BPF_ADD, R2, kX));
        load_r2(dst, size_code, indexed, k, fail);
    }

    // dst = `size` bytes at the offset in r2: a runtime value, or k.
    void load_r2(uint8_t dst, uint8_t size_code, bool indexed, uint32_t k, Label fail)
    {
        const uint32_t size = size_code == BPF_B ? 1 : size_code == BPF_H ? 2 : 4;
        if (probed_) {
            load_r2_traced(dst, size_code, size, fail);
            return;
        }
        const uint32_t fast_limit = kMaxPacketOff - size;
        const Label slow = slow_path_ ? new_label() : fail;
        const Label done = new_label();
        if (indexed)
            jump(BPF_JMP | BPF_JGT | BPF_K, R2, 0, imm32(fast_limit), slow);
        const bool fast = indexed || k <= fast_limit;
        if (fast) {
            emit(ldx_mem(BPF_W, R3, kCtx, data_field()));
            emit(ldx_mem(BPF_W, R4, kCtx, data_end_field()));
            emit(alu64_reg(BPF_ADD, R3, R2));
            emit(mov64_reg(R5, R3));
            emit(alu64_imm(BPF_ADD, R5, imm32(size)));
            // The form the verifier turns into a proven range for r3.
            jump(BPF_JMP | BPF_JGT | BPF_X, R5, R4, 0, slow);
            emit(ldx_mem(size_code, dst, R3, 0));
            if (slow_path_)
                ja(done);
        }
        if (slow_path_) {
            bind(slow);
            if (indexed) {
                // The load helpers take a u32 offset.
                emit(mov64_reg(R3, R2));
                emit(alu64_imm(BPF_RSH, R3, 32));
                jump(BPF_JMP | BPF_JNE | BPF_K, R3, 0, 0, fail);
            }
            emit(mov64_reg(R1, kCtx));
            emit(mov64_reg(R3, kFp));
            emit(alu64_imm(BPF_ADD, R3, kLoadBuffer));
            emit(mov32_imm(R4, imm32(size)));
            emit(call(xdp_ ? BPF_FUNC_xdp_load_bytes : BPF_FUNC_skb_load_bytes));
            // Fails when the bytes are not all in the frame: reject, as classic
            // BPF does. bpf_xdp_load_bytes() also refuses offsets above 0xffff,
            // so in XDP frames over 64 KiB those bytes stay out of reach.
            jump(BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, fail);
            emit(ldx_mem(size_code, dst, kFp, kLoadBuffer));
        } else if (!fast) {
            always_jump(fail);
        }
        bind(done);
        if (size > 1)
            emit(to_be(dst, imm32(size * 8)));
    }

    // A tracing program cannot load packet bytes directly: data and data_end
    // are plain numbers to the verifier. The offset is checked against the
    // linear data, then bpf_probe_read_kernel() copies the bytes.
    void load_r2_traced(uint8_t dst, uint8_t size_code, uint32_t size, Label fail)
    {
        emit(ldx_mem(BPF_DW, R3, kCtx, kXdpBuffData));
        emit(ldx_mem(BPF_DW, R4, kCtx, kXdpBuffDataEnd));
        emit(alu64_reg(BPF_SUB, R4, R3));
        emit(mov64_reg(R5, R2));
        emit(alu64_imm(BPF_ADD, R5, imm32(size)));
        jump(BPF_JMP | BPF_JGT | BPF_X, R5, R4, 0, fail);
        emit(alu64_reg(BPF_ADD, R3, R2));
        emit(mov64_reg(R1, kFp));
        emit(alu64_imm(BPF_ADD, R1, kLoadBuffer));
        emit(mov32_imm(R2, imm32(size)));
        emit(call(BPF_FUNC_probe_read_kernel));
        jump(BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, fail);
        emit(ldx_mem(size_code, dst, kFp, kLoadBuffer));
        if (size > 1)
            emit(to_be(dst, imm32(size * 8)));
    }

    // A classic load in the view being emitted. The wire view is the packet
    // with the metadata tag at 12..15 (vlan_proto, vlan_tci, big endian):
    // wire offsets below 12 are packet offsets, from 16 on they are 4 less.
    void load(uint8_t dst, uint8_t size_code, bool indexed, uint32_t k)
    {
        if (!wire_) {
            load_packet(dst, size_code, indexed, k);
            return;
        }
        const uint32_t size = size_code == BPF_B ? 1 : size_code == BPF_H ? 2 : 4;
        if (!indexed) {
            if (uint64_t{k} + size <= 12)
                load_packet(dst, size_code, false, k);
            else if (k >= 16)
                load_packet(dst, size_code, false, k - 4);
            else
                wire_bytes(dst, size, k);
            return;
        }
        const Label high = new_label(), low = new_label(), done = new_label();
        emit(mov32_imm(R2, imm32(k)));
        emit(alu64_reg(BPF_ADD, R2, kX));
        jump(BPF_JMP | BPF_JGT | BPF_K, R2, 0, 15, high);
        emit(mov64_reg(R3, R2));
        emit(alu64_imm(BPF_ADD, R3, imm32(size)));
        jump(BPF_JMP | BPF_JLE | BPF_K, R3, 0, 12, low);
        // What is left: 13 - size <= X + k <= 15, the load covers the tag.
        for (uint32_t at = 13 - size; at <= 15; ++at) {
            if (at == 15) {
                wire_bytes(dst, size, at);
                ja(done);
                break;
            }
            const Label next = new_label();
            jump(BPF_JMP | BPF_JNE | BPF_K, R2, 0, imm32(at), next);
            wire_bytes(dst, size, at);
            ja(done);
            bind(next);
        }
        bind(high);
        emit(alu64_imm(BPF_ADD, R2, -4));
        load_r2(dst, size_code, true, 0, reject());
        ja(done);
        bind(low);
        load_r2(dst, size_code, true, 0, reject());
        bind(done);
    }

    // dst = `size` wire bytes from constant offset k, one at a time.
    void wire_bytes(uint8_t dst, uint32_t size, uint32_t k)
    {
        for (uint32_t i = 0; i < size; ++i) {
            const uint32_t at = k + i;
            if (at < 12 || at >= 16) {
                const uint32_t offset = at < 12 ? at : at - 4;
                emit(mov32_imm(R2, imm32(offset)));
                load_r2(R0, BPF_B, false, offset, reject());
            } else if (tag_on_stack()) {
                // The word the prologue kept: byte `at` of the wire.
                emit(ldx_mem(BPF_W, R0, kFp, kWireTag));
                if (at < 15)
                    emit(alu32_imm(BPF_RSH, R0, imm32(8 * (15 - at))));
                emit(alu32_imm(BPF_AND, R0, 0xff));
            } else if (at < 14) {
                emit(ldx_mem(BPF_W, R0, kCtx, offsetof(__sk_buff, vlan_proto)));
                emit(to_be(R0, 16)); // __be16 in the skb
                if (at == 12)
                    emit(alu32_imm(BPF_RSH, R0, 8));
                else
                    emit(alu32_imm(BPF_AND, R0, 0xff));
            } else {
                emit(ldx_mem(BPF_W, R0, kCtx, offsetof(__sk_buff, vlan_tci)));
                if (at == 14)
                    emit(alu32_imm(BPF_RSH, R0, 8));
                else
                    emit(alu32_imm(BPF_AND, R0, 0xff));
            }
            if (i == 0) {
                emit(mov32_reg(dst, R0));
            } else {
                emit(alu32_imm(BPF_LSH, dst, 8));
                emit(alu32_reg(BPF_OR, dst, R0));
            }
        }
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
                ja(pc_label(on_true));
            return;
        }
        if (on_true == next && op != BPF_JSET) {
            const uint8_t inverse = op == BPF_JEQ ? BPF_JNE : op == BPF_JGT ? BPF_JLE : BPF_JLT;
            compare(inverse, pc_label(on_false));
            return;
        }
        compare(op, pc_label(on_true));
        if (on_false != next)
            ja(pc_label(on_false));
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
                if (f.k >= kSpecialBase) {
                    ancillary(f, pc);
                    return;
                }
                load(kA, BPF_SIZE(f.code), false, f.k);
                return;
            case BPF_IND:
                // X + k: libpcap's interpreter and ours read it as a frame offset.
                load(kA, BPF_SIZE(f.code), true, f.k);
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
                if (f.k >= kSpecialBase)
                    throw Error("classic BPF instruction " + hex(f.code) + " at " + std::to_string(pc) +
                                " reads the header length at special offset " + hex(f.k) + ", which xdpcap does not support");
                load(kX, BPF_B, false, f.k);
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
                if (static_cast<int32_t>(f.k) < 0)
                    loop_back(pc + 1 - static_cast<size_t>(-static_cast<int64_t>(static_cast<int32_t>(f.k))));
                else if (f.k != 0)
                    ja(pc_label(pc + 1 + f.k));
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

    // A counted backward jump: the verifier accepts a loop whose every turn
    // it can tell apart, and a packet cannot make it run longer than the
    // bound. Past the bound the packet is rejected, as when a load runs off
    // the frame.
    void loop_back(size_t head)
    {
        if (scope_ && head == scope_->head()) {
            ja(scope_->next_turn);
            return;
        }
        const int16_t counter = loop_counter_.at(head);
        emit(ldx_mem(BPF_DW, R0, kFp, counter));
        emit(alu64_imm(BPF_ADD, R0, 1));
        emit(stx_mem(BPF_DW, kFp, R0, counter));
        jump(BPF_JMP | BPF_JGT | BPF_K, R0, 0, kProtochainMaxHeaders, reject());
        ja(pc_label(head));
    }

    // A = the value the kernel's socket filter would load, as this hook has it.
    void ancillary(const sock_filter& f, size_t pc)
    {
        const std::string where = "classic BPF instruction " + hex(f.code) + " at " + std::to_string(pc);
        if (f.k < kAncillaryBase)
            throw Error(where + " reads relative to the link-layer or network header (offset " + hex(f.k) +
                        "), which xdpcap does not support");
        const uint32_t field = f.k - kAncillaryBase;
        const Ancillary* known = nullptr;
        for (const Ancillary& a : kAncillary)
            if (a.field == field)
                known = &a;
        if (!known)
            throw Error(where + " loads ancillary data at SKF_AD_OFF + " + std::to_string(field) +
                        ", which is no known SKF_AD_* field");
        const auto refuse = [&](const char* why) {
            throw Error(std::string("the filter uses ") + known->what + " (" + known->name + "), " + why);
        };
        const auto not_here = [&] {
            refuse((std::string("which ") + context_name(target_.context) + " programs do not have").c_str());
        };
        const auto skb_field = [&](int16_t offset) {
            if (!skb_)
                not_here();
            emit(ldx_mem(BPF_W, kA, kCtx, offset));
        };
        switch (field) {
        case SKF_AD_PKTTYPE:
            // `inbound` is pkt_type != PACKET_OUTGOING.
            if (drop_) {
                const Label done = new_label();
                emit(ldx_mem(BPF_W, kA, kCtx, offsetof(xdpcap_drop_view, pkt_type)));
                jump(BPF_JMP32 | BPF_JEQ | BPF_K, kA, 0, kPacketOutgoing, done);
                received_packet_type();
                bind(done);
            } else if (!skb_) {
                received_packet_type();
            } else if (target_.context == FilterContext::TcIngress) {
                emit(ldx_mem(BPF_W, kA, kCtx, offsetof(__sk_buff, pkt_type)));
            } else {
                emit(mov32_imm(kA, kPacketOutgoing));
            }
            return;
        case SKF_AD_IFINDEX:
            // The device the hook runs on, as skb->dev->ifindex would be.
            // A traced program may run on several devices, and the offset of
            // ifindex in struct net_device depends on the kernel's build.
            if (trace_)
                not_here();
            if (drop_) {
                emit(ldx_mem(BPF_W, kA, kCtx, offsetof(xdpcap_drop_view, ifindex)));
                return;
            }
            emit(ldx_mem(BPF_W, kA, kCtx, xdp_ ? offsetof(xdp_md, ingress_ifindex) : offsetof(__sk_buff, ifindex)));
            return;
        case SKF_AD_PROTOCOL:
            skb_field(offsetof(__sk_buff, protocol));
            emit(to_be(kA, 16)); // __be16 in the skb, host order in A
            return;
        case SKF_AD_MARK:
            skb_field(offsetof(__sk_buff, mark));
            return;
        case SKF_AD_QUEUE:
            skb_field(offsetof(__sk_buff, queue_mapping));
            return;
        case SKF_AD_RXHASH:
            skb_field(offsetof(__sk_buff, hash));
            return;
        case SKF_AD_VLAN_TAG:
        case SKF_AD_VLAN_TAG_PRESENT:
        case SKF_AD_VLAN_TPID:
            // Both hooks show the frame as on the wire: XDP as received, tc
            // egress with a metadata tag put back into the bytes. A tag is in
            // the packet, none in metadata; libpcap's live-handle code then
            // reads it from the bytes.
            emit(mov32_imm(kA, 0));
            return;
        case SKF_AD_CPU:
            emit(call(BPF_FUNC_get_smp_processor_id));
            emit(mov32_reg(kA, R0));
            return;
        case SKF_AD_RANDOM:
            emit(call(BPF_FUNC_get_prandom_u32));
            emit(mov32_reg(kA, R0));
            return;
        case SKF_AD_ALU_XOR_X:
            emit(alu32_reg(BPF_XOR, kA, kX));
            return;
        default:
            refuse("which xdpcap does not support");
        }
    }

    // A received frame's pkt_type as eth_type_trans() sets it from the
    // destination MAC. PACKET_OTHERHOST would need the interface's address:
    // unicast is PACKET_HOST here (libpcap only ever compares with OUTGOING).
    void received_packet_type()
    {
        const Label group = new_label();
        const Label multicast = new_label();
        const Label host = new_label();
        const Label done = new_label();
        load_packet(kA, BPF_B, false, 0, host);
        jump(BPF_JMP32 | BPF_JSET | BPF_K, kA, 0, 1, group);
        ja(host);
        bind(group);
        load_packet(kA, BPF_W, false, 0, multicast);
        jump(BPF_JMP32 | BPF_JNE | BPF_K, kA, 0, imm32(0xffffffff), multicast);
        load_packet(kA, BPF_H, false, 4, multicast);
        jump(BPF_JMP32 | BPF_JNE | BPF_K, kA, 0, 0xffff, multicast);
        emit(mov32_imm(kA, kPacketBroadcast));
        ja(done);
        bind(multicast);
        emit(mov32_imm(kA, kPacketMulticast));
        ja(done);
        bind(host);
        emit(mov32_imm(kA, kPacketHost));
        bind(done);
    }

    struct Fixup {
        size_t at;
        Label target;
    };
    std::span<const sock_filter> classic_;
    // Loop head (classic pc) -> stack offset of its iteration counter.
    std::map<size_t, int16_t> loop_counter_;
    FilterTarget target_;
    bool xdp_;
    bool skb_;
    bool trace_;
    bool drop_;
    bool probed_; // bytes read with bpf_probe_read_kernel (trace, drop)
    bool slow_path_;
    bool wire_ = false;   // emitting the wire view (tag from metadata at 12..15)
    size_t pc_base_ = 0;  // label of classic instruction 0 in this copy
    std::vector<bpf_insn> code_;
    std::vector<size_t> positions_;
    std::vector<Fixup> fixups_;
    std::vector<Fixup> func_fixups_;
    bool reject_used_ = false;
    bool uses_len_ = false;
    std::array<bool, BPF_MEMWORDS> slot_read_{};
    std::map<size_t, CallbackLoop> callback_loops_; // by head
    std::vector<PendingCallback> pending_;
    std::optional<Scope> scope_;
};

} // namespace

std::vector<bpf_insn> translate_filter(std::span<const sock_filter> classic, const FilterTarget& target)
{
    return Translator(classic, target).run();
}

} // namespace xdpcap
