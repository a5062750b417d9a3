// Where decoded samples go: pcapng blocks or one decoded text line per
// packet (tcpdump's style, src/text), both into a buffered Sink; with
// --print, pcapng and text lines at once. A format switch, not virtual
// dispatch, per packet.
#pragma once

#include <cstdint>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/hooks.hpp"
#include "output/drop_labels.hpp"
#include "output/interface_map.hpp"
#include "output/file_command.hpp"
#include "output/packet_ids.hpp"
#include "output/process_labels.hpp"
#include "output/pcapng.hpp"
#include "output/sample.hpp"
#include "output/rotation.hpp"
#include "output/rss_hash.hpp"
#include "output/sink.hpp"
#include "output/tls_placement.hpp"
#include "text/host_interface_names.hpp"
#include "text/options.hpp"
#include "text/tcp_flows.hpp"

namespace xdpcap {

class PacketOutput {
public:
    enum class Format { Pcapng, Text };

    // `print`: pcapng into `sink` and text lines into this one too (--print).
    PacketOutput(Sink sink, Format format, bool packet_buffered, std::vector<std::string> interface_names,
                 const text::TextOptions& text = {}, std::optional<Sink> print = std::nullopt);

    // What a live interface's packets' options depend on.
    struct InterfaceTraits {
        // epb_hash's algorithm byte for received packets' hashes (the NIC's
        // RSS function).
        uint8_t rx_hash_algorithm = pcapng::kHashUnregistered;
        // One RX and one TX queue: epb_queue only on a packet whose queue
        // is not 0. Its 8 bytes say nothing otherwise (a 64-byte frame's
        // block is 7 % smaller without them).
        bool single_queue = false;
    };
    // Per interface id; ids past its end get the defaults.
    void set_interface_traits(std::vector<InterfaceTraits> traits) { interface_traits_ = std::move(traits); }
    // -v: a received packet's RSS hash type (L4_IPV4_TCP, ...) in its
    // comment. Off by default: a string per packet costs more than the
    // packet at 64 bytes, and -e's text lines show the type.
    void write_hash_types(bool on) noexcept { hash_type_comments_ = on; }
    // --drops: names the drops' reasons and locations, and counts them.
    // In pcapng, a drop record and the record of the same packet captured
    // before it share an epb_packetid.
    void set_drop_labels(DropLabels* labels)
    {
        drop_labels_ = labels;
        if (labels && format_ == Format::Pcapng && !packet_ids_)
            packet_ids_ = std::make_unique<PacketIds>();
    }
    // -k: packets whose record names its socket's owner carry
    // epb_processid_threadid and a comment "proc NAME:PID", and text lines
    // "(proc NAME:PID)" after the interface, as macOS tcpdump -k.
    void name_processes(ProcessLabels::ContainerOf container_of = {})
    {
        process_labels_ = std::make_unique<ProcessLabels>(std::move(container_of));
    }
    // A live interface's device renamed: its lines, and its IDB if not yet
    // written (on first use), carry the new name ("eth0@cpu3" becomes
    // "lan0@cpu3").
    void rename_device(uint32_t interface_id, const std::string& device);
    // A live interface that leads into a container (a host-side veth): its
    // lines' column names both, "veth1a2b(web)" ("veth1a2b(web)@cpu3" with
    // --print-cpu); a rename keeps the container. Its IDB is the caller's.
    void name_container(uint32_t interface_id, const std::string& container);
    // A joined interface's container found after it joined (its veth is made
    // before the container's process starts): its lines' column names it from
    // now on, and so does its IDB where not yet written, and in the files a
    // rotation opens next.
    void describe_container(uint32_t interface_id, const std::string& container, const std::string& description);
    // How many interface ids there are: the next one add_live_interface() gives.
    uint32_t interface_count() const noexcept { return static_cast<uint32_t>(interface_names_.size()); }
    // --tls-keys (pcapng only): every connection whose handshake goes
    // into a file gets its secrets from `secrets` in a Decryption Secrets
    // Block before its ServerHello (see output/tls_placement.hpp).
    void place_tls_secrets(const TlsSecrets& secrets)
    {
        if (format_ == Format::Pcapng)
            tls_ = std::make_unique<TlsPlacement>(secrets);
    }
    // After new key lines came, and on the loop's timer: writes the blocks
    // and releases the connections whose secrets are complete, or that were
    // held kTimeoutNs by `monotonic_ns`. Cheap when nothing changed.
    void place_held_tls(uint64_t monotonic_ns)
    {
        if (tls_ && (tls_->held || tls_->secrets.changes() != tls_->seen_changes)) [[unlikely]]
            place_tls(monotonic_ns, false);
    }
    const TlsPlacementStats* tls_stats() const noexcept { return tls_ ? &tls_->stats : nullptr; }
    // -r: the next interface of the file, as its description blocks come,
    // the link-level header of its packets, and the container it leads
    // into (name_container()), if any.
    void add_interface(std::string name, text::LinkType link_type = text::LinkType::Ethernet,
                       const std::string& container = {});
    // -i any and -i PATTERN: text lines name the device, as tcpdump -i any's,
    // also while only one interface takes part.
    void name_devices()
    {
        always_name_devices_ = true;
        update_line_prefixes();
    }
    // A live interface that joins the capture (on first use only): the next
    // interface id, its IDB written before its first packet; `container` as
    // for add_interface().
    void add_live_interface(std::string name, pcapng::InterfaceDescription idb, InterfaceTraits traits,
                            const std::string& container = {});

    // pcapng: SHB and every IDB, flushed before any packet. With
    // `on_first_use` only the SHB and the first IDB: each other interface's
    // IDB is written just before its first packet (pcapng allows IDBs
    // anywhere in a section),
    // and the file numbers the interfaces in that order, in every file of a
    // rotation anew. -i any: a 64-CPU host with 200 interfaces does not
    // start its file with 12 800 blocks.
    void begin(const pcapng::SectionHeader& shb, const std::vector<pcapng::InterfaceDescription>& idbs,
               bool on_first_use = false);
    // Samples at least this long whose bytes stay put until
    // release_references() are written from where they are (writev), not
    // copied into the buffer first. Shorter ones are cheaper to copy than to
    // describe with an iovec.
    static constexpr uint32_t kReferMinLength = 512;

    // -C/-G/-W/-z (pcapng files only): the sink writes plan.current(); each
    // file closed gets the statistics blocks `file_statistics` returns for
    // it, told the interface of the packet that waits for the next file.
    using FileStatistics = std::function<std::vector<pcapng::InterfaceStatistics>(uint32_t pending_interface)>;
    void rotate(RotationPlan plan, std::optional<FileCommand> command);
    void on_file_end(FileStatistics file_statistics) { file_statistics_ = std::move(file_statistics); }

    // `stays_until_release`: sample.data remains valid and unchanged until
    // release_references() returns. False: the packet was not written
    // because -W's last -G file is complete (and no more will be).
    bool write(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns, bool stays_until_release = false)
    {
        // Rotation costs two comparisons per packet: the bytes written and
        // the packet's own time, no syscall.
        if (sink_.bytes() > size_limit_ || realtime_ns >= rotate_at_ns_) [[unlikely]] {
            if (!next_file(realtime_ns, interface_id))
                return false;
        }
        if (format_ == Format::Pcapng) {
            if (!tls_ || !tls_hold(interface_id, sample, realtime_ns)) [[likely]]
                write_block(interface_id, sample, realtime_ns, stays_until_release);
        } else
            write_line(sink_, interface_id, sample, realtime_ns);
        ++accepted_;
        if (hook_info(sample.hook).dropped && drop_labels_)
            drop_labels_->count(sample.verdict);
        if (print_)
            print_line(interface_id, sample, realtime_ns);
        // -U flushes the output, -l the text lines (--print's too).
        if (packet_buffered_ || (format_ == Format::Text && text_.line_buffered))
            sink_.flush();
        return true;
    }
    // The merge's way for the frames it takes in a row from a batch record
    // (ring/ring_merge.cpp): true while every packet write() takes becomes
    // its block in the buffer and nothing else happens (pcapng, no TLS
    // secrets to place, no --print, -U, drop labels, packet ids, -k labels
    // or -v's hash type comments).
    bool writes_blocks_only() const noexcept
    {
        return format_ == Format::Pcapng && !tls_ && !print_ && !packet_buffered_ && !drop_labels_ &&
            !packet_ids_ && !process_labels_ && !hash_type_comments_;
    }
    // With writes_blocks_only(): write() of a packet whose block fits the
    // buffer as it is, byte for byte the same block. Never flushes, so never
    // throws: false, with nothing written, when the packet needs more (the
    // buffer flushed, a file rotated, its interface described first) or has
    // options other than pcapng::PlainPacket's (a verdict, a drop, -k's
    // process); write() then takes it.
    [[gnu::always_inline]] bool write_buffered(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns,
                                               bool stays_until_release) noexcept
    {
        if (sink_.bytes() > size_limit_ || realtime_ns >= rotate_at_ns_) [[unlikely]]
            return false;
        uint32_t file_id = interface_id;
        if (!file_ids_.empty()) [[unlikely]] {
            if (interface_id >= file_ids_.size() || file_ids_[interface_id] == kNotWritten)
                return false;
            file_id = file_ids_[interface_id];
        }
        const HookInfo& hook = hook_info(sample.hook);
        if (hook.verdict || hook.dropped || (sample.flags & XDPCAP_FLAG_PROCESS)) [[unlikely]]
            return false;
        // What enhanced_packet() makes of the sample, for a packet without
        // the options that need it.
        const InterfaceTraits traits =
            interface_id < interface_traits_.size() ? interface_traits_[interface_id] : InterfaceTraits{};
        const bool has_hash = sample.flags & XDPCAP_FLAG_HASH;
        const pcapng::PlainPacket packet{
            .interface_id = file_id,
            .timestamp_ns = realtime_ns,
            .cap_len = sample.cap_len,
            .orig_len = sample.orig_len,
            .flags = (sample.direction & 3u) |
                (sample.flags & XDPCAP_FLAG_CSUM_PARTIAL ? pcapng::kFlagChecksumNotReady : 0u) |
                (sample.flags & XDPCAP_FLAG_GSO ? pcapng::kFlagSegmentationOffload : 0u),
            .has_queue = !traits.single_queue || sample.rx_queue != 0,
            .queue = sample.rx_queue,
            .drop_count = sample.drops_before,
            .has_hash = has_hash,
            .hash_algorithm = sample.direction == XDPCAP_DIR_INGRESS ? traits.rx_hash_algorithm
                                                                     : pcapng::kHashUnregistered,
            .hash = sample.hash,
        };
        const size_t size = pcapng::plain_packet_size(packet);
        const size_t tail = size - pcapng::kEpbHeadSize - sample.cap_len;
        if (stays_until_release && sample.cap_len >= kReferMinLength) {
            if (!sink_.has_room_around_reference(pcapng::kEpbHeadSize + tail))
                return false;
            pcapng::write_plain_packet_head(sink_.reserve(pcapng::kEpbHeadSize), packet, size);
            sink_.commit(pcapng::kEpbHeadSize);
            sink_.refer(sample.data, sample.cap_len);
            pcapng::write_plain_packet_tail(sink_.reserve(tail), packet, size);
            sink_.commit(tail);
        } else {
            if (!sink_.has_room(size))
                return false;
            uint8_t* data = pcapng::write_plain_packet_head(sink_.reserve(size), packet, size);
            pcapng::copy_packet_bytes(data, sample.data, sample.cap_len);
            pcapng::write_plain_packet_tail(data + sample.cap_len, packet, size);
            sink_.commit(size);
        }
        ++accepted_;
        return true;
    }
    // After each drained batch: pipes and terminals see packets promptly.
    void end_batch()
    {
        if (sink_.is_pipe() || format_ == Format::Text)
            sink_.flush();
        flush_print();
    }
    // Writes out whatever refers to sample bytes, before they are released.
    void release_references()
    {
        if (sink_.has_references())
            sink_.flush();
    }
    // The statistics blocks, then everything flushed; a rotated file is
    // also closed and given to -z. Nothing when no file is open any more.
    void finish(const std::vector<pcapng::InterfaceStatistics>& isbs);
    void flush()
    {
        sink_.flush();
        flush_print();
    }
    // From the loop's periodic timer: collects finished -z commands.
    void housekeeping() noexcept
    {
        if (command_)
            command_->reap();
    }
    // The timer has work here still: connections held for their TLS
    // secrets, or -z commands to collect.
    bool awaits_timer() const noexcept { return (tls_ && tls_->held) || (command_ && command_->running()); }
    // -W's count of -G files was reached: the last file is closed.
    bool file_limit_reached() const noexcept { return file_limit_reached_; }
    bool file_open() const noexcept { return file_open_; }
    // --print: why the lines on standard output stopped early (empty when
    // they did not, or when their reader just went away).
    const std::string& print_failure() const noexcept { return print_failure_; }
    // After a failed write: calls on_lost(interface_id) for every packet in
    // the chunk that did not reach the output completely.
    template <class OnLost>
    void for_each_unwritten_packet(OnLost&& on_lost) const;
    Sink& sink() noexcept { return sink_; }
    // Packets write() has put into the output. When write() throws, this
    // tells whether the packet was already in (and so in the failed chunk).
    uint64_t accepted() const noexcept { return accepted_; }

private:
    // Closes the current file and opens the next; false at -W's limit.
    bool next_file(uint64_t realtime_ns, uint32_t pending_interface);
    void close_file(const std::vector<pcapng::InterfaceStatistics>& isbs);
    pcapng::EnhancedPacket enhanced_packet(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);
    void write_block(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns, bool stays_until_release);
    // The block's head and tail buffered around its packet bytes, referred
    // to where they are; or the whole block, bytes copied, in the buffer.
    // The room is there (reserved, or checked).
    [[gnu::always_inline]] void write_referring_block(const pcapng::EnhancedPacket& packet, size_t size, size_t tail)
    {
        pcapng::write_enhanced_packet_head(sink_.reserve(pcapng::kEpbHeadSize), packet, size);
        sink_.commit(pcapng::kEpbHeadSize);
        sink_.refer(packet.data, packet.cap_len);
        pcapng::write_enhanced_packet_tail(sink_.reserve(tail), packet, size);
        sink_.commit(tail);
    }
    [[gnu::always_inline]] void write_copied_block(const pcapng::EnhancedPacket& packet, size_t size)
    {
        uint8_t* data = pcapng::write_enhanced_packet_head(sink_.reserve(size), packet, size);
        if (packet.cap_len)
            std::memcpy(data, packet.data, packet.cap_len);
        pcapng::write_enhanced_packet_tail(data + packet.cap_len, packet, size);
        sink_.commit(size);
    }
    void write_line(Sink& sink, uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);
    // --tls-keys: true when the packet is held back (copied) instead.
    bool tls_hold(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);
    // `everything`: every held connection is released, complete or not.
    void place_tls(uint64_t monotonic_ns, bool everything);
    void write_tls_secrets(TlsPlacement::Connection& connection);
    void release_tls(TlsPlacement::Connection& connection, uint64_t monotonic_ns);
    void put_packet_text(text::Writer& out, uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);
    // --print's lines are a side show: when they cannot be written the
    // capture into the file goes on without them.
    void print_line(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);
    void flush_print();
    void stop_printing(const Error* failure);

    // The file's number of interface `interface_id` (the caller's), its
    // IDB written first if it was not yet.
    uint32_t file_interface(uint32_t interface_id)
    {
        if (file_ids_.empty())
            return interface_id;
        if (interface_id >= file_ids_.size() || file_ids_[interface_id] == kNotWritten) [[unlikely]]
            return describe_now(interface_id);
        return file_ids_[interface_id];
    }
    // Appends the interface's IDB to `blocks`; its file id.
    uint32_t describe(uint32_t interface_id, std::vector<uint8_t>& blocks);
    uint32_t describe_now(uint32_t interface_id);
    // ISBs of the caller's numbering in the file's: those of interfaces the
    // file describes, and of those it does not yet but whose counts are not
    // all zero (their IDB written first), so that nothing counted is lost.
    std::vector<uint8_t> statistics_blocks(const std::vector<pcapng::InterfaceStatistics>& isbs);
    // The caller's interface of a file's interface id, for the lost-packet walk.
    uint32_t caller_interface(uint32_t file_id) const noexcept
    {
        return file_id < described_.size() ? described_[file_id] : file_id;
    }

    static constexpr uint32_t kNotWritten = ~uint32_t{0};
    // On first use: every interface's IDB, its file id (kNotWritten until
    // written) and, by file id, the caller's interface. All empty otherwise.
    std::vector<pcapng::InterfaceDescription> idbs_;
    std::vector<uint32_t> file_ids_;
    std::vector<uint32_t> described_;

    Sink sink_;
    // Without rotation neither is ever reached.
    uint64_t size_limit_ = RotationPlan::kNever;
    uint64_t rotate_at_ns_ = RotationPlan::kNever;
    std::optional<RotationPlan> plan_;
    std::optional<FileCommand> command_;
    FileStatistics file_statistics_;
    std::vector<uint8_t> header_; // SHB and IDBs, for every file
    bool file_open_ = true;
    bool file_limit_reached_ = false;
    Format format_;
    bool packet_buffered_;
    uint64_t accepted_ = 0;
    std::vector<std::string> interface_names_;
    // What each interface's lines start with, before the direction; empty
    // with no prefix (then no direction either).
    std::vector<std::string> line_prefixes_;
    // Another device than the first interface's is among them: every line
    // gets tcpdump -i any's column. Changes once at most, so a file of n
    // interfaces builds its prefixes in linear time.
    bool several_devices_ = false;
    bool always_name_devices_ = false;
    // Per interface id, the container named in its column; empty for none.
    std::vector<std::string> containers_;
    void update_line_prefixes();
    std::string line_prefix(uint32_t interface_id) const;
    bool another_device(const std::string& interface_name) const;
    // Per interface id; Ethernet for ids past its end (live captures).
    std::vector<text::LinkType> link_types_;
    // The names of SLL2 headers' interface indexes, once a file has them.
    std::unique_ptr<text::HostInterfaceNames> host_interface_names_;
    std::vector<InterfaceTraits> interface_traits_;
    DropLabels* drop_labels_ = nullptr;
    std::unique_ptr<PacketIds> packet_ids_; // --drops, pcapng
    std::unique_ptr<ProcessLabels> process_labels_; // -k
    std::unique_ptr<TlsPlacement> tls_; // --tls-keys
    bool hash_type_comments_ = false;
    text::TextOptions text_;
    // Relative TCP sequence numbers (not with -S); text_.decode points here.
    std::unique_ptr<text::TcpFlows> tcp_flows_;
    text::TimestampPrinter timestamps_;
    std::optional<Sink> print_;
    std::string print_failure_;
    uint64_t printed_ = 0; // the number -# shows
    // Text: the interface of each packet handed to the sink since its last
    // flush began, and where in the chunk its text ends, so that a failed
    // flush can tell whose packets were lost (a packet's text may span
    // several lines with -x, -X or -A).
    struct LineOwner {
        uint32_t interface_id;
        uint32_t end;
    };
    std::vector<LineOwner> line_owners_;
    uint64_t owners_since_flush_ = 0;
};

// Forced inline: once per packet, from write_block() and write_buffered().
[[gnu::always_inline]] inline pcapng::EnhancedPacket PacketOutput::enhanced_packet(uint32_t interface_id,
                                                                                   const Sample& sample,
                                                                                   uint64_t realtime_ns)
{
    pcapng::EnhancedPacket packet; // not {}: every member without a default is set below
    packet.interface_id = file_interface(interface_id);
    packet.timestamp_ns = realtime_ns;
    packet.cap_len = sample.cap_len;
    packet.orig_len = sample.orig_len;
    const InterfaceTraits traits =
        interface_id < interface_traits_.size() ? interface_traits_[interface_id] : InterfaceTraits{};
    packet.queue = sample.rx_queue;
    packet.has_queue = !traits.single_queue || sample.rx_queue != 0;
    packet.drop_count = sample.drops_before;
    packet.data = sample.data;
    packet.direction = sample.direction;
    const HookInfo& hook = hook_info(sample.hook);
    packet.has_verdict = hook.verdict;
    packet.verdict = sample.verdict;
    if (sample.flags & XDPCAP_FLAG_CSUM_PARTIAL)
        packet.flags |= pcapng::kFlagChecksumNotReady;
    if (sample.flags & XDPCAP_FLAG_GSO)
        packet.flags |= pcapng::kFlagSegmentationOffload;
    if (sample.flags & XDPCAP_FLAG_HASH) {
        packet.has_hash = true;
        packet.hash = sample.hash;
        packet.hash_algorithm =
            sample.direction == XDPCAP_DIR_INGRESS ? traits.rx_hash_algorithm : pcapng::kHashUnregistered;
        if (hash_type_comments_) [[unlikely]]
            packet.comment = rss_hash_type_comment(sample.hash_type);
    }
    // Where Wireshark shows and filters it: frame.comment contains "NO_SOCKET".
    if (hook.dropped && drop_labels_)
        packet.comment = drop_labels_->comment(sample.verdict, sample.location);
    if (sample.flags & XDPCAP_FLAG_PROCESS) [[unlikely]] {
        packet.has_process = true;
        packet.pid = sample.process.pid;
        packet.tid = sample.process.tid;
        if (process_labels_)
            packet.process_comment = process_labels_->label(sample.process, sample.peer);
    }
    if (packet_ids_) [[unlikely]]
        packet.packet_id = hook.dropped ? packet_ids_->dropped(sample.data, sample.cap_len)
                                        : packet_ids_->captured(sample.data, sample.cap_len);
    return packet;
}

template <class OnLost>
void PacketOutput::for_each_unwritten_packet(OnLost&& on_lost) const
{
    const Sink::FailedChunk& chunk = sink_.failed_chunk();
    if (format_ == Format::Text) {
        // A packet is lost unless the end of its text reached the output.
        for (const LineOwner& owner : line_owners_) {
            if (owner.end > chunk.written)
                on_lost(owner.interface_id);
        }
        return;
    }
    // Walks the blocks of the chunk; every block starts in buffered bytes,
    // so only those are read.
    size_t segment = 0;
    size_t in_segment = 0;
    size_t offset = 0;
    while (segment < chunk.segments.size()) {
        const auto* base = static_cast<const uint8_t*>(chunk.segments[segment].iov_base) + in_segment;
        if (chunk.segments[segment].iov_len - in_segment < 12)
            break;
        uint32_t type, length, interface_id;
        std::memcpy(&type, base, 4);
        std::memcpy(&length, base + 4, 4);
        std::memcpy(&interface_id, base + 8, 4);
        if (length < 12 || offset + length > chunk.size)
            break;
        if (type == pcapng::kEpbType && offset + length > chunk.written)
            on_lost(caller_interface(interface_id));
        offset += length;
        for (size_t skip = length; skip > 0 && segment < chunk.segments.size();) {
            const size_t here = chunk.segments[segment].iov_len - in_segment;
            if (skip < here) {
                in_segment += skip;
                skip = 0;
            } else {
                skip -= here;
                ++segment;
                in_segment = 0;
            }
        }
    }
}

} // namespace xdpcap
