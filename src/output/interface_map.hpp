// Which pcapng interface a sample is written as. Each ring (CPU) gets a block
// of interfaces. Own-program mode: one for both directions. Trace mode: one
// per hook point of each traced program, plus one for egress when captured.
// With --drops, one more for the kernel's drops, last. A sample's interface
// is its ring's block plus the slot of its hook (its row's InterfaceSlot,
// base/hooks.hpp) and program. An index, a multiply and an add per packet,
// no table walk.
#pragma once

#include <cstdint>

#include "base/hooks.hpp"

namespace xdpcap {

class InterfaceMap {
public:
    struct Slot {
        InterfaceSlot kind;
        uint32_t program; // Entry and Exit: index of the traced program
    };

    InterfaceMap() = default; // own-program mode
    // Own-program mode, with --drops.
    explicit InterfaceMap(bool drops) noexcept : drops_(drops) { per_ring_ = drops ? 2 : 1; }
    // Trace mode with `programs` traced programs (at least one).
    InterfaceMap(uint32_t programs, bool entry, bool exit, bool egress, bool drops = false) noexcept
        : programs_(programs), hooks_(static_cast<uint32_t>(entry) + static_cast<uint32_t>(exit)),
          first_trace_(egress ? 1 : 0), exit_offset_(entry ? 1 : 0), egress_(egress), entry_(entry), drops_(drops)
    {
        per_ring_ = first_trace_ + programs_ * hooks_;
        if (per_ring_ == 0)
            per_ring_ = 1;
        if (drops_)
            ++per_ring_;
    }

    bool tracing() const noexcept { return programs_ != 0; }
    bool drops() const noexcept { return drops_; }
    uint32_t per_ring() const noexcept { return per_ring_; }
    uint32_t count(uint32_t rings) const noexcept { return rings * per_ring_; }

    uint32_t interface(uint32_t ring, uint8_t hook, uint16_t program) const noexcept
    {
        return ring * per_ring_ + slot_of(hook, program);
    }
    uint32_t ring_of(uint32_t interface) const noexcept { return interface / per_ring_; }

    // What slot `slot` (< per_ring()) of each ring stands for.
    Slot slot(uint32_t slot) const noexcept
    {
        if (drops_ && slot == per_ring_ - 1)
            return Slot{InterfaceSlot::Drop, 0};
        if (!tracing())
            return Slot{InterfaceSlot::Own, 0};
        if (egress_ && slot == 0)
            return Slot{InterfaceSlot::Egress, 0};
        const uint32_t rel = slot - first_trace_;
        const uint32_t program = rel / hooks_;
        const bool exit = !entry_ || rel % hooks_ == 1;
        return Slot{exit ? InterfaceSlot::Exit : InterfaceSlot::Entry, program};
    }

private:
    // Anything out of range (a hook this mode does not load) lands in a
    // valid slot rather than past the table.
    uint32_t slot_of(uint8_t hook, uint16_t program) const noexcept
    {
        const InterfaceSlot kind = hook_info(hook).slot;
        if (kind == InterfaceSlot::Drop && drops_)
            return per_ring_ - 1;
        if (!tracing() || (kind != InterfaceSlot::Entry && kind != InterfaceSlot::Exit))
            return 0;
        const uint32_t p = program < programs_ ? program : programs_ - 1;
        return first_trace_ + p * hooks_ + (kind == InterfaceSlot::Exit ? exit_offset_ : 0);
    }

    uint32_t programs_ = 0;
    uint32_t hooks_ = 0;
    uint32_t first_trace_ = 0;
    uint32_t exit_offset_ = 0;
    uint32_t per_ring_ = 1;
    bool egress_ = false;
    bool entry_ = true;
    bool drops_ = false;
};

// "XDP_DROP" and the like; nullptr for a value that is no XDP action.
const char* xdp_action_name(uint32_t action) noexcept;

} // namespace xdpcap
