// The interfaces of a live capture: each as chosen, before anything is
// loaded (its hooks, filter and trace targets, every refusal made), then
// as a session, loaded (its programs and rings).
#pragma once

#include <linux/bpf.h>

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "cli/config.hpp"
#include "filter/compile.hpp"
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
};

// Each -i resolved; two arguments naming one interface are refused. -i any
// (the only -i then), or -i PATTERN: every interface of the namespace (that
// a pattern matches) with Ethernet frames, each at tc ingress and egress.
std::vector<ChosenInterface> lookup_interfaces(const Config& config);
// Whether the capture is -i any's.
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

// One interface's capture: its programs and rings. Destroying it undoes
// every attach it made.
struct Session {
    const ChosenInterface& chosen;
    CaptureProgram program;
    PerfRings rings;
    // Why each frame goes out in a perf record of its own; empty when the
    // hooks stage several per record.
    std::string single_frames;
};

// Joined interfaces are added at the end: every session stays in place.
using Sessions = std::deque<Session>;

// `interfaces`: how many share the default rings' memory budget.
Session load_session(const ChosenInterface& chosen, const Config& config, bool filtering,
                     const Attribution& attribution, size_t interfaces);

} // namespace xdpcap::live
