#include "output/packet_output.hpp"

#include "output/rss_hash.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <ctime>

#include <linux/bpf.h>

namespace xdpcap {

PacketOutput::PacketOutput(Sink sink, Format format, bool packet_buffered, std::vector<std::string> interface_names,
                           const text::TextOptions& text, std::optional<Sink> print)
    : sink_(std::move(sink)), format_(format), packet_buffered_(packet_buffered),
      interface_names_(std::move(interface_names)), text_(text), timestamps_(text.time, text.nanoseconds),
      print_(std::move(print))
{
    // More packets than a buffer can hold (a line is at least 8 bytes):
    // never reallocated per packet.
    if (format_ == Format::Text)
        line_owners_.reserve(Sink::kDefaultBufferSize / 8);
    if ((format_ == Format::Text || print_) && !text.absolute_sequence) {
        tcp_flows_ = std::make_unique<text::TcpFlows>();
        text_.decode.tcp_flows = tcp_flows_.get();
    }
    update_line_prefixes();
}

namespace {

// "eth0" of "eth0@cpu3:exit".
std::string_view device_name(std::string_view interface_name)
{
    return interface_name.substr(0, interface_name.find('@'));
}

} // namespace

bool PacketOutput::another_device(const std::string& name) const
{
    return !name.empty() && !interface_names_.front().empty() &&
        device_name(name) != device_name(interface_names_.front());
}

std::string PacketOutput::line_prefix(uint32_t interface_id) const
{
    const std::string& name = interface_names_[interface_id];
    const std::string_view container =
        interface_id < containers_.size() ? std::string_view(containers_[interface_id]) : std::string_view();
    const size_t device_end = device_name(name).size();
    std::string prefix;
    if (name.empty()) {
        // Another program's file: its records name no interface.
    } else if (text_.cpu_prefix) {
        prefix.assign(name, 0, device_end);
        if (!container.empty())
            prefix.append(1, '(').append(container).append(1, ')');
        prefix.append(name, device_end, std::string::npos).append(1, ' ');
    } else if (several_devices_) {
        // tcpdump -i any's column: the name in five, then a space.
        prefix.assign(name, 0, device_end);
        if (!container.empty())
            prefix.append(1, '(').append(container).append(1, ')');
        prefix.resize(std::max<size_t>(prefix.size(), 5), ' ');
        prefix += ' ';
    }
    return prefix;
}

void PacketOutput::update_line_prefixes()
{
    several_devices_ = always_name_devices_ ||
        std::any_of(interface_names_.begin(), interface_names_.end(),
                    [&](const std::string& name) { return another_device(name); });
    line_prefixes_.clear();
    for (uint32_t id = 0; id < interface_names_.size(); ++id)
        line_prefixes_.push_back(line_prefix(id));
}

void PacketOutput::name_container(uint32_t interface_id, const std::string& container)
{
    if (interface_id >= interface_names_.size())
        return;
    if (containers_.size() <= interface_id)
        containers_.resize(interface_id + 1);
    containers_[interface_id] = container;
    line_prefixes_[interface_id] = line_prefix(interface_id);
}

void PacketOutput::describe_container(uint32_t interface_id, const std::string& container,
                                      const std::string& description)
{
    name_container(interface_id, container);
    if (interface_id < idbs_.size())
        idbs_[interface_id].description = description;
}

void PacketOutput::rename_device(uint32_t interface_id, const std::string& device)
{
    if (interface_id >= interface_names_.size())
        return;
    std::string& name = interface_names_[interface_id];
    const size_t at = name.find('@');
    name = at == std::string::npos ? device : std::string(device).append(name, at, std::string::npos);
    if (!several_devices_ && another_device(name))
        update_line_prefixes();
    else
        line_prefixes_[interface_id] = line_prefix(interface_id);
    if (interface_id < file_ids_.size() && file_ids_[interface_id] == kNotWritten)
        idbs_[interface_id].name = name;
}

void PacketOutput::add_interface(std::string name, text::LinkType link_type, const std::string& container)
{
    interface_names_.push_back(std::move(name));
    // Only the first interface of another device changes the others' prefixes.
    if (!several_devices_ && another_device(interface_names_.back()))
        update_line_prefixes();
    else
        line_prefixes_.push_back(line_prefix(static_cast<uint32_t>(interface_names_.size() - 1)));
    link_types_.resize(interface_names_.size(), text::LinkType::Ethernet);
    link_types_.back() = link_type;
    if (!container.empty())
        name_container(static_cast<uint32_t>(interface_names_.size() - 1), container);
    if (link_type == text::LinkType::LinuxSll2 && !host_interface_names_) {
        host_interface_names_ = std::make_unique<text::HostInterfaceNames>();
        text_.decode.interface_names = host_interface_names_.get();
    }
}

void PacketOutput::add_live_interface(std::string name, pcapng::InterfaceDescription idb, InterfaceTraits traits,
                                      const std::string& container)
{
    const auto id = static_cast<uint32_t>(interface_names_.size());
    add_interface(std::move(name), text::LinkType::Ethernet, container);
    if (interface_traits_.size() < id)
        interface_traits_.resize(id);
    interface_traits_.push_back(traits);
    if (file_ids_.empty())
        return; // text lines only
    if (idbs_.size() < id) {
        idbs_.resize(id);
        file_ids_.resize(id, kNotWritten);
    }
    idbs_.push_back(std::move(idb));
    file_ids_.push_back(kNotWritten);
}

void PacketOutput::begin(const pcapng::SectionHeader& shb, const std::vector<pcapng::InterfaceDescription>& idbs,
                         bool on_first_use)
{
    sink_.start();
    if (format_ != Format::Pcapng)
        return;
    header_.clear();
    pcapng::append_section_header(header_, shb);
    if (on_first_use && !idbs.empty()) {
        idbs_ = idbs;
        file_ids_.assign(idbs_.size(), kNotWritten);
        described_.reserve(idbs_.size());
        // libpcap opens no file without an IDB: the first one comes up
        // front, in every file.
        describe(0, header_);
    } else {
        for (const auto& idb : idbs)
            pcapng::append_interface_description(header_, idb);
    }
    sink_.append(header_);
    sink_.flush();
}

uint32_t PacketOutput::describe(uint32_t interface_id, std::vector<uint8_t>& blocks)
{
    if (interface_id >= idbs_.size()) {
        // Not described by the caller: as an interface of its own, blank.
        idbs_.resize(interface_id + 1);
        file_ids_.resize(interface_id + 1, kNotWritten);
    }
    pcapng::append_interface_description(blocks, idbs_[interface_id]);
    file_ids_[interface_id] = static_cast<uint32_t>(described_.size());
    described_.push_back(interface_id);
    return file_ids_[interface_id];
}

uint32_t PacketOutput::describe_now(uint32_t interface_id)
{
    std::vector<uint8_t> block;
    const uint32_t id = describe(interface_id, block);
    sink_.append(block);
    return id;
}

std::vector<uint8_t> PacketOutput::statistics_blocks(const std::vector<pcapng::InterfaceStatistics>& isbs)
{
    std::vector<uint8_t> blocks;
    for (auto isb : isbs) {
        if (!file_ids_.empty()) {
            const bool described = isb.interface_id < file_ids_.size() && file_ids_[isb.interface_id] != kNotWritten;
            if (!described && isb.if_received == 0 && isb.dropped == 0 && isb.user_delivered == 0)
                continue;
            isb.interface_id = described ? file_ids_[isb.interface_id] : describe(isb.interface_id, blocks);
        }
        pcapng::append_interface_statistics(blocks, isb);
    }
    return blocks;
}

void PacketOutput::rotate(RotationPlan plan, std::optional<FileCommand> command)
{
    size_limit_ = plan.size_limit();
    rotate_at_ns_ = plan.rotate_at_ns();
    plan_.emplace(std::move(plan));
    command_ = std::move(command);
}

void PacketOutput::finish(const std::vector<pcapng::InterfaceStatistics>& isbs)
{
    if (!file_open_)
        return;
    if (plan_) {
        close_file(isbs);
        return;
    }
    if (format_ == Format::Pcapng) {
        if (tls_)
            place_tls(0, true);
        sink_.append(statistics_blocks(isbs));
    }
    sink_.flush();
    flush_print();
}

void PacketOutput::stop_printing(const Error* failure)
{
    if (failure)
        print_failure_ = failure->what();
    print_.reset();
}

void PacketOutput::print_line(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns)
{
    try {
        write_line(*print_, interface_id, sample, realtime_ns);
        if (text_.line_buffered)
            print_->flush();
    } catch (const OutputClosed&) {
        stop_printing(nullptr);
    } catch (const OutputInterrupted&) {
        throw; // a stop signal: the capture stops
    } catch (const Error& e) {
        stop_printing(&e);
    }
}

void PacketOutput::flush_print()
{
    if (!print_)
        return;
    try {
        print_->flush();
    } catch (const OutputClosed&) {
        stop_printing(nullptr);
    } catch (const OutputInterrupted&) {
        throw;
    } catch (const Error& e) {
        stop_printing(&e);
    }
}

void PacketOutput::close_file(const std::vector<pcapng::InterfaceStatistics>& isbs)
{
    // What is held belongs in this file, before its statistics.
    if (tls_)
        place_tls(0, true);
    sink_.append(statistics_blocks(isbs));
    // Whatever happens from here, nothing more goes into this file.
    file_open_ = false;
    size_limit_ = rotate_at_ns_ = 0;
    const std::string name = sink_.name();
    sink_.close();
    if (command_)
        command_->run(name);
}

bool PacketOutput::next_file(uint64_t realtime_ns, uint32_t pending_interface)
{
    if (!plan_)
        return true; // a packet stamped at the end of time: nothing to rotate
    if (!file_open_)
        return false;
    const uint64_t size = sink_.bytes();
    close_file(file_statistics_ ? file_statistics_(pending_interface) : std::vector<pcapng::InterfaceStatistics>{});
    if (plan_->advance(realtime_ns, size) == RotationPlan::Next::Stop) {
        file_limit_reached_ = true;
        return false;
    }
    sink_.reopen(plan_->current());
    sink_.append(header_);
    // Each file describes its interfaces as they first carry a packet, the
    // first one in its header.
    if (!file_ids_.empty()) {
        std::fill(file_ids_.begin(), file_ids_.end(), kNotWritten);
        file_ids_[0] = 0;
        described_.assign(1, 0);
    }
    file_open_ = true;
    if (tls_)
        ++tls_->file;
    size_limit_ = plan_->size_limit();
    rotate_at_ns_ = plan_->rotate_at_ns();
    return true;
}

void PacketOutput::write_block(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns,
                               bool stays_until_release)
{
    const pcapng::EnhancedPacket packet = enhanced_packet(interface_id, sample, realtime_ns);
    const size_t size = pcapng::enhanced_packet_size(packet);
    if (stays_until_release && sample.cap_len >= kReferMinLength) {
        const size_t tail = pcapng::enhanced_packet_tail_size(packet, size);
        sink_.reserve_around_reference(pcapng::kEpbHeadSize + tail);
        write_referring_block(packet, size, tail);
        return;
    }
    sink_.reserve(size);
    write_copied_block(packet, size);
}

bool PacketOutput::tls_hold(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns)
{
    TlsPlacement& tls = *tls_;
    const std::optional<TlsFrame> frame = read_tls_frame(sample.data, sample.cap_len);
    if (!frame)
        return false;
    auto it = tls.connections.find(frame->connection);
    if (frame->hello == TlsFrame::Hello::Client) {
        if (it == tls.connections.end())
            it = tls.connections.emplace(frame->connection, TlsPlacement::Connection{}).first;
        TlsPlacement::Connection& connection = it->second;
        if (!connection.has_random || connection.random != frame->client_random) {
            connection.random = frame->client_random;
            connection.has_random = true;
            connection.secrets = nullptr;
        }
        connection.hello_file = tls.file;
    }
    if (it == tls.connections.end())
        return false;
    TlsPlacement::Connection& connection = it->second;
    if (!connection.held && connection.has_random) {
        if (!connection.secrets)
            connection.secrets = tls.secrets.find(connection.random);
        const bool complete = connection.secrets && TlsSecrets::complete(connection.secrets->labels);
        if (frame->hello == TlsFrame::Hello::Server && !complete && connection.hello_file == tls.file) {
            connection.held = true;
            connection.held_since_ns = sample.tstamp_ns;
            ++tls.held;
            ++tls.stats.held_connections;
        } else if (connection.secrets) {
            write_tls_secrets(connection);
        }
    }
    if (connection.held) {
        // Copied: the ring's bytes go back to the kernel after this batch.
        const size_t offset = connection.bytes.size();
        connection.bytes.insert(connection.bytes.end(), sample.data, sample.data + sample.cap_len);
        connection.packets.push_back(TlsPlacement::HeldPacket{interface_id, realtime_ns, sample, offset});
        ++tls.stats.held_packets;
        return true;
    }
    if (frame->ends_connection)
        tls.connections.erase(it);
    return false;
}

void PacketOutput::write_tls_secrets(TlsPlacement::Connection& connection)
{
    TlsPlacement& tls = *tls_;
    // Only into the file that holds its ClientHello: a reader finds a
    // connection's secrets by the ClientHello's random.
    if (connection.hello_file != tls.file)
        return;
    if (connection.written_file != tls.file) {
        connection.written_file = tls.file;
        connection.written_bytes = 0;
    }
    const std::string& lines = connection.secrets->lines;
    if (lines.size() <= connection.written_bytes)
        return;
    if (connection.written_bytes == 0)
        ++tls.stats.connections_with_secrets;
    tls.block.clear();
    append_tls_secrets_block(tls.block, std::string_view(lines).substr(connection.written_bytes));
    connection.written_bytes = lines.size();
    sink_.append(tls.block);
}

void PacketOutput::release_tls(TlsPlacement::Connection& connection, uint64_t monotonic_ns)
{
    TlsPlacement& tls = *tls_;
    if (!connection.secrets || !TlsSecrets::complete(connection.secrets->labels))
        ++tls.stats.timed_out;
    if (connection.secrets)
        write_tls_secrets(connection);
    if (monotonic_ns > connection.held_since_ns)
        tls.stats.longest_hold_ns = std::max(tls.stats.longest_hold_ns, monotonic_ns - connection.held_since_ns);
    for (TlsPlacement::HeldPacket& held : connection.packets) {
        held.sample.data = connection.bytes.data() + held.offset;
        write_block(held.interface_id, held.sample, held.realtime_ns, false);
    }
    connection.packets.clear();
    connection.bytes.clear();
    connection.bytes.shrink_to_fit();
    connection.held = false;
    --tls.held;
}

void PacketOutput::place_tls(uint64_t monotonic_ns, bool everything)
{
    TlsPlacement& tls = *tls_;
    if (everything) {
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        monotonic_ns = static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
    }
    const bool news = tls.secrets.changes() != tls.seen_changes;
    tls.seen_changes = tls.secrets.changes();
    for (auto& entry : tls.connections) {
        TlsPlacement::Connection& connection = entry.second;
        if (connection.has_random && !connection.secrets && news)
            connection.secrets = tls.secrets.find(connection.random);
        if (connection.held) {
            const bool complete = connection.secrets && TlsSecrets::complete(connection.secrets->labels);
            if (everything || complete || monotonic_ns >= connection.held_since_ns + TlsPlacement::kTimeoutNs)
                release_tls(connection, monotonic_ns);
        } else if (news && connection.secrets) {
            // Lines that came after a timeout: for a reader in two passes.
            write_tls_secrets(connection);
        }
    }
}

const char* xdp_action_name(uint32_t action) noexcept
{
    switch (action) {
    case XDP_ABORTED:
        return "XDP_ABORTED";
    case XDP_DROP:
        return "XDP_DROP";
    case XDP_PASS:
        return "XDP_PASS";
    case XDP_TX:
        return "XDP_TX";
    case XDP_REDIRECT:
        return "XDP_REDIRECT";
    default:
        return nullptr;
    }
}

// "[   N  ]TIME [eth0@cpu3 In ][XDP_DROP |Drop NO_SOCKET ][hash 0x5e2a9c31/L4_IPV4_TCP ]IP
// 198.18.0.1.5000 > ...\n": the packet number (-#), the timestamp, the
// interface and direction (--print-cpu, or several interfaces), the verdict
// of trace-mode exit records, with --print-cpu -e the hash, then the decode
// and any dump.
void PacketOutput::put_packet_text(text::Writer& out, uint32_t interface_id, const Sample& sample,
                                   uint64_t realtime_ns)
{
    const std::string& prefix = line_prefixes_[interface_id];
    timestamps_.put(out, realtime_ns);
    // As tcpdump: with one interface, or a file that names none, the decode
    // follows the time.
    if (!prefix.empty()) {
        out.put(prefix);
        // --print-cpu's "In "; -i any's column of four otherwise.
        if (sample.direction == XDPCAP_DIR_EGRESS)
            out.put("Out ");
        else if (sample.direction == XDPCAP_DIR_INGRESS)
            out.put(text_.cpu_prefix ? "In " : "In  ");
    }
    if (sample.flags & XDPCAP_FLAG_PROCESS) [[unlikely]] {
        const std::string_view label = !sample.process_label.empty() ? sample.process_label
            : process_labels_ ? process_labels_->label(sample.process, sample.peer)
                                                                      : std::string_view{};
        if (!label.empty()) {
            out.put('(');
            out.put(label);
            out.put(") ");
        }
    }
    const HookInfo& hook = hook_info(sample.hook);
    if (hook.verdict) {
        if (const char* verdict = xdp_action_name(sample.verdict)) {
            out.put(verdict);
        } else {
            out.put("verdict ");
            out.dec(sample.verdict);
        }
        out.put(' ');
    } else if (hook.dropped) {
        out.put("Drop ");
        if (drop_labels_) {
            out.put(drop_labels_->reason(sample.verdict));
        } else {
            out.put("reason ");
            out.dec(sample.verdict);
        }
        out.put(' ');
    }
    // --print-cpu -e: with the link-level header, the hash the NIC (or
    // kernel) gave it.
    if (text_.cpu_prefix && text_.decode.link_header && (sample.flags & XDPCAP_FLAG_HASH)) {
        out.put("hash 0x");
        out.hex(sample.hash, 8);
        if (const std::string_view type = rss_hash_type_name(sample.hash_type); !type.empty()) {
            out.put('/');
            out.put(type);
        }
        out.put(' ');
    }
    text_.decode.checksum_not_ready = (sample.flags & XDPCAP_FLAG_CSUM_PARTIAL) != 0;
    text_.decode.link_type = interface_id < link_types_.size() ? link_types_[interface_id] : text::LinkType::Ethernet;
    text::format_frame(out, sample.data, sample.cap_len, sample.orig_len, text_.decode);
}

void PacketOutput::write_line(Sink& sink, uint32_t interface_id, const Sample& sample, uint64_t realtime_ns)
{
    const std::string& prefix = line_prefixes_[interface_id];
    const size_t room = 160 + prefix.size() + text::decode_length_bound(sample.cap_len) + text::dump_length_bound(sample.cap_len);
    char* const start = reinterpret_cast<char*>(sink.reserve(room));
    const bool owned = &sink == &sink_;
    // After reserve(), which may have flushed: this line belongs to the next chunk.
    if (owned && sink.flushes() != owners_since_flush_) {
        line_owners_.clear();
        owners_since_flush_ = sink.flushes();
    }
    text::Writer out(start, room - 1);
    if (text_.number) {
        const uint64_t number = ++printed_;
        for (uint64_t width = 10000; width > 1 && number < width; width /= 10)
            out.put(' ');
        out.dec(number);
        out.put("  ");
    }
    // A record whose lengths cannot be takes tcpdump's line instead.
    if (!text::put_invalid_header(out, sample.cap_len, sample.orig_len)) [[likely]]
        put_packet_text(out, interface_id, sample, realtime_ns);
    start[out.size()] = '\n';
    sink.commit(out.size() + 1);
    if (owned)
        line_owners_.push_back(LineOwner{interface_id, static_cast<uint32_t>(sink.pending())});
}

} // namespace xdpcap
