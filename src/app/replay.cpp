#include "app/replay.hpp"

#include <linux/if_packet.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "base/hooks.hpp"
#include "filter/compile.hpp"
#include "host/interfaces.hpp"
#include "host/privileges.hpp"
#include "host/worker_process.hpp"
#include "input/capture_file.hpp"
#include "input/link_type.hpp"
#include "output/drop_labels.hpp"
#include "output/packet_output.hpp"
#include "output/pcapng.hpp"
#include "output/process_labels.hpp"
#include "output/replaced_file.hpp"
#include "output/sink.hpp"
#include "output/tls_flows.hpp"
#include "output/tls_secrets.hpp"
#include "text/decode.hpp"
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
    s.hook = abi_value(Hook::Xdp);
    if (!written_by_xdpcap)
        return s;
    const uint32_t direction = p.flags & 3;
    s.direction = direction == pcapng::kDirectionOutbound ? XDPCAP_DIR_EGRESS
        : direction == pcapng::kDirectionInbound          ? XDPCAP_DIR_INGRESS
                                                          : 0;
    // -k's owner: its ids from epb_processid_threadid, its words from the
    // comment written beside them.
    if (p.pid && !p.process_comment.empty()) {
        s.flags |= XDPCAP_FLAG_PROCESS;
        s.process.pid = *p.pid;
        s.process.tid = p.tid;
        s.process_label = p.process_comment;
    }
    if (p.flags & pcapng::kFlagChecksumNotReady)
        s.flags |= XDPCAP_FLAG_CSUM_PARTIAL;
    if (p.flags & pcapng::kFlagSegmentationOffload)
        s.flags |= XDPCAP_FLAG_GSO;
    if (p.xdp_verdict) {
        s.hook = abi_value(Hook::Fexit); // the hook whose samples carry a verdict
        s.verdict = static_cast<uint32_t>(*p.xdp_verdict);
    } else if (p.comment.starts_with(kDropPrefix)) {
        std::string_view reason = p.comment.substr(kDropPrefix.size());
        reason = reason.substr(0, reason.find(' '));
        s.hook = abi_value(Hook::Drop);
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
                    std::to_string(interface_id) + (iface.name.empty() ? "" : " (" + text::escaped(iface.name) + ")") +
                    " has link type " + link_type_name(iface.link_type));
}

// The direction a packet of the file records in epb_flags: none in classic
// pcap files and in pcapng packets without the option.
uint32_t recorded_direction(const CaptureFile::Packet& p)
{
    return p.flags & 3;
}

// What a file that records no directions gets for `inbound`, `outbound` and
// -Q: tcpdump's words for savefiles, and which packet lacks one in pcapng.
[[noreturn]] void refuse_direction(const std::string& what, uint16_t link_type, std::optional<uint64_t> packet)
{
    throw Error(what + " not supported on " + link_type_description(link_type) + " when reading savefiles" +
                (packet ? " without a direction in epb_flags (packet " + std::to_string(*packet) + ")" : ""));
}

// The filter for each link type the file's interfaces have, compiled when
// the first of them is described. As tcpdump -r: no interface, so no
// netmask. A filter with `inbound` or `outbound` reads the direction each
// packet records: it runs as one program for received packets and one for
// sent ones.
class LinkTypeFilters {
public:
    explicit LinkTypeFilters(std::string filter)
        : filter_(std::move(filter)), filtering_(filter_.find_first_not_of(' ') != std::string::npos)
    {
    }

    // `directions`: the file can record directions (pcapng).
    void compile_for(const CaptureFile::Interface& iface, bool directions)
    {
        if (!filtering_ || compiled_for(iface.link_type))
            return;
        constexpr uint32_t kMaxSnaplen = 262144;
        const uint32_t snaplen = iface.snaplen == 0 || iface.snaplen > kMaxSnaplen ? kMaxSnaplen : iface.snaplen;
        Compiled compiled{iface.link_type, compile_filter(filter_, 0, snaplen, iface.link_type), {}, {}};
        if (compiled.any.reads_packet_type()) {
            if (!directions)
                refuse_direction("inbound/outbound", iface.link_type, std::nullopt);
            compiled.received = compiled.any.with_packet_type(PACKET_HOST);
            compiled.sent = compiled.any.with_packet_type(PACKET_OUTGOING);
        }
        compiled_.push_back(std::move(compiled));
    }

    // Its interface's filter was compiled when the interface was described.
    // `number`: the packet's, counted from 1, for the error.
    bool keeps(const CaptureFile::Packet& p, uint16_t link_type, uint64_t number) const
    {
        if (!filtering_)
            return true;
        const Compiled& compiled = *compiled_for(link_type);
        const ClassicProgram* program = &compiled.any;
        if (compiled.received) {
            const uint32_t direction = recorded_direction(p);
            if (direction == pcapng::kDirectionInbound)
                program = &*compiled.received;
            else if (direction == pcapng::kDirectionOutbound)
                program = &*compiled.sent;
            else
                refuse_direction("inbound/outbound", link_type, number);
        }
        return program->run({p.data, p.cap_len}, p.orig_len) != 0;
    }

private:
    struct Compiled {
        uint16_t link_type;
        ClassicProgram any;
        std::optional<ClassicProgram> received; // `inbound` and `outbound` known
        std::optional<ClassicProgram> sent;
    };
    const Compiled* compiled_for(uint16_t link_type) const
    {
        for (const Compiled& compiled : compiled_)
            if (compiled.link_type == link_type)
                return &compiled;
        return nullptr;
    }

    const std::string filter_;
    const bool filtering_;
    std::vector<Compiled> compiled_;
};

// -Q, --pid, --pname and --container on a file: by what each packet
// records, its direction in epb_flags, its owner in epb_processid_threadid
// and the comment -k writes beside it.
class RecordedSelection {
public:
    explicit RecordedSelection(const Config& config)
        : direction_(config.direction), pid_(config.process.pid), container_(config.process.container)
    {
        // The name as a label writes it.
        if (config.process.comm) {
            comm_.emplace();
            for (const char c : *config.process.comm)
                *comm_ += c >= 0x20 && c < 0x7f ? c : '?';
        }
    }

    // Classic pcap records no direction.
    void check_classic(uint16_t link_type) const
    {
        if (direction_ != Direction::InOut)
            refuse_direction(option(), link_type, std::nullopt);
    }

    bool keeps(const CaptureFile::Packet& p, uint16_t link_type, uint64_t number) const
    {
        if (direction_ != Direction::InOut) {
            const uint32_t direction = recorded_direction(p);
            if (direction != pcapng::kDirectionInbound && direction != pcapng::kDirectionOutbound)
                refuse_direction(option(), link_type, number);
            if ((direction == pcapng::kDirectionInbound) != (direction_ == Direction::In))
                return false;
        }
        if (!pid_ && !comm_ && !container_)
            return true;
        if (!p.pid)
            return false;
        // Either end: option 8's, and the other one the comment names after
        // it when both were on the capturing host.
        if (selects(*p.pid, ProcessLabels::parse(p.process_comment, *p.pid)))
            return true;
        const auto peer = ProcessLabels::parse_peer(p.process_comment, *p.pid);
        return peer && selects(peer->pid, peer);
    }

private:
    bool selects(uint32_t pid, const std::optional<ProcessLabels::Named>& named) const
    {
        if (pid_ && pid != *pid_)
            return false;
        if (!comm_ && !container_)
            return true;
        return named && (!comm_ || named->comm == *comm_) && (!container_ || named->container == *container_);
    }

    std::string option() const { return direction_ == Direction::In ? "-Q in" : "-Q out"; }

    const Direction direction_;
    const std::optional<uint32_t> pid_;
    std::optional<std::string> comm_;
    const std::optional<std::string> container_;
};

// -w: the filtered pcapng copy. It is truncated and written once the filter
// compiled for the first interface (a filter wrong for the file's link type
// leaves an existing file as it was); blocks before that wait here.
class PcapngCopy {
public:
    PcapngCopy(Sink sink, bool packet_buffered) : sink_(std::move(sink)), packet_buffered_(packet_buffered) {}

    void start()
    {
        if (started_)
            return;
        started_ = true;
        sink_.start();
        sink_.append(held_);
        held_ = {};
    }
    // The filter did not compile before anything was written.
    void discard_unstarted()
    {
        if (!started_)
            sink_.discard();
    }

    // A pcapng block that is no packet: section, interface, other.
    void keep_block(std::span<const uint8_t> block)
    {
        if (started_)
            sink_.append(block.data(), block.size());
        else
            held_.insert(held_.end(), block.begin(), block.end());
    }
    // Classic pcap's one interface, from its file header: a section and an
    // interface description of its own.
    void write_classic_header(const CaptureFile::Interface& iface);
    // pcapng: the packet's block as read, every option kept; classic pcap:
    // an Enhanced Packet Block of its bytes.
    void write(const CaptureFile::Record& record, bool pcapng);
    void flush() { sink_.flush(); }
    // The reading failed: what was written so far goes out, if anything.
    void salvage() noexcept
    {
        try {
            if (started_)
                sink_.flush();
        } catch (const Error&) {
        }
    }
    bool started() const noexcept { return started_; }
    // It holds TLS secrets: mode 0600, as a capture's own file.
    void keep_private() { sink_.keep_private(); }

private:
    Sink sink_;
    const bool packet_buffered_;
    bool started_ = false;
    std::vector<uint8_t> held_;
};

void PcapngCopy::write_classic_header(const CaptureFile::Interface& iface)
{
    std::vector<uint8_t> header;
    pcapng::append_section_header(header,
                                  pcapng::SectionHeader{host_hardware(), host_os(), std::string("xdpcap ") + kVersion});
    pcapng::InterfaceDescription idb;
    idb.link_type = iface.link_type;
    idb.snaplen = iface.snaplen;
    pcapng::append_interface_description(header, idb);
    sink_.append(header);
}

void PcapngCopy::write(const CaptureFile::Record& record, bool pcapng)
{
    if (pcapng) {
        sink_.append(record.block.data(), record.block.size());
    } else {
        const CaptureFile::Packet& p = record.packet;
        pcapng::EnhancedPacket epb{};
        epb.timestamp_ns = p.timestamp_ns;
        epb.cap_len = p.cap_len;
        epb.orig_len = std::max(p.orig_len, p.cap_len);
        epb.data = p.data;
        epb.direction = 0;
        epb.has_queue = false;
        uint8_t* out = sink_.reserve(pcapng::enhanced_packet_size(epb));
        sink_.commit(pcapng::write_enhanced_packet(out, epb));
    }
    if (packet_buffered_)
        sink_.flush();
}

// The text lines on standard output, and the names of the drop reasons
// xdpcap's files give in comments.
class PacketLines {
public:
    explicit PacketLines(const Config& config)
        : output_(Sink::standard_output(), PacketOutput::Format::Text, config.packet_buffered,
                  std::vector<std::string>{}, config.text)
    {
        output_.set_drop_labels(&labels_);
    }
    PacketLines(const PacketLines&) = delete; // the output points at labels_
    PacketLines& operator=(const PacketLines&) = delete;

    // Only xdpcap's interface names are shown: they name CPUs, not devices.
    // Escaped: a file's bytes never reach the terminal raw.
    void add_interface(const CaptureFile::Interface& iface)
    {
        output_.add_interface(iface.written_by_xdpcap ? text::escaped(iface.name) : std::string(),
                              static_cast<text::LinkType>(iface.link_type), text::escaped(iface.container));
    }
    void write(const CaptureFile::Packet& p, const CaptureFile::Interface& iface)
    {
        Sample sample = sample_of(p, iface.written_by_xdpcap, labels_);
        // A label -k wrote is printable; any other is escaped.
        if (!std::ranges::all_of(sample.process_label, [](char c) { return c >= 0x20 && c < 0x7f; })) {
            escaped_label_ = text::escaped(sample.process_label);
            sample.process_label = escaped_label_;
        }
        output_.write(p.interface_id, sample, p.timestamp_ns);
    }
    void flush() { output_.flush(); }

private:
    std::string escaped_label_;
    PacketOutput output_;
    DropLabels labels_{{}, KernelSymbols{}};
};

// Reading a file, in the steps of a live capture where the two do the same.
class FileReading {
public:
    FileReading(const Config& config, std::string filter)
        : config_(config), filters_(std::move(filter)), selection_(config)
    {
    }

    void open_input() { input_.emplace(CaptureFile::open(*config_.read_file)); }
    // -w's file, before the privileges go: a temporary beside OUT (an
    // existing OUT stays as it is until the end), or a FIFO or device
    // opened in place; opened as `user` when given (-Z).
    void claim_output(const std::optional<RunAsUser>& user);
    // The temporary, when there is one: another process may finish it.
    ReplacedFile* replaced() { return replaced_ ? &*replaced_ : nullptr; }
    // The copy's sink and the text lines.
    void open_output();
    // Record by record until the end of the file or -c.
    void run();
    // A file without packets, or without interfaces, is copied as one too.
    void finish();
    // The reading failed: the packets before the failure go out all the
    // same. Returns the error line's end: what became of an existing OUT.
    std::string salvage();

private:
    void refuse_same_file(const std::string& out) const;
    void output_before_break();
    void take(const CaptureFile::Record& record);
    void take_packet(const CaptureFile::Record& record);
    void describe_interface(uint32_t interface_id);
    void describe_classic_interface();
    void compile_filter_for(const CaptureFile::Interface& iface);
    void announce();
    void take_secrets(const CaptureFile::Record& record);
    // -v: the TLS connections a ClientHello starts, in order, once each.
    void note_tls_connection(const CaptureFile::Packet& p);
    void print_tls_connections() const;

    const Config& config_;
    std::optional<CaptureFile> input_;
    LinkTypeFilters filters_;
    RecordedSelection selection_;
    std::optional<ReplacedFile> replaced_; // -w FILE, a regular file or none yet
    std::optional<Sink> claimed_;          // -w -, or -w FIFO or device
    std::optional<PcapngCopy> copy_;       // -w
    std::optional<PacketLines> lines_; // unless -w without --print
    bool announced_ = false;
    bool classic_described_ = false;
    uint64_t read_ = 0; // packets, for messages
    uint64_t kept_ = 0;
    // The file's TLS secrets (Decryption Secrets Blocks of NSS key log lines).
    TlsSecrets secrets_;
    uint64_t secrets_blocks_ = 0;
    bool copy_private_ = false;
    struct TlsConnectionSeen {
        std::string ends;
        ClientRandom random;
    };
    std::vector<TlsConnectionSeen> tls_connections_;
    std::set<ClientRandom> tls_randoms_;
};

// -r x -w x would empty x before reading it: refused, whatever the names.
void FileReading::refuse_same_file(const std::string& out) const
{
    struct stat in {}, o {};
    if (input_->fd() >= 0 && ::fstat(input_->fd(), &in) == 0 && ::stat(out.c_str(), &o) == 0 &&
        in.st_dev == o.st_dev && in.st_ino == o.st_ino)
        throw Error("-w " + out + " is the file -r reads (" + *config_.read_file + "); write the copy elsewhere");
}

void FileReading::claim_output(const std::optional<RunAsUser>& user)
{
    if (!config_.writes_pcapng())
        return;
    if (config_.writes_to_stdout()) {
        claimed_.emplace(Sink::standard_output());
        return;
    }
    const std::string& out = *config_.output;
    refuse_same_file(out);
    std::optional<FileSystemIdentity> as_user;
    if (user)
        as_user.emplace(*user);
    // An input only its owner may read (as a capture with TLS secrets is)
    // gets a copy alike: the reading, with no privilege, cannot make a
    // file it does not own private once it meets the secrets.
    struct stat in {};
    const bool private_copy = !config_.discard_secrets && input_->fd() >= 0 && ::fstat(input_->fd(), &in) == 0 &&
        S_ISREG(in.st_mode) && (in.st_mode & 077) == 0;
    if (ReplacedFile::wanted_for(out))
        replaced_.emplace(ReplacedFile::create(out, private_copy));
    else
        claimed_.emplace(Sink::open_file(out, Sink::kDefaultBufferSize, nullptr, private_copy));
}

void FileReading::open_output()
{
    if (replaced_)
        copy_.emplace(Sink::adopt(replaced_->writer(), *config_.output), config_.packet_buffered);
    else if (claimed_)
        copy_.emplace(std::move(*claimed_), config_.packet_buffered);
    if (!config_.writes_pcapng() || config_.print)
        lines_.emplace(config_);
}

std::string FileReading::salvage()
{
    if (copy_)
        copy_->salvage();
    if (lines_) {
        try {
            lines_->flush();
        } catch (const Error&) {
        }
    }
    if (replaced_ && replaced_->existed())
        return "; " + replaced_->path() + " is left as it was";
    return {};
}

void FileReading::run()
{
    while (!(config_.count && kept_ >= *config_.count)) {
        std::optional<CaptureFile::Record> record;
        try {
            record = input_->next();
        } catch (const Error&) {
            output_before_break();
            throw;
        }
        if (!record)
            return;
        take(*record);
    }
}

// As tcpdump: the packets before a cut or a broken block are output as if
// the file ended there, then the error is said.
void FileReading::output_before_break()
{
    if (!input_->interfaces().empty())
        announce();
    // Not started: no packet was read, and an existing file stays as it was.
    if (copy_ && copy_->started())
        copy_->flush();
    if (lines_)
        lines_->flush();
}

void FileReading::take(const CaptureFile::Record& record)
{
    switch (record.kind) {
    case CaptureFile::Record::Kind::InterfaceDescription:
        describe_interface(static_cast<uint32_t>(input_->interfaces().size() - 1));
        [[fallthrough]];
    case CaptureFile::Record::Kind::SectionHeader:
    case CaptureFile::Record::Kind::Other:
        if (copy_)
            copy_->keep_block(record.block);
        return;
    case CaptureFile::Record::Kind::Statistics:
        // The input's counts describe the whole capture, not this copy.
        return;
    case CaptureFile::Record::Kind::Secrets:
        take_secrets(record);
        return;
    case CaptureFile::Record::Kind::Packet:
        take_packet(record);
        return;
    }
}

void FileReading::take_packet(const CaptureFile::Record& record)
{
    const CaptureFile::Packet& p = record.packet;
    describe_classic_interface();
    const CaptureFile::Interface& iface = input_->interfaces().at(p.interface_id);
    ++read_;
    if (!selection_.keeps(p, iface.link_type, read_) || !filters_.keeps(p, iface.link_type, read_))
        return;
    ++kept_;
    if (copy_)
        copy_->write(record, input_->pcapng());
    if (lines_)
        lines_->write(p, iface);
    if (lines_ && config_.verbose && iface.link_type == kLinkTypeEthernet)
        note_tls_connection(p);
}

void FileReading::take_secrets(const CaptureFile::Record& record)
{
    ++secrets_blocks_;
    if (record.secrets_type == pcapng::kSecretsTlsKeyLog) {
        std::string_view lines(reinterpret_cast<const char*>(record.secrets.data()), record.secrets.size());
        while (!lines.empty()) {
            const size_t end = std::min(lines.find('\n'), lines.size());
            secrets_.add(lines.substr(0, end));
            lines.remove_prefix(std::min(end + 1, lines.size()));
        }
    }
    // --discard-secrets: as editcap --discard-all-secrets, every kind.
    if (!copy_ || config_.discard_secrets)
        return;
    if (!copy_private_) {
        copy_private_ = true;
        try {
            copy_->keep_private();
        } catch (const Error& e) {
            throw Error(std::string(e.what()).append("; --discard-secrets copies it without them"));
        }
    }
    copy_->keep_block(record.block);
}

void FileReading::note_tls_connection(const CaptureFile::Packet& p)
{
    const std::optional<TlsFrame> frame = read_tls_frame(p.data, p.cap_len);
    if (!frame || frame->hello != TlsFrame::Hello::Client || !tls_randoms_.insert(frame->client_random).second)
        return;
    tls_connections_.push_back(TlsConnectionSeen{tls_frame_ends(*frame), frame->client_random});
}

// After the packet lines, on standard error as the reading's other words:
// which connections a reader of this file can decrypt.
void FileReading::print_tls_connections() const
{
    if (!config_.verbose || !lines_ || secrets_blocks_ == 0)
        return;
    for (const TlsConnectionSeen& seen : tls_connections_) {
        const TlsSecrets::Connection* secrets = secrets_.find(seen.random);
        std::fprintf(stderr, "TLS %s: %s\n", seen.ends.c_str(),
                     !secrets                                   ? "no keys in the file"
                         : TlsSecrets::complete(secrets->labels) ? "keys in the file"
                                                                 : "some of its keys in the file");
    }
    std::fprintf(stderr, "%zu TLS connections' secrets in the file (%llu Decryption Secrets Blocks)\n",
                 secrets_.connections(), static_cast<unsigned long long>(secrets_blocks_));
}

void FileReading::describe_interface(uint32_t interface_id)
{
    require_readable(*input_, interface_id);
    const CaptureFile::Interface& iface = input_->interfaces()[interface_id];
    // As tcpdump: the file's line first, then any complaint about the filter.
    announce();
    compile_filter_for(iface);
    if (lines_)
        lines_->add_interface(iface);
}

// Classic pcap has one interface, known from its file header.
void FileReading::describe_classic_interface()
{
    if (input_->pcapng() || classic_described_ || input_->interfaces().empty())
        return;
    classic_described_ = true;
    describe_interface(0);
    if (copy_)
        copy_->write_classic_header(input_->interfaces().front());
}

void FileReading::compile_filter_for(const CaptureFile::Interface& iface)
{
    try {
        if (!input_->pcapng())
            selection_.check_classic(iface.link_type);
        filters_.compile_for(iface, input_->pcapng());
    } catch (const Error&) {
        if (copy_)
            copy_->discard_unstarted();
        throw;
    }
    if (copy_)
        copy_->start();
}

// tcpdump's line on standard error, once the first interface is known
// (with -q too, as tcpdump prints it).
void FileReading::announce()
{
    if (announced_)
        return;
    announced_ = true;
    const CaptureFile::Interface& first = input_->interfaces().front();
    std::fprintf(stderr, "reading from file %s, link-type %s, snapshot length %u\n", config_.read_file->c_str(),
                 link_type_banner(first.link_type).c_str(), first.snaplen);
    // SLL2's interface indexes are named as on this host (as tcpdump).
    if (first.link_type == kLinkTypeLinuxSll2)
        std::fprintf(stderr, "Warning: interface names might be incorrect\n");
}

void FileReading::finish()
{
    describe_classic_interface();
    if (copy_) {
        copy_->start();
        copy_->flush();
    }
    if (lines_)
        lines_->flush();
    print_tls_connections();
}

// Opened, the file is read and the copy finished; nothing is parsed before.
int read_opened(FileReading& reading)
{
    try {
        reading.open_output();
        reading.run();
        reading.finish();
    } catch (const OutputClosed&) {
        // The reader of standard output went away: as tcpdump, quietly.
        reading.salvage();
    } catch (const Error& e) {
        const std::string outcome = reading.salvage();
        if (ReplacedFile* replaced = reading.replaced())
            replaced->finish(false);
        throw Error(e.what() + outcome, e.exit_status());
    }
    if (ReplacedFile* replaced = reading.replaced())
        replaced->finish(true);
    return kExitOk;
}

} // namespace

// Reading a file needs no privilege: the input and -w's file are opened
// first. A temporary -w file is renamed by a parent that parses nothing,
// since the user read as may not write OUT's directory, and a signal that
// ends the reading must not leave the temporary behind.
int read_capture_file(const Config& config, const std::string& filter, ReadPrivileges privileges)
{
    FileReading reading(config, filter);
    reading.open_input();
    std::optional<RunAsUser> user;
    if (config.user)
        user = lookup_run_as_user(*config.user);
    // -Z's user must be allowed to create the file, as in a live capture.
    reading.claim_output(user);
    if (privileges == ReadPrivileges::Keep)
        return read_opened(reading);
    if (!user)
        user = default_reading_user();
    if (ReplacedFile* replaced = reading.replaced()) {
        if (const std::optional<WorkerEnd> end = fork_worker(keep_only_rename_capabilities)) {
            // The child said what went wrong, and whether OUT is left as it was.
            replaced->finish(end->exit_status == kExitOk && end->signal == 0);
            return end_as(*end);
        }
        replaced->leave_to_other_process();
    }
    if (running_privileged())
        drop_privileges(user, KeptCapabilities{});
    return read_opened(reading);
}

} // namespace xdpcap
