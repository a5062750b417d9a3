// Where decoded samples go: pcapng blocks or one decoded text line per
// packet (tcpdump's style, src/text), both into a buffered Sink; with
// --print, pcapng and text lines at once. A format switch, not virtual
// dispatch, per packet.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "kernel/interface_map.hpp"
#include "output/pcapng.hpp"
#include "kernel/record.hpp"
#include "output/sink.hpp"
#include "text/options.hpp"

namespace xdpcap {

class PacketOutput {
public:
    enum class Format { Pcapng, Text };

    // `print`: pcapng into `sink` and text lines into this one too (--print).
    PacketOutput(Sink sink, Format format, bool packet_buffered, std::vector<std::string> interface_names,
                 const text::TextOptions& text = {}, std::optional<Sink> print = std::nullopt);

    // pcapng: SHB and every IDB, flushed before any packet.
    void begin(const pcapng::SectionHeader& shb, const std::vector<pcapng::InterfaceDescription>& idbs);
    // Samples at least this long whose bytes stay put until
    // release_references() are written from where they are (writev), not
    // copied into the buffer first. Shorter ones are cheaper to copy than to
    // describe with an iovec.
    static constexpr uint32_t kReferMinLength = 512;

    // `stays_until_release`: sample.data remains valid and unchanged until
    // release_references() returns.
    void write(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns, bool stays_until_release = false)
    {
        if (format_ == Format::Pcapng)
            write_block(interface_id, sample, realtime_ns, stays_until_release);
        else
            write_line(sink_, interface_id, sample, realtime_ns);
        ++accepted_;
        if (print_)
            print_line(interface_id, sample, realtime_ns);
        // -U flushes the output, -l the text lines (--print's too).
        if (packet_buffered_ || (format_ == Format::Text && text_.line_buffered))
            sink_.flush();
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
    void finish(const std::vector<pcapng::InterfaceStatistics>& isbs);
    void flush()
    {
        sink_.flush();
        flush_print();
    }
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
    void write_block(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns, bool stays_until_release);
    void write_line(Sink& sink, uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);
    // --print's lines are a side show: when they cannot be written the
    // capture into the file goes on without them.
    void print_line(uint32_t interface_id, const Sample& sample, uint64_t realtime_ns);
    void flush_print();
    void stop_printing(const Error* failure);

    Sink sink_;
    Format format_;
    bool packet_buffered_;
    uint64_t accepted_ = 0;
    std::vector<std::string> interface_names_;
    text::TextOptions text_;
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
            on_lost(interface_id);
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
