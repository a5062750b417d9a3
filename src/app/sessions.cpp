#include "app/sessions.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "filter/translate.hpp"
#include "base/error.hpp"
#include "programs/rx_meta.hpp"
#include "programs/trace.hpp"
#include "ring/record.hpp"
#include "host/link_attributes.hpp"

namespace xdpcap::live {

namespace {

// The kernel wakes us when a quarter of a ring is full; the drain timer
// covers quieter traffic. --immediate-mode: at every record.
uint32_t wakeup_bytes_for(size_t ring_bytes, bool immediate)
{
    return immediate ? 1 : static_cast<uint32_t>(ring_bytes / 4);
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

// --xdp-mode native or generic: XDP; otherwise default_receive()'s choice.
ReceiveAt receive_hook(const InterfaceInfo& iface, const Config& config)
{
    if (config.xdp_mode != XdpMode::Auto)
        return ReceiveAt::Xdp;
    return default_receive(ReceiveFacts{iface.driver, iface.loopback, native_xdp_support(iface.ifindex)});
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
bool share_xdp_hook_of_xdpcap(ChosenInterface& session, const Config& config)
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
        refuse_if_xdp_attached(iface.ifindex, iface.name,
                               config.xdp_mode != XdpMode::Auto &&
                                   default_receive(ReceiveFacts{iface.driver, iface.loopback,
                                                                native_xdp_support(iface.ifindex)}) == ReceiveAt::Tc);
    return trace_targets(attached.front(), config.trace_program);
}

// Where received frames are taken at tc ingress, an XDP program someone else
// attached runs before that hook: it is left alone, and what it passes is
// captured, as tcpdump would. The program, where there is one; --at and
// --program ask for trace mode instead.
std::optional<XdpProgramInfo> xdp_program_acting_first(const ChosenInterface& session, const Config& config)
{
    if (session.receive != ReceiveAt::Tc || session.direction == Direction::Out || config.at_given ||
        config.trace_program)
        return std::nullopt;
    const auto attached = xdp_attachments(session.iface.ifindex);
    if (attached.empty() || is_xdpcap_program(attached.front().program.name))
        return std::nullopt;
    return attached.front().program;
}

// The same expression on every hook, each counted on its own.
void install_filters(CaptureProgram& program, const ClassicProgram& filter)
{
    const auto& classic = filter.instructions();
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

// Several frames per perf record, unless each frame must reach the output
// at once: --immediate-mode, -c (the count is met as the frames come) and
// text lines on a terminal. Returns why not, or empty.
std::string batch_frames(CaptureProgram& program, const Config& config, size_t ring_bytes)
{
    if (config.immediate)
        return "--immediate-mode";
    if (config.count)
        return "-c";
    if ((!config.writes_pcapng() || config.print) && ::isatty(STDOUT_FILENO))
        return "text lines on a terminal";
    return program.enable_batching(ring_bytes);
}

// How a refusal names the selection: "-i any", "-i 'veth*'", "--container web".
std::string selection_text(const Config& config)
{
    if (config.container_interfaces)
        return std::string("--container ").append(*config.container_interfaces);
    if (captures_any(config))
        return "-i any";
    std::string text;
    for (const std::string& argument : config.interfaces)
        text.append(text.empty() ? "-i '" : " -i '").append(argument).append("'");
    return text;
}

// -i any, -i PATTERN and --container without -i: never XDP, which can make
// a driver reset its queues; tc ingress and egress take every interface's
// frames as the stack hands them over. An interface without Ethernet frames
// is left out in one line: its packets would need a link type of their own.
std::vector<ChosenInterface> selected_interfaces(const Config& config, const std::optional<Container>& container)
{
    const bool any = captures_any(config);
    const std::string what = selection_text(config);
    const std::string takes = any ? what + " takes every interface's frames" : what + " takes its interfaces' frames";
    if (any && config.interfaces.size() > 1)
        throw Error("-i any captures every interface: give it alone, without other -i");
    if (config.xdp_mode != XdpMode::Auto)
        throw Error(std::string(takes).append(" at tc ingress, never with XDP: --xdp-mode does not apply"));
    if (config.at_given || config.trace_program)
        throw Error(std::string(takes).append(
            " at tc ingress, never with XDP: --at and --program (trace mode) do not apply"));
    // --container with -i any selects processes, not interfaces; it still
    // names its own.
    const std::optional<Container> kept = config.container_interfaces ? container : std::nullopt;
    const AnySelection selection(config, kept);
    std::vector<InterfaceInfo> interfaces;
    for (InterfaceInfo& iface : namespace_interfaces()) {
        if (!selection.names(iface.name))
            continue;
        if (!iface.ethernet) {
            if (config.warnings && !config.quiet && !kept)
                std::fprintf(stderr, "xdpcap: %s: %s left out: its packets carry no Ethernet header\n",
                             what.c_str(), iface.name.c_str());
            continue;
        }
        interfaces.push_back(std::move(iface));
    }
    std::vector<std::optional<InterfaceContainer>> containers = containers_of_interfaces(interfaces, container);
    std::vector<ChosenInterface> sessions;
    for (size_t i = 0; i < interfaces.size(); ++i) {
        if (selection.wanted(interfaces[i], containers[i]))
            sessions.push_back(selection.chosen(std::move(interfaces[i]), std::move(containers[i])));
    }
    if (sessions.empty() && kept)
        throw Error(what + ": no interface of this network namespace has its other end in the container's (it "
                           "may share this one: then give -i)");
    if (sessions.empty())
        throw Error(any ? std::string("-i any: this network namespace has no interface to capture")
                        : std::string(what).append(": no interface of this network namespace matches"));
    return sessions;
}

} // namespace

AnySelection::AnySelection(const Config& config, std::optional<Container> container)
    : config_(config), names_(interface_selection(config)), container_(std::move(container))
{
}

bool AnySelection::wanted(const InterfaceInfo& iface, const std::optional<InterfaceContainer>& container) const
{
    if (!names_.wanted(iface))
        return false;
    if (!container_)
        return true;
    return container && (container->id == container_->id || container->name == container_->name);
}

ChosenInterface AnySelection::chosen(InterfaceInfo iface, std::optional<InterfaceContainer> container) const
{
    ChosenInterface session = chosen_at_tc(std::move(iface), config_);
    session.container = std::move(container);
    return session;
}

std::optional<ChosenInterface> AnySelection::choose(InterfaceInfo iface, bool* without_container) const
{
    std::optional<InterfaceContainer> container = container_of_interface(iface, container_);
    if (!wanted(iface, container)) {
        if (without_container)
            *without_container = container_ && !container && names_.wanted(iface);
        return std::nullopt;
    }
    return chosen(std::move(iface), std::move(container));
}

bool captures_any(const Config& config)
{
    return config.container_interfaces ||
        std::any_of(config.interfaces.begin(), config.interfaces.end(), names_any_device);
}

bool selects_interfaces(const Config& config)
{
    return captures_any(config) ||
        std::any_of(config.interfaces.begin(), config.interfaces.end(), is_interface_pattern);
}

InterfaceSelection interface_selection(const Config& config)
{
    InterfaceSelection selection = captures_any(config) ? InterfaceSelection() : InterfaceSelection(config.interfaces);
    // lo's packets are taken once, as received: nothing to take with -Q out.
    selection.without_loopback(config.direction == Direction::Out);
    return selection;
}

ChosenInterface chosen_at_tc(InterfaceInfo iface, const Config& config)
{
    ChosenInterface session{};
    session.iface = std::move(iface);
    session.rx_vlan_offload = rx_vlan_tags_outside_frames(session.iface.name, session.iface.driver);
    session.receive = ReceiveAt::Tc;
    session.direction = capture_direction(session.iface, config);
    return session;
}

std::vector<ChosenInterface> lookup_interfaces(const Config& config, const std::optional<Container>& container)
{
    if (selects_interfaces(config))
        return selected_interfaces(config, container);
    std::vector<ChosenInterface> sessions;
    for (const std::string& argument : config.interfaces) {
        ChosenInterface session{};
        session.iface = lookup_interface(argument);
        session.rx_vlan_offload = rx_vlan_tags_outside_frames(session.iface.name, session.iface.driver);
        session.receive = receive_hook(session.iface, config);
        session.direction = capture_direction(session.iface, config);
        for (const ChosenInterface& earlier : sessions) {
            if (earlier.iface.ifindex == session.iface.ifindex)
                throw Error("interface " + session.iface.name + " (ifindex " +
                            std::to_string(session.iface.ifindex) + ") is given twice with -i");
        }
        sessions.push_back(std::move(session));
    }
    std::vector<InterfaceInfo> interfaces;
    for (const ChosenInterface& session : sessions)
        interfaces.push_back(session.iface);
    std::vector<std::optional<InterfaceContainer>> containers = containers_of_interfaces(interfaces, container);
    for (size_t i = 0; i < sessions.size(); ++i)
        sessions[i].container = std::move(containers[i]);
    return sessions;
}

void compile_filters(std::vector<ChosenInterface>& interfaces, const std::string& filter)
{
    for (ChosenInterface& session : interfaces)
        session.classic.emplace(compile_filter(filter, interface_netmask(session.iface.name)));
}

void choose_trace(std::vector<ChosenInterface>& interfaces, const Config& config)
{
    for (ChosenInterface& session : interfaces) {
        if (const auto holder = xdp_hook_held_by_xdpcap(session.iface, config)) {
            session.receive = ReceiveAt::Tc;
            session.xdp_hook_holder = *holder;
            continue;
        }
        if (const auto first = xdp_program_acting_first(session, config)) {
            session.acting_first = *first;
            continue;
        }
        if (!share_xdp_hook_of_xdpcap(session, config)) {
            session.traced = choose_trace_targets(session.iface, config);
            session.trace_entry = config.trace_entry;
            session.trace_exit = config.trace_exit;
        }
        if (!session.traced.empty() && config.process.filters())
            throw Error(session.iface.name + " runs " + program_text(session.traced.front()) +
                        ": trace mode sees frames before any socket, so --pid, --pname and --cgroup cannot "
                        "select them; capture without them (-k names no process there)");
        // Trace mode's pcapng interfaces are laid out for one interface.
        if (!session.traced.empty() && interfaces.size() > 1)
            throw Error(session.iface.name + " runs " + program_text(session.traced.front()) +
                        ": trace mode captures one interface at a time; capture " + session.iface.name + " alone");
        // Translated before anything is loaded: what trace mode cannot
        // filter on is refused with nothing touched.
        if (session.classic && !session.traced.empty())
            session.trace_filter = translate_filter(session.classic->instructions(), FilterTarget{hook_info(Hook::Fentry).filter});
    }
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

std::string program_text(const XdpProgramInfo& p)
{
    return "XDP program '" + p.name + "' (id " + std::to_string(p.id) + ", tag " + p.tag + ")";
}

bool shares_rings(const Config& config)
{
    return (selects_interfaces(config) || captures_any(config)) && !config.drops;
}

SharedRings shared_rings_for(size_t interfaces)
{
    // Counters are per CPU: 320 bytes a slot on each.
    constexpr size_t kMostSlots = 16384;
    SharedRings shared;
    shared.slots = static_cast<uint32_t>(std::min(kMostSlots, 2 * interfaces + 256));
    return shared;
}

Session load_session(const ChosenInterface& chosen, const Config& config, bool filtering,
                     const Attribution& attribution, size_t interfaces, SharedRings* shared)
{
    const std::vector<XdpProgramInfo>& traced = chosen.traced;
    std::optional<Sharing> sharing;
    if (shared) {
        if (shared->next_slot >= shared->slots)
            throw Error("the capture has room for " + std::to_string(shared->slots) + " interfaces, all taken");
        sharing = Sharing{shared->next_slot, shared->slots, shared->maps ? &*shared->maps : nullptr};
    }
    // What a native XDP hook asks the driver for.
    const RxReads reads = config.xdp_mode == XdpMode::Generic || !native_xdp_support(chosen.iface.ifindex).value_or(true)
        ? RxReads{}
        : rx_reads(kernel_rx_metadata(), chosen.iface.driver, config.rss_type_comments);
    CaptureProgram program = CaptureProgram::load(config.snaplen, chosen.iface.ifindex, filtering, chosen.direction,
                                                  traced.empty() ? chosen.receive : ReceiveAt::None,
                                                  static_cast<uint32_t>(traced.size()), config.sample_every,
                                                  attribution, sharing, reads);
    if (!traced.empty())
        program.load_trace(traced, chosen.trace_entry, chosen.trace_exit, chosen.trace_filter);
    if (chosen.classic)
        install_filters(program, *chosen.classic);
    if (config.drops) {
        program.load_drops(config.direction, chosen.classic.has_value());
        if (chosen.classic)
            program.install_drop_filter(translate_filter(
                chosen.classic->instructions(), FilterTarget{hook_info(Hook::Drop).filter, false, -1, program.drop_view_map_fd()}));
    }
    std::shared_ptr<PerfRings> rings;
    if (shared) {
        if (!shared->maps) {
            shared->rings = std::make_shared<PerfRings>(create_rings(program.events_map_fd(), config, 1));
            shared->maps = program.shared_maps();
        }
        rings = shared->rings;
        ++shared->next_slot;
    } else {
        rings = std::make_shared<PerfRings>(create_rings(program.events_map_fd(), config, interfaces));
    }
    std::string single_frames = batch_frames(program, config, rings->bytes_per_ring());
    program.release_object();
    return Session{chosen, std::move(program), std::move(rings), shared != nullptr, std::move(single_frames)};
}

} // namespace xdpcap::live
