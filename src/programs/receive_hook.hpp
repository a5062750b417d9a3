// Where received frames are taken on an interface, chosen before anything
// is loaded: shared by the capture and by -D, which says it per interface.
#pragma once

#include <optional>
#include <string_view>

namespace xdpcap {

// Not a hook but the choice among the hooks that receive (Hook::Xdp,
// Hook::TcIngress), made per interface before loading, with the fallback
// CaptureProgram::attach() takes when native XDP fails.
enum class ReceiveAt {
    None,            // trace mode: the traced program's hooks do it
    Xdp,             // XDP, in the mode asked for
    Tc,              // tc ingress: veth, lo, drivers without native XDP
    NativeXdpElseTc, // native XDP, or tc ingress where the driver has none
};

// What the default mode's choice depends on.
struct ReceiveFacts {
    std::string_view driver;
    bool loopback = false;
    std::optional<bool> native_xdp; // the driver's, where the kernel says (6.3+)
};

// The hook that sees what tcpdump sees and changes nothing, without
// --xdp-mode. On a veth, tc ingress: native XDP changes a veth's traffic
// (its NAPI path with a 256-entry ring pushes back on the sender; the peer
// loses segmentation offload), and generic XDP misses frames tc redirected
// into it and reaches only part of a super-frame. Where the driver has no
// native XDP (lo among them), tc ingress rather than generic XDP. Elsewhere
// native XDP; where the kernel does not say what the driver has, attach()
// tries it and falls back to tc ingress.
constexpr ReceiveAt default_receive(const ReceiveFacts& facts)
{
    if (facts.driver == "veth" || facts.loopback || facts.native_xdp == false)
        return ReceiveAt::Tc;
    return ReceiveAt::NativeXdpElseTc;
}

} // namespace xdpcap
