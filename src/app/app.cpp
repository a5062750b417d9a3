#include "app/app.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "capture/capture.hpp"
#include "filter/compile.hpp"
#include "filter/disasm.hpp"
#include "filter/translate.hpp"
#include "ring/clock.hpp"
#include "base/error.hpp"
#include "host/interfaces.hpp"
#include "output/drop_labels.hpp"
#include "programs/kernel_btf.hpp"
#include "host/link_attributes.hpp"
#include "host/link_events.hpp"
#include "programs/capture.hpp"
#include "programs/owners.hpp"
#include "host/command.hpp"
#include "host/containers.hpp"
#include "output/packet_output.hpp"
#include "host/promisc.hpp"
#include "host/privileges.hpp"
#include "app/replay.hpp"
#include "ring/rings.hpp"
#include "output/rss_hash.hpp"
#include "base/stop_signals.hpp"
#include "version.hpp"
#include "programs/xdp_inventory.hpp"

namespace xdpcap {

namespace {

// The kernel wakes us when a quarter of a ring is full; the drain timer
// covers quieter traffic. --immediate-mode: at every record.
uint32_t wakeup_bytes_for(size_t ring_bytes, bool immediate)
{
    return immediate ? 1 : static_cast<uint32_t>(ring_bytes / 4);
}

// How often the rings are drained at the latest; with --immediate-mode
// just past the merge's 1 ms hold-back.
int drain_interval_ms(const Config& config)
{
    return config.immediate ? 1 : 50;
}

// One record of the snapshot length must fit (perf keeps a byte free, so
// less than the whole ring): tcpdump's -B 100 works with its default
// snapshot length, and here too. A ring that holds one record and not two
// drops more under bursts, and counts every such drop.
bool ring_fits_records(uint32_t pages, uint32_t snaplen)
{
    return ring_bytes(pages) > record_size_for(snaplen);
}

// Two of the longest frames, each all its records: the size the default
// keeps when the locked-memory limit makes it shrink.
bool ring_fits_frames(uint32_t pages, uint32_t snaplen)
{
    return ring_bytes(pages) > 2 * records_size_for(snaplen);
}

void check_ring_fits_records(const Config& config)
{
    if (config.ring_pages && !ring_fits_records(*config.ring_pages, config.snaplen))
        throw Error((config.ring_option.empty() ? "--ring-pages" : config.ring_option) + " (" +
                    std::to_string(*config.ring_pages) + (*config.ring_pages == 1 ? " page" : " pages") +
                    " per CPU) is too small for snapshot length " + std::to_string(config.snaplen) +
                    ": each ring must hold a " + std::to_string(record_size_for(config.snaplen)) +
                    "-byte record (a smaller -s fits)");
}

// The size asked for, or the default; a default the locked-memory limit
// refuses is halved until it fits, as long as two of the longest frames
// still do.
// The default budget is shared by the rings of every interface captured.
PerfRings create_rings(int events_map_fd, const Config& config, size_t interfaces)
{
    if (config.ring_pages)
        return PerfRings(events_map_fd, RingSettings{*config.ring_pages, wakeup_bytes_for(ring_bytes(*config.ring_pages), config.immediate)});
    uint32_t pages = default_ring_pages(online_cpus().size() * interfaces, page_size());
    for (;;) {
        try {
            return PerfRings(events_map_fd, RingSettings{pages, wakeup_bytes_for(ring_bytes(pages), config.immediate)});
        } catch (const RingMemoryError&) {
            if (pages == 1 || !ring_fits_frames(pages / 2, config.snaplen))
                throw;
            pages /= 2;
        }
    }
}

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

std::string program_text(const XdpProgramInfo& p)
{
    return "XDP program '" + p.name + "' (id " + std::to_string(p.id) + ", tag " + p.tag + ")";
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

// One interface's capture: the interface, its filter (compiled with its own
// netmask), its programs, rings and promiscuous membership. Destroying it
// undoes every attach it made.
struct Session {
    InterfaceInfo iface;
    std::optional<ClassicProgram> classic;
    std::vector<XdpProgramInfo> traced;
    bool trace_entry = true, trace_exit = true; // trace mode's hook points
    std::vector<bpf_insn> trace_filter; // trace mode with a filter
    // Another xdpcap's XDP link, held while this one traces its program:
    // either may stop first, and the last one to stop detaches it.
    UniqueFd shared_xdp_link;
    std::optional<CaptureProgram> program;
    std::optional<PerfRings> rings;
    std::optional<PromiscuousMode> promiscuous;
    bool rx_vlan_offload = false; // the NIC takes received VLAN tags out of frames
    ReceiveAt receive = ReceiveAt::Xdp; // where its received frames are taken
    std::string xdp_hook_holder = {}; // another xdpcap's XDP program is there: who holds it
    Direction direction = Direction::InOut; // the hooks -Q leaves on this interface
};

// The hook that sees what tcpdump sees and changes nothing. --xdp-mode
// native or generic: XDP. Otherwise, on a veth, tc ingress: native XDP
// changes a veth's traffic (its NAPI path with a 256-entry ring pushes back
// on the sender; the peer loses segmentation offload), and generic XDP
// misses frames tc redirected into it and reaches only part of a
// super-frame. On other drivers native XDP, and tc ingress where the driver
// has none (rather than generic XDP).
ReceiveAt receive_hook(const InterfaceInfo& iface, const Config& config)
{
    if (config.xdp_mode != XdpMode::Auto)
        return ReceiveAt::Xdp;
    return iface.driver == "veth" ? ReceiveAt::Tc : ReceiveAt::NativeXdpElseTc;
}

// -Q's hooks on this interface. A loopback interface receives every packet
// it sends: as tcpdump (libpcap skips lo's outgoing copies), each is taken
// once, as it comes back in, so a TCP stream does not look retransmitted.
Direction capture_direction(const InterfaceInfo& iface, const Config& config)
{
    if (!iface.loopback)
        return config.direction;
    if (config.direction == Direction::Out)
        throw Error(iface.name + " is a loopback interface: its packets are captured once, as received, so -Q out "
                                 "would capture nothing; use -Q in or inout");
    return Direction::In;
}

// Per interface, ring and, in trace mode, hook point: the interface names
// the text lines use, and the pcapng IDBs (same link type and snaplen
// throughout), in the loop's ring order.
std::vector<std::string> interface_names(const std::vector<Session>& sessions, const InterfaceMap& map)
{
    std::vector<std::string> names;
    for (const Session& session : sessions) {
        for (size_t ring = 0; ring < session.rings->count(); ++ring) {
            for (uint32_t slot = 0; slot < map.per_ring(); ++slot)
                names.push_back(session.iface.name + "@cpu" + std::to_string(session.rings->cpu(ring)) +
                                slot_text(map, slot, session.traced, "").suffix);
        }
    }
    return names;
}

// Per pcapng interface, in interface_names()' order: what its packets'
// options depend on.
std::vector<PacketOutput::InterfaceTraits> interface_traits(const std::vector<Session>& sessions,
                                                            const InterfaceMap& map)
{
    std::vector<PacketOutput::InterfaceTraits> traits;
    for (const Session& session : sessions) {
        const PacketOutput::InterfaceTraits of_session{rss_hash_algorithm(session.iface.name),
                                                       queues_in_use(session.iface.name) == 1};
        traits.insert(traits.end(), session.rings->count() * map.per_ring(), of_session);
    }
    return traits;
}

// Why received frames on the session's interface lack the VLAN tags the
// NIC's rx-vlan-offload took out; nothing when they have them, or when that
// offload is off (the tags are then in the frames).
std::optional<std::string> rx_vlan_missing(const Session& session)
{
    const CaptureProgram& program = *session.program;
    const bool receives = program.receives() || program.tracing();
    // At tc ingress the tag is read from the skb.
    if (!receives || !session.rx_vlan_offload || program.restores_rx_vlan() || program.receives_at_tc())
        return std::nullopt;
    if (program.tracing())
        return std::string("trace mode sees frames as the traced program does");
    if (program.attached_mode() == XdpMode::Generic)
        return std::string("generic XDP mode cannot read them");
    if (!kernel_rx_metadata().vlan)
        return std::string("this kernel lacks the XDP RX metadata kfunc bpf_xdp_metadata_rx_vlan_tag (Linux 6.8)");
    if (!program.rx_metadata_failure().empty())
        return program.rx_metadata_failure();
    return no_vlan_from_driver(session.iface.driver);
}

// The interface description's words on what the NIC keeps outside the frame.
std::string rx_metadata_text(const Session& session)
{
    std::string text;
    if (session.program->restores_rx_vlan())
        text += ", received VLAN tags restored from the NIC's RX metadata";
    else if (const auto why = rx_vlan_missing(session))
        text += ", received VLAN tags missing (" + rx_vlan_remedy(session.iface.name, session.iface.driver).setting +
            "; " + *why + ")";
    if (session.program->reads_rx_hash())
        text += ", RSS hash from the NIC's RX metadata";
    return text;
}

std::vector<pcapng::InterfaceDescription> describe_interfaces(const std::vector<Session>& sessions,
                                                              const Config& config, const std::string& filter,
                                                              const InterfaceMap& map)
{
    const std::string os = host_os();
    std::vector<pcapng::InterfaceDescription> idbs;
    for (const Session& session : sessions) {
        const InterfaceInfo& iface = session.iface;
        const std::string hooks = hooks_description(*session.program, session.program->attached_mode());
        for (size_t ring = 0; ring < session.rings->count(); ++ring) {
            const int cpu = session.rings->cpu(ring);
            for (uint32_t slot = 0; slot < map.per_ring(); ++slot) {
                const SlotText text = slot_text(map, slot, session.traced, hooks);
                pcapng::InterfaceDescription idb;
                idb.snaplen = config.snaplen;
                idb.name = iface.name + "@cpu" + std::to_string(cpu) + text.suffix;
                idb.description = iface.name + " (ifindex " + std::to_string(iface.ifindex) + "), CPU " +
                    std::to_string(cpu) + ", " + text.what + (iface.driver.empty() ? "" : ", driver " + iface.driver) +
                    rx_metadata_text(session);
                idb.filter = filter;
                idb.os = os;
                idb.hardware = iface.bus;
                idbs.push_back(std::move(idb));
            }
        }
    }
    return idbs;
}

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
    // By traced program and hook point (0 entry, 1 exit), per CPU.
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

// Each file's statistics blocks count what happened while it was open: the
// counts now, less those when the file was opened.
class PerFileStatistics {
public:
    explicit PerFileStatistics(uint64_t start_ns) : opened_ns_(start_ns) {}
    // `totals`: the whole capture's blocks so far.
    std::vector<pcapng::InterfaceStatistics> close(const std::vector<pcapng::InterfaceStatistics>& totals)
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

private:
    std::vector<pcapng::InterfaceStatistics> baseline_; // empty: the first file counts from the start
    uint64_t opened_ns_;
};

// XDP runs one program per interface. In the default mode, where another
// xdpcap already takes received frames with XDP, this one takes them at tc
// ingress beside it: who holds that program ("pid 123"); nothing otherwise.
std::optional<std::string> xdp_hook_held_by_xdpcap(const InterfaceInfo& iface, const Config& config)
{
    if (config.xdp_mode != XdpMode::Auto || config.direction == Direction::Out)
        return std::nullopt;
    const auto attached = xdp_attachments(iface.ifindex);
    if (attached.empty() || !is_xdpcap_program(attached.front().program.name))
        return std::nullopt;
    return holders_text(attached.front().program.id);
}

// With --xdp-mode, where another xdpcap holds the XDP hook and the kernel
// can trace programs: this one traces that program at its entry (where it
// sees every received frame, as XDP would) and holds its link. False where
// it cannot; choose_trace_targets() then refuses in one line.
bool share_xdp_hook_of_xdpcap(Session& session, const Config& config)
{
    if (config.xdp_mode == XdpMode::Auto || config.direction == Direction::Out)
        return false;
    const auto attached = xdp_attachments(session.iface.ifindex);
    if (attached.empty() || !is_xdpcap_program(attached.front().program.name) || why_xdp_cannot_be_traced())
        return false;
    const XdpProgramInfo& program = attached.front().program;
    UniqueFd link = xdp_link_of(session.iface.ifindex, program.id);
    if (!link)
        return false;
    session.xdp_hook_holder = holders_text(program.id);
    session.shared_xdp_link = std::move(link);
    session.traced = trace_targets(attached.front(), config.trace_program);
    // Its exit adds nothing: xdpcap passes every frame as it came.
    session.trace_entry = config.at_given ? config.trace_entry : true;
    session.trace_exit = config.at_given && config.trace_exit;
    return true;
}

// Trace mode's targets when the interface already runs XDP (none otherwise),
// or the one-line refusal where that cannot be done.
std::vector<XdpProgramInfo> choose_trace_targets(const InterfaceInfo& iface, const Config& config)
{
    const auto attached = config.direction != Direction::Out ? xdp_attachments(iface.ifindex)
                                                             : std::vector<XdpAttachment>{};
    if (attached.empty()) {
        if (config.at_given || config.trace_program)
            throw Error(iface.name + " runs no XDP program to trace: --at and --program apply to trace mode only");
        return {};
    }
    // Another xdpcap's program is traced only when shared with --xdp-mode
    // (share_xdp_hook_of_xdpcap); otherwise the refusal names its pid.
    if (why_xdp_cannot_be_traced() || is_xdpcap_program(attached.front().program.name))
        refuse_if_xdp_attached(iface.ifindex, iface.name);
    return trace_targets(attached.front(), config.trace_program);
}

// As tcpdump -F: the whole file is the expression; line breaks are spaces
// and '#' starts a comment that runs to the end of its line.
// A filter is short: a file larger than this is a mistake (or /dev/zero).
constexpr size_t kMaxFilterFileBytes = 1 << 20;

std::string read_filter_file(const std::string& path)
{
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        throw Error("cannot read filter file " + path + ": " + errno_text(errno));
    std::string expression;
    char chunk[4096];
    for (;;) {
        const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw Error("cannot read filter file " + path + ": " + errno_text(errno));
        if (n == 0)
            break;
        if (expression.size() + static_cast<size_t>(n) > kMaxFilterFileBytes)
            throw Error("filter file " + path + " is larger than " + std::to_string(kMaxFilterFileBytes >> 20) +
                        " MiB; a filter expression is not");
        expression.append(chunk, static_cast<size_t>(n));
    }
    bool comment = false;
    for (char& c : expression) {
        if (c == '#')
            comment = true;
        else if (c == '\n')
            comment = false;
        if (comment || c == '\n' || c == '\r' || c == '\t')
            c = ' ';
    }
    return expression;
}

int dump_filter(const std::string& expression, const std::string& interface)
{
    // The netmask of the interface meant, also when -i gave its index.
    std::string name = interface;
    if (interface_index_argument(interface)) {
        try {
            name = lookup_interface(interface).name;
        } catch (const Error&) {
        }
    }
    const ClassicProgram classic =
        compile_filter(expression, name.empty() ? kNetmaskUnknown : interface_netmask(name));
    const auto ebpf = translate_filter(classic.instructions(), FilterTarget{});
    std::printf("classic BPF from libpcap (%zu instructions):\n%s\n", classic.instructions().size(),
                dump_classic(classic).c_str());
    std::printf("eBPF run in the XDP program (%zu instructions):\n%s", ebpf.size(), dump_ebpf(ebpf).c_str());
    return kExitOk;
}

// Removes an output file we created if setup fails before capture starts.
class OutputGuard {
public:
    explicit OutputGuard(std::optional<Sink>& sink) : sink_(&sink) {}
    ~OutputGuard()
    {
        if (sink_ && *sink_)
            (*sink_)->discard();
    }
    void release() { sink_ = nullptr; }
    OutputGuard(const OutputGuard&) = delete;
    OutputGuard& operator=(const OutputGuard&) = delete;

private:
    std::optional<Sink>* sink_;
};

// Each -i resolved; two arguments naming one interface are refused.
std::vector<Session> lookup_sessions(const Config& config)
{
    std::vector<Session> sessions;
    for (const std::string& argument : config.interfaces) {
        Session session{};
        session.iface = lookup_interface(argument);
        session.rx_vlan_offload = rx_vlan_tags_outside_frames(session.iface.name, session.iface.driver);
        session.receive = receive_hook(session.iface, config);
        session.direction = capture_direction(session.iface, config);
        for (const Session& earlier : sessions) {
            if (earlier.iface.ifindex == session.iface.ifindex)
                throw Error("interface " + session.iface.name + " (ifindex " +
                            std::to_string(session.iface.ifindex) + ") is given twice with -i");
        }
        sessions.push_back(std::move(session));
    }
    return sessions;
}

} // namespace

namespace {

// --container-netns: this process moves into the container's network
// namespace, where -i's interfaces are looked up and captured.
void enter_network_namespace(pid_t pid, const std::string& name)
{
    const std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
    const UniqueFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns || ::setns(ns.get(), CLONE_NEWNET) != 0)
        throw Error("--container-netns: cannot enter " + name + "'s network namespace (" + path +
                    "): " + errno_text(errno));
}

// One live capture, from the interfaces named to the exit status. Each step
// is a member, called by run_capture() in order. Members are declared in
// the order they are made, so they are undone in reverse: the loop before
// the output it writes to, the output before the programs are detached.
class LiveCapture {
public:
    LiveCapture(const Config& config, std::string filter)
        : config_(config), filter_(std::move(filter)), filtering_(filter_.find_first_not_of(' ') != std::string::npos),
          keeps_some_(filtering_ || config.process.filters())
    {
    }

    // Which interfaces, which hooks and filters: every refusal comes here,
    // before anything is touched.
    void choose_hooks();
    // The output file, early so a bad path fails before anything is loaded;
    // opened before -Z changes the user (as tcpdump), then given to it.
    void claim_output();
    // Programs, filters and rings, per interface.
    void load();
    // Promiscuous mode and the hooks, in the order given; then the
    // privileges go.
    void attach();
    // The sink (unless claimed), the packet output and the loop over the rings.
    void open_output();
    // The header blocks, the start-up lines and the loop until it stops;
    // nothing when the reader went away before the first block.
    std::optional<StopReason> run();
    // Detaches, drains, writes the statistics blocks and prints the
    // statistics; returns the exit status.
    int report(StopReason reason);

private:
    bool file_output() const { return config_.writes_pcapng() && !config_.writes_to_stdout(); }
    void open_sink();
    void load_session(Session& session);
    void print_start_lines() const;
    StatsFormat stats_format();

    const Config& config_;
    const std::string filter_;
    const bool filtering_;  // a filter expression
    const bool keeps_some_; // it or the process filters: packets are seen, then kept or not
    std::optional<CommandChild> command_; // -- COMMAND
    std::optional<Container> container_;  // --container
    std::optional<ContainerNames> container_names_; // -k: the containers of the owners' cgroups
    std::optional<SocketOwners> owners_;
    std::optional<StopSignals> signals_;
    std::optional<RunAsUser> run_as_;
    std::optional<DropLabels> drop_labels_;
    std::vector<Session> sessions_;
    std::optional<RotationPlan> rotation_;
    std::optional<Sink> sink_;
    OutputGuard guard_{sink_};
    std::optional<InterfaceMap> interfaces_;
    std::optional<LinkEvents> links_;
    uint64_t start_ns_ = 0;
    std::optional<PacketOutput> output_;
    std::optional<CaptureLoop> loop_;
    std::optional<PerFileStatistics> file_statistics_;
};

void LiveCapture::choose_hooks()
{
    // First: with --container-netns, -i's names are the container's.
    if (config_.process.container) {
        container_ = find_container(*config_.process.container);
        if (config_.process.container_netns)
            enter_network_namespace(container_->pid, container_->name);
    }
    sessions_ = lookup_sessions(config_);
    // Compiled first: a syntax error is reported before anything is touched.
    // Each interface's own netmask, for "ip broadcast" and the like.
    if (filtering_) {
        for (Session& session : sessions_)
            session.classic.emplace(compile_filter(filter_, interface_netmask(session.iface.name)));
    }
    if (!config_.writes_pcapng() || config_.writes_to_stdout() || config_.print) {
        if (standard_output_was_closed())
            throw Error("standard output is closed: give -w FILE, or run with standard output open");
    }
    signals_.emplace(StopSignals::block());
    require_capture_privileges();
    // Before anything is attached: an unknown user leaves nothing behind.
    if (config_.user)
        run_as_.emplace(lookup_run_as_user(*config_.user));
    check_ring_fits_records(config_);
    // Before anything is loaded; the symbols while still privileged
    // (kallsyms shows addresses to root only).
    if (config_.drops) {
        require_drop_reasons();
        drop_labels_.emplace(kernel_btf().drop_reasons, KernelSymbols::load());
    }
    for (Session& session : sessions_) {
        if (const auto holder = xdp_hook_held_by_xdpcap(session.iface, config_)) {
            session.receive = ReceiveAt::Tc;
            session.xdp_hook_holder = *holder;
            continue;
        }
        if (!share_xdp_hook_of_xdpcap(session, config_)) {
            session.traced = choose_trace_targets(session.iface, config_);
            session.trace_entry = config_.trace_entry;
            session.trace_exit = config_.trace_exit;
        }
        if (!session.traced.empty() && config_.process.filters())
            throw Error(session.iface.name + " runs " + program_text(session.traced.front()) +
                        ": trace mode sees frames before any socket, so --pid, --pname and --cgroup cannot "
                        "select them; capture without them (-k names no process there)");
        // Trace mode's pcapng interfaces are laid out for one interface.
        if (!session.traced.empty() && sessions_.size() > 1)
            throw Error(session.iface.name + " runs " + program_text(session.traced.front()) +
                        ": trace mode captures one interface at a time; capture " + session.iface.name + " alone");
        // Translated before anything is loaded: what trace mode cannot
        // filter on is refused with nothing touched.
        if (session.classic && !session.traced.empty())
            session.trace_filter = translate_filter(session.classic->instructions(), FilterTarget{hook_info(Hook::Fentry).filter});
    }
}

// -Z: the output file the capture opened as root becomes the user's. A
// FIFO or device given as -w FILE is left as it is.
void give_file_to(const Sink& sink, const RunAsUser& user)
{
    struct stat st {};
    if (::fstat(sink.fd(), &st) != 0 || !S_ISREG(st.st_mode))
        return;
    if (::fchown(sink.fd(), user.uid, user.gid) != 0)
        throw Error(sink.name() + ": cannot give it to " + user.name + ": " + errno_text(errno));
}

void LiveCapture::open_sink()
{
    sink_.emplace(file_output() ? Sink::open_file(rotation_ ? rotation_->current() : *config_.output,
                                                  Sink::kDefaultBufferSize, &*signals_)
                                : Sink::standard_output());
    sink_->watch(&*signals_);
}

void LiveCapture::claim_output()
{
    // With -C/-G the first file's name already follows tcpdump's rules.
    if (config_.rotates())
        rotation_.emplace(*config_.output,
                          RotationSettings{config_.file_size, config_.rotate_seconds, config_.file_count},
                          ::time(nullptr));
    // As tcpdump: the file is opened before -Z gives up the rights to, so
    // it may be in a directory only root can write. It then belongs to the
    // user, who writes it (and, with -C/-G, the next ones, created as it).
    open_sink();
    if (run_as_ && file_output())
        give_file_to(*sink_, *run_as_);
}

void LiveCapture::load_session(Session& session)
{
    const std::vector<XdpProgramInfo>& traced = session.traced;
    const Attribution attribution = owners_ ? owners_->attribution(config_.process.filters()) : Attribution{};
    session.program.emplace(CaptureProgram::load(config_.snaplen, session.iface.ifindex, filtering_, session.direction,
                                                 traced.empty() ? session.receive : ReceiveAt::None,
                                                 static_cast<uint32_t>(traced.size()), config_.sample_every,
                                                 attribution));
    CaptureProgram& program = *session.program;
    if (!traced.empty())
        program.load_trace(traced, session.trace_entry, session.trace_exit, session.trace_filter);
    // The same expression on every hook, each counted on its own.
    if (session.classic) {
        const auto& classic = session.classic->instructions();
        if (program.loads(Hook::TcIngress))
            program.install_filter(Hook::TcIngress,
                                   translate_filter(classic, FilterTarget{hook_info(Hook::TcIngress).filter}));
        if (program.loads(Hook::Xdp))
            program.install_filter(Hook::Xdp,
                                   translate_filter(classic, FilterTarget{hook_info(Hook::Xdp).filter, program.multi_buffer(),
                                                                          program.rx_vlan_view_map_fd()}));
        if (program.sends())
            program.install_filter(Hook::TcEgress,
                                   translate_filter(classic, FilterTarget{hook_info(Hook::TcEgress).filter}));
    }
    if (config_.drops) {
        program.load_drops(config_.direction, session.classic.has_value());
        if (session.classic)
            program.install_drop_filter(translate_filter(
                session.classic->instructions(), FilterTarget{hook_info(Hook::Drop).filter, false, -1, program.drop_view_map_fd()}));
    }
    session.rings.emplace(create_rings(program.events_map_fd(), config_, sessions_.size()));
}

void LiveCapture::load()
{
    // One set of socket owners for every interface. -- COMMAND's child is
    // forked first: its pid is what the owners are filtered by.
    if (config_.process.wanted()) {
        const ProcessSelection& asked = config_.process;
        OwnerSelection selection{.pid = asked.pid, .follow_forks = asked.follow_forks, .comm = asked.comm,
                                 .cgroup = container_ ? std::optional(container_->cgroup_path) : asked.cgroup};
        if (!asked.command.empty()) {
            command_.emplace(CommandChild::spawn(asked.command, run_as_, config_.writes_to_stdout()));
            selection.pid = static_cast<uint32_t>(command_->pid());
            selection.follow_forks = true;
        }
        owners_.emplace(SocketOwners::load(selection));
        owners_->learn_local_addresses();
        container_names_.emplace(container_);
    }
    for (Session& session : sessions_)
        load_session(session);
    // Trace mode has a single session; otherwise ring i is interface i.
    const Session& first = sessions_.front();
    interfaces_.emplace(first.traced.empty()
                            ? InterfaceMap(config_.drops)
                            : InterfaceMap(static_cast<uint32_t>(first.traced.size()), first.trace_entry,
                                           first.trace_exit, first.program->sends(),
                                           config_.drops));
}

void LiveCapture::attach()
{
    // Before the attach: a deletion or move after it is then always seen.
    links_.emplace(LinkEvents::open());
    // In the order given; an attach that fails unwinds through ~Session,
    // which detaches every interface attached before it.
    bool clsact = false;
    // First, so that sockets in use when the first packet comes are known.
    if (owners_)
        owners_->attach();
    for (Session& session : sessions_) {
        if (config_.promiscuous)
            session.promiscuous = PromiscuousMode::enable(session.iface.ifindex, session.iface.name);
        session.program->attach(session.iface.ifindex, config_.xdp_mode, session.iface.name);
        clsact = clsact || std::string_view(session.program->egress_mechanism()) == "clsact" ||
            std::string_view(session.program->ingress_mechanism()) == "clsact";
    }
    // Attached and mapped: from here on only detaching a clsact filter needs
    // a capability (and, on old kernels, bpf() on our own fds).
    drop_privileges(run_as_, KeptCapabilities{clsact, bpf_needs_capability_on_open_fds()});
}

void LiveCapture::open_output()
{
    if (!sink_)
        open_sink();
    const ClockOffset clock = measure_clock_offset();
    start_ns_ = now_ns(CLOCK_REALTIME);
    guard_.release();
    std::optional<Sink> print_sink;
    if (config_.print && config_.writes_pcapng()) {
        print_sink.emplace(Sink::standard_output());
        print_sink->watch(&*signals_);
    }
    output_.emplace(std::move(*sink_),
                    config_.writes_pcapng() ? PacketOutput::Format::Pcapng : PacketOutput::Format::Text,
                    config_.packet_buffered, interface_names(sessions_, *interfaces_), config_.text,
                    std::move(print_sink));
    output_->set_interface_traits(interface_traits(sessions_, *interfaces_));
    output_->set_drop_labels(drop_labels_ ? &*drop_labels_ : nullptr);
    output_->write_hash_types(config_.verbose);
    if (container_names_)
        output_->name_processes([this](uint64_t cgroup) { return container_names_->of(cgroup); });
    std::vector<CaptureSource> sources;
    for (Session& session : sessions_)
        sources.push_back(
            CaptureSource{&*session.program, &*session.rings, session.iface.name, session.iface.ifindex});
    loop_.emplace(std::move(sources), std::move(*links_), *output_, *signals_, clock,
                  CaptureLoop::Options{config_.count, config_.verbose, keeps_some_,
                                       config_.direction == Direction::InOut, drain_interval_ms(config_), *interfaces_, config_.sample_every,
                                       drop_labels_ ? &*drop_labels_ : nullptr, config_.snaplen,
                                       command_ ? command_->exit_fd() : -1});
    file_statistics_.emplace(start_ns_);
    if (rotation_) {
        output_->rotate(std::move(*rotation_), config_.postrotate_command
                                                   ? std::optional<FileCommand>(FileCommand(*config_.postrotate_command))
                                                   : std::nullopt);
        output_->on_file_end([this](uint32_t pending_interface) {
            // Mid-capture: what the rings still hold goes to the next file.
            return file_statistics_->close(interface_statistics(
                as_taken(loop_->stats(), interfaces_->ring_of(pending_interface)), keeps_some_, config_.sample_every,
                *interfaces_, *sessions_.front().program, loop_->written_by_interface()));
        });
    }
}

void LiveCapture::print_start_lines() const
{
    for (const Session& session : sessions_) {
        if (!config_.warnings)
            break;
        if (!session.iface.up)
            std::fprintf(stderr, "xdpcap: warning: %s is down; capture starts when it comes up\n",
                         session.iface.name.c_str());
        // Every interface's rings are the same size: said once.
        const size_t records = records_size_for(config_.snaplen, config_.process.wanted());
        if (&session == &sessions_.front() && session.rings->bytes_per_ring() <= records)
            std::fprintf(stderr,
                         "xdpcap: warning: rings of %zu KiB cannot hold a %u-byte frame (%zu bytes of records): "
                         "such frames are lost and counted\n",
                         session.rings->bytes_per_ring() / 1024, config_.snaplen, records);
        if (!session.xdp_hook_holder.empty() && !config_.quiet)
            std::fprintf(stderr, "xdpcap: %s: another xdpcap (%s) takes its received frames with XDP; this one "
                                 "%s\n",
                         session.iface.name.c_str(), session.xdp_hook_holder.c_str(),
                         session.shared_xdp_link ? "traces its program" : "takes them at tc ingress");
        // What the file lacks, not a fault: -q leaves it to the interface
        // descriptions and the man page, as tcpdump has nothing to say here.
        if (const auto why = rx_vlan_missing(session); why && !config_.quiet) {
            const RxVlanRemedy remedy = rx_vlan_remedy(session.iface.name, session.iface.driver);
            std::fprintf(stderr, "xdpcap: warning: received VLAN tags missing on %s (%s); %s\n",
                         session.iface.name.c_str(), why->c_str(), remedy.remedy.c_str());
        }
    }
    // Once: every interface's tracing programs read the kernel alike.
    if (!config_.quiet) {
        for (const std::string& limitation : sessions_.front().program->page_limitations())
            std::fprintf(stderr, "xdpcap: warning: %s\n", limitation.c_str());
    }
    if (owners_ && config_.warnings) {
        if (const auto limitation = owners_->limitation())
            std::fprintf(stderr, "xdpcap: warning: %s\n", limitation->c_str());
    }
    if (config_.quiet)
        return;
    const Session& traced = sessions_.front();
    for (const XdpProgramInfo& p : traced.traced)
        std::fprintf(stderr, "tracing %s at %s\n", program_text(p).c_str(),
                     traced.trace_entry && traced.trace_exit ? "entry and exit"
                         : traced.trace_entry                ? "entry"
                                                             : "exit");
    // tcpdump's line, once per interface.
    for (const Session& session : sessions_)
        std::fprintf(stderr, "listening on %s, link-type EN10MB (Ethernet), snapshot length %u bytes\n",
                     session.iface.name.c_str(), config_.snaplen);
}

std::optional<StopReason> LiveCapture::run()
{
    try {
        output_->begin(pcapng::SectionHeader{host_hardware(), host_os(), std::string("xdpcap ") + kVersion},
                       describe_interfaces(sessions_, config_, filtering_ ? filter_ : "", *interfaces_));
        print_start_lines();
        // Listening: the command's first packet is captured.
        if (command_)
            command_->start();
        return loop_->run();
    } catch (const OutputClosed&) {
        return std::nullopt;
    } catch (const Error& e) {
        // Not even the first blocks could be written (-w /dev/full): a
        // failed capture like any other, with its statistics.
        if (e.exit_status() != kExitRuntime)
            throw;
        loop_->fail_output(e.what());
        return StopReason::OutputFailed;
    }
}

StatsFormat LiveCapture::stats_format()
{
    return StatsFormat{.per_cpu = config_.verbose,
                       .filtering = keeps_some_,
                       .both_directions = config_.direction == Direction::InOut,
                       .trace_points = sessions_.front().program->trace_points(),
                       .sample_every = config_.sample_every,
                       .drops = config_.drops,
                       .drop_reasons = drop_labels_ ? drop_labels_->by_frequency()
                                                    : std::vector<std::pair<std::string, uint64_t>>{},
                       .drop_misses = loop_->drop_misses(),
                       .largest_snaplen = config_.snaplen == kMaxSnaplen};
}

int LiveCapture::report(StopReason reason)
{
    loop_->detach_and_drain();
    // Every packet is in the output (or counted as not) before this count.
    const auto stats = loop_->stats();
    std::string failure = loop_->failure();
    if (output_->file_limit_reached())
        std::fprintf(stderr, "Maximum file limit reached: %u\n", *config_.file_count);
    if (loop_->output_usable() && output_->file_open()) {
        try {
            output_->finish(file_statistics_->close(interface_statistics(stats, keeps_some_, config_.sample_every,
                                                                         *interfaces_, *sessions_.front().program,
                                                                         loop_->written_by_interface())));
        } catch (const OutputClosed&) {
        } catch (const OutputInterrupted&) {
        } catch (const Error& e) {
            failure = e.what(); // only statistics blocks were lost
        }
    }
    if (!output_->print_failure().empty())
        std::fprintf(stderr, "xdpcap: warning: packet lines on standard output stopped: %s\n",
                     output_->print_failure().c_str());
    if (reason == StopReason::CommandExited) {
        if (const auto status = command_->reap(); status && *status != 0 && config_.warnings)
            std::fprintf(stderr, "xdpcap: %s %s %d\n", command_->name().c_str(),
                         WIFEXITED(*status) ? "exited with status" : "was killed by signal",
                         WIFEXITED(*status) ? WEXITSTATUS(*status) : WTERMSIG(*status));
    }
    if (failure.empty() && reason == StopReason::InterfaceGone)
        failure = loop_->gone_interface() + " went away" +
            (loop_->gone_moved() ? " (moved to another network namespace)" : "") + "; capture stopped";
    if (!failure.empty())
        std::fprintf(stderr, "xdpcap: %s\n", failure.c_str());
    if (config_.statistics)
        std::fputs(format_stats(stats, stats_format()).c_str(), stderr);
    return failure.empty() ? kExitOk : kExitRuntime;
}

} // namespace

int run_capture(const Config& config)
{
    if (config.list_interfaces) {
        std::fputs(list_interfaces().c_str(), stdout);
        return kExitOk;
    }
    // tcpdump -L's lines, on standard error as tcpdump writes them: frames
    // are captured as Ethernet on every device.
    if (config.list_link_types) {
        for (const std::string& argument : config.interfaces)
            std::fprintf(stderr, "Data link types for %s (use option -y to set):\n  EN10MB (Ethernet)\n",
                         lookup_interface(argument).name.c_str());
        return kExitOk;
    }
    std::string filter = config.filter_file ? read_filter_file(*config.filter_file) : config.filter;
    if (config.dump_filter)
        return dump_filter(filter, config.interfaces.empty() ? std::string() : config.interfaces.front());
    if (config.read_file)
        return read_capture_file(config, filter);

    LiveCapture capture(config, std::move(filter));
    capture.choose_hooks();
    capture.claim_output();
    capture.load();
    capture.attach();
    capture.open_output();
    const std::optional<StopReason> reason = capture.run();
    if (!reason)
        return kExitOk; // the reader went away before the first block
    return capture.report(*reason);
}

} // namespace xdpcap
