// The interfaces of a live capture: each as chosen, before anything is
// loaded (its hooks, filter and trace targets, every refusal made), then
// as a session, loaded (its programs and rings).
#pragma once

#include <linux/bpf.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/config.hpp"
#include "filter/compile.hpp"
#include "host/containers.hpp"
#include "host/interface_containers.hpp"
#include "host/interface_selection.hpp"
#include "host/interfaces.hpp"
#include "programs/capture.hpp"
#include "programs/owners.hpp"
#include "programs/xdp_inventory.hpp"
#include "ring/rings.hpp"
#include "base/unique_fd.hpp"

namespace xdpcap::live {

// One -i as chosen: the interface, its filter (compiled with its own
// netmask) and where its frames are taken.
struct ChosenInterface {
    InterfaceInfo iface;
    std::optional<ClassicProgram> classic; // a filter expression was given
    std::vector<XdpProgramInfo> traced;
    bool trace_entry = true, trace_exit = true; // trace mode's hook points
    std::vector<bpf_insn> trace_filter; // trace mode with a filter
    // Another xdpcap's XDP link, held while this one traces its program:
    // either may stop first, and the last one to stop detaches it.
    UniqueFd shared_xdp_link;
    bool rx_vlan_offload = false; // the NIC takes received VLAN tags out of frames
    ReceiveAt receive = ReceiveAt::Xdp; // where its received frames are taken
    // Received at tc ingress behind an XDP program someone else attached:
    // that program, which decides what reaches the capture.
    std::optional<XdpProgramInfo> acting_first = {};
    std::string xdp_hook_holder = {}; // another xdpcap's XDP program is there: who holds it
    Direction direction = Direction::InOut; // the hooks -Q leaves on this interface
    // A host-side veth into a container's network namespace: that container,
    // named in the interface's description and its text lines' column.
    std::optional<InterfaceContainer> container = {};
};

// Which interfaces -i any, -i PATTERN or --container without -i
// (`container`: that container) take: the start asks it of each interface
// of the namespace, and the join of each one created during the capture.
class AnySelection {
public:
    AnySelection(const Config& config, std::optional<Container> container);
    // By name alone: what a link notification tells before anything is
    // asked of the interface.
    bool names(const std::string& name) const { return names_.names(name); }
    // Whether `iface` is taken: its frames begin with an Ethernet header,
    // -Q leaves it a hook (lo's packets are taken as received) and, with
    // --container, its other end is that container's (`container`: what
    // container_of_interface() says of it), matched by ID or, once
    // restarted with a new ID, by name.
    bool wanted(const InterfaceInfo& iface, const std::optional<InterfaceContainer>& container) const;
    // `iface` as the capture takes it: at tc ingress and egress.
    ChosenInterface chosen(InterfaceInfo iface, std::optional<InterfaceContainer> container) const;
    // Both for one interface, its container looked up: nothing when it is
    // not taken. `without_container`, when given, says whether --container
    // left it out only because no container's process is at its other end.
    std::optional<ChosenInterface> choose(InterfaceInfo iface, bool* without_container = nullptr) const;

private:
    const Config& config_;
    InterfaceSelection names_;
    std::optional<Container> container_;
};

// Each -i resolved; two arguments naming one interface are refused. -i any
// (the only -i then), -i PATTERN: every interface of the namespace (that a
// pattern matches) with Ethernet frames, each at tc ingress and egress;
// --container without -i (`container`, found): those of them whose other end
// is the container's. Each host-side veth of a container names it.
std::vector<ChosenInterface> lookup_interfaces(const Config& config,
                                               const std::optional<Container>& container = std::nullopt);
// Whether the capture is -i any's, or --container's without -i (which
// takes -i any's path).
bool captures_any(const Config& config);
// Whether the capture is -i any's or some -i is a pattern (then every -i is
// taken as one): interfaces are chosen by interface_selection(), and those
// created during the capture join it.
bool selects_interfaces(const Config& config);
InterfaceSelection interface_selection(const Config& config);
// An interface interface_selection() wants, at tc ingress and egress.
ChosenInterface chosen_at_tc(InterfaceInfo iface, const Config& config);
// Each interface's filter, with its own netmask ("ip broadcast").
void compile_filters(std::vector<ChosenInterface>& interfaces, const std::string& filter);
// Own hooks or trace mode, per interface; refuses what trace mode cannot do.
void choose_trace(std::vector<ChosenInterface>& interfaces, const Config& config);
// Refuses -B/--ring-pages too small for one record of the snapshot length.
void check_ring_fits_records(const Config& config);

// "XDP program 'name' (id 12, tag ...)".
std::string program_text(const XdpProgramInfo& p);

// -i any, -i PATTERN and --container without -i: every interface's programs
// write into one set of per-CPU rings, so memory does not grow with the
// interfaces and a join maps nothing. Each interface counts in a slot of
// the shared counters, taken in turn; joins past the last slot are refused.
struct SharedRings {
    uint32_t slots = 0;
    uint32_t next_slot = 0;
    std::optional<SharedMaps> maps; // the first interface's, once loaded
    std::shared_ptr<PerfRings> rings;
};

// Whether the interfaces share one set of rings: only under an interface
// selection, without trace mode or --drops.
bool shares_rings(const Config& config);
// Room in the shared maps for the interfaces at the start (`interfaces`)
// and more joining.
SharedRings shared_rings_for(size_t interfaces);

// One interface's capture: its programs and rings. Destroying it undoes
// every attach it made.
struct Session {
    const ChosenInterface& chosen;
    CaptureProgram program;
    std::shared_ptr<PerfRings> rings; // its own, or the SharedRings'
    bool shares_rings;
    // Why each frame goes out in a perf record of its own; empty when the
    // hooks stage several per record.
    std::string single_frames;
};

// Joined interfaces are added at the end: every session stays in place.
using Sessions = std::deque<Session>;

// `interfaces`: how many share the default rings' memory budget. `shared`:
// the interface takes the next slot of those rings instead of its own.
Session load_session(const ChosenInterface& chosen, const Config& config, bool filtering,
                     const Attribution& attribution, size_t interfaces, SharedRings* shared = nullptr);

} // namespace xdpcap::live
