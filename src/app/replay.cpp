#include "app/replay.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "filter/compile.hpp"
#include "host/interfaces.hpp"
#include "input/capture_file.hpp"
#include "input/link_type.hpp"
#include "output/drop_labels.hpp"
#include "output/packet_output.hpp"
#include "output/pcapng.hpp"
#include "output/sink.hpp"
#include "version.hpp"

namespace xdpcap {

namespace {

constexpr std::string_view kDropPrefix = "drop reason ";

// What a record of xdpcap's own files says beyond the bytes, as a live
// capture's sample: the direction, a trace-mode verdict, a drop's reason,
// the checksum offload. Another program's record is shown as tcpdump
// shows it: by its bytes alone.
Sample sample_of(const CaptureFile::Packet& p, bool written_by_xdpcap, DropLabels& labels)
{
    Sample s{};
    s.orig_len = p.orig_len;
    s.cap_len = p.cap_len;
    s.data = p.data;
    s.rx_queue = p.queue.value_or(0);
    s.drops_before = static_cast<uint32_t>(p.drop_count);
    s.hook = XDPCAP_HOOK_XDP;
    if (!written_by_xdpcap)
        return s;
    const uint32_t direction = p.flags & 3;
    s.direction = direction == pcapng::kDirectionOutbound ? XDPCAP_DIR_EGRESS
        : direction == pcapng::kDirectionInbound          ? XDPCAP_DIR_INGRESS
                                                          : 0;
    if (p.flags & pcapng::kFlagChecksumNotReady)
        s.flags |= XDPCAP_FLAG_CSUM_PARTIAL;
    if (p.flags & pcapng::kFlagSegmentationOffload)
        s.flags |= XDPCAP_FLAG_GSO;
    if (p.xdp_verdict) {
        s.hook = XDPCAP_HOOK_FEXIT;
        s.verdict = static_cast<uint32_t>(*p.xdp_verdict);
    } else if (p.comment.starts_with(kDropPrefix)) {
        std::string_view reason = p.comment.substr(kDropPrefix.size());
        reason = reason.substr(0, reason.find(' '));
        s.hook = XDPCAP_HOOK_DROP;
        s.verdict = labels.intern(reason);
    }
    return s;
}

// Ethernet and Linux cooked captures (tcpdump -i any) only: the decode and
// the copy's interfaces know no other link-level header.
void require_readable(const CaptureFile& file, uint32_t interface_id)
{
    const CaptureFile::Interface& iface = file.interfaces().at(interface_id);
    if (!link_type_readable(iface.link_type))
        throw Error(file.name() + ": xdpcap reads Ethernet, LINUX_SLL and LINUX_SLL2 captures only, and interface " +
                    std::to_string(interface_id) + (iface.name.empty() ? "" : " (" + iface.name + ")") +
                    " has link type " + link_type_name(iface.link_type));
}

} // namespace

int read_capture_file(const Config& config, const std::string& filter)
{
    CaptureFile file = CaptureFile::open(*config.read_file);
    const bool filtering = filter.find_first_not_of(' ') != std::string::npos;
    // The filter for each link type the file's interfaces have, compiled
    // when the first of them is described. As tcpdump -r: no interface, so
    // no netmask.
    std::vector<std::pair<uint16_t, ClassicProgram>> classics;
    const auto classic_for = [&](uint16_t link_type) -> const ClassicProgram* {
        for (const auto& [type, program] : classics)
            if (type == link_type)
                return &program;
        return nullptr;
    };
    std::optional<Sink> copy;
    if (config.writes_pcapng())
        copy.emplace(config.writes_to_stdout() ? Sink::standard_output() : Sink::open_file(*config.output));
    // The copy is truncated and written once the filter compiled for the
    // first interface (a filter wrong for the file's link type leaves an
    // existing file as it was); blocks before that wait here.
    bool copy_started = false;
    std::vector<uint8_t> held;
    const auto start_copy = [&] {
        if (!copy || copy_started)
            return;
        copy_started = true;
        copy->start();
        copy->append(held);
        held = {};
    };
    const auto copy_block = [&](std::span<const uint8_t> block) {
        if (copy_started)
            copy->append(block.data(), block.size());
        else if (copy)
            held.insert(held.end(), block.begin(), block.end());
    };
    const auto compile_for = [&](const CaptureFile::Interface& iface) {
        if (filtering && !classic_for(iface.link_type)) {
            constexpr uint32_t kMaxSnaplen = 262144;
            const uint32_t snaplen = iface.snaplen == 0 || iface.snaplen > kMaxSnaplen ? kMaxSnaplen : iface.snaplen;
            try {
                classics.emplace_back(iface.link_type, compile_filter(filter, 0, snaplen, iface.link_type));
            } catch (const Error&) {
                if (copy && !copy_started)
                    copy->discard();
                throw;
            }
        }
        start_copy();
    };
    const bool text = !config.writes_pcapng() || config.print;
    std::optional<PacketOutput> lines;
    if (text)
        lines.emplace(Sink::standard_output(), PacketOutput::Format::Text, config.packet_buffered,
                      std::vector<std::string>{}, config.text);
    DropLabels labels({}, KernelSymbols{});
    if (lines)
        lines->set_drop_labels(&labels);

    uint64_t kept = 0;
    // tcpdump's line on standard error, once the first interface is known
    // (with -q too, as tcpdump prints it).
    bool announced = false;
    const auto announce = [&] {
        if (announced || file.interfaces().empty())
            return;
        announced = true;
        const CaptureFile::Interface& first = file.interfaces().front();
        std::fprintf(stderr, "reading from file %s, link-type %s, snapshot length %u\n", config.read_file->c_str(),
                     link_type_banner(first.link_type).c_str(), first.snaplen);
        // SLL2's interface indexes are named as on this host (as tcpdump).
        if (first.link_type == kLinkTypeLinuxSll2)
            std::fprintf(stderr, "Warning: interface names might be incorrect\n");
    };
    bool classic_started = false;
    // Classic pcap has one interface, known from its file header: the copy
    // gets a section and an interface description for it.
    const auto start_classic = [&] {
        if (file.pcapng() || classic_started || file.interfaces().empty())
            return;
        classic_started = true;
        require_readable(file, 0);
        const CaptureFile::Interface& iface = file.interfaces().front();
        announce();
        compile_for(iface);
        if (lines)
            lines->add_interface("", static_cast<text::LinkType>(iface.link_type));
        if (copy) {
            std::vector<uint8_t> header;
            pcapng::append_section_header(header, pcapng::SectionHeader{host_hardware(), host_os(),
                                                                        std::string("xdpcap ") + kVersion});
            pcapng::InterfaceDescription idb;
            idb.link_type = iface.link_type;
            idb.snaplen = iface.snaplen;
            pcapng::append_interface_description(header, idb);
            copy->append(header);
        }
    };
    try {
        while (!(config.count && kept >= *config.count)) {
            const std::optional<CaptureFile::Record> record = file.next();
            if (!record)
                break;
            switch (record->kind) {
            case CaptureFile::Record::Kind::InterfaceDescription: {
                require_readable(file, static_cast<uint32_t>(file.interfaces().size() - 1));
                const CaptureFile::Interface& iface = file.interfaces().back();
                // As tcpdump: the file's line first, then any complaint about the filter.
                announce();
                compile_for(iface);
                if (lines)
                    lines->add_interface(iface.written_by_xdpcap ? iface.name : std::string(),
                                         static_cast<text::LinkType>(iface.link_type));
                [[fallthrough]];
            }
            case CaptureFile::Record::Kind::SectionHeader:
            case CaptureFile::Record::Kind::Other:
                copy_block(record->block);
                continue;
            case CaptureFile::Record::Kind::Statistics:
                // The input's counts describe the whole capture, not this copy.
                continue;
            case CaptureFile::Record::Kind::Packet:
                break;
            }
            const CaptureFile::Packet& p = record->packet;
            start_classic();
            if (filtering &&
                classic_for(file.interfaces().at(p.interface_id).link_type)->run({p.data, p.cap_len}, p.orig_len) == 0)
                continue;
            ++kept;
            if (copy) {
                if (file.pcapng()) {
                    copy->append(record->block.data(), record->block.size());
                } else {
                    pcapng::EnhancedPacket epb{};
                    epb.timestamp_ns = p.timestamp_ns;
                    epb.cap_len = p.cap_len;
                    epb.orig_len = std::max(p.orig_len, p.cap_len);
                    epb.data = p.data;
                    epb.direction = 0;
                    epb.has_queue = false;
                    uint8_t* out = copy->reserve(pcapng::enhanced_packet_size(epb));
                    copy->commit(pcapng::write_enhanced_packet(out, epb));
                }
                if (config.packet_buffered)
                    copy->flush();
            }
            if (lines)
                lines->write(p.interface_id,
                             sample_of(p, file.interfaces().at(p.interface_id).written_by_xdpcap, labels),
                             p.timestamp_ns);
        }
        start_classic(); // a file without packets is copied as one too
        start_copy();    // and one without interfaces
        if (copy)
            copy->flush();
        if (lines)
            lines->flush();
    } catch (const OutputClosed&) {
        // The reader of standard output went away: as tcpdump, quietly.
    }
    return kExitOk;
}

} // namespace xdpcap
