// What a live capture's output says about its interfaces: the names its
// text lines use, the pcapng interface descriptions, and the statistics
// blocks, per file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/sessions.hpp"
#include "capture/stats.hpp"
#include "output/interface_map.hpp"
#include "output/packet_output.hpp"
#include "output/pcapng.hpp"

namespace xdpcap::live {

// Per interface, ring and, in trace mode, hook point: the interface names
// the text lines use, and the pcapng IDBs (same link type and snaplen
// throughout), in the loop's ring order.
std::vector<std::string> interface_names(const Sessions& sessions, const InterfaceMap& map);
// One session's, as it joins the capture.
std::vector<std::string> interface_names(const Session& session, const InterfaceMap& map);
// In the same order: the container each leads into (named in its text
// lines' column), empty for none.
std::vector<std::string> interface_containers(const Sessions& sessions, const InterfaceMap& map);
std::vector<std::string> interface_containers(const Session& session, const InterfaceMap& map);

// How an interface description begins: "veth1a2b (ifindex 7)", or for a
// container's host-side veth "veth1a2b (ifindex 7, container web, podman)".
// if_name stays the device's name (and CPU), which tshark's filters match.
std::string interface_identity(const InterfaceInfo& iface, const std::optional<InterfaceContainer>& container);

// Per pcapng interface, in interface_names()' order: what its packets'
// options depend on.
std::vector<PacketOutput::InterfaceTraits> interface_traits(const Sessions& sessions, const InterfaceMap& map);
std::vector<PacketOutput::InterfaceTraits> interface_traits(const Session& session, const InterfaceMap& map);

// Why received frames on the session's interface lack the VLAN tags the
// NIC's rx-vlan-offload took out; nothing when they have them, or when that
// offload is off (the tags are then in the frames).
std::optional<std::string> rx_vlan_missing(const Session& session);

std::vector<pcapng::InterfaceDescription> describe_interfaces(const Sessions& sessions, const Config& config,
                                                              const std::string& filter, const InterfaceMap& map);
std::vector<pcapng::InterfaceDescription> describe_interfaces(const Session& session, const Config& config,
                                                              const std::string& filter, const InterfaceMap& map);

// One ISB per ring (interface and CPU), on the ring's first pcapng
// interface: the counters are per ring. In trace mode (one interface) and
// with --drops one per pcapng interface: the kernel counts each hook point
// of each traced program, and the drops, on their own, and the merge counts
// what it wrote to each interface; records refused as malformed go to the
// CPU's first one.
// The whole capture's counts; PerFileStatistics stamps the times.
std::vector<pcapng::InterfaceStatistics> interface_statistics(const std::vector<CpuStats>& stats, bool filtering,
                                                              uint32_t sample_every, const InterfaceMap& map,
                                                              const CaptureProgram& program,
                                                              const std::vector<uint64_t>& written);

// Each file's statistics blocks count what happened while it was open: the
// counts now, less those when the file was opened.
class PerFileStatistics {
public:
    explicit PerFileStatistics(uint64_t start_ns) : opened_ns_(start_ns) {}
    // `totals`: the whole capture's blocks so far.
    std::vector<pcapng::InterfaceStatistics> close(const std::vector<pcapng::InterfaceStatistics>& totals);

private:
    std::vector<pcapng::InterfaceStatistics> baseline_; // empty: the first file counts from the start
    uint64_t opened_ns_;
};

} // namespace xdpcap::live
