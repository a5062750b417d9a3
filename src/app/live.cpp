#include "app/live.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/interface_blocks.hpp"
#include "app/output_claim.hpp"
#include "app/process_side.hpp"
#include "app/sessions.hpp"
#include "capture/capture.hpp"
#include "capture/stats.hpp"
#include "programs/drops.hpp"
#include "programs/kernel_btf.hpp"
#include "programs/owners.hpp"
#include "host/command.hpp"
#include "host/containers.hpp"
#include "host/key_log_files.hpp"
#include "host/interface_selection.hpp"
#include "host/interfaces.hpp"
#include "host/link_attributes.hpp"
#include "host/link_events.hpp"
#include "host/privileges.hpp"
#include "host/promisc.hpp"
#include "ring/clock.hpp"
#include "ring/record.hpp"
#include "output/drop_labels.hpp"
#include "output/packet_output.hpp"
#include "output/rotation.hpp"
#include "output/sink.hpp"
#include "base/error.hpp"
#include "base/stop_signals.hpp"
#include "base/unique_fd.hpp"
#include "version.hpp"

namespace xdpcap {

namespace live {

namespace {

// How often the rings are drained at the latest; with --immediate-mode
// just past the merge's 1 ms hold-back.
int drain_interval_ms(const Config& config)
{
    return config.immediate ? 1 : 50;
}

// The filter expression, and what it asks of the capture.
struct CaptureFilter {
    CaptureFilter(const Config& config, std::string text)
        : expression(std::move(text)), filtering(expression.find_first_not_of(' ') != std::string::npos),
          keeps_some(filtering || config.process.filters())
    {
    }
    const std::string expression;
    const bool filtering;  // a filter expression
    const bool keeps_some; // it or the process filters: packets are seen, then kept or not
};

// --- choose_hooks: every refusal, before anything is touched.

// What choose_hooks() settles: the interfaces, their hooks and filters, and
// what the later steps take from this host. Stays where it is made: the
// sessions, the sink and the loop point into it.
struct Chosen {
    std::optional<Container> container; // --container
    std::optional<Container> host_side; // --container without -i: whose veths are taken
    // -i any, -i PATTERN or --container without -i: interfaces by interface_selection(), at tc;
    // they may join and leave during the capture.
    bool selects = false;
    std::vector<ChosenInterface> interfaces;
    StopSignals signals;
    std::optional<RunAsUser> run_as;       // -Z
    std::optional<DropLabels> drop_labels; // --drops
};

void refuse_closed_standard_output(const Config& config)
{
    if (!config.writes_pcapng() || config.writes_to_stdout() || config.print) {
        if (standard_output_was_closed())
            throw Error("standard output is closed: give -w FILE, or run with standard output open");
    }
}

// Before anything is loaded; the symbols while still privileged
// (kallsyms shows addresses to root only).
std::optional<DropLabels> load_drop_labels(const Config& config)
{
    if (!config.drops)
        return std::nullopt;
    require_drop_reasons();
    return std::optional<DropLabels>(std::in_place, kernel_btf().drop_reasons, KernelSymbols::load());
}

Chosen choose_hooks(const Config& config, const CaptureFilter& filter)
{
    // First: with --container-netns, -i's names are the container's.
    std::optional<Container> container = enter_container(config);
    // --container without -i: the container whose interfaces are taken.
    std::optional<Container> host_side =
        config.container_interfaces ? std::optional<Container>(find_container(*config.container_interfaces))
                                    : std::nullopt;
    const bool selects = selects_interfaces(config);
    if (selects)
        raise_open_file_limit();
    std::vector<ChosenInterface> interfaces = lookup_interfaces(config, host_side ? host_side : container);
    // Compiled first: a syntax error is reported before anything is touched.
    if (filter.filtering)
        compile_filters(interfaces, filter.expression);
    refuse_closed_standard_output(config);
    StopSignals signals = StopSignals::block();
    require_capture_privileges();
    // Before anything is attached: an unknown user leaves nothing behind.
    std::optional<RunAsUser> run_as;
    if (config.user)
        run_as = lookup_run_as_user(*config.user);
    check_ring_fits_records(config);
    std::optional<DropLabels> drop_labels = load_drop_labels(config);
    choose_trace(interfaces, config);
    return Chosen{std::move(container), std::move(host_side), selects, std::move(interfaces), std::move(signals),
                  std::move(run_as), std::move(drop_labels)};
}

// --- load: the process side, then programs, filters and rings, per
// interface.

// --tls-keys, --tls-keys-file: the secrets and where they come from.
struct KeySources {
    TlsSecrets secrets;
    std::optional<FollowedKeyLog> followed;
    CommandKeyLog* command_log = nullptr;

    void poll()
    {
        const KeyLogLineSink add = [this](std::string_view line) { secrets.add(line); };
        if (command_log)
            command_log->poll(add);
        if (followed)
            followed->poll(add);
    }
};

// Nothing unless asked; the followed file is opened while privileged.
std::unique_ptr<KeySources> key_sources(const Config& config, std::optional<ProcessSide>& process)
{
    if (!config.tls_keys.wanted())
        return nullptr;
    auto keys = std::make_unique<KeySources>();
    if (config.tls_keys.file)
        keys->followed.emplace(*config.tls_keys.file, config.tls_keys.from_start);
    if (process && process->key_log)
        keys->command_log = process->key_log.get();
    // The library probes' lines come as their ring is read.
    if (process && process->tls_keys)
        process->tls_keys->add_sink([secrets = &keys->secrets](const std::string& line) { secrets->add(line); });
    return keys;
}

// Declared in the order made, so undone in reverse: the programs are
// detached before the owners go and the child command is handled.
struct Loaded {
    std::optional<ProcessSide> process;
    std::unique_ptr<KeySources> keys;
    // Interfaces that joined during the capture; their sessions point here.
    std::deque<ChosenInterface> joined;
    std::optional<SharedRings> shared; // shares_rings(): every session's rings
    Sessions sessions;
    InterfaceMap interfaces; // pcapng interfaces, by ring and hook
    CommandChild* command() { return process && process->command ? &*process->command : nullptr; }
};

// Trace mode has a single session; otherwise ring i is interface i.
InterfaceMap interface_map(const Session& first, const Config& config)
{
    const ChosenInterface& chosen = first.chosen;
    return chosen.traced.empty()
        ? InterfaceMap(config.drops)
        : InterfaceMap(static_cast<uint32_t>(chosen.traced.size()), chosen.trace_entry, chosen.trace_exit,
                       first.program.sends(), config.drops);
}

Loaded load(const Config& config, const CaptureFilter& filter, const Chosen& chosen)
{
    std::optional<ProcessSide> process = start_process_side(config, chosen.container, chosen.run_as);
    std::unique_ptr<KeySources> keys = key_sources(config, process);
    std::optional<SharedRings> shared;
    if (shares_rings(config))
        shared = shared_rings_for(chosen.interfaces.size());
    Sessions sessions;
    for (const ChosenInterface& interface : chosen.interfaces) {
        const Attribution attribution =
            process ? process->owners.attribution(config.process.filters()) : Attribution{};
        sessions.push_back(load_session(interface, config, filter.filtering, attribution, chosen.interfaces.size(),
                                        shared ? &*shared : nullptr));
    }
    const InterfaceMap interfaces = interface_map(sessions.front(), config);
    return Loaded{std::move(process), std::move(keys), {}, std::move(shared), std::move(sessions), interfaces};
}

// --- attach: promiscuous mode and the hooks, in the order given; then the
// privileges go.

// What the attach leaves held while the capture runs.
struct Attached {
    LinkEvents links; // opened before the hooks; the loop takes them
    std::vector<std::optional<PromiscuousMode>> promiscuous;
};

Attached attach(const Config& config, const Chosen& chosen, Loaded& loaded)
{
    // Before the attach: a deletion or move after it is then always seen.
    LinkEvents links = LinkEvents::open();
    std::vector<std::optional<PromiscuousMode>> promiscuous;
    // In the order given; an attach that fails unwinds through ~Session,
    // which detaches every interface attached before it.
    bool clsact = false;
    // First, so that sockets in use when the first packet comes are known.
    if (loaded.process) {
        loaded.process->owners.attach();
        // Once the hooks record new sockets: none falls between the two.
        loaded.process->owners.learn_existing_sockets();
    }
    for (Session& session : loaded.sessions) {
        // As tcpdump: -i any leaves every interface's promiscuity alone (a
        // promiscuous bridge would pass up every frame it forwards).
        if (config.promiscuous && !chosen.selects)
            promiscuous.push_back(PromiscuousMode::enable(session.chosen.iface.ifindex, session.chosen.iface.name));
        try {
            session.program.attach(session.chosen.iface.ifindex, config.xdp_mode, session.chosen.iface.name);
        } catch (const Error&) {
            // Among many interfaces, one deleted since it was listed (a
            // container stopping) leaves the capture as it starts (the loop
            // says so).
            if (!chosen.selects || interface_exists(session.chosen.iface.ifindex))
                throw;
            session.program.detach();
            continue;
        }
        clsact = clsact || std::string_view(session.program.egress_mechanism()) == "clsact" ||
            std::string_view(session.program.ingress_mechanism()) == "clsact";
    }
    // Attached and mapped: from here on only detaching a clsact filter needs
    // a capability (and, on old kernels, bpf() on our own fds).
    const CommandChild* command = loaded.command();
    const bool command_is_another_user =
        command && command->uid() != (chosen.run_as ? chosen.run_as->uid : ::getuid());
    drop_privileges(chosen.run_as,
                    KeptCapabilities{clsact, bpf_needs_capability_on_open_fds(), command_is_another_user, chosen.selects});
    return Attached{std::move(links), std::move(promiscuous)};
}

// --- open_output: the sink taken, the packet output and the loop over the
// rings.

std::optional<Sink> print_sink(const Config& config, StopSignals& signals)
{
    if (!config.print || !config.writes_pcapng())
        return std::nullopt;
    Sink sink = Sink::standard_output();
    sink.watch(&signals);
    return sink;
}

PacketOutput packet_output(const Config& config, Sink sink, StopSignals& signals, const Loaded& loaded)
{
    std::optional<Sink> print = print_sink(config, signals);
    PacketOutput output(std::move(sink),
                        config.writes_pcapng() ? PacketOutput::Format::Pcapng : PacketOutput::Format::Text,
                        config.packet_buffered, interface_names(loaded.sessions, loaded.interfaces), config.text,
                        std::move(print));
    const std::vector<std::string> containers = interface_containers(loaded.sessions, loaded.interfaces);
    for (uint32_t id = 0; id < containers.size(); ++id) {
        if (!containers[id].empty())
            output.name_container(id, containers[id]);
    }
    return output;
}

// What the packets' options and comments depend on; returns `output`.
PacketOutput& described(PacketOutput& output, const Config& config, Chosen& chosen, Loaded& loaded)
{
    output.set_interface_traits(interface_traits(loaded.sessions, loaded.interfaces));
    if (chosen.selects)
        output.name_devices();
    output.set_drop_labels(chosen.drop_labels ? &*chosen.drop_labels : nullptr);
    output.write_hash_types(config.rss_type_comments);
    if (loaded.keys)
        output.place_tls_secrets(loaded.keys->secrets);
    if (loaded.process) {
        ContainerNames& names = loaded.process->container_names;
        output.name_processes([&names](uint64_t cgroup) { return names.of(cgroup); });
    }
    return output;
}

CaptureSource capture_source(Session& session)
{
    return CaptureSource{&session.program, session.rings.get(), session.chosen.iface.name, session.chosen.iface.ifindex,
                         session.shares_rings};
}

std::vector<CaptureSource> capture_sources(Sessions& sessions)
{
    std::vector<CaptureSource> sources;
    for (Session& session : sessions)
        sources.push_back(capture_source(session));
    return sources;
}

class Joining;
std::function<std::optional<CaptureSource>(uint32_t, const std::string&)> join_function(Joining& joining);
std::function<bool(std::vector<CaptureSource>&)> revisit_function(Joining& joining);

CaptureLoop::Options loop_options(const Config& config, const CaptureFilter& filter, Chosen& chosen,
                                  Loaded& loaded, Joining& joining)
{
    return CaptureLoop::Options{config.count, config.verbose, filter.keeps_some,
                                config.direction == Direction::InOut, drain_interval_ms(config),
                                loaded.interfaces, config.sample_every,
                                chosen.drop_labels ? &*chosen.drop_labels : nullptr, config.snaplen,
                                loaded.command() ? loaded.command()->exit_fd() : -1,
                                chosen.selects, chosen.selects && config.warnings && !config.quiet,
                                chosen.selects ? join_function(joining)
                                               : std::function<std::optional<CaptureSource>(uint32_t, const std::string&)>(),
                                chosen.selects ? revisit_function(joining)
                                               : std::function<bool(std::vector<CaptureSource>&)>(),
                                loaded.keys ? std::function<void()>([keys = loaded.keys.get()] { keys->poll(); })
                                            : std::function<void()>(),
                                loaded.process && loaded.process->tls_keys ? &*loaded.process->tls_keys : nullptr,
                                config.immediate};
}

void print_session_warnings(const Config& config, const Session& session, bool first, bool any);

// -i any and -i PATTERN: an interface created during the capture that the
// selection wants gets its session, attached as the others were (the
// capabilities that takes raised meanwhile), and its pcapng interfaces,
// each described before its first packet.
class Joining {
public:
    // `host_side`: --container without -i's container, whose veths join
    // (a restarted container's new one too).
    Joining(const Config& config, const CaptureFilter& filter, Loaded& loaded, PacketOutput& output,
            const std::optional<Container>& host_side)
        : config_(config), filter_(filter), loaded_(loaded), output_(output), selection_(config, host_side)
    {
    }

    std::optional<CaptureSource> join(uint32_t ifindex, const std::string& announced);
    // The veths that wait for their container, asked again (CaptureLoop's
    // Options::revisit).
    bool revisit(std::vector<CaptureSource>& joined);

private:
    // A veth into another network namespace where no container's process
    // ran yet when it was announced: podman makes it before it starts the
    // container. Asked again for kAwaitContainer.
    struct Awaited {
        uint32_t ifindex = 0;
        std::chrono::steady_clock::time_point until;
        // Joined without a container: its session and first interface id,
        // named once the container is found; else (--container) not joined.
        std::optional<size_t> session = std::nullopt;
        uint32_t first_id = 0;
    };
    static constexpr std::chrono::seconds kAwaitContainer{10};
    static constexpr std::chrono::milliseconds kRevisitEvery{200};

    static bool into_other_namespace(const InterfaceInfo& iface)
    {
        if (iface.driver != "veth")
            return false;
        const std::optional<LinkAttributes> attributes = link_attributes(iface.ifindex);
        return attributes && attributes->link_in_other_namespace;
    }
    void await(uint32_t ifindex, std::optional<size_t> session, uint32_t first_id)
    {
        for (const Awaited& awaited : awaited_) {
            if (awaited.ifindex == ifindex)
                return; // its time runs from its first announcement
        }
        awaited_.push_back(
            Awaited{ifindex, std::chrono::steady_clock::now() + kAwaitContainer, session, first_id});
    }
    // Its container, found now: its column and IDBs name it.
    void name_container(const Awaited& awaited, InterfaceContainer container);

    // Said once and not tried again: no Ethernet frames, or a failed attach.
    bool refused(uint32_t ifindex) const
    {
        return std::find(refused_.begin(), refused_.end(), ifindex) != refused_.end();
    }

    const Config& config_;
    const CaptureFilter& filter_;
    Loaded& loaded_;
    PacketOutput& output_;
    const AnySelection selection_;
    std::vector<uint32_t> refused_;
    std::vector<Awaited> awaited_;
    std::chrono::steady_clock::time_point revisited_{};
};

std::optional<CaptureSource> Joining::join(uint32_t ifindex, const std::string& announced)
{
    // The name first: most notices are of interfaces a pattern leaves out.
    if (refused(ifindex) || (!announced.empty() && !selection_.names(announced)))
        return std::nullopt;
    const std::optional<InterfaceInfo> iface = interface_by_index(ifindex);
    if (!iface || !selection_.names(iface->name))
        return std::nullopt; // gone again, or renamed meanwhile
    const bool say = config_.warnings && !config_.quiet;
    if (!iface->ethernet) {
        refused_.push_back(ifindex);
        if (say)
            std::fprintf(stderr, "xdpcap: %s left out: its packets carry no Ethernet header\n", iface->name.c_str());
        return std::nullopt;
    }
    bool without_container = false;
    std::optional<ChosenInterface> wanted = selection_.choose(*iface, &without_container);
    if (!wanted) {
        if (without_container && into_other_namespace(*iface))
            await(ifindex, std::nullopt, 0);
        return std::nullopt;
    }
    const bool unnamed_veth = !wanted->container && into_other_namespace(*iface);
    const uint32_t first_id = output_.interface_count();
    const ScopedCapabilities raised(kJoinCapabilities);
    const size_t joined_before = loaded_.joined.size();
    try {
        std::vector<ChosenInterface> one;
        one.push_back(std::move(*wanted));
        if (filter_.filtering)
            compile_filters(one, filter_.expression);
        choose_trace(one, config_);
        loaded_.joined.push_back(std::move(one.front()));
        const Attribution attribution =
            loaded_.process ? loaded_.process->owners.attribution(config_.process.filters()) : Attribution{};
        loaded_.sessions.push_back(load_session(loaded_.joined.back(), config_, filter_.filtering, attribution,
                                                loaded_.sessions.size() + 1,
                                                loaded_.shared ? &*loaded_.shared : nullptr));
        Session& session = loaded_.sessions.back();
        session.program.attach(ifindex, config_.xdp_mode, iface->name);
        const std::vector<std::string> names = interface_names(session, loaded_.interfaces);
        std::vector<pcapng::InterfaceDescription> idbs = describe_interfaces(
            session, config_, filter_.filtering ? filter_.expression : "", loaded_.interfaces);
        const std::vector<PacketOutput::InterfaceTraits> traits = interface_traits(session, loaded_.interfaces);
        const std::vector<std::string> containers = interface_containers(session, loaded_.interfaces);
        for (size_t i = 0; i < names.size(); ++i)
            output_.add_live_interface(names[i], std::move(idbs[i]), traits[i], containers[i]);
        if (say) {
            print_session_warnings(config_, session, false, true);
            std::fprintf(stderr, "xdpcap: %s joined the capture\n", iface->name.c_str());
        }
        // Joined on a later notice while awaited: asked about no more.
        std::erase_if(awaited_, [ifindex](const Awaited& awaited) { return awaited.ifindex == ifindex; });
        if (unnamed_veth)
            await(ifindex, loaded_.sessions.size() - 1, first_id);
        return capture_source(session);
    } catch (const Error& e) {
        // Detached and unloaded: nothing of it stays.
        const bool chosen = loaded_.joined.size() > joined_before;
        if (chosen && &loaded_.sessions.back().chosen == &loaded_.joined.back())
            loaded_.sessions.pop_back();
        if (chosen)
            loaded_.joined.pop_back();
        refused_.push_back(ifindex);
        if (config_.warnings)
            std::fprintf(stderr, "xdpcap: %s cannot join the capture: %s\n", iface->name.c_str(), e.what());
        return std::nullopt;
    }
}

bool Joining::revisit(std::vector<CaptureSource>& joined)
{
    const auto now = std::chrono::steady_clock::now();
    if (awaited_.empty() || now - revisited_ < kRevisitEvery)
        return !awaited_.empty();
    revisited_ = now;
    std::vector<Awaited> waiting = std::move(awaited_);
    awaited_.clear();
    for (const Awaited& awaited : waiting) {
        const std::optional<InterfaceInfo> iface = interface_by_index(awaited.ifindex);
        if (!iface || now > awaited.until)
            continue; // gone, or no container came
        if (!awaited.session) {
            // join() awaits it again while its container is not there.
            if (std::optional<CaptureSource> source = join(awaited.ifindex, iface->name)) {
                joined.push_back(*source);
            } else {
                for (Awaited& again : awaited_) {
                    if (again.ifindex == awaited.ifindex)
                        again.until = awaited.until;
                }
            }
            continue;
        }
        if (std::optional<InterfaceContainer> container = container_of_interface(*iface))
            name_container(awaited, std::move(*container));
        else
            awaited_.push_back(awaited);
    }
    return !awaited_.empty();
}

void Joining::name_container(const Awaited& awaited, InterfaceContainer container)
{
    const Session& session = loaded_.sessions[*awaited.session];
    const auto chosen = std::find_if(loaded_.joined.begin(), loaded_.joined.end(),
                                     [&session](const ChosenInterface& c) { return &c == &session.chosen; });
    if (chosen == loaded_.joined.end())
        return;
    chosen->container = std::move(container);
    const std::vector<pcapng::InterfaceDescription> idbs = describe_interfaces(
        session, config_, filter_.filtering ? filter_.expression : "", loaded_.interfaces);
    const std::vector<std::string> containers = interface_containers(session, loaded_.interfaces);
    for (size_t i = 0; i < idbs.size(); ++i)
        output_.describe_container(awaited.first_id + static_cast<uint32_t>(i), containers[i], idbs[i].description);
}

std::function<bool(std::vector<CaptureSource>&)> revisit_function(Joining& joining)
{
    return [&joining](std::vector<CaptureSource>& joined) { return joining.revisit(joined); };
}

std::function<std::optional<CaptureSource>(uint32_t, const std::string&)> join_function(Joining& joining)
{
    return [&joining](uint32_t ifindex, const std::string& name) { return joining.join(ifindex, name); };
}

// The packet output, the loop that writes to it and each file's
// statistics. Made in place and never moved: the loop and the signals hold
// it, and the output's file-end callback reads the loop.
class Running {
public:
    Running(const Config& config, const CaptureFilter& filter, Chosen& chosen, ClaimedOutput& claimed,
            Loaded& loaded, Attached& attached);
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

    const ClockOffset clock;
    const uint64_t start_ns;
    PacketOutput output;
    Joining joining;
    CaptureLoop loop;
    PerFileStatistics file_statistics;
};

Running::Running(const Config& config, const CaptureFilter& filter, Chosen& chosen, ClaimedOutput& claimed,
                 Loaded& loaded, Attached& attached)
    : clock(measure_clock_offset()), start_ns(now_ns(CLOCK_REALTIME)),
      output(packet_output(config, claimed.take(), chosen.signals, loaded)),
      joining(config, filter, loaded, output, chosen.host_side),
      loop(capture_sources(loaded.sessions), std::move(attached.links), described(output, config, chosen, loaded),
           chosen.signals, clock, loop_options(config, filter, chosen, loaded, joining)),
      file_statistics(start_ns)
{
    if (!claimed.rotation())
        return;
    output.rotate(std::move(*claimed.rotation()),
                  config.postrotate_command ? std::optional<FileCommand>(FileCommand(*config.postrotate_command))
                                            : std::nullopt);
    output.on_file_end([this, &config, &loaded, keeps_some = filter.keeps_some](uint32_t pending_interface) {
        // Mid-capture: what the rings still hold goes to the next file.
        return file_statistics.close(interface_statistics(
            as_taken(loop.stats(), loaded.interfaces.ring_of(pending_interface)), keeps_some, config.sample_every,
            loaded.interfaces, loaded.sessions.front().program, loop.written_by_interface()));
    });
}

Running open_output(const Config& config, const CaptureFilter& filter, Chosen& chosen, ClaimedOutput& claimed,
                    Loaded& loaded, Attached& attached)
{
    return Running(config, filter, chosen, claimed, loaded, attached);
}

// --- run: the header blocks, the start-up lines and the loop until it
// stops.

void print_session_warnings(const Config& config, const Session& session, bool first, bool any)
{
    // -i any takes every interface as it is, up or down.
    if (!session.chosen.iface.up && !any)
        std::fprintf(stderr, "xdpcap: warning: %s is down; capture starts when it comes up\n",
                     session.chosen.iface.name.c_str());
    // Every interface's rings are the same size: said once.
    const size_t records = records_size_for(config.snaplen, config.process.wanted());
    if (first && session.rings->bytes_per_ring() <= records)
        std::fprintf(stderr,
                     "xdpcap: warning: rings of %zu KiB cannot hold a %u-byte frame (%zu bytes of records): "
                     "such frames are lost and counted\n",
                     session.rings->bytes_per_ring() / 1024, config.snaplen, records);
    if (!session.chosen.xdp_hook_holder.empty() && !config.quiet)
        std::fprintf(stderr, "xdpcap: %s: another xdpcap (%s) takes its received frames with XDP; this one "
                             "%s\n",
                     session.chosen.iface.name.c_str(), session.chosen.xdp_hook_holder.c_str(),
                     session.chosen.shared_xdp_link ? "traces its program" : "takes them at tc ingress");
    if (session.chosen.acting_first && !config.quiet)
        std::fprintf(stderr, "xdpcap: %s: %s acts first; received frames are captured at tc ingress as it passes "
                             "them\n",
                     session.chosen.iface.name.c_str(), program_text(*session.chosen.acting_first).c_str());
    // What the file lacks, not a fault: -q leaves it to the interface
    // descriptions and the man page, as tcpdump has nothing to say here.
    if (const auto why = rx_vlan_missing(session); why && !config.quiet) {
        const RxVlanRemedy remedy = rx_vlan_remedy(session.chosen.iface.name, session.chosen.iface.driver);
        std::fprintf(stderr, "xdpcap: warning: received VLAN tags missing on %s (%s); %s\n",
                     session.chosen.iface.name.c_str(), why->c_str(), remedy.remedy.c_str());
    }
}

void print_start_lines(const Config& config, const Chosen& chosen, const Loaded& loaded)
{
    for (const Session& session : loaded.sessions) {
        if (!config.warnings)
            break;
        print_session_warnings(config, session, &session == &loaded.sessions.front(), chosen.selects);
    }
    // Once: every interface's tracing programs read the kernel alike.
    if (!config.quiet) {
        for (const std::string& limitation : loaded.sessions.front().program.page_limitations())
            std::fprintf(stderr, "xdpcap: warning: %s\n", limitation.c_str());
    }
    if (loaded.process && config.warnings) {
        if (const auto limitation = loaded.process->owners.limitation())
            std::fprintf(stderr, "xdpcap: warning: %s\n", limitation->c_str());
    }
    // How frames travel, and so how long one can wait before it is written.
    if (config.verbose) {
        const std::string& single = loaded.sessions.front().program.batching()
            ? std::string()
            : loaded.sessions.front().single_frames;
        if (single.empty())
            std::fprintf(stderr, "several frames per perf record, each written within %llu ms\n",
                         static_cast<unsigned long long>(kBatchDelayBoundMs));
        else
            std::fprintf(stderr, "one frame per perf record (%s)\n", single.c_str());
    }
    // Not only warnings: these say which keys the key log will lack.
    if (loaded.process) {
        for (const std::string& note : loaded.process->tls_key_notes)
            std::fprintf(stderr, "xdpcap: %s\n", note.c_str());
    }
    // -q quiets the warnings above, not these: as tcpdump -q, scripts wait
    // for "listening on".
    if (!config.start_lines)
        return;
    const ChosenInterface& traced = loaded.sessions.front().chosen;
    for (const XdpProgramInfo& p : traced.traced)
        std::fprintf(stderr, "tracing %s at %s\n", program_text(p).c_str(),
                     traced.trace_entry && traced.trace_exit ? "entry and exit"
                         : traced.trace_entry                ? "entry"
                                                             : "exit");
    // tcpdump's line, once per interface; -i any's once, as tcpdump's, and
    // each pattern's once (--container's: once per interface).
    if (chosen.selects && !config.container_interfaces) {
        for (const std::string& argument : config.interfaces)
            std::fprintf(stderr, "listening on %s, link-type EN10MB (Ethernet), snapshot length %u bytes\n",
                         captures_any(config) ? "any" : argument.c_str(), config.snaplen);
        return;
    }
    for (const Session& session : loaded.sessions)
        std::fprintf(stderr, "listening on %s, link-type EN10MB (Ethernet), snapshot length %u bytes\n",
                     session.chosen.iface.name.c_str(), config.snaplen);
}

// Nothing when the reader went away before the first block.
std::optional<StopReason> run(const Config& config, const CaptureFilter& filter, const Chosen& chosen, Loaded& loaded,
                              Running& running)
{
    try {
        running.output.begin(pcapng::SectionHeader{host_hardware(), host_os(), std::string("xdpcap ") + kVersion},
                             describe_interfaces(loaded.sessions, config, filter.filtering ? filter.expression : "",
                                                 loaded.interfaces),
                             chosen.selects);
        print_start_lines(config, chosen, loaded);
        // Listening: the command's first packet is captured.
        if (loaded.command())
            loaded.command()->start();
        return running.loop.run();
    } catch (const OutputClosed&) {
        return std::nullopt;
    } catch (const Error& e) {
        // Not even the first blocks could be written (-w /dev/full): a
        // failed capture like any other, with its statistics.
        if (e.exit_status() != kExitRuntime)
            throw;
        running.loop.fail_output(e.what());
        return StopReason::OutputFailed;
    }
}

// --- report: detaches, drains, writes the statistics blocks and prints the
// statistics; returns the exit status.

StatsFormat stats_format(const Config& config, const CaptureFilter& filter, Chosen& chosen,
                         const Loaded& loaded, const Running& running)
{
    return StatsFormat{.per_cpu = config.verbose,
                       .filtering = filter.keeps_some,
                       .both_directions = config.direction == Direction::InOut,
                       .trace_points = loaded.sessions.front().program.trace_points(),
                       .sample_every = config.sample_every,
                       .drops = config.drops,
                       .drop_reasons = chosen.drop_labels ? chosen.drop_labels->by_frequency()
                                                          : std::vector<std::pair<std::string, uint64_t>>{},
                       .drop_misses = running.loop.drop_misses(),
                       .largest_snaplen = config.snaplen == kMaxSnaplen,
                       .file_limit_reached = running.output.file_limit_reached()};
}

// The last file's statistics blocks; a failure to write them is `failure`.
void finish_output(const Config& config, const CaptureFilter& filter, const Loaded& loaded, Running& running,
                   const std::vector<CpuStats>& stats, std::string& failure)
{
    if (!running.loop.output_usable() || !running.output.file_open())
        return;
    try {
        running.output.finish(running.file_statistics.close(
            interface_statistics(stats, filter.keeps_some, config.sample_every, loaded.interfaces,
                                 loaded.sessions.front().program, running.loop.written_by_interface())));
    } catch (const OutputClosed&) {
    } catch (const OutputInterrupted&) {
    } catch (const Error& e) {
        failure = e.what(); // only statistics blocks were lost
    }
}

// -v with --tls-keys: what placing the secrets did, and what it cost.
void print_tls_statistics(const KeySources& keys, const TlsPlacementStats& placed)
{
    std::fprintf(stderr,
                 "%zu TLS connections' secrets logged, %llu written into the file\n"
                 "%llu TLS connections held for their secrets (%llu packets), %llu released without them "
                 "after %llu ms, the longest held %llu ms\n",
                 keys.secrets.connections(), static_cast<unsigned long long>(placed.connections_with_secrets),
                 static_cast<unsigned long long>(placed.held_connections),
                 static_cast<unsigned long long>(placed.held_packets),
                 static_cast<unsigned long long>(placed.timed_out),
                 static_cast<unsigned long long>(TlsPlacement::kTimeoutNs / 1'000'000),
                 static_cast<unsigned long long>(placed.longest_hold_ns / 1'000'000));
}

// Stops what is left of the command; its exit status when it failed by
// itself, which becomes xdpcap's.
std::optional<int> report_command(const Config& config, CommandChild& command)
{
    const auto status = command.finish();
    if (!status || command_exit_status(*status) == 0)
        return std::nullopt;
    if (config.warnings)
        std::fprintf(stderr, "xdpcap: %s %s %d\n", command.name().c_str(),
                     WIFEXITED(*status) ? "exited with status" : "was killed by signal",
                     WIFEXITED(*status) ? WEXITSTATUS(*status) : WTERMSIG(*status));
    return command_exit_status(*status);
}

int report(const Config& config, const CaptureFilter& filter, Chosen& chosen, Loaded& loaded,
           Running& running, StopReason reason)
{
    CaptureLoop& loop = running.loop;
    loop.detach_and_drain();
    // Every packet is in the output (or counted as not) before this count.
    const auto stats = loop.stats();
    std::string failure = loop.failure();
    if (running.output.file_limit_reached())
        std::fprintf(stderr, "Maximum file limit reached: %u\n", *config.file_count);
    finish_output(config, filter, loaded, running, stats, failure);
    if (!running.output.print_failure().empty())
        std::fprintf(stderr, "xdpcap: warning: packet lines on standard output stopped: %s\n",
                     running.output.print_failure().c_str());
    // Also when the capture stopped first: the command is stopped before
    // the statistics.
    const std::optional<int> command_failed =
        loaded.command() ? report_command(config, *loaded.command()) : std::nullopt;
    if (failure.empty() && reason == StopReason::InterfaceGone)
        failure = loop.gone_interface() + " went away" +
            (loop.gone_moved() ? " (moved to another network namespace)" : "") + "; capture stopped";
    if (!failure.empty())
        std::fprintf(stderr, "xdpcap: %s\n", failure.c_str());
    if (config.statistics)
        std::fputs(format_stats(stats, stats_format(config, filter, chosen, loaded, running)).c_str(), stderr);
    if (config.statistics && config.verbose && loaded.keys)
        print_tls_statistics(*loaded.keys, *running.output.tls_stats());
    if (!failure.empty())
        return kExitRuntime;
    return command_failed.value_or(kExitOk);
}

} // namespace

} // namespace live

// Each step makes the next object; declared in the order made, they are
// undone in reverse: the loop before the output it writes to, the output
// before the programs are detached, the programs before the file is let go.
int run_live_capture(const Config& config, std::string expression)
{
    using namespace live;
    const CaptureFilter filter(config, std::move(expression));
    Chosen chosen = choose_hooks(config, filter);
    ClaimedOutput claimed = claim_output(config, chosen.signals, chosen.run_as);
    Loaded loaded = load(config, filter, chosen);
    Attached attached = attach(config, chosen, loaded);
    Running running = open_output(config, filter, chosen, claimed, loaded, attached);
    const std::optional<StopReason> reason = run(config, filter, chosen, loaded, running);
    if (!reason)
        return kExitOk; // the reader went away before the first block
    return report(config, filter, chosen, loaded, running, *reason);
}

} // namespace xdpcap
