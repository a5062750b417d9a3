#include "app/interface_blocks.hpp"

#include <algorithm>
#include <array>
#include <iterator>

#include "host/interfaces.hpp"
#include "host/link_attributes.hpp"
#include "output/rss_hash.hpp"
#include "programs/rx_meta.hpp"
#include "ring/clock.hpp"

namespace xdpcap::live {

namespace {

// "XDP native mode" or "tcx ingress", "tcx egress", or both joined with "and".
std::string hooks_description(const CaptureProgram& program, XdpMode mode)
{
    std::string text;
    if (program.receives_at_tc())
        text = std::string(program.ingress_mechanism()) + " ingress";
    else if (program.receives())
        text = std::string("XDP ") + xdp_mode_name(mode) + " mode";
    if (program.sends())
        text += std::string(text.empty() ? "" : " and ") + program.egress_mechanism() + " egress";
    return text;
}

// Trace mode: what the ring's slot-th interface is called and what it shows.
struct SlotText {
    std::string suffix;
    std::string what;
};

SlotText slot_text(const InterfaceMap& map, uint32_t slot, const std::vector<XdpProgramInfo>& traced,
                   const std::string& hooks)
{
    const InterfaceMap::Slot s = map.slot(slot);
    if (s.kind == InterfaceSlot::Drop)
        return SlotText{hook_info(Hook::Drop).suffix, "the kernel's drops (tracepoint skb:kfree_skb), each with the drop reason and the "
                                 "dropping code in its comment"};
    if (s.kind == InterfaceSlot::Own)
        return SlotText{"", hooks};
    if (s.kind == InterfaceSlot::Egress)
        return SlotText{"", hooks};
    const bool entry = s.kind == InterfaceSlot::Entry;
    const XdpProgramInfo& p = traced[s.program];
    return SlotText{std::string(hook_info(entry ? Hook::Fentry : Hook::Fexit).suffix) + (traced.size() > 1 ? ":" + p.name : ""),
                    std::string(entry ? "fentry" : "fexit") + " of " + program_text(p) +
                        (entry ? ", frames as it receives them" : ", frames as it leaves them, with its verdict")};
}

// The interface description's words on what the NIC keeps outside the frame.
std::string rx_metadata_text(const Session& session)
{
    std::string text;
    if (session.program.restores_rx_vlan())
        text += ", received VLAN tags restored from the NIC's RX metadata";
    else if (const auto why = rx_vlan_missing(session))
        text += ", received VLAN tags missing (" +
            rx_vlan_remedy(session.chosen.iface.name, session.chosen.iface.driver).setting + "; " + *why + ")";
    if (session.program.reads_rx_hash())
        text += ", RSS hash from the NIC's RX metadata";
    return text;
}

// By traced program and hook point (0 entry, 1 exit), per CPU.
std::vector<std::array<std::vector<xdpcap_counters>, 2>> traced_counters(const InterfaceMap& map,
                                                                        const CaptureProgram& program)
{
    std::vector<std::array<std::vector<xdpcap_counters>, 2>> traced;
    for (uint32_t slot = 0; slot < map.per_ring(); ++slot) {
        const InterfaceMap::Slot s = map.slot(slot);
        if (s.kind != InterfaceSlot::Entry && s.kind != InterfaceSlot::Exit)
            continue;
        if (traced.size() <= s.program)
            traced.resize(s.program + 1);
        const bool exit = s.kind == InterfaceSlot::Exit;
        traced[s.program][exit] = program.read_trace_counters(s.program, exit);
    }
    return traced;
}

} // namespace

std::vector<std::string> interface_names(const Session& session, const InterfaceMap& map)
{
    std::vector<std::string> names;
    for (size_t ring = 0; ring < session.rings->count(); ++ring) {
        for (uint32_t slot = 0; slot < map.per_ring(); ++slot)
            names.push_back(session.chosen.iface.name + "@cpu" + std::to_string(session.rings->cpu(ring)) +
                            slot_text(map, slot, session.chosen.traced, "").suffix);
    }
    return names;
}

std::vector<std::string> interface_names(const Sessions& sessions, const InterfaceMap& map)
{
    std::vector<std::string> names;
    for (const Session& session : sessions) {
        std::vector<std::string> of_session = interface_names(session, map);
        names.insert(names.end(), of_session.begin(), of_session.end());
    }
    return names;
}

std::vector<std::string> interface_containers(const Session& session, const InterfaceMap& map)
{
    const std::string name = session.chosen.container ? session.chosen.container->name : std::string();
    return std::vector<std::string>(session.rings->count() * map.per_ring(), name);
}

std::vector<std::string> interface_containers(const Sessions& sessions, const InterfaceMap& map)
{
    std::vector<std::string> containers;
    for (const Session& session : sessions) {
        std::vector<std::string> of_session = interface_containers(session, map);
        containers.insert(containers.end(), of_session.begin(), of_session.end());
    }
    return containers;
}

std::string interface_identity(const InterfaceInfo& iface, const std::optional<InterfaceContainer>& container)
{
    std::string text = iface.name;
    text.append(" (ifindex ").append(std::to_string(iface.ifindex));
    if (container)
        text.append(", ").append(container_description(*container));
    return text.append(")");
}

std::vector<PacketOutput::InterfaceTraits> interface_traits(const Session& session, const InterfaceMap& map)
{
    const PacketOutput::InterfaceTraits of_session{rss_hash_algorithm(session.chosen.iface.name),
                                                   queues_in_use(session.chosen.iface.name) == 1};
    return std::vector<PacketOutput::InterfaceTraits>(session.rings->count() * map.per_ring(), of_session);
}

std::vector<PacketOutput::InterfaceTraits> interface_traits(const Sessions& sessions, const InterfaceMap& map)
{
    std::vector<PacketOutput::InterfaceTraits> traits;
    for (const Session& session : sessions) {
        const auto of_session = interface_traits(session, map);
        traits.insert(traits.end(), of_session.begin(), of_session.end());
    }
    return traits;
}

std::optional<std::string> rx_vlan_missing(const Session& session)
{
    const CaptureProgram& program = session.program;
    const bool receives = program.receives() || program.tracing();
    // At tc ingress the tag is read from the skb.
    if (!receives || !session.chosen.rx_vlan_offload || program.restores_rx_vlan() || program.receives_at_tc())
        return std::nullopt;
    if (program.tracing())
        return std::string("trace mode sees frames as the traced program does");
    if (program.attached_mode() == XdpMode::Generic)
        return std::string("generic XDP mode cannot read them");
    if (!kernel_rx_metadata().vlan)
        return std::string("this kernel lacks the XDP RX metadata kfunc bpf_xdp_metadata_rx_vlan_tag (Linux 6.8)");
    if (!program.rx_metadata_failure().empty())
        return program.rx_metadata_failure();
    return no_vlan_from_driver(session.chosen.iface.driver);
}

std::vector<pcapng::InterfaceDescription> describe_interfaces(const Session& session, const Config& config,
                                                              const std::string& filter, const InterfaceMap& map)
{
    const std::string os = host_os();
    std::vector<pcapng::InterfaceDescription> idbs;
    const InterfaceInfo& iface = session.chosen.iface;
    const std::string hooks = hooks_description(session.program, session.program.attached_mode());
    const std::string identity = interface_identity(iface, session.chosen.container);
    for (size_t ring = 0; ring < session.rings->count(); ++ring) {
        const int cpu = session.rings->cpu(ring);
        for (uint32_t slot = 0; slot < map.per_ring(); ++slot) {
            const SlotText text = slot_text(map, slot, session.chosen.traced, hooks);
            pcapng::InterfaceDescription idb;
            idb.snaplen = config.snaplen;
            idb.name = iface.name + "@cpu" + std::to_string(cpu) + text.suffix;
            idb.description = identity + ", CPU " + std::to_string(cpu) + ", " + text.what +
                (iface.driver.empty() ? "" : ", driver " + iface.driver) + rx_metadata_text(session);
            idb.filter = filter;
            idb.os = os;
            idb.hardware = iface.bus;
            idbs.push_back(std::move(idb));
        }
    }
    return idbs;
}

std::vector<pcapng::InterfaceDescription> describe_interfaces(const Sessions& sessions, const Config& config,
                                                              const std::string& filter, const InterfaceMap& map)
{
    std::vector<pcapng::InterfaceDescription> idbs;
    for (const Session& session : sessions) {
        auto of_session = describe_interfaces(session, config, filter, map);
        std::move(of_session.begin(), of_session.end(), std::back_inserter(idbs));
    }
    return idbs;
}

std::vector<pcapng::InterfaceStatistics> interface_statistics(const std::vector<CpuStats>& stats, bool filtering,
                                                              uint32_t sample_every, const InterfaceMap& map,
                                                              const CaptureProgram& program,
                                                              const std::vector<uint64_t>& written)
{
    std::vector<pcapng::InterfaceStatistics> isbs;
    const auto block = [&](uint32_t interface_id, const xdpcap_counters& k, uint64_t invalid, uint64_t delivered) {
        pcapng::InterfaceStatistics isb;
        isb.interface_id = interface_id;
        isb.if_received = k.seen;
        if (filtering)
            isb.filter_accepted = k.matched;
        isb.dropped = k.output_failed + invalid;
        isb.user_delivered = delivered;
        // isb_filteraccept stays the filter expression's count; what
        // sampling left out has no ISB counter of its own.
        if (sample_every > 1)
            isb.comment = std::to_string(k.sample_skipped) + " packets skipped by sampling (1 in " +
                std::to_string(sample_every) + " kept)";
        isbs.push_back(isb);
    };
    if (!map.tracing() && !map.drops()) {
        for (size_t i = 0; i < stats.size(); ++i)
            block(map.interface(static_cast<uint32_t>(i), abi_value(Hook::Xdp), 0), stats[i].kernel, stats[i].ring.invalid,
                  stats[i].ring.written);
        return isbs;
    }
    const auto traced = traced_counters(map, program);
    for (size_t i = 0; i < stats.size(); ++i) {
        const CpuStats& cpu = stats[i];
        for (uint32_t slot = 0; slot < map.per_ring(); ++slot) {
            const InterfaceMap::Slot s = map.slot(slot);
            const uint32_t id = static_cast<uint32_t>(i) * map.per_ring() + slot;
            xdpcap_counters k = cpu.egress;
            if (s.kind == InterfaceSlot::Own)
                k = cpu.ingress + cpu.egress;
            else if (s.kind == InterfaceSlot::Drop)
                k = cpu.drops;
            if (s.kind == InterfaceSlot::Entry || s.kind == InterfaceSlot::Exit) {
                const auto& per_cpu = traced[s.program][s.kind == InterfaceSlot::Exit];
                k = static_cast<size_t>(cpu.cpu) < per_cpu.size() ? per_cpu[static_cast<size_t>(cpu.cpu)]
                                                                   : xdpcap_counters{};
            }
            if (!filtering)
                k.matched = k.seen;
            block(id, k, slot == 0 ? cpu.ring.invalid : 0, id < written.size() ? written[id] : 0);
        }
    }
    return isbs;
}

std::vector<pcapng::InterfaceStatistics>
PerFileStatistics::close(const std::vector<pcapng::InterfaceStatistics>& totals)
{
    const uint64_t end_ns = now_ns(CLOCK_REALTIME);
    auto isbs = pcapng::statistics_since(totals, baseline_);
    for (auto& isb : isbs) {
        isb.timestamp_ns = isb.end_ns = end_ns;
        isb.start_ns = opened_ns_;
    }
    baseline_ = totals;
    opened_ns_ = end_ns;
    return isbs;
}

} // namespace xdpcap::live
