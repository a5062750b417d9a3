// Where the capture takes packets: the directions and XDP attach modes the
// user chooses, trace mode's hook points, and the table of hooks: each
// kernel hook named once, with what every room needs to know of it. Shared
// by every room, so that the programs never need the command line's types.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xdpcap_abi.h"

namespace xdpcap {

enum class XdpMode { Auto, Native, Generic };
// tcpdump's -Q: received frames (XDP), sent frames (TC egress), or both.
enum class Direction { In, Out, InOut };

const char* xdp_mode_name(XdpMode mode);
const char* direction_name(Direction direction);

// Trace mode's hook points, as a bit set.
inline constexpr unsigned kTraceEntry = 1, kTraceExit = 2;

// A program that takes samples, by its value in xdpcap_meta.hook.
enum class Hook : uint8_t {
    Xdp = XDPCAP_HOOK_XDP,
    TcEgress = XDPCAP_HOOK_TC_EGRESS,
    Fentry = XDPCAP_HOOK_FENTRY,
    Fexit = XDPCAP_HOOK_FEXIT,
    Drop = XDPCAP_HOOK_DROP,
    TcIngress = XDPCAP_HOOK_TC_INGRESS,
};

constexpr uint8_t abi_value(Hook hook) noexcept
{
    return static_cast<uint8_t>(hook);
}

// What a filter's ctx is at a hook (filter/translate.hpp): hooks that hand
// the filter the same thing share one.
enum class FilterContext : uint8_t {
    Xdp,       // struct xdp_md *, the packet was received
    TcEgress,  // struct __sk_buff * of a SCHED_CLS program on egress
    TcIngress, // the same on ingress, with the packet type
    Trace,     // an fentry/fexit program's arguments: ctx[0] is a struct xdp_buff *
    Drop,      // skb:kfree_skb's arguments; the frame in map drop_view_map_fd
};

// Which of a ring's pcapng interfaces a hook's samples are written as
// (output/interface_map.hpp). Own: the one of own-program mode.
enum class InterfaceSlot : uint8_t { Own, Egress, Entry, Exit, Drop };

struct HookInfo {
    Hook hook;
    const char* name;         // in text and statistics
    const char* suffix;       // of its pcapng interfaces' names, where it has its own
    uint8_t direction;        // XDPCAP_DIR_* of its packets; 0: either
    FilterContext filter;     // what its filter reads
    InterfaceSlot slot;       // where its samples are written
    uint32_t counters;        // XDPCAP_COUNTERS_* key (trace mode: of the first program)
    bool verdict = false;     // xdpcap_meta.verdict holds the traced program's XDP verdict
    bool dropped = false;     // a frame the kernel dropped: verdict holds the reason, location where
};

// Indexed by ABI value. A new hook: its XDPCAP_HOOK_* value, its row here.
inline constexpr HookInfo kHooks[] = {
    {.hook = Hook::Xdp, .name = "in", .suffix = "", .direction = XDPCAP_DIR_INGRESS,
     .filter = FilterContext::Xdp, .slot = InterfaceSlot::Own, .counters = XDPCAP_COUNTERS_INGRESS},
    {.hook = Hook::TcEgress, .name = "out", .suffix = "", .direction = XDPCAP_DIR_EGRESS,
     .filter = FilterContext::TcEgress, .slot = InterfaceSlot::Egress, .counters = XDPCAP_COUNTERS_EGRESS},
    {.hook = Hook::Fentry, .name = "entry", .suffix = ":entry", .direction = XDPCAP_DIR_INGRESS,
     .filter = FilterContext::Trace, .slot = InterfaceSlot::Entry, .counters = XDPCAP_COUNTERS_ENTRY},
    {.hook = Hook::Fexit, .name = "exit", .suffix = ":exit", .direction = XDPCAP_DIR_INGRESS,
     .filter = FilterContext::Trace, .slot = InterfaceSlot::Exit, .counters = XDPCAP_COUNTERS_EXIT,
     .verdict = true},
    {.hook = Hook::Drop, .name = "drops", .suffix = ":drop", .direction = 0,
     .filter = FilterContext::Drop, .slot = InterfaceSlot::Drop, .counters = XDPCAP_COUNTERS_DROPS,
     .dropped = true},
    {.hook = Hook::TcIngress, .name = "in", .suffix = "", .direction = XDPCAP_DIR_INGRESS,
     .filter = FilterContext::TcIngress, .slot = InterfaceSlot::Own, .counters = XDPCAP_COUNTERS_INGRESS},
};
inline constexpr size_t kHookCount = sizeof kHooks / sizeof kHooks[0];

namespace hooks_detail {
constexpr bool indexed_by_abi_value()
{
    for (size_t i = 0; i < kHookCount; ++i)
        if (abi_value(kHooks[i].hook) != i)
            return false;
    return true;
}
} // namespace hooks_detail
static_assert(hooks_detail::indexed_by_abi_value(), "kHooks[i] is the hook whose XDPCAP_HOOK_* value is i");
static_assert(abi_value(Hook::TcIngress) == kHookCount - 1, "every XDPCAP_HOOK_* value has its row");

// A value no program of this build writes (a newer ABI, a foreign file):
// its samples are written as own-program mode's, with no verdict or reason.
inline constexpr HookInfo kUnknownHook = {.hook = Hook::Xdp, .name = "unknown", .suffix = "", .direction = 0,
                                          .filter = FilterContext::Xdp, .slot = InterfaceSlot::Own,
                                          .counters = XDPCAP_COUNTERS_INGRESS};

// Once per packet: a bound check and an index.
constexpr const HookInfo& hook_info(uint8_t abi) noexcept
{
    return abi < kHookCount ? kHooks[abi] : kUnknownHook;
}
constexpr const HookInfo& hook_info(Hook hook) noexcept
{
    return hook_info(abi_value(hook));
}

} // namespace xdpcap
