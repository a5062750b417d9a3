// Test-only interpreter for exactly the eBPF the filter translator emits, run
// as the filter function of an XDP program (ctx = struct xdp_md *), of a tc
// egress program (ctx = struct __sk_buff *) or of an fentry/fexit program on
// an XDP program (ctx = arguments, ctx[0] = struct xdp_buff *): only the
// fields and helpers the hook has exist. It is deliberately strict: anything the
// translator should never produce (an unknown opcode, a read of a clobbered
// register, arithmetic on pointers other than the verifier's packet idiom, a
// direct packet load the code did not first prove against data_end, a stack
// access out of bounds or of uninitialised bytes, a pointer spilled and read
// back in part) throws InterpError, so a translator bug shows up as a test
// failure rather than as a wrong verdict. bpf_loop() runs its callback in a
// frame of its own, whose stack starts uninitialised on every turn.
#pragma once

#include <arpa/inet.h>
#include <linux/bpf.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "filter/translate.hpp"
#include "xdpcap_abi.h"

namespace xdpcap::test {

// What the ctx says besides the packet bytes. Values in host order; the
// __sk_buff fields that hold __be16 are presented as the kernel does.
struct HookContext {
    FilterContext hook = FilterContext::Xdp;
    uint32_t ifindex = 7; // xdp_md.ingress_ifindex or __sk_buff.ifindex
    // __sk_buff only:
    uint16_t protocol = 0;
    bool vlan_present = false;
    uint16_t vlan_tci = 0;
    uint16_t vlan_proto = 0;
    uint32_t mark = 0;
    uint32_t queue_mapping = 0;
    uint32_t hash = 0;
    // Xdp: the filter's rx_meta map (FilterTarget::rx_meta_map_fd, any fd
    // number here) exists, and its entry holds vlan_tci/vlan_proto above
    // when vlan_present.
    int rx_meta_map_fd = -1;
    // Drop: the filter's drop_view map; its entry describes the linear data
    // at kKernelData, the whole frame's length, `pkt_type`, `ifindex` and,
    // when vlan_present, the tag held in metadata. TcIngress: `pkt_type` is
    // the skb's.
    int drop_view_map_fd = -1;
    uint32_t pkt_type = 0;
    // Both:
    uint32_t cpu = 1;
    uint32_t random = 0x2545f491;
};

struct InterpError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class EbpfInterp {
public:
    // The frame is `linear` (data..data_end) followed by `frags`, which only
    // the helpers see, as in a multi-buffer xdp_buff.
    EbpfInterp(std::span<const bpf_insn> program, std::span<const uint8_t> linear, std::span<const uint8_t> frags,
               HookContext context = {})
        : program_(program), linear_(linear), frame_(linear.begin(), linear.end()), context_(context)
    {
        frame_.insert(frame_.end(), frags.begin(), frags.end());
    }

    // r0 of the exit, as the caller of xdpcap_filter() sees the int.
    uint32_t run()
    {
        regs_[1] = {Kind::Ctx, 0, 0, 0};
        regs_[10] = {Kind::Stack, 0, 0, 0};
        return run_from(0);
    }

    // Helper calls made, for tests that want to see the slow path was taken.
    size_t helper_calls() const { return helper_calls_; }
    // Callback turns bpf_loop() ran.
    size_t loop_turns() const { return loop_turns_; }

private:
    uint32_t run_from(size_t pc)
    {
        for (;; ++steps_) {
            if (steps_ > 20'000'000)
                fail(pc, "does not terminate");
            if (pc >= program_.size())
                fail(pc, "ran off the end of the program");
            const bpf_insn& i = program_[pc];
            const int64_t next = step(i, pc);
            if (next < 0)
                return static_cast<uint32_t>(regs_[0].v);
            pc = static_cast<size_t>(next);
        }
    }

    enum class Kind : uint8_t { Uninit, Scalar, Ctx, Packet, PacketEnd, Stack, XdpBuff, Map, MapValue, Func };
    // Trace: where the linear data seems to be in kernel memory, so that
    // bpf_probe_read_kernel() of anything else is caught.
    static constexpr uint64_t kKernelData = 0xffff888012340000;
    struct Value {
        Kind kind = Kind::Uninit;
        uint64_t v = 0;      // scalar, or packet/stack offset (two's complement)
        uint32_t origin = 0; // packet pointers: which derivation they belong to
        int64_t delta = 0;   // packet pointers: constant added since that derivation
    };
    // Frames of 512 bytes: the filter's at r10 = 0, a callback's below it.
    static constexpr int kFrameSize = 512;
    static constexpr int kFrames = 2;
    static constexpr int kStackSize = kFrameSize * kFrames;

    [[noreturn]] void fail(size_t pc, const std::string& what) const
    {
        throw InterpError("eBPF insn " + std::to_string(pc) + " (code " + std::to_string(program_[pc < program_.size() ? pc : 0].code) +
                          "): " + what);
    }

    const Value& read(unsigned r, size_t pc)
    {
        if (r > 10)
            fail(pc, "register r" + std::to_string(r) + " does not exist");
        if (regs_[r].kind == Kind::Uninit)
            fail(pc, "reads r" + std::to_string(r) + " which holds no value (unset or clobbered by a call)");
        return regs_[r];
    }
    uint64_t scalar(unsigned r, size_t pc)
    {
        const Value& v = read(r, pc);
        if (v.kind != Kind::Scalar)
            fail(pc, "r" + std::to_string(r) + " is a pointer where a number is needed");
        return v.v;
    }
    void write(unsigned r, const Value& v, size_t pc)
    {
        if (r >= 10)
            fail(pc, "writes r" + std::to_string(r));
        regs_[r] = v;
    }
    static Value number(uint64_t v) { return {Kind::Scalar, v, 0, 0}; }

    static uint64_t to_be(uint64_t v, int bits)
    {
        if (bits == 16) {
            const auto x = static_cast<uint16_t>(v);
            return std::endian::native == std::endian::little ? static_cast<uint16_t>((x >> 8) | (x << 8)) : x;
        }
        const auto x = static_cast<uint32_t>(v);
        return std::endian::native == std::endian::little ? __builtin_bswap32(x) : x;
    }

    // Memory holds host-order values, as in the kernel.
    static uint64_t get(const uint8_t* p, unsigned size)
    {
        switch (size) {
        case 1: return *p;
        case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
        case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
        default: { uint64_t v; std::memcpy(&v, p, 8); return v; }
        }
    }
    static void put(uint8_t* p, uint64_t value, unsigned size)
    {
        switch (size) {
        case 1: *p = static_cast<uint8_t>(value); break;
        case 2: { const auto v = static_cast<uint16_t>(value); std::memcpy(p, &v, 2); break; }
        case 4: { const auto v = static_cast<uint32_t>(value); std::memcpy(p, &v, 4); break; }
        default: std::memcpy(p, &value, 8); break;
        }
    }

    static unsigned size_bytes(uint8_t size_code)
    {
        switch (size_code) {
        case BPF_B: return 1;
        case BPF_H: return 2;
        case BPF_W: return 4;
        default: return 8;
        }
    }

    void check_stack(int64_t addr, unsigned size, size_t pc) const
    {
        if (addr < -kStackSize || addr + size > 0)
            fail(pc, "stack access at r10" + std::to_string(addr) + " size " + std::to_string(size) + " out of bounds");
    }

    uint64_t load(const bpf_insn& i, size_t pc)
    {
        const Value& base = read(i.src_reg, pc);
        const unsigned size = size_bytes(BPF_SIZE(i.code));
        switch (base.kind) {
        case Kind::Ctx:
            fail(pc, "ctx loads are handled by the caller");
        case Kind::Packet: {
            const int64_t addr = static_cast<int64_t>(base.v) + i.off;
            const int64_t proven = base.origin < proven_.size() ? proven_[base.origin] : -1;
            if (base.delta + i.off + static_cast<int64_t>(size) > proven)
                fail(pc, "direct packet load not proven against data_end");
            if (addr < 0 || static_cast<uint64_t>(addr) + size > linear_.size())
                fail(pc, "direct packet load at " + std::to_string(addr) + " outside [data, data_end) of " +
                             std::to_string(linear_.size()));
            return get(linear_.data() + addr, size);
        }
        case Kind::Stack: {
            const int64_t addr = static_cast<int64_t>(base.v) + i.off;
            check_stack(addr, size, pc);
            if (spilled_overlap(addr, size))
                fail(pc, "reads part of a spilled pointer as a number");
            for (unsigned b = 0; b < size; ++b)
                if (!stack_init_[kStackSize + addr + b])
                    fail(pc, "reads uninitialised stack at r10" + std::to_string(addr + b));
            return get(stack_.data() + kStackSize + addr, size);
        }
        case Kind::MapValue: {
            const int64_t addr = static_cast<int64_t>(base.v) + i.off;
            if (drop()) {
                if (addr < 0 || static_cast<uint64_t>(addr) + size > sizeof(xdpcap_drop_view))
                    fail(pc, "drop view access out of bounds");
                return get(reinterpret_cast<const uint8_t*>(&drop_view_) + addr, size);
            }
            if (addr < 0 || static_cast<uint64_t>(addr) + size > sizeof(xdpcap_rx_meta))
                fail(pc, "map value access out of bounds");
            return get(reinterpret_cast<const uint8_t*>(&rx_meta_) + addr, size);
        }
        default:
            fail(pc, "load through a register that is not a valid pointer");
        }
    }

    // bpf_map_lookup_elem(r1 = the rx_meta map, r2 = stack key): the entry
    // of this CPU, key 0 only.
    Value map_lookup(size_t pc)
    {
        const Value& map = read(1, pc);
        const int given = drop() ? context_.drop_view_map_fd : xdp() ? context_.rx_meta_map_fd : -1;
        if (map.kind != Kind::Map || static_cast<int>(map.v) != given || given < 0)
            fail(pc, "map lookup in a map the translation was not given");
        const Value& key = read(2, pc);
        if (key.kind != Kind::Stack)
            fail(pc, "map key is not on the stack");
        const auto addr = static_cast<int64_t>(key.v);
        check_stack(addr, 4, pc);
        for (unsigned b = 0; b < 4; ++b)
            if (!stack_init_[kStackSize + addr + b])
                fail(pc, "map key is uninitialised stack");
        if (get(stack_.data() + kStackSize + addr, 4) != 0)
            return number(0);
        if (drop()) {
            drop_view_ = {};
            drop_view_.data = kKernelData;
            drop_view_.data_end = kKernelData + linear_.size();
            drop_view_.frame_len = static_cast<uint32_t>(frame_.size());
            drop_view_.pkt_type = context_.pkt_type;
            drop_view_.ifindex = context_.ifindex;
            if (context_.vlan_present) {
                drop_view_.flags = XDPCAP_FLAG_VLAN_RESTORED;
                drop_view_.vlan_proto = htons(context_.vlan_proto);
                drop_view_.vlan_tci = context_.vlan_tci;
            }
            return {Kind::MapValue, 0, 0, 0};
        }
        rx_meta_ = {};
        if (context_.vlan_present) {
            rx_meta_.flags = XDPCAP_FLAG_VLAN_RESTORED;
            rx_meta_.vlan_proto = htons(context_.vlan_proto);
            rx_meta_.vlan_tci = context_.vlan_tci;
        }
        return {Kind::MapValue, 0, 0, 0};
    }

    bool spilled_overlap(int64_t addr, unsigned size) const
    {
        for (const auto& [at, value] : spills_)
            if (at < addr + size && addr < at + 8)
                return true;
        return false;
    }

    // A pointer written to the stack whole, as the verifier tracks it.
    void spill(const bpf_insn& i, const Value& value, size_t pc)
    {
        const Value& base = read(i.dst_reg, pc);
        const int64_t addr = static_cast<int64_t>(base.v) + i.off;
        if (base.kind != Kind::Stack || BPF_SIZE(i.code) != BPF_DW || addr % 8 != 0)
            fail(pc, "spills a pointer other than whole to an aligned stack slot");
        check_stack(addr, 8, pc);
        std::erase_if(spills_, [&](const auto& s) { return s.first < addr + 8 && addr < s.first + 8; });
        spills_.emplace_back(addr, value);
        for (unsigned b = 0; b < 8; ++b)
            stack_init_[kStackSize + addr + b] = true;
    }

    Value fill(const Value& base, const bpf_insn& i, size_t pc)
    {
        const int64_t addr = static_cast<int64_t>(base.v) + i.off;
        for (const auto& [at, value] : spills_)
            if (at == addr) {
                if (BPF_SIZE(i.code) != BPF_DW)
                    fail(pc, "reads part of a spilled pointer");
                return value;
            }
        return number(load(i, pc));
    }

    void store(const bpf_insn& i, uint64_t value, size_t pc)
    {
        const Value& base = read(i.dst_reg, pc);
        if (base.kind != Kind::Stack)
            fail(pc, "store outside the stack");
        const unsigned size = size_bytes(BPF_SIZE(i.code));
        const int64_t addr = static_cast<int64_t>(base.v) + i.off;
        check_stack(addr, size, pc);
        std::erase_if(spills_, [&](const auto& s) { return s.first < addr + size && addr < s.first + 8; });
        put(stack_.data() + kStackSize + addr, value, size);
        for (unsigned b = 0; b < size; ++b)
            stack_init_[kStackSize + addr + b] = true;
    }

    bool xdp() const { return context_.hook == FilterContext::Xdp; }
    bool trace() const { return context_.hook == FilterContext::Trace; }
    bool drop() const { return context_.hook == FilterContext::Drop; }

    // Trace: bpf_probe_read_kernel(r1 = stack buffer, r2 = size, r3 = kernel
    // address) may only read the linear data; reading elsewhere would copy
    // whatever the kernel has there, so it is a translation bug.
    int64_t probe_read_kernel(size_t pc)
    {
        const Value& buf = read(1, pc);
        if (buf.kind != Kind::Stack)
            fail(pc, "bpf_probe_read_kernel buffer is not on the stack");
        const uint64_t len = scalar(2, pc);
        if (len == 0 || len > 8)
            fail(pc, "bpf_probe_read_kernel length " + std::to_string(len) + " unexpected");
        const uint64_t src = scalar(3, pc);
        if (src < kKernelData || src - kKernelData > linear_.size() || src - kKernelData + len > linear_.size())
            fail(pc, "bpf_probe_read_kernel outside the linear data");
        const auto addr = static_cast<int64_t>(buf.v);
        check_stack(addr, static_cast<unsigned>(len), pc);
        std::memcpy(stack_.data() + kStackSize + addr, linear_.data() + (src - kKernelData), len);
        for (uint64_t b = 0; b < len; ++b)
            stack_init_[kStackSize + addr + b] = true;
        return 0;
    }

    // bpf_loop(r1 = turns, r2 = callback, r3 = its context, r4 = flags 0):
    // the callback in a frame below the caller's, r6-r9 kept for the caller.
    void loop(size_t pc)
    {
        const uint64_t turns = scalar(1, pc);
        const Value callback = read(2, pc);
        const Value context = read(3, pc);
        if (callback.kind != Kind::Func || context.kind != Kind::Stack || scalar(4, pc) != 0)
            fail(pc, "bpf_loop arguments are not (turns, callback, stack context, 0)");
        if (turns > (1u << 23))
            fail(pc, "bpf_loop turns beyond the kernel's limit");
        if (++depth_ >= kFrames)
            fail(pc, "bpf_loop nested deeper than the interpreter's frames");
        const auto frame_top = -static_cast<int64_t>(depth_) * kFrameSize;
        const std::array<Value, 11> caller = regs_;
        uint64_t done = 0;
        while (done < turns) {
            regs_ = {};
            regs_[1] = number(done);
            regs_[2] = context;
            regs_[10] = {Kind::Stack, static_cast<uint64_t>(frame_top), 0, 0};
            std::fill(stack_init_.begin() + kStackSize + frame_top - kFrameSize,
                      stack_init_.begin() + kStackSize + frame_top, false);
            std::erase_if(spills_, [&](const auto& s) { return s.first < frame_top; });
            const uint32_t stop = run_from(static_cast<size_t>(callback.v));
            ++done;
            ++loop_turns_;
            if (stop > 1)
                fail(pc, "bpf_loop callback returned " + std::to_string(stop) + ", not 0 or 1");
            if (stop == 1)
                break;
        }
        --depth_;
        regs_ = caller;
        for (unsigned r = 1; r <= 5; ++r)
            regs_[r] = {};
        regs_[0] = number(done);
    }

    void helper(int32_t id, size_t pc)
    {
        ++helper_calls_;
        if (id == BPF_FUNC_loop) {
            loop(pc);
            return;
        }
        if (id == BPF_FUNC_map_lookup_elem) {
            const Value found = map_lookup(pc);
            for (unsigned r = 1; r <= 5; ++r)
                regs_[r] = {};
            regs_[0] = found;
            return;
        }
        const bool takes_ctx = id != BPF_FUNC_get_smp_processor_id && id != BPF_FUNC_get_prandom_u32 &&
            id != BPF_FUNC_probe_read_kernel;
        if (takes_ctx && read(1, pc).kind != (trace() ? Kind::XdpBuff : Kind::Ctx))
            fail(pc, trace() ? "helper's first argument is not the xdp_buff" : "helper's first argument is not the ctx");
        int64_t ret = 0;
        if (id == BPF_FUNC_probe_read_kernel && (trace() || drop())) {
            ret = probe_read_kernel(pc);
        } else if (id == BPF_FUNC_xdp_get_buff_len && trace()) {
            ret = static_cast<int64_t>(frame_.size());
        } else if (id == BPF_FUNC_get_smp_processor_id) {
            ret = context_.cpu;
        } else if (id == BPF_FUNC_get_prandom_u32) {
            ret = context_.random;
        } else if (id == BPF_FUNC_xdp_get_buff_len && xdp()) {
            ret = static_cast<int64_t>(frame_.size());
        } else if (id == BPF_FUNC_skb_load_bytes &&
                   (context_.hook == FilterContext::TcEgress || context_.hook == FilterContext::TcIngress)) {
            const uint64_t offset = scalar(2, pc);
            if (offset > 0xffffffff)
                fail(pc, "bpf_skb_load_bytes offset does not fit its u32 argument");
            const Value& buf = read(3, pc);
            if (buf.kind != Kind::Stack)
                fail(pc, "bpf_skb_load_bytes buffer is not on the stack");
            const uint64_t len = scalar(4, pc);
            if (len == 0 || len > 8)
                fail(pc, "bpf_skb_load_bytes length " + std::to_string(len) + " unexpected");
            const auto addr = static_cast<int64_t>(buf.v);
            check_stack(addr, static_cast<unsigned>(len), pc);
            // As the kernel: offsets above INT_MAX or past skb->len fail.
            if (offset > 0x7fffffff || offset + len > frame_.size()) {
                ret = -EFAULT;
            } else {
                std::memcpy(stack_.data() + kStackSize + addr, frame_.data() + offset, len);
                for (uint64_t b = 0; b < len; ++b)
                    stack_init_[kStackSize + addr + b] = true;
            }
        } else if (id == BPF_FUNC_xdp_load_bytes && xdp()) {
            const uint64_t offset64 = scalar(2, pc);
            if (offset64 > 0xffffffff)
                fail(pc, "bpf_xdp_load_bytes offset does not fit its u32 argument");
            const Value& buf = read(3, pc);
            if (buf.kind != Kind::Stack)
                fail(pc, "bpf_xdp_load_bytes buffer is not on the stack");
            const uint64_t len = scalar(4, pc);
            if (len == 0 || len > 8)
                fail(pc, "bpf_xdp_load_bytes length " + std::to_string(len) + " unexpected");
            const auto addr = static_cast<int64_t>(buf.v);
            check_stack(addr, static_cast<unsigned>(len), pc);
            const auto offset = static_cast<uint32_t>(offset64);
            // As the kernel's bpf_xdp_pointer(): 16-bit offsets only.
            if (offset > 0xffff || len > 0xffff)
                ret = -EFAULT;
            else if (offset + len > frame_.size())
                ret = -EINVAL;
            else {
                std::memcpy(stack_.data() + kStackSize + addr, frame_.data() + offset, len);
                for (uint64_t b = 0; b < len; ++b)
                    stack_init_[kStackSize + addr + b] = true;
            }
        } else {
            fail(pc, "calls unknown helper " + std::to_string(id));
        }
        for (unsigned r = 1; r <= 5; ++r)
            regs_[r] = {};
        regs_[0] = number(static_cast<uint64_t>(ret));
    }

    // A 32-bit ctx load: exactly the fields the hook's ctx has and the
    // translation may read.
    Value ctx_field(int16_t off, size_t pc)
    {
        const auto at = static_cast<size_t>(off);
        if (off < 0)
            fail(pc, "negative ctx offset");
        if (xdp()) {
            if (at == offsetof(xdp_md, data))
                return {Kind::Packet, 0, next_origin_++, 0};
            if (at == offsetof(xdp_md, data_end))
                return {Kind::PacketEnd, linear_.size(), 0, 0};
            if (at == offsetof(xdp_md, ingress_ifindex))
                return number(context_.ifindex);
            fail(pc, "xdp_md access at " + std::to_string(off) + " the translation should not make");
        }
        if (at == offsetof(__sk_buff, data))
            return {Kind::Packet, 0, next_origin_++, 0};
        if (at == offsetof(__sk_buff, data_end))
            return {Kind::PacketEnd, linear_.size(), 0, 0};
        if (at == offsetof(__sk_buff, len))
            return number(frame_.size());
        if (at == offsetof(__sk_buff, ifindex))
            return number(context_.ifindex);
        if (at == offsetof(__sk_buff, protocol))
            return number(htons(context_.protocol));
        if (at == offsetof(__sk_buff, vlan_present))
            return number(context_.vlan_present ? 1 : 0);
        if (at == offsetof(__sk_buff, vlan_tci))
            return number(context_.vlan_tci);
        if (at == offsetof(__sk_buff, vlan_proto))
            return number(htons(context_.vlan_proto));
        if (at == offsetof(__sk_buff, mark))
            return number(context_.mark);
        if (at == offsetof(__sk_buff, queue_mapping))
            return number(context_.queue_mapping);
        if (at == offsetof(__sk_buff, hash))
            return number(context_.hash);
        // Only ingress has a packet type worth reading.
        if (at == offsetof(__sk_buff, pkt_type) && context_.hook == FilterContext::TcIngress)
            return number(context_.pkt_type);
        fail(pc, "__sk_buff access at " + std::to_string(off) + " the translation should not make");
    }

    // Trace: ctx[0] is the xdp_buff; of it only data and data_end are read,
    // as the numbers they are to the verifier.
    Value traced_field(Kind base, const bpf_insn& i, size_t pc)
    {
        if (BPF_SIZE(i.code) != BPF_DW)
            fail(pc, "unexpected access size in trace mode");
        if (base == Kind::Ctx) {
            if (i.off != 0)
                fail(pc, "reads traced argument " + std::to_string(i.off / 8) + "; only ctx[0] is the xdp_buff");
            return {Kind::XdpBuff, 0, 0, 0};
        }
        if (i.off == 0)
            return number(kKernelData);
        if (i.off == 8)
            return number(kKernelData + linear_.size());
        fail(pc, "xdp_buff access at " + std::to_string(i.off) + " the translation should not make");
    }

    static bool compare(uint8_t op, uint64_t a, uint64_t b, bool& known)
    {
        known = true;
        switch (op) {
        case BPF_JEQ: return a == b;
        case BPF_JNE: return a != b;
        case BPF_JGT: return a > b;
        case BPF_JGE: return a >= b;
        case BPF_JLT: return a < b;
        case BPF_JLE: return a <= b;
        case BPF_JSET: return (a & b) != 0;
        default: known = false; return false;
        }
    }

    // Returns the next pc, or -1 on exit.
    int64_t step(const bpf_insn& i, size_t pc)
    {
        const uint8_t cls = BPF_CLASS(i.code);
        const bool x = BPF_SRC(i.code) == BPF_X;
        const int64_t next = static_cast<int64_t>(pc) + 1;
        switch (cls) {
        case BPF_ALU: {
            const uint8_t op = BPF_OP(i.code);
            if (op == BPF_END) {
                if (!x || (i.imm != 16 && i.imm != 32))
                    fail(pc, "unexpected byte swap");
                write(i.dst_reg, number(to_be(scalar(i.dst_reg, pc), i.imm)), pc);
                return next;
            }
            const uint32_t src = x ? static_cast<uint32_t>(scalar(i.src_reg, pc)) : static_cast<uint32_t>(i.imm);
            if (op == BPF_MOV) {
                write(i.dst_reg, number(src), pc);
                return next;
            }
            const auto dst = static_cast<uint32_t>(scalar(i.dst_reg, pc));
            uint32_t r = 0;
            switch (op) {
            case BPF_ADD: r = dst + src; break;
            case BPF_SUB: r = dst - src; break;
            case BPF_MUL: r = dst * src; break;
            case BPF_OR: r = dst | src; break;
            case BPF_AND: r = dst & src; break;
            case BPF_XOR: r = dst ^ src; break;
            case BPF_NEG: r = 0u - dst; break;
            case BPF_DIV:
            case BPF_MOD:
                if (src == 0)
                    fail(pc, "divides by zero (eBPF would not trap; the translation must reject first)");
                r = op == BPF_DIV ? dst / src : dst % src;
                break;
            case BPF_LSH:
            case BPF_RSH:
                if (src >= 32)
                    fail(pc, "shifts a 32-bit value by " + std::to_string(src));
                r = op == BPF_LSH ? dst << src : dst >> src;
                break;
            default:
                fail(pc, "unknown 32-bit ALU operation");
            }
            write(i.dst_reg, number(r), pc);
            return next;
        }
        case BPF_ALU64: {
            const uint8_t op = BPF_OP(i.code);
            if (op == BPF_MOV) {
                write(i.dst_reg, x ? read(i.src_reg, pc) : number(static_cast<uint64_t>(int64_t{i.imm})), pc);
                return next;
            }
            Value dst = read(i.dst_reg, pc);
            const Value src = x ? read(i.src_reg, pc) : number(static_cast<uint64_t>(int64_t{i.imm}));
            if (dst.kind == Kind::Scalar && src.kind == Kind::Scalar) {
                uint64_t r = 0;
                switch (op) {
                case BPF_ADD: r = dst.v + src.v; break;
                case BPF_SUB: r = dst.v - src.v; break;
                case BPF_RSH:
                    if (src.v >= 64)
                        fail(pc, "shifts a 64-bit value by " + std::to_string(src.v));
                    r = dst.v >> src.v;
                    break;
                default:
                    fail(pc, "unexpected 64-bit ALU operation");
                }
                write(i.dst_reg, number(r), pc);
                return next;
            }
            if (op == BPF_SUB && dst.kind == Kind::PacketEnd && src.kind == Kind::Packet) {
                write(i.dst_reg, number(linear_.size() - src.v), pc);
                return next;
            }
            if (op != BPF_ADD || src.kind != Kind::Scalar || (dst.kind != Kind::Packet && dst.kind != Kind::Stack))
                fail(pc, "pointer arithmetic the verifier would refuse");
            dst.v += src.v;
            if (dst.kind == Kind::Packet) {
                if (x) {
                    // A variable offset: ranges proven so far do not apply.
                    dst.origin = next_origin_++;
                    dst.delta = 0;
                } else {
                    dst.delta += i.imm;
                }
                if (static_cast<int64_t>(dst.v) < 0 || dst.v > 0xffff)
                    fail(pc, "packet pointer offset " + std::to_string(static_cast<int64_t>(dst.v)) +
                                 " beyond what the verifier tracks (0xffff)");
            }
            write(i.dst_reg, dst, pc);
            return next;
        }
        case BPF_LD: {
            // A map or a callback reference, two instructions long.
            if (i.code != (BPF_LD | BPF_DW | BPF_IMM) || pc + 1 >= program_.size())
                fail(pc, "unexpected 64-bit load");
            if (i.src_reg == BPF_PSEUDO_FUNC) {
                const int64_t at = next + i.imm;
                if (at <= 0 || static_cast<size_t>(at) >= program_.size())
                    fail(pc, "callback reference outside the program");
                write(i.dst_reg, {Kind::Func, static_cast<uint64_t>(at), 0, 0}, pc);
                return next + 1;
            }
            if (i.src_reg != BPF_PSEUDO_MAP_FD)
                fail(pc, "unexpected 64-bit load");
            write(i.dst_reg, {Kind::Map, static_cast<uint64_t>(static_cast<uint32_t>(i.imm)), 0, 0}, pc);
            return next + 1;
        }
        case BPF_LDX: {
            if (BPF_MODE(i.code) != BPF_MEM)
                fail(pc, "unknown load mode");
            const Value& base = read(i.src_reg, pc);
            if (trace() && (base.kind == Kind::Ctx || base.kind == Kind::XdpBuff)) {
                write(i.dst_reg, traced_field(base.kind, i, pc), pc);
                return next;
            }
            if (base.kind == Kind::Ctx) {
                if (BPF_SIZE(i.code) != BPF_W)
                    fail(pc, "unexpected ctx access size");
                write(i.dst_reg, ctx_field(i.off, pc), pc);
                return next;
            }
            write(i.dst_reg, base.kind == Kind::Stack ? fill(base, i, pc) : number(load(i, pc)), pc);
            return next;
        }
        case BPF_ST:
        case BPF_STX:
            if (BPF_MODE(i.code) != BPF_MEM)
                fail(pc, "unknown store mode");
            if (cls == BPF_STX && read(i.src_reg, pc).kind != Kind::Scalar) {
                spill(i, read(i.src_reg, pc), pc);
                return next;
            }
            store(i, cls == BPF_STX ? scalar(i.src_reg, pc) : static_cast<uint64_t>(int64_t{i.imm}), pc);
            return next;
        case BPF_JMP:
        case BPF_JMP32: {
            const uint8_t op = BPF_OP(i.code);
            if (cls == BPF_JMP && op == BPF_JA)
                return next + i.off;
            if (cls == BPF_JMP && op == BPF_CALL) {
                if (i.src_reg != 0)
                    fail(pc, "calls something other than a helper");
                helper(i.imm, pc);
                return next;
            }
            if (cls == BPF_JMP && op == BPF_EXIT) {
                scalar(0, pc);
                return -1;
            }
            bool known = false;
            bool taken = false;
            const Value& dst = read(i.dst_reg, pc);
            if (cls == BPF_JMP && x && dst.kind == Kind::Packet && read(i.src_reg, pc).kind == Kind::PacketEnd) {
                taken = compare(op, dst.v, linear_.size(), known);
                // The verifier learns dst <= data_end from these outcomes.
                const bool proves = (op == BPF_JGT && !taken) || (op == BPF_JLE && taken) ||
                    (op == BPF_JGE && !taken) || (op == BPF_JLT && taken);
                if (proves) {
                    if (proven_.size() <= dst.origin)
                        proven_.resize(dst.origin + 1, -1);
                    proven_[dst.origin] = std::max(proven_[dst.origin], dst.delta);
                }
            } else if (dst.kind == Kind::MapValue && !x && i.imm == 0 && (op == BPF_JEQ || op == BPF_JNE)) {
                known = true; // a found entry is not null
                taken = op == BPF_JNE;
            } else {
                uint64_t a = scalar(i.dst_reg, pc);
                uint64_t b = x ? scalar(i.src_reg, pc) : static_cast<uint64_t>(int64_t{i.imm});
                if (cls == BPF_JMP32) {
                    a = static_cast<uint32_t>(a);
                    b = static_cast<uint32_t>(b);
                }
                taken = compare(op, a, b, known);
            }
            if (!known)
                fail(pc, "unknown jump operation");
            return taken ? next + i.off : next;
        }
        default:
            fail(pc, "unknown instruction class");
        }
    }

    std::span<const bpf_insn> program_;
    std::span<const uint8_t> linear_;
    std::vector<uint8_t> frame_;
    HookContext context_;
    std::array<Value, 11> regs_{};
    std::array<uint8_t, kStackSize> stack_{};
    std::array<bool, kStackSize> stack_init_{};
    std::vector<int64_t> proven_;
    uint32_t next_origin_ = 1;
    size_t helper_calls_ = 0;
    size_t loop_turns_ = 0;
    size_t steps_ = 0;
    int depth_ = 0;
    std::vector<std::pair<int64_t, Value>> spills_; // stack address, pointer
    xdpcap_rx_meta rx_meta_{};
    xdpcap_drop_view drop_view_{};
};

inline uint32_t run_ebpf(std::span<const bpf_insn> program, std::span<const uint8_t> linear,
                         std::span<const uint8_t> frags = {}, const HookContext& context = {})
{
    return EbpfInterp(program, linear, frags, context).run();
}

} // namespace xdpcap::test
